-- Neovim (0.7+, headless) with the real `otters lsp` attached range-formats lines 2-3 of
-- $AGENTFILE, applies the edits as Neovim does, and writes the buffer to $OUT; then it breaks the
-- file (an unterminated heredoc) and writes the error the server answers a formatting request
-- with, as `ERROR <message>`, on the last line. Used by tests/suite/lsp.rs.
local bin, file, out = os.getenv('OTTERS_BIN'), os.getenv('AGENTFILE'), os.getenv('OUT')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({ name = 'otters', cmd = { bin, 'lsp' }, root_dir = vim.fn.fnamemodify(file, ':h') })
vim.lsp.buf_attach_client(buf, id)
vim.wait(15000, function()
  local c = vim.lsp.get_client_by_id(id)
  return c ~= nil and c.initialized
end, 20)
local client = vim.lsp.get_client_by_id(id)
local params = {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = { start = { line = 1, character = 0 }, ['end'] = { line = 3, character = 0 } },
  options = { tabSize = 4, insertSpaces = true },
}
local r = client.request_sync('textDocument/rangeFormatting', params, 10000, buf)
vim.lsp.util.apply_text_edits(r and r.result or {}, buf, client.offset_encoding or 'utf-16')
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { 'CONTEXT P <<EOF', 'x' })
local e = client.request_sync('textDocument/formatting', { textDocument = params.textDocument, options = params.options }, 10000, buf)
table.insert(lines, 'ERROR ' .. ((e and e.err and e.err.message) or 'none'))
vim.fn.writefile(lines, out)
vim.lsp.stop_client(id)
vim.wait(2000, function() return vim.lsp.get_client_by_id(id) == nil end, 20)
vim.cmd('qa!')

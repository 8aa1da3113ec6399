-- Neovim (0.7+, headless) opens an Agentfile with the real `otters lsp` attached and writes the
-- diagnostics it received, one `line:col CODE message` per line, to $OUT. Used by
-- tests/suite/lsp.rs; OTTERS_BIN is the binary under test, AGENTFILE the file to open.
local bin, file, out = os.getenv('OTTERS_BIN'), os.getenv('AGENTFILE'), os.getenv('OUT')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({ name = 'otters', cmd = { bin, 'lsp' }, root_dir = vim.fn.fnamemodify(file, ':h') })
vim.lsp.buf_attach_client(buf, id)
vim.wait(15000, function() return #vim.diagnostic.get(buf) > 0 end, 20)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or '?'
  table.insert(lines, string.format('%d:%d %s %s', d.lnum + 1, d.col + 1, code, d.message))
end
vim.fn.writefile(lines, out)
vim.lsp.stop_client(id)
vim.wait(2000, function() return vim.lsp.get_client_by_id(id) == nil end, 20)
vim.cmd('qa!')

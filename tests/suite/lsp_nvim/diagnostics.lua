-- Neovim (0.7+, headless) opens an Agentfile with the real `otters lsp` attached and writes the
-- diagnostics it received, one `line:col CODE message` per line, to $OUT. Used by
-- tests/suite/lsp.rs; OTTERS_BIN is the binary under test, AGENTFILE the file to open. With
-- SETTINGS (JSON), those are the client's `settings`, sent in didChangeConfiguration from
-- on_init as editors/nvim and nvim-lspconfig do, and the script waits until no diagnostic has
-- the code GONE.
local bin, file, out = os.getenv('OTTERS_BIN'), os.getenv('AGENTFILE'), os.getenv('OUT')
local settings, gone = os.getenv('SETTINGS'), os.getenv('GONE')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({
  name = 'otters',
  cmd = { bin, 'lsp' },
  root_dir = vim.fn.fnamemodify(file, ':h'),
  settings = settings and vim.fn.json_decode(settings) or nil,
  on_init = function(client)
    client.notify('workspace/didChangeConfiguration', { settings = client.config.settings })
  end,
})
vim.lsp.buf_attach_client(buf, id)
local function code_of(d) return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or '?' end
vim.wait(15000, function()
  local all = vim.diagnostic.get(buf)
  if #all == 0 then return false end
  for _, d in ipairs(all) do
    if gone and code_of(d) == gone then return false end
  end
  return true
end, 20)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local code = code_of(d)
  table.insert(lines, string.format('%d:%d %s %s', d.lnum + 1, d.col + 1, code, d.message))
end
vim.fn.writefile(lines, out)
vim.lsp.stop_client(id)
vim.wait(2000, function() return vim.lsp.get_client_by_id(id) == nil end, 20)
vim.cmd('qa!')

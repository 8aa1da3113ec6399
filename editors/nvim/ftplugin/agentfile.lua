-- Agentfile buffers: tree-sitter highlighting whenever the agentfile parser is installed, however
-- the language server was started (`require('otters').setup()`, `vim.lsp.enable('otters')`, or
-- not at all). Where it is not (Neovim 0.7, no parser), syntax/agentfile.vim highlights.
-- `require('otters').setup({ treesitter = false })` turns this off.
if not vim.g.otters_no_treesitter then
  require('otters').treesitter(vim.api.nvim_get_current_buf())
end

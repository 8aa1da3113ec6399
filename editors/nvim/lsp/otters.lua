-- The otters language server for Neovim 0.11+: `vim.lsp.enable('otters')` is all it takes.
return require('otters').config()

-- Agentfile support for Neovim: the otters language server (`otters lsp` over stdio) and the
-- tree-sitter grammar in editors/tree-sitter-agentfile.
--
--   require('otters').setup()                 -- start `otters lsp` on every Agentfile buffer
--   require('otters').setup({ cmd = { '/path/to/otters', 'lsp' } })
--
-- On Neovim 0.11+ `vim.lsp.enable('otters')` does the same through lsp/otters.lua.
local M = {}

-- Files whose directory is the project root (nearest first): the lint configuration or a
-- repository; one server serves every Agentfile below it. Without either, the file's directory.
M.root_markers = { 'otters.toml', '.git' }

--- The server configuration (the shape of vim.lsp.config / vim.lsp.start).
---@param opts table|nil overrides: cmd, root_markers, settings, …
function M.config(opts)
  opts = opts or {}
  return vim.tbl_deep_extend('force', {
    name = 'otters',
    cmd = { 'otters', 'lsp' },
    filetypes = { 'agentfile' },
    root_markers = M.root_markers,
  }, opts)
end

--- The root directory for a buffer: the nearest directory holding a root marker, else the
--- buffer's own directory.
---@param bufnr integer
---@param markers string[]
function M.root_dir(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local start = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.fn.getcwd()
  -- Nearest first; written without vim.fs so that Neovim 0.7 works too.
  local dir = start
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return start
    end
    dir = parent
  end
end

--- Starts (or reuses) the server for one buffer.
---@param bufnr integer
---@param config table from M.config
function M.start(bufnr, config)
  local start_config = {
    name = config.name,
    cmd = config.cmd,
    root_dir = M.root_dir(bufnr, config.root_markers),
    settings = config.settings,
    -- The settings (`{ otters = { targets = …, capabilities = …, buildArgs = …, run = … } }`)
    -- reach the server in didChangeConfiguration: Neovim 0.7 does not announce that it answers
    -- workspace/configuration, so the server would not ask.
    on_init = function(client)
      if client.config.settings and next(client.config.settings) then
        client.notify('workspace/didChangeConfiguration', { settings = client.config.settings })
      end
    end,
  }
  if vim.lsp.start then
    -- Neovim 0.8+: reuses a running client with the same name and root.
    return vim.lsp.start(start_config, { bufnr = bufnr })
  end
  -- Neovim 0.7: start a client per root and attach it.
  M._clients = M._clients or {}
  local key = start_config.root_dir
  local id = M._clients[key]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(start_config)
    M._clients[key] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
    M.map_0_7(bufnr)
  end
  return id
end

--- Starts tree-sitter highlighting on a buffer when the agentfile parser is installed (Neovim
--- 0.8+); true when it runs. ftplugin/agentfile.lua calls it for every Agentfile buffer.
---@param bufnr integer
function M.treesitter(bufnr)
  if vim.treesitter and vim.treesitter.start then
    return (pcall(vim.treesitter.start, bufnr, 'agentfile'))
  end
  return false
end

--- What Neovim 0.7 does not map by itself for a language server: `K` for hover and the
--- omnifunc for completion (<C-x><C-o>), on the buffer, unless the user mapped K already.
---@param bufnr integer
function M.map_0_7(bufnr)
  vim.api.nvim_buf_set_option(bufnr, 'omnifunc', 'v:lua.vim.lsp.omnifunc')
  if vim.fn.maparg('K', 'n') == '' then
    vim.api.nvim_buf_set_keymap(bufnr, 'n', 'K', '<cmd>lua vim.lsp.buf.hover()<CR>', { noremap = true, silent = true })
  end
end

--- Registers the grammar with nvim-treesitter (`:TSInstall agentfile`), when it is installed.
--- `path` is editors/tree-sitter-agentfile of an otters checkout.
---
--- `master` keeps parser configurations in `get_parser_configs()`; `main` rebuilds its parser
--- table on every update and only keeps what a `User TSUpdate` autocmd adds (a table set once
--- is dropped: "skipping unsupported language: agentfile"), so on `main` the registration is
--- that autocmd, run once now as well.
---@param path string
function M.register_parser(path)
  local ok, parsers = pcall(require, 'nvim-treesitter.parsers')
  if not ok then
    return false
  end
  if type(parsers.get_parser_configs) == 'function' then
    -- nvim-treesitter `master`.
    parsers.get_parser_configs().agentfile = {
      install_info = { url = path, files = { 'src/parser.c', 'src/scanner.c' } },
      filetype = 'agentfile',
    }
    return true
  end
  -- nvim-treesitter `main`.
  local function register()
    require('nvim-treesitter.parsers').agentfile = {
      install_info = { path = path, queries = 'queries' },
    }
  end
  vim.api.nvim_create_autocmd('User', {
    group = vim.api.nvim_create_augroup('otters_parser', { clear = true }),
    pattern = 'TSUpdate',
    callback = register,
  })
  register()
  return true
end

--- Sets up Agentfile buffers: the language server and, when available, tree-sitter.
---@param opts table|nil { cmd = {…}, root_markers = {…}, settings = {…}, treesitter = true|false, lsp = true|false }
function M.setup(opts)
  opts = opts or {}
  local config = M.config({ cmd = opts.cmd, root_markers = opts.root_markers, settings = opts.settings })
  -- Tree-sitter is started by ftplugin/agentfile.lua on every Agentfile buffer; this turns it off.
  vim.g.otters_no_treesitter = opts.treesitter == false or nil
  local group = vim.api.nvim_create_augroup('otters', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'agentfile',
    callback = function(args)
      if opts.lsp ~= false then
        M.start(args.buf, config)
      end
    end,
  })
end

return M

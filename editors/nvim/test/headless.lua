-- Headless Neovim test of editors/nvim: filetype detection, the buffer settings, the language
-- server set-up (with vim.lsp.start stubbed: the server is tested on its own), and, when
-- AGENTFILE_PARSER names a compiled parser, the tree-sitter grammar and queries as Neovim loads
-- them. Run by editors/test.sh:
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=editors/nvim' --cmd 'filetype plugin on' \
--        -c 'luafile editors/nvim/test/headless.lua'
-- Prints one line per check and `N passed, M failed`; exits non-zero on any failure.
local passed, failed = 0, 0

local function out(line)
  io.stdout:write(line .. '\n')
end

local function check(name, ok, detail)
  if ok then
    passed = passed + 1
    out('ok ' .. name)
  else
    failed = failed + 1
    out('FAIL ' .. name .. (detail and (': ' .. detail) or ''))
  end
end

local function eq(name, got, want)
  check(name, vim.deep_equal(got, want), 'got ' .. vim.inspect(got) .. ', want ' .. vim.inspect(want))
end

local function write(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

local function run()
  local tmp = vim.fn.tempname()
  local project = tmp .. '/project'
  write(project .. '/otters.toml', '[lint]\n')
  write(project .. '/agents/probe/Agentfile', 'FROM scratch\nNAME probe\n')
  write(project .. '/agents/other/extra.agentfile', 'FROM scratch\n')
  write(tmp .. '/loose/Agentfile', 'FROM scratch\n')
  write(project .. '/agents/probe/Agentfile.lock', '{}\n')
  write(project .. '/agents/probe/Dockerfile', 'FROM scratch\n')

  -- The language server set-up, with the client start recorded instead of run.
  -- `started`: the configurations a client was started with; `attached`: buffers given to one.
  local started, attached = {}, 0
  local function record(config)
    table.insert(started, { config = config })
    return #started
  end
  if vim.lsp.start then
    -- Neovim 0.8+: vim.lsp.start is called per buffer and itself reuses a matching client.
    vim.lsp.start = function(config)
      attached = attached + 1
      return record(config)
    end
  else
    vim.lsp.start_client = record
    vim.lsp.buf_attach_client = function()
      attached = attached + 1
    end
    vim.lsp.get_client_by_id = function(id)
      return started[id]
    end
  end
  require('otters').setup()

  -- Filetype detection.
  local function filetype_of(path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    return vim.bo.filetype
  end
  eq('Agentfile is agentfile', filetype_of(project .. '/agents/probe/Agentfile'), 'agentfile')
  eq('commentstring', vim.bo.commentstring, '# %s')
  check('the server started for the Agentfile', #started == 1, vim.inspect(started))
  if #started >= 1 then
    eq('server command', started[1].config.cmd, { 'otters', 'lsp' })
    eq('server name', started[1].config.name, 'otters')
    -- The settings go to the server in didChangeConfiguration from on_init (0.7 does not
    -- announce workspace/configuration, so the server would not ask for them).
    local sent = {}
    local fake = { config = { settings = { otters = { run = 'onSave' } } } }
    function fake.notify(method, params)
      table.insert(sent, { method, params })
    end
    started[1].config.on_init(fake)
    eq('settings sent on init', sent, { { 'workspace/didChangeConfiguration', { settings = { otters = { run = 'onSave' } } } } })
    local root = started[1].config.root_dir
    eq('root: the directory of otters.toml', root and vim.fn.resolve(root), vim.fn.resolve(project))
  end
  eq('*.agentfile is agentfile', filetype_of(project .. '/agents/other/extra.agentfile'), 'agentfile')
  eq('both agentfile buffers attached', attached, 2)
  eq('both buffers have the same root', started[#started].config.root_dir, started[1] and started[1].config.root_dir)
  check('Agentfile.lock is not agentfile', filetype_of(project .. '/agents/probe/Agentfile.lock') ~= 'agentfile')
  eq('Dockerfile is still dockerfile', filetype_of(project .. '/agents/probe/Dockerfile'), 'dockerfile')
  eq('no server for other filetypes', attached, 2)
  filetype_of(tmp .. '/loose/Agentfile')
  eq('root without otters.toml or .git: the file directory', vim.fn.resolve(started[#started].config.root_dir), vim.fn.resolve(tmp .. '/loose'))

  -- The first-line marker makes any file an Agentfile; another syntax marker does not.
  write(tmp .. '/marked/agent.conf', '# syntax=openotters/agentfile:1\nFROM scratch\n')
  write(tmp .. '/marked/docker.conf', '# syntax=docker/dockerfile:1\nFROM scratch\n')
  eq('the first-line marker is agentfile', filetype_of(tmp .. '/marked/agent.conf'), 'agentfile')
  check('another syntax marker is not', filetype_of(tmp .. '/marked/docker.conf') ~= 'agentfile')

  -- The upstream nvim-lspconfig snippet is the package's own configuration.
  local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
  local upstream = dofile(here .. '/../../upstream/nvim-lspconfig/lsp/otters.lua')
  local own = require('otters').config()
  eq('upstream snippet: cmd', upstream.cmd, own.cmd)
  eq('upstream snippet: filetypes', upstream.filetypes, own.filetypes)
  eq('upstream snippet: root markers', upstream.root_markers, own.root_markers)

  if not vim.lsp.start then
    -- Neovim 0.7 maps nothing for a server by itself: otters sets K and the omnifunc.
    filetype_of(project .. '/agents/probe/Agentfile')
    eq('0.7: omnifunc is the server', vim.bo.omnifunc, 'v:lua.vim.lsp.omnifunc')
    check('0.7: K is hover', vim.fn.maparg('K', 'n'):find('hover') ~= nil, vim.fn.maparg('K', 'n'))
  end

  -- Highlighting by syntax/agentfile.vim where tree-sitter is not running.
  vim.cmd('syntax on')
  write(tmp .. '/syn/Agentfile', '# syntax=openotters/agentfile:1\n# a comment\nFROM scratch\nLABEL k="a\\n${A}"\nCONTEXT S file://ctx.md\nCONTEXT P <<EOF\nbody FROM\nEOF\n')
  filetype_of(tmp .. '/syn/Agentfile')
  eq('syntax is agentfile', vim.bo.syntax, 'agentfile')
  local function group(line, col)
    return vim.fn.synIDattr(vim.fn.synID(line, col, 1), 'name')
  end
  eq('syntax: directive', group(1, 3), 'agentfileDirective')
  eq('syntax: comment', group(2, 3), 'agentfileComment')
  eq('syntax: keyword', group(3, 1), 'agentfileKeyword')
  eq('syntax: string', group(4, 9), 'agentfileString')
  eq('syntax: escape', group(4, 11), 'agentfileEscape')
  eq('syntax: ${ARG} in a string', group(4, 13), 'agentfileExpansion')
  eq('syntax: file://', group(5, 12), 'agentfileFileRef')
  eq('syntax: heredoc marker', group(6, 12), 'agentfileHeredocMarker')
  eq('syntax: heredoc body, not a keyword', group(7, 6), 'agentfileHeredoc')

  -- Tree-sitter is started by ftplugin/agentfile.lua whatever started the server (it was
  -- started only by setup(), so `vim.lsp.enable('otters')` gave no highlighting).
  local otters = require('otters')
  local real_treesitter, ts_started = otters.treesitter, {}
  otters.treesitter = function(bufnr)
    table.insert(ts_started, bufnr)
    return false
  end
  vim.api.nvim_create_augroup('otters', { clear = true }) -- as if setup() had never run
  write(tmp .. '/ts/Agentfile', 'FROM scratch\n')
  filetype_of(tmp .. '/ts/Agentfile')
  eq('ftplugin starts tree-sitter without setup()', ts_started, { vim.api.nvim_get_current_buf() })
  otters.treesitter = real_treesitter

  -- register_parser against stand-ins of nvim-treesitter's parsers module (nvim-treesitter is
  -- not installed here; these follow its `master` and `main` branches' documented tables).
  local configs = {}
  package.loaded['nvim-treesitter.parsers'] = { get_parser_configs = function() return configs end }
  check('master: registered', otters.register_parser('/g') == true)
  eq('master: parser config', configs.agentfile and configs.agentfile.filetype, 'agentfile')
  package.loaded['nvim-treesitter.parsers'] = {}
  check('main: registered', otters.register_parser('/g') == true)
  package.loaded['nvim-treesitter.parsers'] = {} -- main rebuilds its table on :TSUpdate
  vim.cmd('doautocmd User TSUpdate')
  local main = package.loaded['nvim-treesitter.parsers'].agentfile
  eq('main: registered again from User TSUpdate', main and main.install_info.path, '/g')
  package.loaded['nvim-treesitter.parsers'] = nil

  -- The configuration lsp/otters.lua gives Neovim 0.11's vim.lsp.enable('otters').
  local files = vim.api.nvim_get_runtime_file('lsp/otters.lua', false)
  check('lsp/otters.lua on the runtimepath', #files == 1)
  if #files == 1 then
    local config = dofile(files[1])
    eq('lsp/otters.lua cmd', config.cmd, { 'otters', 'lsp' })
    eq('lsp/otters.lua filetypes', config.filetypes, { 'agentfile' })
    eq('lsp/otters.lua root markers', config.root_markers, { 'otters.toml', '.git' })
  end
  eq('setup overrides the command', require('otters').config({ cmd = { '/x/otters', 'lsp' } }).cmd, { '/x/otters', 'lsp' })

  -- The tree-sitter grammar and the queries Neovim reads from queries/agentfile/.
  local parser = os.getenv('AGENTFILE_PARSER')
  if parser and parser ~= '' then
    local ts = vim.treesitter
    local add = (ts.language and ts.language.add) and function()
      return ts.language.add('agentfile', { path = parser })
    end or function()
      return ts.require_language('agentfile', parser)
    end
    check('the parser loads', pcall(add))
    local parse_query = (ts.query and ts.query.parse) or ts.parse_query or ts.query.parse_query
    local queries = {}
    for _, name in ipairs({ 'highlights', 'injections', 'folds' }) do
      local qfiles = vim.api.nvim_get_runtime_file('queries/agentfile/' .. name .. '.scm', false)
      check(name .. '.scm on the runtimepath', #qfiles >= 1)
      local text = table.concat(vim.fn.readfile(qfiles[1]), '\n')
      local ok, q = pcall(parse_query, 'agentfile', text)
      check(name .. '.scm compiles against the grammar', ok, not ok and tostring(q) or nil)
      queries[name] = ok and q or nil
    end
    local corpus = vim.split(os.getenv('AGENTFILE_FILES') or '', '\n', { trimempty = true })
    check('files to parse were given', #corpus > 0)
    -- How many captures named `name` (any name when nil) `query` makes on a tree.
    local function count(query, root, text, name)
      local n = 0
      if query and root then
        for id in query:iter_captures(root, text, 0, -1) do
          if name == nil or query.captures[id] == name then
            n = n + 1
          end
        end
      end
      return n
    end
    local keywords, injected, folds = 0, 0, 0
    for _, path in ipairs(corpus) do
      local text = table.concat(vim.fn.readfile(path, 'b'), '\n')
      local ok, p = pcall(ts.get_string_parser, text, 'agentfile')
      local tree = ok and p:parse()[1]
      local root = tree and tree:root()
      check('parses without error: ' .. path, root ~= nil and not root:has_error())
      keywords = keywords + count(queries.highlights, root, text, 'keyword')
      injected = injected + count(queries.injections, root, text, 'injection.content')
      folds = folds + count(queries.folds, root, text, nil)
    end
    check('highlights capture keywords', keywords > 0, tostring(keywords))
    check('injections capture heredoc bodies', injected > 0, tostring(injected))
    check('folds capture heredocs', folds > 0, tostring(folds))
  else
    out('note: AGENTFILE_PARSER unset, tree-sitter checks not run')
  end
end

local ok, err = pcall(run)
check('no Lua error', ok, err and tostring(err))
out(string.format('%d passed, %d failed', passed, failed))
vim.cmd(failed == 0 and 'qall!' or 'cquit 1')

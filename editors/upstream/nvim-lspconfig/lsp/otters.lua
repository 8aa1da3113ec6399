---@brief
---
--- https://github.com/openotters/otters
---
--- The Agentfile language server, `otters lsp` (the checks of `otters lint`, hover, completion,
--- fixes, formatting). Install otters so that `otters` is on `PATH`.
---
--- Settings (`settings = { otters = { … } }`): `targets`, `capabilities`, `buildArgs`, `run`;
--- see https://github.com/openotters/otters/blob/main/docs/editors.md#settings
return {
  cmd = { 'otters', 'lsp' },
  filetypes = { 'agentfile' },
  root_markers = { 'otters.toml', '.git' },
}

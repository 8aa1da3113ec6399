" Agentfile syntax by regular expressions: the fallback where tree-sitter is not running (Neovim
" 0.7, or no compiled agentfile parser). Tree-sitter replaces it on buffers it starts on.
if exists('b:current_syntax')
  finish
endif

syntax case match
syntax match agentfileComment /^\s*#.*$/ contains=agentfileTodo
" `# syntax=…`: defined after comments, so that it wins where both match.
syntax match agentfileDirective /^\s*#\s*syntax=.*$/
syntax keyword agentfileTodo TODO FIXME XXX contained
syntax match agentfileKeyword /^\s*\c\%(FROM\|RUNTIME\|MODEL\|NAME\|CONTEXT\|CONFIG\|ENV\|BIN\|EXEC\|ADD\|LABEL\|ARG\|CAPABILITY\|MOUNT\|EGRESS\)\>/
syntax match agentfileEscape /\\./ contained
syntax region agentfileString start=/"/ skip=/\\./ end=/"/ oneline contains=agentfileEscape,agentfileExpansion
syntax match agentfileExpansion /\${[^}]*}/
syntax match agentfileFileRef /file:\/\/\S*/
" A heredoc: from `<<EOF` (or `<<-"EOF"`) to the line holding only the terminator.
syntax region agentfileHeredoc matchgroup=agentfileHeredocMarker start=/<<-\=\(["']\=\)\z(\w\+\)\1\s*$/ end=/^\s*\z1\s*$/

highlight default link agentfileDirective PreProc
highlight default link agentfileComment Comment
highlight default link agentfileTodo Todo
highlight default link agentfileKeyword Keyword
highlight default link agentfileString String
highlight default link agentfileEscape SpecialChar
highlight default link agentfileExpansion Identifier
highlight default link agentfileFileRef Underlined
highlight default link agentfileHeredocMarker Label
highlight default link agentfileHeredoc String

let b:current_syntax = 'agentfile'

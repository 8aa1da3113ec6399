" Agentfiles: files named `Agentfile` and files ending in `.agentfile`.
autocmd BufRead,BufNewFile Agentfile,*.agentfile set filetype=agentfile

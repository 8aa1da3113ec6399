" Agentfiles: files named `Agentfile`, files ending in `.agentfile`, and any file whose first line
" is the marker `# syntax=openotters/agentfile` (with or without a version), which wins over a
" filetype guessed from the name.
autocmd BufRead,BufNewFile Agentfile,*.agentfile set filetype=agentfile
autocmd BufRead * if getline(1) =~# '^#\s*syntax=openotters/agentfile\>' | set filetype=agentfile | endif

" agentc workflow files (Vim and Neovim).
autocmd BufNewFile,BufRead *.agent setfiletype agent

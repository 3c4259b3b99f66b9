-- Run by go test ./editors (TestNeovimLSP): opens AGENTC_FILE with agentc.lua
-- starting AGENTC_BIN lsp, waits for its diagnostics and prints them.
local agentc = dofile(vim.env.AGENTC_LUA)
agentc.setup({ cmd = { vim.env.AGENTC_BIN, 'lsp' } })
vim.cmd('edit ' .. vim.env.AGENTC_FILE)
local ok = vim.wait(15000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local out = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, string.format('%d:%d %s %s', d.lnum + 1, d.col + 1, d.code or d.user_data and d.user_data.lsp and d.user_data.lsp.code or '?', d.message))
end
io.stdout:write((ok and 'OK\n' or 'TIMEOUT\n') .. table.concat(out, '\n') .. '\n')
vim.cmd('qall!')

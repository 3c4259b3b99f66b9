-- agentc language server for Neovim (0.7 or later, no plugin needed).
--
-- Put this file on 'runtimepath' under lua/ (or dofile() it) and call
--
--   require('agentc').setup()                          -- `agentc` on $PATH
--   require('agentc').setup({ cmd = { '/path/to/agentc', 'lsp' } })
--
-- .agent buffers get the filetype `agent` and one `agentc lsp` per project
-- root: the nearest folder above the file holding agentc.yaml or .git, else
-- the file's folder (the rule of the agentc CLI). Diagnostics, hover (K),
-- go to definition, references, rename, completion (omnifunc), symbols,
-- formatting and code actions then come through Neovim's built-in client.
-- For highlighting, add editors/vim to 'runtimepath' as well.
--
-- With nvim-lspconfig installed instead, the same server is:
--
--   require('lspconfig.configs').agentc = { default_config = {
--     cmd = { 'agentc', 'lsp' }, filetypes = { 'agent' },
--     root_dir = require('lspconfig.util').root_pattern('agentc.yaml', '.git'),
--   } }
--   require('lspconfig').agentc.setup({})

local M = {}

local function exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

-- root returns the project root of a file.
function M.root(file)
  local dir = vim.fn.fnamemodify(file, ':p:h')
  local d = dir
  while true do
    if exists(d .. '/agentc.yaml') or exists(d .. '/.git') then
      return d
    end
    local parent = vim.fn.fnamemodify(d, ':h')
    if parent == d then
      return dir
    end
    d = parent
  end
end

local clients = {} -- root -> client id

function M.setup(opts)
  opts = opts or {}
  local cmd = opts.cmd or { 'agentc', 'lsp' }
  vim.cmd([[autocmd BufRead,BufNewFile *.agent setfiletype agent]])
  local group = vim.api.nvim_create_augroup('agentc_lsp', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'agent',
    callback = function(args)
      local file = vim.api.nvim_buf_get_name(args.buf)
      if file == '' then
        return
      end
      local root = M.root(file)
      local id = clients[root]
      if id == nil or vim.lsp.get_client_by_id(id) == nil then
        id = vim.lsp.start_client({
          name = 'agentc',
          cmd = cmd,
          root_dir = root,
          workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
          on_attach = opts.on_attach,
          capabilities = opts.capabilities,
        })
        if id == nil then
          vim.notify('agentc: cannot start ' .. table.concat(cmd, ' '), vim.log.levels.ERROR)
          return
        end
        clients[root] = id
      end
      vim.lsp.buf_attach_client(args.buf, id)
      vim.bo[args.buf].omnifunc = 'v:lua.vim.lsp.omnifunc'
    end,
  })
end

return M

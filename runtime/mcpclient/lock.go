package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/mcplock"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// maxListPages bounds the tools/list pages read from one server.
const maxListPages = 1000

// Lock connects to the server of every `run = mcp` tool of m's program
// (imported files' included) and returns, for each declaring file, its
// lock file's name (relative to the module root, mcplock.Name) and bytes
// (spec/tools.md "Pinned schemas"). Each server is listed once. A server
// that cannot be reached or listed fails Lock, naming the tool and the
// server: nothing is returned.
func Lock(ctx context.Context, m *vm.Machine, pool *Pool) (map[string][]byte, error) {
	p := m.Program()
	type entry struct {
		key string
		t   *tool
	}
	byFile := map[string][]entry{}
	for i := range p.Tools {
		bt := &p.Tools[i]
		if bt.Impl.Kind != bytecode.ImplMCP {
			continue
		}
		key := ""
		if a, ok := bytecode.FindAttr(bt.Impl.Options, "server"); ok {
			if v, ok := p.AttrConst(a); ok && v.Kind() == types.ValString {
				key = v.Str()
			}
		}
		if key == "" {
			return nil, fmt.Errorf("tool %s: the program has no server key (compiled by an older agentc?)", bt.Name)
		}
		mt, err := newTool(m, bt, pool)
		if err != nil {
			return nil, err
		}
		if mt.refused != nil {
			return nil, fmt.Errorf("tool %s: server %w", bt.Name, mt.refused)
		}
		file := fileDir(p, bt) + "/x"
		if f := int(bt.Span.File); f < len(p.Files) && bt.Span.IsValid() {
			file = p.Files[f]
		}
		byFile[file] = append(byFile[file], entry{key, mt})
	}
	listed := map[*server]*mcplock.Server{}
	out := map[string][]byte{}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, file := range files {
		lf := &mcplock.File{}
		seen := map[string]bool{}
		for _, e := range byFile[file] {
			if seen[e.key] {
				continue
			}
			seen[e.key] = true
			ls := listed[e.t.srv]
			if ls == nil {
				var err error
				if ls, err = e.t.list(ctx); err != nil {
					return nil, err
				}
				listed[e.t.srv] = ls
			}
			c := *ls
			c.URL, c.Command = "", nil
			if kind, where, ok := cutKey(e.key); ok && kind == "url" {
				c.URL = where
			} else if ok {
				if err := json.Unmarshal([]byte(where), &c.Command); err != nil {
					return nil, fmt.Errorf("tool %s: server key %q: %w", e.t.t.Name, e.key, err)
				}
			}
			lf.Servers = append(lf.Servers, &c)
		}
		b, err := mcplock.Marshal(lf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(b) > mcplock.MaxSize {
			return nil, fmt.Errorf("%s: the lock would be %d bytes, over the %d a lock may hold", file, len(b), mcplock.MaxSize)
		}
		out[mcplock.Name(file)] = b
	}
	return out, nil
}

// cutKey splits a server key ("url X", "command [...]").
func cutKey(key string) (kind, where string, ok bool) {
	for _, k := range []string{"url", "command"} {
		if len(key) > len(k)+1 && key[:len(k)+1] == k+" " {
			return k, key[len(k)+1:], true
		}
	}
	return "", "", false
}

// list reads the tool's server's serverInfo and every tool (tools/list,
// all pages).
func (t *tool) list(ctx context.Context) (*mcplock.Server, error) {
	cs, err := t.pool.session(ctx, t.srv)
	if err != nil {
		return nil, fmt.Errorf("tool %s: connect to %s: %w", t.t.Name, t.srv.name, err)
	}
	out := &mcplock.Server{}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		out.Name, out.Version = ir.ServerInfo.Name, ir.ServerInfo.Version
	}
	params := &mcp.ListToolsParams{}
	for range maxListPages {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("tool %s: list the tools of %s: %w", t.t.Name, t.srv.name, err)
		}
		for _, st := range res.Tools {
			lt, err := lockTool(st)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.srv.name, err)
			}
			out.Tools = append(out.Tools, lt)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, fmt.Errorf("tool %s: %s lists more than %d pages of tools", t.t.Name, t.srv.name, maxListPages)
}

// lockTool is a listed tool as a lock file pins it.
func lockTool(st *mcp.Tool) (*mcplock.Tool, error) {
	if st == nil {
		return nil, fmt.Errorf("a null tool")
	}
	out := &mcplock.Tool{Name: st.Name, Description: st.Description}
	var err error
	if out.InputSchema, err = schemaJSON(st.InputSchema); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", st.Name, err)
	}
	if st.OutputSchema != nil {
		if out.OutputSchema, err = schemaJSON(st.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: output schema: %w", st.Name, err)
		}
	}
	if a := st.Annotations; a != nil {
		yes := true
		la := &mcplock.Annotations{DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.ReadOnlyHint {
			la.ReadOnlyHint = &yes
		}
		if a.IdempotentHint {
			la.IdempotentHint = &yes
		}
		if *la != (mcplock.Annotations{}) {
			out.Annotations = la
		}
	}
	return out, nil
}

func schemaJSON(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return mcplock.Canonical(b)
}

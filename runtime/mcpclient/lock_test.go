package mcpclient_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/mcplock"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/stdlib"
)

// TestLock: agentc mcp lock's library pins every tool of the server (its
// schemas and annotations) in the declaring file's lock, keyed by the url
// or command as written; the program then compiles against the lock with
// no diagnostics, effects follow the annotations, and the same server
// gives the same bytes.
func TestLock(t *testing.T) {
	sw := newSwap(&recorder{})
	hs := httptest.NewServer(sw)
	defer hs.Close()
	for _, tc := range []struct{ name, run, key string }{
		{"http", httpRun(hs.URL), mcplock.URLKey(hs.URL)},
		{"stdio", stdioRun(t), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := source(tc.run) + `tool wipe { input { q: string } run = mcp { ` + tc.run + `, tool = "wipe" } }
agent wiper llm { model = fast, tools = [wipe] }
`
			prog := runtimetest.CompileSource(t, "kb.agent", src)
			env := map[string]string{"KB_TOKEN": "t", "AGENTC_ALLOW_HOSTS": strings.TrimPrefix(hs.URL, "http://")}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			locks, err := assemble.LockMCP(context.Background(), prog, t.TempDir(), lookup)
			if err != nil {
				t.Fatal(err)
			}
			b := locks["kb.mcp.lock"]
			if len(locks) != 1 || b == nil {
				t.Fatalf("locks: %v", locks)
			}
			again, err := assemble.LockMCP(context.Background(), prog, t.TempDir(), lookup)
			if err != nil || string(again["kb.mcp.lock"]) != string(b) {
				t.Fatalf("not deterministic: %v\n%s\n%s", err, b, again["kb.mcp.lock"])
			}
			lf, err := mcplock.Parse(b)
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if len(lf.Servers) != 1 {
				t.Fatalf("servers: %s", b)
			}
			srv := lf.Servers[0]
			if tc.key != "" && srv.Key() != tc.key || srv.Name != "test" || srv.Version != "1" {
				t.Errorf("server %s %q %q", srv.Key(), srv.Name, srv.Version)
			}
			var names []string
			for _, tl := range srv.Tools {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, " "); got != "broken echo exit gallery lookup picture report slow wipe" {
				t.Errorf("tools %s", got)
			}
			if lu := srv.Tool("lookup"); lu == nil || lu.Output() == nil || !strings.Contains(string(lu.InputSchema), `"q"`) {
				t.Errorf("lookup: %+v", lu)
			}
			if e, d := srv.Tool("wipe").Effect(); e != mcplock.SideEffect || !d {
				t.Errorf("wipe effect %v %v", e, d)
			}
			// The program compiles against its lock with no diagnostic
			// but the unused tools of source.
			cfg := compiler.Config{FS: fstest.MapFS{"kb.agent": {Data: []byte(src)}, "kb.mcp.lock": {Data: b}}, Root: ".", Universe: stdlib.Universe()}
			pkg, ds := compiler.Load(cfg, "kb.agent")
			p2, _, cds := compiler.Compile(cfg, pkg)
			for _, d := range append(ds, cds...) {
				if d.Code != diag.UnusedDecl {
					t.Errorf("compile against the lock: %v", d)
				}
			}
			if p2 == nil {
				t.Fatal("no program")
			}
			if p2.Hash == prog.Hash {
				t.Error("the lock did not change the program hash")
			}
			// A read_only declaration of the destructive tool is refused.
			weak := strings.Replace(src, `tool wipe { input { q: string } run`, `tool wipe { input { q: string } effect = read_only run`, 1)
			cfg.FS = fstest.MapFS{"kb.agent": {Data: []byte(weak)}, "kb.mcp.lock": {Data: b}}
			pkg, _ = compiler.Load(cfg, "kb.agent")
			if _, _, ds := compiler.Compile(cfg, pkg); !slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Code == compiler.MCPWeakEffect }) {
				t.Fatalf("weak effect: %v", ds)
			}
		})
	}
}

// TestLockRefusedHost: a url outside AGENTC_ALLOW_HOSTS is not contacted;
// the lock fails naming the tool.
func TestLockRefusedHost(t *testing.T) {
	sw := newSwap(&recorder{})
	hs := httptest.NewServer(sw)
	defer hs.Close()
	prog := runtimetest.CompileSource(t, "kb.agent", source(httpRun(hs.URL)))
	lookup := func(k string) (string, bool) { return map[string]string{"KB_TOKEN": "t"}[k], k == "KB_TOKEN" }
	_, err := assemble.LockMCP(context.Background(), prog, t.TempDir(), lookup)
	if err == nil || !strings.Contains(err.Error(), "tool lookup") || sw.hits.Load() != 0 {
		t.Fatalf("got %v, %d requests", err, sw.hits.Load())
	}
}

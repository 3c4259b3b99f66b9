package compiler

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/mcplock"
	"github.com/agentc/agentc/lang/diag"
)

const mcpSrc = `
tool look "Looks"  { input { q: string } run = mcp { url = "http://127.0.0.1:1/mcp", tool = "look" } }
tool put "Puts"    { input { q: string } run = mcp { url = "http://127.0.0.1:1/mcp", tool = "put" } }
tool wipe "Wipes"  { input { q: string } run = mcp { url = "http://127.0.0.1:1/mcp", tool = "wipe" } }
tool plain "Plain" { input { q: string } run = mcp { url = "http://127.0.0.1:1/mcp", tool = "plain" } }
tool kept "Kept"   { input { q: string } effect = read_only run = mcp { url = "http://127.0.0.1:1/mcp", tool = "look" } }
model m { provider = openai, name = "x" }
agent a llm { model = m, tools = [look, put, wipe, plain, kept] }
`

func mcpLockSrc(extra string) string {
	schema := `"input_schema": {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}`
	return `{"agentc_mcp_lock": 1, "servers": [{"url": "http://127.0.0.1:1/mcp", "tools": [
  {"name": "look", "annotations": {"readOnlyHint": true}, ` + schema + `},
  {"name": "put", "annotations": {"idempotentHint": true, "destructiveHint": false}, ` + schema + `},
  {"name": "wipe", "annotations": {"destructiveHint": true, "idempotentHint": true}, ` + schema + `},
  {"name": "plain", ` + schema + extra + `}]}]}`
}

func compileMCP(t *testing.T, fsys fstest.MapFS, ignore bool) (*bytecode.Program, []diag.Diagnostic) {
	t.Helper()
	cfg := Config{FS: fsys, Universe: testUniverse(), IgnoreMCPLocks: ignore}
	pkg, ds := Load(cfg, "main.agent")
	prog, _, cds := Compile(cfg, pkg)
	return prog, append(ds, cds...)
}

// TestMCPEffectsFromAnnotations: an mcp tool without a declared effect
// takes it from the pinned annotations; a declared one stands.
func TestMCPEffectsFromAnnotations(t *testing.T) {
	prog, ds := compileMCP(t, fstest.MapFS{"main.agent": {Data: []byte(mcpSrc)}, "main.mcp.lock": {Data: []byte(mcpLockSrc(""))}}, false)
	if len(ds) > 0 || prog == nil {
		t.Fatalf("diagnostics: %v", ds)
	}
	want := map[string]bytecode.Effect{"look": bytecode.EffectReadOnly, "put": bytecode.EffectIdempotent,
		"wipe": bytecode.EffectSideEffect, "plain": bytecode.EffectSideEffect, "kept": bytecode.EffectReadOnly}
	for _, tl := range prog.Tools {
		if e, ok := want[tl.Name]; ok && tl.Effect != e {
			t.Errorf("%s: effect %s, want %s", tl.Name, tl.Effect, e)
		}
	}
	// Without a lock every mcp tool keeps the declared default and the
	// servers are reported unpinned (warnings, the program compiles).
	prog, ds = compileMCP(t, fstest.MapFS{"main.agent": {Data: []byte(mcpSrc)}}, false)
	if prog == nil || len(ds) != 5 || ds[0].Code != MCPNotPinned || ds[0].Severity != diag.Warning {
		t.Fatalf("no lock: %v", ds)
	}
	for _, tl := range prog.Tools {
		if tl.Name == "look" && tl.Effect != bytecode.EffectSideEffect {
			t.Errorf("no lock: look is %s", tl.Effect)
		}
	}
}

// TestMCPLockInProgram: the lock file's hash is part of the program (a
// changed lock is a changed program); the server key is always there.
func TestMCPLockInProgram(t *testing.T) {
	src := fstest.MapFS{"main.agent": {Data: []byte(mcpSrc)}, "main.mcp.lock": {Data: []byte(mcpLockSrc(""))}}
	p1, _ := compileMCP(t, src, false)
	src["main.mcp.lock"] = &fstest.MapFile{Data: []byte(mcpLockSrc(`, "description": "now documented"`))}
	p2, _ := compileMCP(t, src, false)
	p3, ds := compileMCP(t, src, true)
	if p1 == nil || p2 == nil || p3 == nil || len(ds) > 0 {
		t.Fatalf("compile: %v", ds)
	}
	if p1.Hash == p2.Hash {
		t.Error("a changed lock file left the program hash unchanged")
	}
	opts := func(p *bytecode.Program) (server, lock string) {
		for _, tl := range p.Tools {
			if tl.Name != "look" {
				continue
			}
			for _, o := range tl.Impl.Options {
				if v, ok := p.AttrConst(o); ok && o.Name == "server" {
					server = v.Str()
				} else if ok && o.Name == "lock" {
					lock = v.Str()
				}
			}
		}
		return
	}
	if s, l := opts(p1); s != "url http://127.0.0.1:1/mcp" || !strings.HasPrefix(l, "sha256:") {
		t.Errorf("options: %q %q", s, l)
	}
	if s, l := opts(p3); s == "" || l != "" {
		t.Errorf("IgnoreMCPLocks: %q %q", s, l)
	}
}

// TestMCPDriftIgnored: IgnoreMCPLocks compiles a program whose lock has
// drifted (what agentc mcp lock needs to re-pin it).
func TestMCPDriftIgnored(t *testing.T) {
	lock := strings.Replace(mcpLockSrc(""), `"name": "look"`, `"name": "gone"`, 1)
	src := fstest.MapFS{"main.agent": {Data: []byte(mcpSrc)}, "main.mcp.lock": {Data: []byte(lock)}}
	if _, ds := compileMCP(t, src, false); len(ds) == 0 || ds[0].Code != MCPToolGone {
		t.Fatalf("drift not reported: %v", ds)
	}
	if p, ds := compileMCP(t, src, true); p == nil || len(ds) > 0 {
		t.Fatalf("ignored: %v", ds)
	}
}

// TestMCPLockTooLarge: a lock file over the cap is P518 without being
// read whole.
func TestMCPLockTooLarge(t *testing.T) {
	big := make([]byte, mcplock.MaxSize+1)
	_, ds := compileMCP(t, fstest.MapFS{"main.agent": {Data: []byte(mcpSrc)}, "main.mcp.lock": {Data: big}}, false)
	if len(ds) == 0 || ds[0].Code != MCPLockInvalid || !strings.Contains(ds[0].Summary, "larger than") {
		t.Fatalf("got %v", ds)
	}
}

// TestMCPJSONArgument: a json argument is checked as the value a node
// gives it.
func TestMCPJSONArgument(t *testing.T) {
	src := `
tool look "Looks" { input { q: json } run = mcp { url = "http://127.0.0.1:1/mcp", tool = "look" } }
state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = tool look { q = 5 } into out
  node b = tool look { q = q } into out
  start -> a
  a -> b
  b -> end
}
`
	_, ds := compileMCP(t, fstest.MapFS{"main.agent": {Data: []byte(src)}, "main.mcp.lock": {Data: []byte(mcpLockSrc(""))}}, false)
	// The declaration: a json field may be null, the server requires q
	// (P520); node a gives an int (P521); node b a string (fine).
	if len(ds) != 2 || ds[0].Code != MCPArgRequired || ds[1].Code != MCPArgType || ds[1].Subject.Start.Line != 5 ||
		!strings.Contains(ds[1].Summary, "q is int, the server wants string") {
		t.Fatalf("got %v", ds)
	}
}

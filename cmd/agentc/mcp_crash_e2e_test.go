package main

// An MCP tool call cut off by SIGKILL (issue 15 acceptance): the real
// binary, a go-sdk server over streamable HTTP.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpCrashSource = `workflow ledger "Stamps, then wipes"

tool stamp "Stamps the ledger" {
  input  { item: string }
  run    = mcp { url = env("LEDGER_MCP_URL"), tool = "stamp" }
  effect = side_effect
}

tool wipe "Wipes the ledger" {
  input  { item: string }
  run    = mcp { url = env("LEDGER_MCP_URL"), tool = "wipe" }
  effect = side_effect
}

state S { q: string, log: list<string> = [] reduce append }

graph g(S) input q output log {
  node a = tool stamp { item = q } into log
  node b = tool wipe { item = q } into log
  start -> a
  a -> b
  b -> end
}
`

type ledgerIn struct {
	Item string `json:"item"`
}

// ledger is the test's MCP server: stamp answers; wipe's first call never
// answers (its caller is killed), later ones do. keys receives the
// idempotency key of each wipe call.
type ledger struct {
	stamps, wipes atomic.Int32
	keys          chan string
	hs            *httptest.Server
}

func newLedger(t *testing.T) *ledger {
	t.Helper()
	l := &ledger{keys: make(chan string, 4)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "ledger", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "stamp"}, func(ctx context.Context, req *sdk.CallToolRequest, in ledgerIn) (*sdk.CallToolResult, any, error) {
		l.stamps.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "stamped " + in.Item}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "wipe", Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true)}}, func(ctx context.Context, req *sdk.CallToolRequest, in ledgerIn) (*sdk.CallToolResult, any, error) {
		key, _ := req.Params.Meta["agentc/idempotencyKey"].(string)
		l.keys <- key
		if l.wipes.Add(1) == 1 {
			select { // the first call never answers: its caller dies
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
			return nil, nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "wiped again"}}}, nil, nil
	})
	l.hs = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(l.hs.Close)
	return l
}

// killDuringWipe runs src's graph with agentc run in a fresh project and
// SIGKILLs it once wipe was called; it returns the project, its
// environment and the key of the killed call.
func (l *ledger) killDuringWipe(t *testing.T, src string) (root string, env []string, key string) {
	t.Helper()
	root = projectWith(t, "ledger.agent", src)
	env = cleanEnv("LEDGER_MCP_URL="+l.hs.URL+"/mcp", "AGENTC_ALLOW_HOSTS="+l.hs.Listener.Addr().String(), "AGENTC_DATA="+filepath.Join(root, "data"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentcBin(t), "run", "ledger.agent", "--input", "q1", "--session", "s")
	cmd.Dir, cmd.Env = root, env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case key = <-l.keys:
	case <-ctx.Done():
		t.Fatal("wipe was never called")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if key == "" {
		t.Error("the wipe call carried no idempotency key")
	}
	return root, env, key
}

// TestMCPCallKilled: agentc run SIGKILLed while a destructive MCP call is
// in flight, after an earlier MCP call finished: --resume does not call
// the finished one again and ends in needs_decision for the one whose
// outcome is unknown, without calling it; --decide settles it and the run
// completes, each tool having been called once.
func TestMCPCallKilled(t *testing.T) {
	l := newLedger(t)
	root, env, _ := l.killDuringWipe(t, mcpCrashSource)

	r := runAgentc(t, root, env, "run", "ledger.agent", "--resume", "latest", "--session", "s")
	if r.code != exitInterrupted || !strings.Contains(r.stderr, "needs decisions") || !strings.Contains(r.stderr, "node b") {
		t.Fatalf("resume after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s, w := l.stamps.Load(), l.wipes.Load(); s != 1 || w != 1 {
		t.Fatalf("after the resume: stamp called %d times, wipe %d; want 1 and 1", s, w)
	}
	r = runAgentc(t, root, env, "run", "ledger.agent", "--resume", "latest", "--session", "s", "--decide", `b=done:"wiped by hand"`)
	if r.code != 0 || !strings.Contains(r.stdout, "stamped q1") || !strings.Contains(r.stdout, "wiped by hand") {
		t.Fatalf("after --decide: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s, w := l.stamps.Load(), l.wipes.Load(); s != 1 || w != 1 {
		t.Errorf("stamp called %d times, wipe %d; want once each", s, w)
	}
}

// TestMCPIdempotentCallKilled: the same kill with wipe declared idempotent
// (effect_override: the server marks it destructive): --resume calls it
// again with the same idempotency key, the finished stamp still once, and
// the run completes.
func TestMCPIdempotentCallKilled(t *testing.T) {
	l := newLedger(t)
	src := strings.Replace(mcpCrashSource, `run    = mcp { url = env("LEDGER_MCP_URL"), tool = "wipe" }
  effect = side_effect`, `run    = mcp { url = env("LEDGER_MCP_URL"), tool = "wipe", effect_override = "wipes by key" }
  effect = idempotent`, 1)
	if src == mcpCrashSource {
		t.Fatal("the source did not change")
	}
	root, env, key := l.killDuringWipe(t, src)
	r := runAgentc(t, root, env, "run", "ledger.agent", "--resume", "latest", "--session", "s")
	if r.code != 0 || !strings.Contains(r.stdout, "stamped q1") || !strings.Contains(r.stdout, "wiped again") {
		t.Fatalf("resume after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again := <-l.keys; again != key {
		t.Errorf("the repeated call's key %q, the killed call's %q", again, key)
	}
	if s, w := l.stamps.Load(), l.wipes.Load(); s != 1 || w != 2 {
		t.Errorf("stamp called %d times, wipe %d; want 1 and 2", s, w)
	}
}

// projectWith is a project folder (a .git marker) holding the file name
// with src.
func projectWith(t *testing.T, name, src string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

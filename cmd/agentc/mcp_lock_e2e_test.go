package main

// agentc mcp lock end to end: the real binary pins a go-sdk server's tools,
// validate checks against the pin without the network, and a changed
// server schema, once re-pinned, fails validate at the node that builds
// the call (issue 15 drift acceptance).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// docsSearchIn and docsSearchOut are the docs server's search tool (v1):
// what examples/docs/docs.agent declares.
type docsSearchIn struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}
type docsSearchOut struct {
	Hits []string `json:"hits"`
}

// docsSearchV2 is the changed server: limit is a string now, and lang is
// a new required argument.
type docsSearchV2 struct {
	Query string `json:"query"`
	Limit string `json:"limit,omitempty"`
	Lang  string `json:"lang"`
}

// docsServer is the documentation MCP server of examples/docs over
// streamable HTTP; v2 switches to the changed schema.
func docsServer(t *testing.T, v2 *atomic.Bool) *httptest.Server {
	t.Helper()
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	v1s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1.0"}, nil)
	sdk.AddTool(v1s, &sdk.Tool{Name: "search", Description: "Searches the documentation", Annotations: readOnly},
		func(context.Context, *sdk.CallToolRequest, docsSearchIn) (*sdk.CallToolResult, docsSearchOut, error) {
			return nil, docsSearchOut{Hits: []string{"runbooks/tls.md"}}, nil
		})
	v2s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "2.0"}, nil)
	sdk.AddTool(v2s, &sdk.Tool{Name: "search", Description: "Searches the documentation", Annotations: readOnly},
		func(context.Context, *sdk.CallToolRequest, docsSearchV2) (*sdk.CallToolResult, docsSearchOut, error) {
			return nil, docsSearchOut{}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		if v2 != nil && v2.Load() {
			return v2s
		}
		return v1s
	}, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

const driftSource = `workflow kb

type Hits { hits: list<string> }

tool search_docs "Searches the team's documentation" {
  input  { query: string, limit: int = 5 }
  output Hits
  run    = mcp { url = env("DOCS_MCP_URL", "http://127.0.0.1:8931/mcp"), tool = "search" }
}

state S { q: string, found: Hits? }

graph find(S) input q output found {
  node look = tool search_docs {
    query = q
    limit = 3
  } into found
  start -> look
  look -> end
}
`

func TestMCPLockDriftE2E(t *testing.T) {
	var v2 atomic.Bool
	hs := docsServer(t, &v2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kb.agent"), []byte(driftSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("DOCS_MCP_URL="+hs.URL, "AGENTC_ALLOW_HOSTS="+strings.TrimPrefix(hs.URL, "http://"))

	// Unpinned: a warning telling to lock; valid.
	r := runAgentc(t, dir, cleanEnv(), "validate", "kb.agent")
	if r.code != 0 || !strings.Contains(r.stderr, "P517") || !strings.Contains(r.stderr, "agentc mcp lock kb.agent") {
		t.Fatalf("validate unpinned: exit %d\n%s", r.code, r.stderr)
	}
	// Without the host allowed, lock fails and writes nothing.
	r = runAgentc(t, dir, cleanEnv("DOCS_MCP_URL="+hs.URL), "mcp", "lock", "kb.agent")
	if _, err := os.Stat(filepath.Join(dir, "kb.mcp.lock")); r.code != 1 || err == nil || !strings.Contains(r.stderr, "AGENTC_ALLOW_HOSTS") {
		t.Fatalf("lock refused host: exit %d (%v)\n%s", r.code, err, r.stderr)
	}
	r = runAgentc(t, dir, env, "mcp", "lock", "kb.agent")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote kb.mcp.lock") {
		t.Fatalf("lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lock1, err := os.ReadFile(filepath.Join(dir, "kb.mcp.lock"))
	if err != nil || !strings.Contains(string(lock1), `"url": "env(\"DOCS_MCP_URL\", \"http://127.0.0.1:8931/mcp\")"`) {
		t.Fatalf("lock file: %v\n%s", err, lock1)
	}
	if r = runAgentc(t, dir, env, "mcp", "lock", "."); r.code != 0 || !strings.Contains(r.stdout, "kb.mcp.lock unchanged") {
		t.Fatalf("relock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Pinned: validate is clean with the server gone (no network).
	hs.Close()
	if r = runAgentc(t, dir, cleanEnv(), "validate", "kb.agent"); r.code != 0 || r.stderr != "" {
		t.Fatalf("validate pinned: exit %d\n%s", r.code, r.stderr)
	}

	// The server changes its schema; re-pinning shows the drift, and
	// validate fails at the node, naming the tool and the arguments.
	v2.Store(true)
	hs2 := docsServer(t, &v2)
	env = cleanEnv("DOCS_MCP_URL="+hs2.URL, "AGENTC_ALLOW_HOSTS="+strings.TrimPrefix(hs2.URL, "http://"))
	if r = runAgentc(t, dir, env, "mcp", "lock", "kb.agent"); r.code != 0 {
		t.Fatalf("lock v2: exit %d\n%s", r.code, r.stderr)
	}
	r = runAgentc(t, dir, cleanEnv(), "validate", "kb.agent")
	if r.code != 1 {
		t.Fatalf("validate drifted: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`kb.agent:14:\d+: error P520: tool search_docs: argument lang: the server requires it and this call does not give it`,
		`kb.agent:16:\d+: error P521: tool search_docs: argument limit: limit is int, the server wants string`,
		`kb.agent:6:\d+: error P520: tool search_docs: argument lang`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stderr) {
			t.Errorf("validate: missing %s in\n%s", want, r.stderr)
		}
	}
}

// docsExample is the docs server (v1), the repository root, a copy of
// examples/docs (copyDocsExample) and the environment to lock or run it
// against the server.
func docsExample(t *testing.T) (hs *httptest.Server, repo, dir string, env []string) {
	t.Helper()
	hs = docsServer(t, nil)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir = copyDocsExample(t, repo)
	return hs, repo, dir, cleanEnv("DOCS_MCP_URL="+hs.URL, "AGENTC_ALLOW_HOSTS="+strings.TrimPrefix(hs.URL, "http://"))
}

// copyDocsExample copies examples/docs (and the models it imports) into a
// fresh folder and returns it.
func copyDocsExample(t *testing.T, repo string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"examples/docs/docs.agent", "examples/common/models.agent", "examples/docs/testdata/answer.yaml", "examples/docs/testdata/search_docs.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunRecordE2E: agentc run --record calls the MCP tool live (though
// the test block replays it) and writes its calls as a fixture, which the
// test block then replays offline.
func TestRunRecordE2E(t *testing.T) {
	hs, _, dir, env := docsExample(t)
	r := runAgentc(t, dir, env, "run", "examples/docs/docs.agent", "--input", "How do I rotate the staging TLS certificate?",
		"--data", filepath.Join(dir, "data"), "--record", "examples/docs/rec")
	if r.code != 0 || !strings.Contains(r.stderr, "recorded examples/docs/rec/search_docs.yaml") {
		t.Fatalf("run --record: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	fx, err := os.ReadFile(filepath.Join(dir, "examples/docs/rec/search_docs.yaml"))
	// The live server's answer (the replayed fixture's differs).
	if err != nil || !strings.Contains(string(fx), `match: {input: {"query":"rotate staging TLS certificate","limit":5}}`) ||
		!strings.Contains(string(fx), `output: {"hits":["runbooks/tls.md"]}`) {
		t.Fatalf("fixture: %v\n%s", err, fx)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "examples/docs/docs.agent"))
	src = []byte(strings.Replace(string(src), `"testdata/search_docs.yaml"`, `"rec/search_docs.yaml"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "examples/docs/docs.agent"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	hs.Close()
	if r = runAgentc(t, dir, cleanEnv(), "test", "examples/docs/docs.agent"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "1 of 1 tests passed") {
		t.Fatalf("test with the recording: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDocsExampleLock: examples/docs/docs.mcp.lock is what agentc mcp lock
// writes against the documentation server the example declares (-update
// rewrites it), and validate passes on the example with no network.
func TestDocsExampleLock(t *testing.T) {
	_, repo, dir, env := docsExample(t)
	if r := runAgentc(t, dir, env, "mcp", "lock", "examples/docs/docs.agent"); r.code != 0 {
		t.Fatalf("lock: exit %d\n%s", r.code, r.stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "examples/docs/docs.mcp.lock"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(repo, "examples/docs/docs.mcp.lock")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := os.ReadFile(golden)
	if string(got) != string(want) {
		t.Fatalf("%s is stale; run go test ./cmd/agentc -run TestDocsExampleLock -update\n%s", golden, got)
	}
	if r := runAgentc(t, repo, cleanEnv(), "validate", "examples/docs/docs.agent"); r.code != 0 || r.stderr != "" {
		t.Fatalf("validate examples/docs: exit %d\n%s", r.code, r.stderr)
	}
}

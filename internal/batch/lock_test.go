package batch

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

type searchIn struct {
	Query string `json:"query"`
}
type searchOut struct {
	Hits []string `json:"hits"`
}

// server is an MCP server over streamable HTTP with one tool, search.
func server(t *testing.T) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "search", Description: "Searches"},
		func(context.Context, *sdk.CallToolRequest, searchIn) (*sdk.CallToolResult, searchOut, error) {
			return nil, searchOut{}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs
}

const declares = `workflow kb

type Hits { hits: list<string> }

tool search_docs "Searches" {
  input  { query: string }
  output Hits
  run    = mcp { url = env("DOCS_MCP_URL", "http://127.0.0.1:8931/mcp"), tool = "search" }
}

state S { q: string, found: Hits? }

graph find(S) input q output found {
  node look = tool search_docs { query = q } into found
  start -> look
  look -> end
}
`

const plain = `workflow p

state S { q: string }

graph g(S) input q output q {
  start -> end
}
`

// TestLock: a file that declares mcp tools gets its lock written, then
// kept unchanged; one that does not compile, or whose server cannot be
// listed, fails the run (its diagnostics or error said) without stopping
// the others; a lone file without mcp tools is noted.
func TestLock(t *testing.T) {
	hs := server(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for name, src := range map[string]string{"kb.agent": declares, "p.agent": plain, "bad.agent": "workflow"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DOCS_MCP_URL", hs.URL)
	t.Setenv("AGENTC_ALLOW_HOSTS", strings.TrimPrefix(hs.URL, "http://"))
	var out, errw bytes.Buffer
	var shown int
	r := Run{
		Open: func(file string) (*project.Project, error) { return project.OpenFor(file, stdlib.Universe()) },
		Diags: func(ds []diag.Diagnostic, _ diag.Sources) error {
			shown += len(ds)
			return nil
		},
		Out: &out, Err: &errw, Prefix: "agentc: ",
	}
	path := func(n string) string { return filepath.Join(dir, n) }
	ok, err := r.Lock(context.Background(), []string{path("bad.agent"), path("kb.agent")}, 30*time.Second)
	if err != nil || ok || shown == 0 || !strings.HasSuffix(out.String(), "kb.mcp.lock\n") || !strings.HasPrefix(out.String(), "wrote ") {
		t.Fatalf("bad and kb: ok %v err %v shown %d\n%s%s", ok, err, shown, out.String(), errw.String())
	}
	if b, err := os.ReadFile(path("kb.mcp.lock")); err != nil || !strings.Contains(string(b), `"search"`) {
		t.Fatalf("kb.mcp.lock: %v\n%s", err, b)
	}
	out.Reset()
	if ok, err = r.Lock(context.Background(), []string{path("kb.agent")}, 30*time.Second); err != nil || !ok || !strings.HasSuffix(out.String(), "kb.mcp.lock unchanged\n") {
		t.Fatalf("relock: ok %v err %v\n%s", ok, err, out.String())
	}
	if ok, err = r.Lock(context.Background(), []string{path("p.agent")}, 30*time.Second); err != nil || !ok || !strings.Contains(errw.String(), "agentc: "+path("p.agent")+" declares no mcp tools; nothing to lock\n") {
		t.Fatalf("plain: ok %v err %v\n%s", ok, err, errw.String())
	}
	t.Setenv("AGENTC_ALLOW_HOSTS", "")
	errw.Reset()
	if ok, err = r.Lock(context.Background(), []string{path("kb.agent")}, 30*time.Second); err != nil || ok || !strings.Contains(errw.String(), "AGENTC_ALLOW_HOSTS") {
		t.Fatalf("host refused: ok %v err %v\n%s", ok, err, errw.String())
	}
	r.Open = func(string) (*project.Project, error) { return nil, errors.New("no project") }
	if _, err = r.Lock(context.Background(), []string{path("kb.agent")}, 30*time.Second); err == nil || err.Error() != "no project" {
		t.Fatalf("a project that does not open: %v", err)
	}
}

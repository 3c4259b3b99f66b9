package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/mcpclient"
	"github.com/agentc/agentc/runtime/runtimetest"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/telemetry"
	"github.com/agentc/agentc/vm"
)

// helperEnv makes the test binary an MCP stdio server (TestMain).
const helperEnv = "AGENTC_MCP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "stdio" {
		if f := os.Getenv("PIDFILE"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if f := os.Getenv("STARTS"); f != "" { // one line per process started
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(fh, os.Getpid())
				fh.Close()
			}
		}
		s := newServer(&recorder{})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// recorder is what the in-process server saw.
type recorder struct {
	mu       sync.Mutex
	metas    []map[string]any
	started  chan struct{} // closed when slow starts
	canceled chan struct{} // closed when slow's context ends
	// progressed, when set, holds report's answer until the client saw
	// its progress (notifications are handled apart from responses).
	progressed chan struct{}
}

type lookupIn struct {
	Q string `json:"q"`
}
type echoIn struct {
	Q string `json:"q"`
	N int    `json:"n"` // required by the server's schema: the tool's default must be sent
}
type lookupOut struct {
	Answer string `json:"answer"`
	Extra  int    `json:"extra"`
}

// newServer is the test's MCP server: lookup (structured output), echo
// (text), broken (isError), slow (blocks until canceled), exit (the
// process dies: stdio only).
func newServer(rec *recorder) *mcp.Server {
	yes := true
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
		rec.mu.Lock()
		rec.metas = append(rec.metas, req.Params.Meta)
		rec.mu.Unlock()
		return nil, lookupOut{Answer: "found " + in.Q, Extra: 7}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("echo %s %d", in.Q, in.N)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "broken"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such record " + in.Q}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		if rec.started != nil {
			close(rec.started)
		}
		<-ctx.Done()
		if rec.canceled != nil {
			close(rec.canceled)
		}
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped " + in.Q}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "report"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
				Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d of %s", i, in.Q)}); err != nil {
				return nil, nil, err
			}
		}
		if rec.progressed != nil {
			select {
			case <-rec.progressed:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "reported " + in.Q}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "picture"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a picture of " + in.Q},
			&mcp.ImageContent{Data: []byte("\x89PNG fake"), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r/data.csv", MIMEType: "text/csv", Text: "a,b\n1,2\n"}},
			&mcp.ResourceLink{URI: "https://example.test/big.bin", Name: "big", MIMEType: "application/octet-stream"},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "gallery"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		res := &mcp.CallToolResult{}
		for i := range 18 {
			res.Content = append(res.Content, &mcp.ImageContent{Data: []byte{byte(i)}, MIMEType: "image/gif"})
		}
		return res, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "exit"}, func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	return s
}

// swapHandler serves the current server; reset replaces it, so that the
// sessions the client holds are unknown to it (a restarted server).
type swapHandler struct {
	mu   sync.Mutex
	h    http.Handler
	rec  *recorder
	mu2  sync.Mutex
	ids  map[string]bool // the session ids requests carried
	auth atomic.Value    // the last Authorization header
	tps  []string        // the traceparent headers requests carried
	hits atomic.Int32    // requests served
}

func newSwap(rec *recorder) *swapHandler {
	s := &swapHandler{rec: rec}
	s.reset()
	return s
}

func (s *swapHandler) reset() {
	srv := newServer(s.rec)
	s.mu.Lock()
	s.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.mu.Unlock()
}

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.auth.Store(r.Header.Get("Authorization"))
	if tp := r.Header.Get("traceparent"); tp != "" {
		s.mu2.Lock()
		s.tps = append(s.tps, tp)
		s.mu2.Unlock()
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s.mu2.Lock()
		if s.ids == nil {
			s.ids = map[string]bool{}
		}
		s.ids[id] = true
		s.mu2.Unlock()
	}
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// model is a scripted model: its first turn calls tool with args, the
// next answers with the tool result it was given.
type model struct{ tool, args string }

func (m *model) Info() runtime.ModelInfo { return runtime.ModelInfo{Name: "fast"} }
func (m *model) Generate(_ context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == runtime.RoleTool {
		return &runtime.ModelResponse{Text: "tool said: " + last.Content, FinishReason: "stop", Model: "scripted:fast"}, nil
	}
	return &runtime.ModelResponse{ToolCalls: []runtime.ToolCall{{ID: "c1", Name: m.tool, Args: json.RawMessage(m.args)}},
		FinishReason: "tool_calls", Model: "scripted:fast"}, nil
}

func source(run string) string {
	return `workflow kb
model fast { provider = openai, name = "m" }
type Answer { answer: string }
tool lookup "Looks a record up" {
  input  { q: string }
  output Answer
  effect = idempotent
  run    = mcp { ` + run + `, tool = "lookup" }
}
tool echo {
  input  { q: string, n: int = 2 }
  effect = read_only
  run    = mcp { ` + run + `, tool = "echo" }
}
tool broken {
  input  { q: string }
  effect = read_only
  run    = mcp { ` + run + `, tool = "broken" }
}
tool slow {
  input  { q: string }
  effect = read_only
  run    = mcp { ` + run + `, tool = "slow", timeout = 20s }
}
tool hang {
  input  { q: string }
  effect = read_only
  timeout = 200ms
  run    = mcp { ` + run + `, tool = "slow" }
}
tool exit {
  input  { q: string }
  effect = read_only
  run    = mcp { ` + run + `, tool = "exit" }
}
tool exit_write {
  input  { q: string }
  effect = side_effect
  run    = mcp { ` + run + `, tool = "exit" }
}
agent helper llm { model = fast, tools = [lookup, echo, broken, slow, exit] }
`
}

// assembled is a Runner over source(run) with model m, and its tools.
func assembled(t *testing.T, run string, env map[string]string, m runtime.Model) *runtime.Runner {
	t.Helper()
	prog := runtimetest.CompileSource(t, "kb.agent", source(run))
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	r, err := assemble.New(memstore.New(), assemble.Options{Program: prog, Verified: true, Root: t.TempDir(), Env: lookup,
		Models: map[string]runtime.Model{"fast": m}, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

// runOnce runs the agent and returns its tool_result and run_finished.
func runOnce(t *testing.T, r *runtime.Runner, session string) (res, fin *runtime.Event) {
	t.Helper()
	ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: session, Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for e := range ch {
		switch e.Kind {
		case runtime.EventToolResult:
			res = e
		case runtime.EventRunFinished:
			fin = e
		}
	}
	if res == nil || fin == nil {
		t.Fatalf("no tool_result or run_finished (%v, %v)", res, fin)
	}
	return res, fin
}

func httpRun(url string) string {
	return `url = "` + url + `", headers = { Authorization: env("KB_TOKEN") }`
}

// stdioRun runs the test binary as the server; extra adds env entries.
func stdioRun(t *testing.T, extra ...string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(exe)
	env := append([]string{helperEnv + `: "stdio"`}, extra...)
	return `command = [` + string(b) + `], env = { ` + strings.Join(env, ", ") + ` }`
}

func TestWorkflowCallsMCPTool(t *testing.T) {
	rec := &recorder{}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	transports := []struct{ name, run string }{
		{"http", httpRun(hs.URL)},
		{"stdio", stdioRun(t)},
	}
	cases := []struct {
		tool, args  string
		wantOutput  string // the tool_result's output (JSON)
		wantKind    string // else its error kind
		wantMessage string
	}{
		{"lookup", `{"q":"ann"}`, `{"answer":"found ann"}`, "", ""},
		{"echo", `{"q":"bob"}`, `"echo bob 2"`, "", ""},
		{"broken", `{"q":"x1"}`, "", "tool_error", "no such record x1"},
	}
	for _, tr := range transports {
		for _, c := range cases {
			t.Run(tr.name+"/"+c.tool, func(t *testing.T) {
				r := assembled(t, tr.run, map[string]string{"KB_TOKEN": "Bearer s3cret", "AGENTC_ALLOW_HOSTS": "127.0.0.1:*"}, &model{tool: c.tool, args: c.args})
				res, fin := runOnce(t, r, "s")
				if fin.Status != runtime.StatusCompleted {
					t.Fatalf("run %s: %+v", fin.Status, fin.Error)
				}
				if c.wantKind != "" {
					if res.Error == nil || res.Error.Kind != c.wantKind || !strings.Contains(res.Error.Message, c.wantMessage) {
						t.Fatalf("tool_result error %+v, want %s containing %q", res.Error, c.wantKind, c.wantMessage)
					}
					if !strings.Contains(string(fin.Output), c.wantMessage) {
						t.Errorf("the model did not see the error: output %s", fin.Output)
					}
					return
				}
				if res.Error != nil || string(res.Result) != c.wantOutput {
					t.Fatalf("tool_result %s error %+v, want %s", res.Result, res.Error, c.wantOutput)
				}
				if !strings.Contains(string(fin.Output), strings.Trim(c.wantOutput, `"{}`)[:4]) {
					t.Errorf("the model did not see the result: output %s", fin.Output)
				}
			})
		}
	}
	if got, _ := sw.auth.Load().(string); got != "Bearer s3cret" {
		t.Errorf("Authorization header %q, want the env() value", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.metas) == 0 || rec.metas[0][mcpclient.IdempotencyMeta] == nil {
		t.Errorf("lookup (idempotent) got _meta %v, want %s", rec.metas, mcpclient.IdempotencyMeta)
	}
}

// An MCP server over HTTP is held to AGENTC_ALLOW_HOSTS like `run = http`
// tools: a declared host the list lacks fails each call tool_error without
// connecting, and a redirect cannot leave the list.
func TestAllowHosts(t *testing.T) {
	rec := &recorder{}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	var redirected atomic.Int32
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer away.Close()
	port := hs.URL[strings.LastIndex(hs.URL, ":")+1:]
	cases := []struct {
		name, url, allow string
		want             string // in the tool_result's error message
	}{
		{"unset", hs.URL, "", "is not allowed on port " + port + " (AGENTC_ALLOW_HOSTS)"},
		{"other port", hs.URL, "127.0.0.1:1", "is not allowed on port " + port},
		{"other host", hs.URL, "example.com", `host "127.0.0.1" is not allowed`},
		{"not http", "file:///etc/passwd", "*", "is not an http(s) URL"},
		{"redirect away", away.URL, "127.0.0.1:*", `host "localhost" is not allowed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := sw.hits.Load()
			r := assembled(t, httpRun(c.url), map[string]string{"KB_TOKEN": "x", "AGENTC_ALLOW_HOSTS": c.allow}, &model{tool: "lookup", args: `{"q":"ann"}`})
			res, fin := runOnce(t, r, "s")
			if fin.Status != runtime.StatusCompleted {
				t.Fatalf("run %s: %+v", fin.Status, fin.Error)
			}
			if res.Error == nil || res.Error.Kind != "tool_error" || !strings.Contains(res.Error.Message, c.want) {
				t.Fatalf("tool_result error %+v, want tool_error containing %q", res.Error, c.want)
			}
			if got := sw.hits.Load(); got != before {
				t.Errorf("the server got %d requests; a refused URL must not be reached", got-before)
			}
		})
	}
	if redirected.Load() == 0 {
		t.Error("the redirecting server was never asked: the redirect case proved nothing")
	}
}

// direct binds the program's tools over a pool, without a Runner.
func direct(t *testing.T, run string) (map[string]runtime.Tool, *mcpclient.Pool) {
	t.Helper()
	prog := runtimetest.CompileSource(t, "kb.agent", source(run))
	m, err := vm.New(prog, assemble.Funcs(prog, nil, func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	pool := mcpclient.NewPool(mcpclient.Config{Root: t.TempDir(), LookupEnv: func(k string) (string, bool) { return "Bearer x", k == "KB_TOKEN" }})
	tools := map[string]runtime.Tool{}
	if err := mcpclient.Bind(tools, m, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close(context.Background()) })
	return tools, pool
}

func call(ctx context.Context, tl runtime.Tool, args string) (string, error) {
	out, err := tl.Call(ctx, runtime.ToolRequest{CallID: "c", Args: json.RawMessage(args), IdempotencyKey: "k1"})
	return string(out), err
}

func kindOf(err error) vm.ErrorKind {
	var ve *vm.Error
	if errors.As(err, &ve) {
		return ve.Kind
	}
	return ""
}

func TestReconnectAfterDrop(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		sw := newSwap(&recorder{})
		hs := httptest.NewServer(sw)
		defer hs.Close()
		tools, _ := direct(t, httpRun(hs.URL))
		for i := range 3 {
			if i == 2 {
				sw.reset() // the server forgets the session
			}
			out, err := call(context.Background(), tools["lookup"], `{"q":"a"}`)
			if err != nil || out != `{"answer":"found a"}` {
				t.Fatalf("call %d: %s %v", i, out, err)
			}
		}
		sw.mu2.Lock()
		defer sw.mu2.Unlock()
		if n := len(sw.ids); n != 2 {
			t.Errorf("%d sessions used, want 2 (one reconnection)", n)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		tools, _ := direct(t, stdioRun(t))
		if out, err := call(context.Background(), tools["echo"], `{"q":"1"}`); err != nil || out != `"echo 1 2"` {
			t.Fatalf("first call: %s %v", out, err)
		}
		// The server process dies during the call: the read-only call is
		// sent once more on a new process, which dies too.
		if _, err := call(context.Background(), tools["exit"], `{"q":"1"}`); kindOf(err) != vm.KindUnavailable {
			t.Fatalf("exit: %v, want unavailable", err)
		}
		if out, err := call(context.Background(), tools["echo"], `{"q":"2"}`); err != nil || out != `"echo 2 2"` {
			t.Fatalf("after the drop: %s %v", out, err)
		}
	})
}

// TestRunnerCloseStopsServer: Runner.Close ends the stdio server's
// process (and with it the session's goroutine).
func TestRunnerCloseStopsServer(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	b, _ := json.Marshal(pidfile)
	prog := runtimetest.CompileSource(t, "kb.agent", source(stdioRun(t, `PIDFILE: `+string(b))))
	r, err := assemble.New(memstore.New(), assemble.Options{Program: prog, Verified: true, Root: t.TempDir(),
		Env: func(string) (string, bool) { return "", false }, Models: map[string]runtime.Model{"fast": &model{tool: "echo", args: `{"q":"a"}`}}, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, fin := runOnce(t, r, "s"); fin.Status != runtime.StatusCompleted {
		t.Fatalf("run %s", fin.Status)
	}
	raw, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server is not running before close: %v", err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server process %d after Runner.Close: %v, want gone", pid, err)
	}
}

// TestDropRetriesOnlySafeCalls: a call whose server dies before answering
// is sent again on a new session only when repeating it is safe.
func TestDropRetriesOnlySafeCalls(t *testing.T) {
	for _, c := range []struct {
		tool   string
		starts int
	}{{"exit", 2}, {"exit_write", 1}} {
		t.Run(c.tool, func(t *testing.T) {
			starts := filepath.Join(t.TempDir(), "starts")
			b, _ := json.Marshal(starts)
			tools, _ := direct(t, stdioRun(t, `STARTS: `+string(b)))
			if _, err := call(context.Background(), tools[c.tool], `{"q":"1"}`); kindOf(err) != vm.KindUnavailable {
				t.Fatalf("%s: %v, want unavailable", c.tool, err)
			}
			raw, err := os.ReadFile(starts)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(raw), "\n"); n != c.starts {
				t.Errorf("%d server processes started, want %d", n, c.starts)
			}
		})
	}
}

func TestCancellationReachesServer(t *testing.T) {
	rec := &recorder{started: make(chan struct{}), canceled: make(chan struct{})}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	tools, _ := direct(t, httpRun(hs.URL))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { // owned by the test: ends when the call returns
		_, err := call(ctx, tools["slow"], `{"q":"a"}`)
		done <- err
	}()
	select {
	case <-rec.started:
	case <-time.After(10 * time.Second):
		t.Fatal("slow never started")
	}
	cancel()
	if err := <-done; kindOf(err) != vm.KindCanceled {
		t.Errorf("canceled call: %v, want canceled", err)
	}
	select {
	case <-rec.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was not canceled")
	}
}

func TestTimeoutAndClose(t *testing.T) {
	rec := &recorder{started: make(chan struct{}), canceled: make(chan struct{})}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	tools, pool := direct(t, httpRun(hs.URL))
	start := time.Now()
	if _, err := call(context.Background(), tools["hang"], `{"q":"a"}`); kindOf(err) != vm.KindTimeout {
		t.Fatalf("hang: %v, want timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the 200ms tool timeout took %s", d)
	}
	select {
	case <-rec.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was not canceled at the timeout")
	}
	if err := pool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A closed pool does not open another session.
	before := len(sw.ids)
	if _, err := call(context.Background(), tools["echo"], `{"q":"a"}`); kindOf(err) != vm.KindUnavailable || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("call after close: %v, want unavailable (closed)", err)
	}
	if len(sw.ids) != before {
		t.Error("a call after close opened a session")
	}
}

func TestBindRejects(t *testing.T) {
	prog := runtimetest.CompileSource(t, "kb.agent", source(`url = env("KB_URL")`))
	m, err := vm.New(prog, assemble.Funcs(prog, nil, func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	pool := mcpclient.NewPool(mcpclient.Config{})
	defer pool.Close(context.Background())
	err = mcpclient.Bind(map[string]runtime.Tool{}, m, pool)
	if err == nil || !strings.Contains(err.Error(), "KB_URL") {
		t.Fatalf("bind with KB_URL unset: %v, want an error naming it", err)
	}
	// A closed pool refuses to bind.
	_ = pool.Close(context.Background())
	if err := mcpclient.Bind(map[string]runtime.Tool{}, m, pool); err == nil {
		t.Fatal("bind on a closed pool succeeded")
	}
}

// BenchmarkCall: one tools/call on an open session, with the result
// decoded as the output type.
func BenchmarkCall(b *testing.B) {
	sw := newSwap(&recorder{})
	hs := httptest.NewServer(sw)
	defer hs.Close()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	q, _ := json.Marshal(exe)
	for _, tr := range []struct{ name, run string }{
		{"http", httpRun(hs.URL)},
		{"stdio", `command = [` + string(q) + `], env = { ` + helperEnv + `: "stdio" }`},
	} {
		b.Run(tr.name, func(b *testing.B) {
			prog := runtimetest.CompileSource(b, "kb.agent", source(tr.run))
			m, err := vm.New(prog, assemble.Funcs(prog, nil, func(k string) (string, bool) { return "x", k == "KB_TOKEN" }))
			if err != nil {
				b.Fatal(err)
			}
			pool := mcpclient.NewPool(mcpclient.Config{Root: b.TempDir()})
			defer pool.Close(context.Background())
			tools := map[string]runtime.Tool{}
			if err := mcpclient.Bind(tools, m, pool); err != nil {
				b.Fatal(err)
			}
			if _, err := call(context.Background(), tools["lookup"], `{"q":"a"}`); err != nil {
				b.Fatal(err) // opens the session
			}
			b.ResetTimer()
			for range b.N {
				if _, err := call(context.Background(), tools["lookup"], `{"q":"a"}`); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTraceparentReachesMCPServer: with tracing on, a tools/call over
// streamable HTTP carries the W3C trace context of its tool call span in
// its traceparent header and in the request's _meta (the OpenTelemetry
// MCP conventions), for a server that reads either.
func TestTraceparentReachesMCPServer(t *testing.T) {
	rec := &recorder{}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	prog := runtimetest.CompileSource(t, "kb.agent", source(httpRun(hs.URL)))
	env := map[string]string{"KB_TOKEN": "Bearer s3cret", "AGENTC_ALLOW_HOSTS": "127.0.0.1:*"}
	r, err := assemble.New(memstore.New(), assemble.Options{Program: prog, Verified: true, Root: t.TempDir(),
		Env:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Models: map[string]runtime.Model{"fast": &model{tool: "lookup", args: `{"q":"ann"}`}}, Warn: func(string) {},
		Observer: telemetry.New(tp, nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	res, fin := runOnce(t, r, "s")
	if fin.Status != runtime.StatusCompleted || res.Error != nil {
		t.Fatalf("run %s, tool_result %+v", fin.Status, res)
	}
	var want string
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool lookup" {
			want = "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
		}
	}
	if want == "" {
		t.Fatal("no execute_tool lookup span")
	}
	sw.mu2.Lock()
	tps := slices.Clone(sw.tps)
	sw.mu2.Unlock()
	if !slices.Contains(tps, want) {
		t.Errorf("traceparent headers %q, want one of the tool call span %s", tps, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.metas) != 1 || rec.metas[0]["traceparent"] != want {
		t.Errorf("_meta %v, want traceparent %s", rec.metas, want)
	}
}

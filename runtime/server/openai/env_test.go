package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

const echoSource = `workflow echo "Echoes the user"

model m { provider = openai, name = "x" }

agent echo llm "Echoes the message" { model = m }
`

// echoModel streams "echo: <last user message>" in three pieces. A
// message containing "block" streams "waiting" and then waits for gate (or
// cancellation); one containing "fail" fails with a model_error.
// A request with a response schema gets {"ok": true, "reason": "<input>"}.
// Every request is kept (requests).
type echoModel struct {
	gate    chan struct{}
	started chan struct{} // receives once per blocking call, after its first delta

	mu   sync.Mutex
	seen []runtime.ModelRequest
}

// requests returns the requests the model received, in order.
func (m *echoModel) requests() []runtime.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

func (m *echoModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "m", Provider: "test", Model: "test:echo"}
}

func (m *echoModel) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	m.mu.Lock()
	m.seen = append(m.seen, *req)
	m.mu.Unlock()
	in := ""
	for _, msg := range req.Messages {
		if msg.Role == runtime.RoleUser {
			in = msg.Content
		}
	}
	if r := clientToolReply(req, in); r != nil {
		return r, nil
	}
	if req.ResponseSchema != nil {
		b, _ := json.Marshal(map[string]any{"ok": true, "reason": in})
		return &runtime.ModelResponse{Text: string(b), FinishReason: "stop", Model: "test:echo"}, nil
	}
	switch {
	case strings.Contains(in, "huge"):
		piece := strings.Repeat("x", 64<<10)
		for range 2048 { // 128 MiB: more than the loopback socket buffers hold (tcp_rmem may grow to 32 MiB, tcp_wmem to 4)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			onDelta(piece)
		}
		return &runtime.ModelResponse{Text: "huge", FinishReason: "stop"}, nil
	case strings.Contains(in, "fail"):
		return nil, runtime.Errorf(vm.KindModelError, "the model refuses")
	case strings.Contains(in, "block"):
		onDelta("waiting")
		select {
		case m.started <- struct{}{}:
		default:
		}
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := "echo: " + in
	if onDelta != nil {
		third := len(out) / 3
		onDelta(out[:third])
		onDelta(out[third : 2*third])
		onDelta(out[2*third:])
	}
	return &runtime.ModelResponse{Text: out, FinishReason: "stop", Model: "test:echo", Usage: runtime.Usage{PromptTokens: 3, CompletionTokens: 5, CachedTokens: 2}}, nil
}

// clientToolReply plays a model with a client tool get_weather: after tool
// results it answers "tools said: <results>"; a message asking for the
// "weather" calls get_weather for Paris (and Rome when it says "two"),
// with the text "Let me check."; nil otherwise.
func clientToolReply(req *runtime.ModelRequest, in string) *runtime.ModelResponse {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == runtime.RoleTool {
		var said []string
		for i := n - 1; i >= 0 && req.Messages[i].Role == runtime.RoleTool; i-- {
			said = append([]string{req.Messages[i].Name + "=" + req.Messages[i].Content}, said...)
		}
		return &runtime.ModelResponse{Text: "tools said: " + strings.Join(said, ", "), FinishReason: "stop", Model: "test:echo"}
	}
	if !strings.Contains(in, "weather") || !slices.ContainsFunc(req.Tools, func(t runtime.ToolSpec) bool { return t.Name == "get_weather" }) {
		return nil
	}
	calls := []runtime.ToolCall{{ID: "m1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}
	if strings.Contains(in, "two") {
		calls = append(calls, runtime.ToolCall{ID: "m2", Name: "get_weather", Args: json.RawMessage(`{"city":"Rome"}`)})
	}
	return &runtime.ModelResponse{Text: "Let me check.", ToolCalls: calls, FinishReason: "tool_calls", Model: "test:echo"}
}

// env is a whole server on 127.0.0.1 with tokens for alice and bob.
type env struct {
	t       *testing.T
	url     string
	b       *server.Backend
	srv     *server.Server
	model   *echoModel
	served  chan error
	stopped bool
}

const (
	aliceToken = "tok-alice"
	bobToken   = "tok-bob"
)

type envOpts struct {
	support bool // serve examples/support instead of the echo agent
	limits  server.Limits
	all     bool                    // also mount AG-UI at /agui and A2A at /a2a
	source  string                  // serve this program (its model m is the echo model) instead of the echo agent
	tools   map[string]runtime.Tool // the tools of source
}

func compileSource(t *testing.T, fsys fstest.MapFS, root string) *bytecode.Program {
	t.Helper()
	return runtimetest.Compile(t, fsys, root)
}

func compileSupport(t *testing.T) (*bytecode.Program, map[string]runtime.Model, map[string]runtime.Tool) {
	t.Helper()
	cfg := compiler.Config{FS: os.DirFS("../../../examples"), Root: ".", Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, path.Join("support", "support.agent"))
	if n, _ := diag.CountErrors(ds); n > 0 {
		t.Fatalf("load: %v", ds)
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	if prog == nil {
		t.Fatalf("compile: %v", ds)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile("../../../examples/support/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fx, err := model.LoadFixture("expired.yaml", read("expired.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]runtime.Model{}
	for _, md := range prog.Models {
		models[md.Name] = model.NewScripted(runtime.ModelInfo{Name: md.Name}, fx)
	}
	tools := map[string]runtime.Tool{}
	for _, tl := range prog.Tools {
		data := []byte("version: 1\ntool: " + tl.Name + "\nresults:\n  - match: {}\n    error: {kind: tool_error, message: not scripted}\n")
		if b, err := os.ReadFile("../../../examples/support/testdata/" + tl.Name + ".yaml"); err == nil {
			data = b
		}
		tfx, err := model.LoadToolFixture(tl.Name+".yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		name := tl.Name
		if tl.Impl.Kind == bytecode.ImplBuiltin {
			name = tl.Impl.Builtin
		}
		tools[name] = model.NewScriptedTool(runtime.ToolSpec{Name: tl.Name}, runtime.Effect(tl.Effect), tfx)
	}
	return prog, models, tools
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	var (
		prog   *bytecode.Program
		models map[string]runtime.Model
		tools  map[string]runtime.Tool
	)
	em := &echoModel{gate: make(chan struct{}), started: make(chan struct{}, 16)}
	switch {
	case o.support:
		prog, models, tools = compileSupport(t)
	case o.source != "":
		prog = compileSource(t, fstest.MapFS{"app.agent": {Data: []byte(o.source)}}, "app.agent")
		models, tools = map[string]runtime.Model{"m": em}, o.tools
	default:
		prog = compileSource(t, fstest.MapFS{"echo.agent": {Data: []byte(echoSource)}}, "echo.agent")
		models = map[string]runtime.Model{"m": em}
	}
	funcs := vm.Builtins()
	for _, name := range prog.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	st := memory.New()
	clock := &runtimetest.Clock{RealTimers: true}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: models, Tools: tools, Funcs: funcs,
		Clock: clock, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids atomic.Uint64
	b := &server.Backend{
		Runner: r, Docs: st, Sessions: session.New(st), Clock: clock,
		NewID:  func(p string) string { return fmt.Sprintf("%s%06d", p, ids.Add(1)) },
		Limits: o.limits, Metrics: server.NewMetrics(),
	}
	h := openai.New(b, openai.Options{})
	mounts := []server.Mount{h.Mount()}
	var closers []func(context.Context) error
	if o.all {
		ag := agui.New(b, agui.Options{})
		ah := a2a.New(b, a2a.Options{})
		mounts = append(mounts, server.Mount{Pattern: "/agui", Protocol: "agui", Handler: ag},
			server.Mount{Pattern: ah.Path(), Protocol: a2a.Proto, Handler: ah},
			server.Mount{Pattern: a2a.CardPath, Protocol: a2a.Proto, Handler: ah.CardHandler(), Public: true})
		closers = append(closers, ah.Close)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Mounts: mounts, Closers: closers, Store: st,
		Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}, ShutdownGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: "http://" + l.Addr().String(), b: b, srv: srv, model: em, served: make(chan error, 1)}
	go func() { e.served <- srv.Serve(l) }()
	t.Cleanup(e.stop)
	return e
}

// stop shuts the server down and checks that Serve returned.
func (e *env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		e.t.Errorf("shutdown: %v", err)
	}
	if err := <-e.served; err != nil {
		e.t.Errorf("serve: %v", err)
	}
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(method, p, token string, body string, headers ...string) response {
	e.t.Helper()
	r, err := e.send(method, p, token, body, headers...)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// send is do without failing the test, for other goroutines.
func (e *env) send(method, p, token string, body string, headers ...string) (response, error) {
	req, err := http.NewRequest(method, e.url+p, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// chatAsync sends a chat request from another goroutine; a transport error
// comes back as status 0 with the error as the body.
func (e *env) chatAsync(token, body string, headers ...string) <-chan response {
	ch := make(chan response, 1)
	go func() {
		r, err := e.send("POST", "/v1/chat/completions", token, body, headers...)
		if err != nil {
			r = response{body: []byte(err.Error())}
		}
		ch <- r
	}()
	return ch
}

func (e *env) chat(token, body string, headers ...string) response {
	e.t.Helper()
	return e.do("POST", "/v1/chat/completions", token, body, headers...)
}

func chatBody(model string, stream bool, messages ...string) string {
	var ms []map[string]string
	for i := 0; i+1 < len(messages); i += 2 {
		ms = append(ms, map[string]string{"role": messages[i], "content": messages[i+1]})
	}
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "messages": ms})
	return string(b)
}

// apiError decodes an OpenAI error body and checks its exact shape.
func apiError(t *testing.T, body []byte) (typ, param, code, message string) {
	t.Helper()
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil || len(outer) != 1 || outer["error"] == nil {
		t.Fatalf("not an error object: %s", body)
	}
	var inner map[string]*string
	if err := json.Unmarshal(outer["error"], &inner); err != nil {
		t.Fatalf("error is not an object of strings and nulls: %s", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := inner[k]; !ok {
			t.Fatalf("error has no %q member: %s", k, body)
		}
	}
	if len(inner) != 4 || inner["message"] == nil || inner["type"] == nil {
		t.Fatalf("error members: want exactly message, type, param, code with message and type set: %s", body)
	}
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return s(inner["type"]), s(inner["param"]), s(inner["code"]), s(inner["message"])
}

// frames splits an SSE body into its data payloads, checking LF framing.
func frames(t *testing.T, body []byte) []string {
	t.Helper()
	if bytes.Contains(body, []byte("\r")) {
		t.Fatalf("CR in the stream: %q", body)
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var out []string
	for _, f := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		d, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.Contains(d, "\n") {
			t.Fatalf("frame is not one data line: %q", f)
		}
		out = append(out, d)
	}
	return out
}

// waitIdle waits until the backend runs nothing.
func (e *env) waitIdle() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.b.Running() > 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d runs still in flight", e.b.Running())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

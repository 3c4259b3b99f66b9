package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/mcp"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

const source = `workflow desk "Answers questions; asks before publishing"

model m { provider = openai, name = "x" }

type Decision { approved: bool, note: string? }

type Question { question: string, urgent: bool = false }

agent echo llm "Echoes the message" { model = m }

state Ticket {
  question : string
  answer   : string = ""
  decision : Decision?
}

graph answer(Ticket) input question output answer {
  node write   = llm echo { prompt = "{question}" } into answer
  node approve = interrupt "Publish this answer?" returns Decision into decision
  node publish = set { answer = "published: {answer}" }
  start   -> write
  write   -> approve when question == "publish"
  write   -> end     otherwise
  approve -> publish
  publish -> end
}

state Ask {
  q      : Question
  answer : string = ""
}

graph ask(Ask) input q output answer {
  node write = llm echo { prompt = "{q.question}" } into answer
  start -> write
  write -> end
}
`

// echoModel answers "echo: <last user message>"; a message containing
// "block" waits until its context ends.
type echoModel struct{}

func (echoModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "m", Provider: "test", Model: "test:echo"}
}

func (echoModel) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	in := ""
	for _, msg := range req.Messages {
		if msg.Role == runtime.RoleUser {
			in = msg.Content
		}
	}
	if strings.Contains(in, "block") {
		<-ctx.Done() // until the call is canceled
		return nil, ctx.Err()
	}
	return &runtime.ModelResponse{Text: "echo: " + in, FinishReason: "stop", Model: "test:echo"}, nil
}

const (
	aliceToken = "tok-alice"
	bobToken   = "tok-bob"
)

type env struct {
	t   testing.TB
	url string
	h   *mcp.Handler
	b   *server.Backend
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOf(t, newBackend(t, source, nil))
}

// newEnvOf serves b's program over /mcp.
func newEnvOf(t testing.TB, b *server.Backend) *env {
	t.Helper()
	h, err := mcp.New(b, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Mounts: []server.Mount{h.Mount()}, Store: b.Docs.(*memory.Store),
		Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &env{t: t, url: ts.URL, h: h, b: b}
}

// newBackend compiles src (its model m is the echo model; tools, when
// given, implement its tools) into a Backend over a memory store.
func newBackend(t testing.TB, src string, tools map[string]runtime.Tool) *server.Backend {
	t.Helper()
	prog := runtimetest.Compile(t, fstest.MapFS{"desk.agent": {Data: []byte(src)}}, "desk.agent")
	funcs := vm.Builtins()
	for _, name := range prog.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	st := memory.New()
	clock := &runtimetest.Clock{RealTimers: true}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"m": echoModel{}},
		Tools: tools, Funcs: funcs, Clock: clock, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids atomic.Uint64
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock,
		NewID:   func(p string) string { return fmt.Sprintf("%s%06d", p, ids.Add(1)) },
		Metrics: server.NewMetrics(), Limits: server.Limits{MaxBodyBytes: 64 << 10}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return b
}

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a client session as the token's user.
func (e *env) connect(token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	tr := &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, tr, nil)
}

func (e *env) session(token string, opts *sdk.ClientOptions) *sdk.ClientSession {
	e.t.Helper()
	cs, err := e.connect(token, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s: %v", p.Name, err)
	}
	var sc map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &sc)
	return res, sc
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestListTools(t *testing.T) {
	e := newEnv(t)
	cs := e.session(aliceToken, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	schemas := map[string]string{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		b, _ := json.Marshal(tl.InputSchema)
		schemas[tl.Name] = string(b)
		if tl.OutputSchema == nil {
			t.Errorf("%s has no output schema", tl.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"agentc_resume", "answer", "ask", "echo"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	tests := []struct{ tool, want string }{
		{"echo", `{"additionalProperties":false,"properties":{"input":{"description":"the input","type":"string"}},"required":["input"],"type":"object"}`},
		{"ask", `{"additionalProperties":false,"properties":{"question":{"type":"string"},"urgent":{"default":false,"type":"boolean"}},"required":["question"],"type":"object"}`},
	}
	for _, tc := range tests {
		if schemas[tc.tool] != tc.want {
			t.Errorf("%s input schema\n%s\nwant\n%s", tc.tool, schemas[tc.tool], tc.want)
		}
	}
	for _, tl := range res.Tools {
		if tl.Name == "echo" && tl.Description != "Echoes the message" {
			t.Errorf("echo description %q", tl.Description)
		}
	}
}

func TestCallTool(t *testing.T) {
	e := newEnv(t)
	cs := e.session(aliceToken, nil)
	tests := []struct {
		name string
		tool string
		args any
		want string // text; the structured output is the same string
		err  string // for an isError result: a substring of its text
	}{
		{"text input", "echo", map[string]any{"input": "hello"}, "echo: hello", ""},
		{"record input", "ask", map[string]any{"question": "why?"}, "echo: why?", ""},
		{"graph", "answer", map[string]any{"input": "a question"}, "echo: a question", ""},
		{"wrong argument type", "echo", map[string]any{"input": 42}, "", "argument input must be a string"},
		{"unknown argument", "echo", map[string]any{"text": "x"}, "", `unknown argument "text"`},
		{"record missing field", "ask", map[string]any{"urgent": true}, "", "question"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, sc := call(t, cs, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if tc.err != "" {
				if !res.IsError || !strings.Contains(text(res), tc.err) {
					t.Fatalf("isError %v text %q, want an error containing %q", res.IsError, text(res), tc.err)
				}
				return
			}
			if res.IsError || text(res) != tc.want {
				t.Fatalf("isError %v text %q, want %q", res.IsError, text(res), tc.want)
			}
			run, _ := sc["run"].(string)
			if sc["status"] != "completed" || sc["output"] != tc.want || !strings.HasPrefix(run, "run_") {
				t.Fatalf("structured content %v", sc)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var msgs []string
	var last float64
	increasing := true
	cs := e.session(aliceToken, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if r.Params.ProgressToken != "tok-1" || r.Params.Progress <= last {
			increasing = false
		}
		last = r.Params.Progress
		msgs = append(msgs, r.Params.Message)
	}})
	p := &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "q"}}
	p.SetProgressToken("tok-1")
	res, _ := call(t, cs, p)
	if res.IsError {
		t.Fatal(text(res))
	}
	// The client handles notifications on its own goroutine: wait for them.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		got := slices.Contains(msgs, "finished write")
		mu.Unlock()
		if got || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !increasing || !slices.Contains(msgs, "started write") || !slices.Contains(msgs, "finished write") {
		t.Fatalf("progress %v (increasing %v)", msgs, increasing)
	}

	// Without a token, no notifications.
	msgs = nil
	mu.Unlock()
	call(t, cs, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "q"}})
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if len(msgs) != 0 {
		t.Fatalf("progress without a token: %v", msgs)
	}
}

func TestInterruptWithoutElicitation(t *testing.T) {
	e := newEnv(t)
	alice := e.session(aliceToken, nil)
	res, sc := call(t, alice, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "publish"}})
	run, _ := sc["run"].(string)
	if res.IsError || sc["status"] != "interrupted" || run == "" {
		t.Fatalf("isError %v structured %v", res.IsError, sc)
	}
	msg := text(res)
	for _, want := range []string{run, "answer/approve", "Publish this answer?", `"approved"`, mcp.ResumeTool} {
		if !strings.Contains(msg, want) {
			t.Errorf("text %q does not contain %q", msg, want)
		}
	}

	// Another user cannot see or answer the run.
	bob := e.session(bobToken, nil)
	res, sc = call(t, bob, &sdk.CallToolParams{Name: mcp.ResumeTool, Arguments: map[string]any{"run": run, "value": map[string]any{"approved": true}}})
	if !res.IsError || !strings.Contains(text(res), "there is no run") {
		t.Fatalf("bob resumed alice's run: %v %q %v", res.IsError, text(res), sc)
	}

	// A wrong answer leaves it waiting; the right one finishes it.
	res, _ = call(t, alice, &sdk.CallToolParams{Name: mcp.ResumeTool, Arguments: map[string]any{"run": run, "value": "yes"}})
	if !res.IsError || !strings.Contains(text(res), "does not fit") {
		t.Fatalf("wrong answer: %v %q", res.IsError, text(res))
	}
	res, sc = call(t, alice, &sdk.CallToolParams{Name: mcp.ResumeTool, Arguments: map[string]any{"run": run, "value": map[string]any{"approved": true}}})
	if res.IsError || sc["status"] != "completed" || text(res) != "published: echo: publish" {
		t.Fatalf("resume: %v %q %v", res.IsError, text(res), sc)
	}
	res, _ = call(t, alice, &sdk.CallToolParams{Name: mcp.ResumeTool, Arguments: map[string]any{"run": run, "value": map[string]any{"approved": true}}})
	if !res.IsError || !strings.Contains(text(res), "not waiting") {
		t.Fatalf("second resume: %v %q", res.IsError, text(res))
	}
}

func TestInterruptElicitation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		action string
		status string
		text   string
	}{
		{"accepted", "accept", "completed", "published: echo: publish"},
		{"declined", "decline", "interrupted", "was declined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			var schema string
			cs := e.session(aliceToken, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, r.Params.Message)
				b, _ := json.Marshal(r.Params.RequestedSchema)
				schema = string(b)
				if tc.action != "accept" {
					return &sdk.ElicitResult{Action: tc.action}, nil
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true, "note": "ok"}}, nil
			}})
			res, sc := call(t, cs, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "publish"}})
			if res.IsError || sc["status"] != tc.status || !strings.Contains(text(res), tc.text) {
				t.Fatalf("isError %v text %q structured %v", res.IsError, text(res), sc)
			}
			if len(asked) != 1 || asked[0] != "Publish this answer?" {
				t.Fatalf("elicitations %v", asked)
			}
			if want := `{"properties":{"approved":{"type":"boolean"},"note":{"type":"string"}},"required":["approved"],"type":"object"}`; schema != want {
				t.Fatalf("requested schema %s, want %s", schema, want)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	if _, err := e.connect("wrong", nil); err == nil {
		t.Fatal("connected with a wrong token")
	}
	resp, err := http.Post(e.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"jsonrpc":"2.0"`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

// post sends one raw request as token's user.
func (e *env) post(token, body string, headers ...string) (int, http.Header, string) {
	e.t.Helper()
	status, hd, b, err := e.send(token, body, headers...)
	if err != nil {
		e.t.Fatal(err)
	}
	return status, hd, b
}

// send is post returning the transport error.
func (e *env) send(token, body string, headers ...string) (int, http.Header, string, error) {
	req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), nil
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestProxiedHost: a reverse proxy on the same host (a loopback peer
// sending the public Host) is served, as on the other protocols.
func TestProxiedHost(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(initialize))
	req.Host = "agents.example.com"
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"protocolVersion"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestSessionBoundToUser(t *testing.T) {
	e := newEnv(t)
	status, hd, body := e.post(aliceToken, initialize)
	sid := hd.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if status, _, body := e.post(bobToken, list, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18"); status != http.StatusForbidden {
		t.Fatalf("bob in alice's session: %d %s", status, body)
	}
}

func TestMalformed(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, body string
		status     int // 0: any 4xx; -1: anything but a 5xx; -2: a JSON-RPC error
	}{
		{"not json", `{"jsonrpc":`, 0},
		{"not an object", `[1, 2`, 0},
		{"wrong types", `{"jsonrpc":"2.0","id":{},"method":7}`, 0},
		{"a response", `{"jsonrpc":"2.0","id":1}`, -1},
		{"tools/call before initialize", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, -2},
		{"big", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body, err := e.send(aliceToken, tc.body)
			if err != nil && tc.status == http.StatusRequestEntityTooLarge && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
				return // refused before its body was read: the connection closed under the client's write
			}
			if err != nil {
				t.Fatal(err)
			}
			bad := status >= 500 || tc.status == 0 && status < 400 || tc.status > 0 && status != tc.status ||
				tc.status == -2 && !strings.Contains(body, `"error":{"code"`)
			if bad {
				t.Fatalf("status %d: %s", status, body)
			}
		})
	}
	// A tools/call with arguments of the wrong shape in a session.
	_, hd, _ := e.post(aliceToken, initialize)
	sid := hd.Get("Mcp-Session-Id")
	e.post(aliceToken, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	status, _, body := e.post(aliceToken, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`,
		"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	if status != 200 || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "must be a JSON object") {
		t.Fatalf("array arguments: %d %s", status, body)
	}
	status, _, body = e.post(aliceToken, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`,
		"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	if status != 200 || !strings.Contains(body, `"error":{"code":-32602,"message":"unknown tool \"nope\""}`) {
		t.Fatalf("unknown tool: %d %s", status, body)
	}
	req, _ := http.NewRequest("GET", e.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	// The server still serves.
	cs := e.session(aliceToken, nil)
	if res, _ := call(t, cs, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": "still"}}); text(res) != "echo: still" {
		t.Fatalf("after malformed requests: %q", text(res))
	}
}

func TestStdio(t *testing.T) {
	e := newEnv(t)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.h.ServeStdio(ctx, "carol", sr, sw) }()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, sc := call(t, cs, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "publish"}})
	run, _ := sc["run"].(string)
	if res.IsError || sc["status"] != "interrupted" {
		t.Fatalf("%v %q", res.IsError, text(res))
	}
	res, _ = call(t, cs, &sdk.CallToolParams{Name: mcp.ResumeTool, Arguments: map[string]any{"run": run, "value": map[string]any{"approved": false}}})
	if res.IsError || text(res) != "published: echo: publish" {
		t.Fatalf("%v %q", res.IsError, text(res))
	}
	_ = cs.Close()
	_ = cw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return after the client closed")
	}
}

// TestStdioElicitation: over stdio, with the protocol version the SDK's
// client negotiates there, an interrupt is answered by an elicitation in
// the same call; a request state that is not the caller's run is refused.
func TestStdioElicitation(t *testing.T) {
	e := newEnv(t)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.h.ServeStdio(ctx, "carol", sr, sw) }()
	asked := 0
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked++
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
		}})
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, sc := call(t, cs, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "publish"}})
	if res.IsError || sc["status"] != "completed" || text(res) != "published: echo: publish" || asked != 1 {
		t.Fatalf("%v %q %v asked %d", res.IsError, text(res), sc, asked)
	}
	// A forged request state names no run of this user.
	res, _ = call(t, cs, &sdk.CallToolParams{Name: "answer", Arguments: map[string]any{"input": "x"}, RequestState: "run_forged"})
	if !res.IsError || !strings.Contains(text(res), "there is no run") {
		t.Fatalf("forged state: %v %q", res.IsError, text(res))
	}
	_ = cs.Close()
	_ = cw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestToolsOfPrograms: which runnables are tools, and when agentc_resume
// is listed.
func TestToolsOfPrograms(t *testing.T) {
	const head = "workflow w \"W\"\n\nmodel m { provider = openai, name = \"x\" }\n\nagent echo llm \"Echoes\" { model = m }\n\n"
	const sub = `state S { q: string, ok: bool = false, out: string = "" }

graph ask(S) input q output out {
  node a = interrupt "OK?" returns bool into ok
  start -> a
  a -> end
}

graph outer(S) input q output out {
  node inner = graph ask { q = q } into out
  start -> inner
  inner -> end
}
`
	tests := []struct {
		name, src string
		want      []string
		err       string
	}{
		{"one agent, no interrupt", head, []string{"echo"}, ""},
		{"serve block run", head + "serve { run = echo }\n", []string{"echo"}, ""},
		{"an interrupt in a sub-graph", head + sub + "serve { run = outer }\n", []string{"outer", mcp.ResumeTool}, ""},
		{"every runnable", head + sub, []string{"ask", "echo", "outer", mcp.ResumeTool}, ""},
		{"a runnable named like the resume tool", head + "agent agentc_resume llm \"R\" { model = m }\n", nil, "name of the resume tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := mcp.New(newBackend(t, tc.src, nil), mcp.Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Tools(); !slices.Equal(got, tc.want) {
				t.Fatalf("tools %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	cs := e.session(aliceToken, nil)
	call(t, cs, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": "m"}})
	call(t, cs, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": 1}})
	var b strings.Builder
	if _, err := e.b.Metrics.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`agentc_runs_started_total{protocol="mcp"} 1`, `agentc_runs_finished_total{protocol="mcp",status="completed"} 1`,
		`agentc_errors_total{protocol="mcp",code="invalid_arguments"} 1`, `agentc_http_requests_total{protocol="mcp",code="200"}`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, b.String())
		}
	}
}

// TestCancel: a client that cancels its call (notifications/cancelled)
// cancels the run; the run records its end and stays resumable.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	cs := e.session(aliceToken, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": "block"}}); err == nil {
		t.Fatal("a canceled call returned a result")
	}
	for deadline := time.Now().Add(5 * time.Second); e.b.Running() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running after the call was canceled", e.b.Running())
		}
	}
	runs, _, err := e.b.Docs.(*memory.Store).ListRuns(context.Background(), store.RunFilter{App: e.b.App(), User: "alice"})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunCanceled {
		t.Fatalf("runs %+v, %v: want one canceled run", runs, err)
	}
	// The session still serves.
	if res, _ := call(t, cs, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": "after"}}); text(res) != "echo: after" {
		t.Fatalf("after cancel: %q", text(res))
	}
}

// TestDisconnect: a client whose POST goes away (without sending
// notifications/cancelled) cancels the run it started.
func TestDisconnect(t *testing.T) {
	e := newEnv(t)
	_, hd, _ := e.post(aliceToken, initialize)
	sid := hd.Get("Mcp-Session-Id")
	e.post(aliceToken, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"input":"block"}}}`))
	for k, v := range map[string]string{"Authorization": "Bearer " + aliceToken, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18",
		"X-Agentc-Mcp-Request": "forged"} {
		req.Header.Set(k, v)
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body) // the stream stays open while the run blocks
			resp.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); e.b.Running() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request finished although its run blocks")
	}
	for deadline := time.Now().Add(5 * time.Second); e.b.Running() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running after the client went away", e.b.Running())
		}
	}
}

// BenchmarkCallTool: one tools/call of the echo agent over streamable
// HTTP (a run with one model call, memory store), through the whole
// server: authentication, the SDK, the run, the result.
func BenchmarkCallTool(b *testing.B) {
	e := newEnv(b)
	cs := e.session(aliceToken, nil)
	p := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"input": "bench"}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), p)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// reporter is a tool that reports its progress twice, then answers.
type reporter struct{}

func (reporter) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: "count"} }
func (reporter) Effect() runtime.Effect { return bytecode.EffectReadOnly }
func (reporter) Call(_ context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	for i := 1; i <= 2; i++ {
		req.Progress(runtime.ToolProgress{Progress: float64(i), Total: 2, Message: fmt.Sprintf("item %d", i)})
	}
	return json.RawMessage(`"counted"`), nil
}

// TestToolProgressForwarded: a tool's own progress (tool_progress events,
// an MCP server's notifications) reaches the client as progress of the
// call, after the node started and before it finished.
func TestToolProgressForwarded(t *testing.T) {
	const src = `workflow counter
tool count { input { q: string } effect = read_only run = builtin.http_fetch }
state S { q: string, out: string = "" }
graph tally(S) input q output out {
  node c = tool count { q = q } into out
  start -> c
  c -> end
}
`
	e := newEnvOf(t, newBackend(t, src, map[string]runtime.Tool{"count": reporter{}}))
	var mu sync.Mutex
	var msgs []string
	done := make(chan struct{})
	cs := e.session(aliceToken, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, r.Params.Message)
		if r.Params.Message == "finished c" {
			close(done)
		}
	}})
	p := &sdk.CallToolParams{Name: "tally", Arguments: map[string]any{"input": "q"}}
	p.SetProgressToken("tok-1")
	if res, _ := call(t, cs, p); res.IsError || text(res) != "counted" {
		t.Fatalf("call: %q", text(res))
	}
	select { // the client handles notifications on its own goroutine
	case <-done:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"started c", "tool count 1/2: item 1", "tool count 2/2: item 2", "finished c"}
	if !slices.Equal(msgs, want) {
		t.Fatalf("progress %q, want %q", msgs, want)
	}
}

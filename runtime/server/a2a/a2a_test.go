package a2a_test

// Tests drive the adapter over real HTTP on 127.0.0.1: a real Runner over
// the in-memory (or Pebble) store runs a program compiled from the source
// below, with the scripted model replaying a fixture. A test middleware
// authenticates "Authorization: Bearer <user>" as that user.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/telemetry"
	"github.com/agentc/agentc/vm"
)

const source = `workflow helpdesk "Answers questions; asks before publishing"

model fast { provider = openai, name = "gpt-4o-mini" }

type Decision { approved: bool, note: string? }

agent writer llm "Writes answers" { model = fast }

state Ticket {
  question : string
  answer   : string = ""
  decision : Decision?
}

graph answer(Ticket) input question output answer {
  node write   = llm writer { prompt = "Answer: {question}" } into answer
  node approve = interrupt "Publish this answer?" returns Decision into decision
  start   -> write
  write   -> approve when question == "publish the release notes"
  write   -> end     otherwise
  approve -> end
}

state Pair {
  question : string
  answer   : string = ""
  first    : bool = false
  second   : bool = false
}

graph pair(Pair) input question output answer {
  node ask    = set { answer = "asked" }
  node first  = interrupt "First approver?" returns bool into first
  node second = interrupt "Second approver?" returns bool into second
  node votes  = join all
  node both   = set { answer = "both answered" }
  start  -> ask
  ask    -> first
  ask    -> second
  first  -> votes
  second -> votes
  votes  -> both
  both   -> end
}

` + runtimetest.MapOfApprovals + `
state Nap { question: string, answer: string = "" }

graph nap(Nap) input question output answer {
  node rest = wait 20ms
  node done = set { answer = "rested" }
  start -> rest
  rest  -> done
  done  -> end
}

serve {
  run = answer
  a2a { path = "/a2a", name = "helpdesk", version = "2.1.0", skills = ["questions", "release-notes"] }
}
`

const fixture = `version: 1
model: fast
replies:
  - match: {input: "capital of France"}
    text: "Paris."
  - match: {input: "release notes"}
    text: "Release 2.1 fixes the login bug."
  - match: {input: "broken"}
    error: {kind: model_error, message: "scripted failure"}
default:
  text: "I have nothing scripted for this."
`

func compileProgram(t testing.TB) *bytecode.Program {
	t.Helper()
	return runtimetest.Compile(t, fstest.MapFS{"helpdesk.agent": {Data: []byte(source)}}, "helpdesk.agent")
}

// gateModel is the scripted model, except that a prompt containing "slow"
// waits until the run is canceled (or the gate opens).
type gateModel struct {
	runtime.Model
	started chan struct{}
	open    chan struct{}
}

func (g *gateModel) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "slow") {
		select {
		case g.started <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-g.open:
			return &runtime.ModelResponse{Text: "Finally done.", FinishReason: "stop", Model: "scripted:fast"}, nil
		}
	}
	return g.Model.Generate(ctx, req, onDelta)
}

var idSeq atomic.Int64 // ids unique across the envs of one test binary

type env struct {
	t       *testing.T
	st      store.Store
	runner  *runtime.Runner
	backend *server.Backend
	h       *a2a.Handler
	srv     *httptest.Server
	gate    *gateModel
	closed  bool
}

// newEnv serves the program over st. close closes the server, the
// handler and the runner (not the store).
func newEnv(t *testing.T, st store.Store) *env { return newEnvWith(t, st, nil) }

// newEnvWith is newEnv with the adapter's options changed by edit.
func newEnvWith(t *testing.T, st store.Store, edit func(*a2a.Options)) *env {
	t.Helper()
	// Later envs see later times.
	clock := &runtimetest.Clock{Start: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).Add(time.Duration(idSeq.Add(1_000_000)) * time.Millisecond)}
	return newEnvOf(t, st, clock, nil, edit)
}

// newEnvOf is newEnvWith on clock, one of the replicas rep says (nil: none).
func newEnvOf(t *testing.T, st store.Store, clock vm.Clock, rep *runtime.Replica, edit func(*a2a.Options)) *env {
	t.Helper()
	prog := compileProgram(t)
	fx, err := model.LoadFixture("fast.yaml", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	gate := &gateModel{Model: model.NewScripted(runtime.ModelInfo{Name: "fast"}, fx), started: make(chan struct{}, 1), open: make(chan struct{})}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"fast": gate},
		Clock: clock, Entropy: &runtimetest.Entropy{}, Replica: rep})
	if err != nil {
		t.Fatal(err)
	}
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock,
		NewID:   func(p string) string { return fmt.Sprintf("%s%08d", p, idSeq.Add(1)) },
		Metrics: server.NewMetrics()}
	opts, err := a2a.OptionsFromProgram(prog, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&opts)
	}
	h := a2a.New(b, opts)
	mux := http.NewServeMux()
	mux.Handle(a2a.CardPath, h.CardHandler())
	mux.Handle(h.Path(), auth(h))
	e := &env{t: t, st: st, runner: r, backend: b, h: h, srv: httptest.NewServer(mux), gate: gate}
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	if e.closed {
		return
	}
	e.closed = true
	e.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.h.Close(ctx); err != nil {
		e.t.Errorf("close handler: %v", err)
	}
	if err := e.runner.Close(ctx); err != nil {
		e.t.Errorf("close runner: %v", err)
	}
}

// auth stands in for the server's middleware: the bearer token is the user.
func auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || user == "" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// The trace context, as the server's middleware accepts it.
		ctx := telemetry.Extract(r.Context(), r.Header)
		next.ServeHTTP(w, r.WithContext(server.WithUser(ctx, user)))
	})
}

// post sends body to the JSON-RPC endpoint as user with the A2A-Version
// header ver ("" sends none).
func (e *env) post(user, ver string, body []byte) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/a2a", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+user)
	if ver != "" {
		req.Header.Set("A2A-Version", ver)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// rpcResp is a decoded JSON-RPC response.
type rpcResp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Data    []json.RawMessage `json:"data"`
	} `json:"error"`
}

var reqSeq atomic.Int64

func request(method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqSeq.Add(1), "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

// call makes one JSON-RPC call and decodes the answer.
func (e *env) call(user, ver, method string, params any) rpcResp {
	e.t.Helper()
	return e.raw(user, ver, request(method, params))
}

func (e *env) raw(user, ver string, body []byte) rpcResp {
	e.t.Helper()
	resp := e.post(user, ver, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("content type %q, body %s", ct, b)
	}
	var r rpcResp
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("response %s: %v", b, err)
	}
	if r.JSONRPC != "2.0" {
		e.t.Fatalf("jsonrpc %q in %s", r.JSONRPC, b)
	}
	return r
}

// ok returns the result of a call that must succeed.
func (e *env) ok(user, ver, method string, params any) map[string]any {
	e.t.Helper()
	r := e.call(user, ver, method, params)
	if r.Error != nil {
		e.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		e.t.Fatalf("%s: result %s: %v", method, r.Result, err)
	}
	return m
}

// fail makes a call that must fail with code and returns the error.
func (e *env) fail(user, ver, method string, params any, code int) rpcResp {
	e.t.Helper()
	r := e.call(user, ver, method, params)
	if r.Error == nil || r.Error.Code != code {
		e.t.Fatalf("%s: want error %d, got %+v result %s", method, code, r.Error, r.Result)
	}
	return r
}

// frame is one SSE frame.
type frame struct {
	event string
	resp  rpcResp
}

// sseReader reads SSE frames as they arrive.
type sseReader struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

// open starts a streaming call; the answer must be an SSE stream.
func (e *env) open(user, ver, method string, params any) *sseReader {
	e.t.Helper()
	resp := e.post(user, ver, request(method, params))
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("%s: content type %q, body %s", method, ct, b)
	}
	r := &sseReader{t: e.t, resp: resp, br: bufio.NewReader(resp.Body)}
	e.t.Cleanup(func() { resp.Body.Close() })
	return r
}

// next returns the next frame; false at the end of the stream.
func (r *sseReader) next() (frame, bool) {
	r.t.Helper()
	var f frame
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err == io.EOF && line == "" {
			if seen {
				r.t.Fatalf("unterminated SSE frame %+v", f)
			}
			return f, false
		}
		if err != nil {
			r.t.Fatalf("read SSE: %v (line %q)", err, line)
		}
		if strings.Contains(line, "\r") {
			r.t.Fatalf("CR in SSE line %q", line)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if !seen {
				r.t.Fatalf("empty SSE frame")
			}
			return f, true
		case strings.HasPrefix(line, "event: "):
			f.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f.resp); err != nil {
				r.t.Fatalf("frame %q: %v", line, err)
			}
		default:
			r.t.Fatalf("unexpected SSE line %q", line)
		}
		seen = true
	}
}

// stream makes a streaming call and reads every frame until the server
// closes the stream.
func (e *env) stream(user, ver, method string, params any) []frame {
	e.t.Helper()
	r := e.open(user, ver, method, params)
	var out []frame
	for {
		f, ok := r.next()
		if !ok {
			return out
		}
		if f.resp.JSONRPC != "2.0" {
			e.t.Fatalf("frame without jsonrpc 2.0: %+v", f)
		}
		out = append(out, f)
	}
}

func sessionKey(e *env, user, ctxID string) store.SessionKey {
	return store.SessionKey{App: e.backend.App(), User: user, Session: ctxID}
}

// taskRun is the run of user ana's task id.
func (e *env) taskRun(id string) string {
	e.t.Helper()
	run, err := e.st.LookupTask(e.t.Context(), "ana", id)
	if err != nil {
		e.t.Fatal(err)
	}
	return run
}

// ---- message builders ----------------------------------------------------

func msg1(text string, extra map[string]any) map[string]any {
	m := map[string]any{"messageId": fmt.Sprintf("m-%d", reqSeq.Add(1)), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	for k, v := range extra {
		m[k] = v
	}
	return map[string]any{"message": m}
}

func msg03(text string, extra map[string]any) map[string]any {
	m := map[string]any{"kind": "message", "messageId": fmt.Sprintf("m-%d", reqSeq.Add(1)), "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": text}}}
	for k, v := range extra {
		m[k] = v
	}
	return map[string]any{"message": m}
}

// get reads a nested member: path elements are keys or int indexes.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object: %v", p, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: not an array of more than %d: %v", p, k, v)
			}
			v = a[k]
		}
	}
	return v
}

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, _ := get(t, v, path...).(string)
	return s
}

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

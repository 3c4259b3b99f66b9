package agui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

// counterIDs returns a NewID that numbers ids: prefix + "n" + a counter.
func counterIDs() func(string) string {
	var n atomic.Int64
	return func(prefix string) string { return fmt.Sprintf("%sn%d", prefix, n.Add(1)) }
}

// hangModel wraps the scripted model: a call whose last message contains
// "hang" streams one piece, reports it on started, then waits for its
// context (the run's cancellation).
type hangModel struct {
	runtime.Model
	started chan struct{}
}

func (m *hangModel) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	if n := len(req.Messages); n > 0 && strings.Contains(req.Messages[n-1].Content, "hang") {
		onDelta("Thinking")
		select {
		case m.started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.Model.Generate(ctx, req, onDelta)
}

// harness is an AG-UI server on 127.0.0.1 over a real Runner, the in-memory
// store and the scripted model of testdata/app.
type harness struct {
	t       *testing.T
	srv     *httptest.Server
	b       *server.Backend
	st      *memory.Store
	started chan struct{} // a hanging model call began
	h       *handler
	header  http.Header // set on every request (e.g. Sec-Fetch-Mode)
}

// waitFree waits until no request streams on the user's thread (a lost
// run is drained and settled).
func (h *harness) waitFree(user, thread string) {
	h.t.Helper()
	for i := 0; h.h.reg.get(regKey{user, thread}) != nil; i++ {
		if i > 1000 {
			h.t.Fatalf("thread %s stays busy", thread)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newHarness(t *testing.T, runnable string, limits server.Limits) *harness {
	t.Helper()
	return newHarnessOn(t, runnable, limits, nil)
}

// threeCalls is a store without AdmitRun: its Runner admits a run in three
// writes (so the runId's record is reserved, then settled).
type threeCalls struct{ store.Store }

// newHarnessOn is newHarness whose Runner uses wrap(st) (nil: st).
func newHarnessOn(t *testing.T, runnable string, limits server.Limits, wrap func(*memory.Store) store.Store) *harness {
	t.Helper()
	prog := runtimetest.Compile(t, os.DirFS("testdata/app"), "app.agent")
	read := func(name string) []byte {
		b, err := os.ReadFile(path.Join("testdata/app", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fx, err := model.LoadFixture("fast.yaml", read("fast.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	fast := &hangModel{Model: model.NewScripted(runtime.ModelInfo{Name: "fast", Provider: "scripted", Model: "scripted:fast"}, fx), started: started}
	tfx, err := model.LoadToolFixture("lookup.yaml", read("lookup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]runtime.Tool{"lookup": model.NewScriptedTool(runtime.ToolSpec{Name: "lookup"}, runtime.ReadOnly, tfx)}
	funcs := vm.Builtins()
	for _, name := range prog.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	st := memory.New()
	var rst store.Store = st
	if wrap != nil {
		rst = wrap(st)
	}
	clock := &runtimetest.Clock{}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: rst, Program: prog, Models: map[string]runtime.Model{"fast": fast},
		Tools: tools, Funcs: funcs, Clock: clock, Entropy: &runtimetest.Entropy{}, App: "app"})
	if err != nil {
		t.Fatal(err)
	}
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock,
		NewID: counterIDs(), Limits: limits, Metrics: server.NewMetrics()}
	hd := New(b, Options{Runnable: runnable}).(*handler)
	mux := http.NewServeMux()
	mux.Handle("/agui", hd)
	mux.Handle("/agui/", hd)
	auth := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || user == "" {
			http.Error(w, `{"error":{"code":"unauthenticated"}}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, req.WithContext(server.WithUser(req.Context(), user)))
	})
	srv := httptest.NewServer(auth) // 127.0.0.1
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("runner close: %v", err)
		}
	})
	return &harness{t: t, srv: srv, b: b, st: st, started: started, h: hd}
}

// request posts body (a string, []byte or a value to marshal) as user to
// path (default /agui).
func (h *harness) request(ctx context.Context, user, p string, body any) *http.Response {
	h.t.Helper()
	var data []byte
	switch v := body.(type) {
	case string:
		data = []byte(v)
	case []byte:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	if p == "" {
		p = "/agui"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+p, bytes.NewReader(data))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+user)
	for k, v := range h.header {
		req.Header[k] = v
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// run posts a RunAgentInput and returns the verified event stream.
func (h *harness) run(user string, in map[string]any) []map[string]any {
	h.t.Helper()
	resp := h.request(context.Background(), user, "", in)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		h.t.Fatalf("content type %q", ct)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	evs := parseSSE(h.t, raw)
	verifyStream(h.t, evs, in["threadId"].(string), in["runId"].(string))
	return evs
}

// input builds a RunAgentInput.
func input(thread, run string, messages ...map[string]any) map[string]any {
	if messages == nil {
		messages = []map[string]any{}
	}
	return map[string]any{"threadId": thread, "runId": run, "messages": messages, "tools": []any{}, "context": []any{},
		"state": map[string]any{}, "forwardedProps": map[string]any{}, "protocolVersion": "1.0"}
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

// parseSSE splits a body into frames exactly as the AG-UI client does
// (on "\n\n", data lines only) and requires each to be one JSON object
// with a type.
func parseSSE(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	if bytes.Contains(raw, []byte("\r")) {
		t.Fatalf("CR in the stream: %q", raw)
	}
	if len(raw) > 0 && !bytes.HasSuffix(raw, []byte("\n\n")) {
		t.Fatalf("the stream does not end with a complete frame: %q", raw)
	}
	var out []map[string]any
	for _, frame := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		if frame == "" {
			continue
		}
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("frame is not one data line: %q", frame)
		}
		var ev map[string]any
		d := json.NewDecoder(strings.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		if s, _ := ev["type"].(string); s == "" {
			t.Fatalf("frame without a type: %q", frame)
		}
		out = append(out, ev)
	}
	return out
}

// verifyStream checks the rules the official client's verifier enforces
// (research/protocols.md §1.4) plus the ones only the probe checks: ids
// echoed, the stream closed by RUN_FINISHED or RUN_ERROR, no null optional
// member, integer timestamps.
func verifyStream(t *testing.T, evs []map[string]any, thread, run string) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	texts, calls, steps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	ended := false
	for i, ev := range evs {
		typ := ev["type"].(string)
		for k, v := range ev {
			if v == nil {
				t.Fatalf("event %d %s: member %s is null", i, typ, k)
			}
		}
		if ts, ok := ev["timestamp"]; ok {
			if _, err := ts.(json.Number).Int64(); err != nil {
				t.Fatalf("event %d: timestamp %v is not an integer", i, ts)
			}
		}
		if ended {
			t.Fatalf("event %d %s after the run ended", i, typ)
		}
		if i == 0 && typ != RunStarted && typ != RunError {
			t.Fatalf("first event %s", typ)
		}
		str := func(k string) string {
			s, ok := ev[k].(string)
			if !ok || s == "" {
				t.Fatalf("event %d %s: %s missing: %v", i, typ, k, ev)
			}
			return s
		}
		switch typ {
		case RunStarted:
			if i != 0 || str("threadId") != thread || str("runId") != run {
				t.Fatalf("RUN_STARTED %v", ev)
			}
		case TextMessageStart:
			id := str("messageId")
			if texts[id] {
				t.Fatalf("text %s started twice", id)
			}
			texts[id] = true
		case TextMessageContent, TextMessageEnd:
			id := str("messageId")
			if !texts[id] {
				t.Fatalf("%s for a text that is not open: %v", typ, ev)
			}
			if typ == TextMessageEnd {
				delete(texts, id)
			} else {
				str("delta")
			}
		case ToolCallStart:
			id := str("toolCallId")
			str("toolCallName")
			if calls[id] {
				t.Fatalf("tool call %s started twice", id)
			}
			calls[id] = true
		case ToolCallArgs, ToolCallEnd:
			id := str("toolCallId")
			if !calls[id] {
				t.Fatalf("%s for a call that is not open: %v", typ, ev)
			}
			if typ == ToolCallEnd {
				delete(calls, id)
			}
		case ToolCallResult:
			str("messageId")
			str("toolCallId")
			str("content")
		case StepStarted:
			n := str("stepName")
			if steps[n] {
				t.Fatalf("step %s started twice", n)
			}
			steps[n] = true
		case StepFinished:
			n := str("stepName")
			if !steps[n] {
				t.Fatalf("step %s finished but not started", n)
			}
			delete(steps, n)
		case StateDelta:
			if _, ok := ev["delta"].([]any); !ok {
				t.Fatalf("STATE_DELTA delta %v", ev["delta"])
			}
		case StateSnapshot:
			if _, ok := ev["snapshot"]; !ok {
				t.Fatal("STATE_SNAPSHOT without snapshot")
			}
		case RunFinished:
			if str("threadId") != thread || str("runId") != run {
				t.Fatalf("RUN_FINISHED ids %v", ev)
			}
			if len(texts)+len(calls)+len(steps) > 0 {
				t.Fatalf("RUN_FINISHED with open texts %v calls %v steps %v", texts, calls, steps)
			}
			ended = true
		case RunError:
			str("message")
			ended = true
		}
	}
	if !ended {
		t.Fatalf("the stream ended without RUN_FINISHED or RUN_ERROR: last %v", evs[len(evs)-1])
	}
}

// ofType returns the events of a type.
func ofType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

func typesOf(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev["type"].(string)
	}
	return out
}

// text concatenates the TEXT_MESSAGE_CONTENT deltas of a stream.
func text(evs []map[string]any) string {
	var b strings.Builder
	for _, ev := range ofType(evs, TextMessageContent) {
		b.WriteString(ev["delta"].(string))
	}
	return b.String()
}

// last returns the last event.
func last(evs []map[string]any) map[string]any { return evs[len(evs)-1] }

// readFrames reads SSE frames from a live body and sends each event on the
// returned channel until the body ends; the goroutine ends with the body.
func readFrames(t *testing.T, body io.Reader, wg *sync.WaitGroup) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("frame %q: %v", line, err)
				return
			}
			out <- ev
		}
	}()
	return out
}

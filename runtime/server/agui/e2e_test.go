package agui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

func TestTextRun(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "hi")))
	want := []string{RunStarted, StateSnapshot, StepStarted, TextMessageStart, TextMessageContent, TextMessageContent,
		TextMessageContent, TextMessageEnd, StepFinished, StateDelta, RunFinished}
	if got := typesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if got := text(evs); got != "Hello there, friend." {
		t.Fatalf("text %q", got)
	}
	fin := last(evs)
	if fin["outcome"].(map[string]any)["type"] != "success" || fin["result"] != "Hello there, friend." {
		t.Fatalf("RUN_FINISHED %v", fin)
	}
	// A second turn on the same thread: the same session, fresh ids.
	first := ofType(evs, TextMessageStart)[0]["messageId"]
	evs2 := h.run("ana", input("t1", "r2", userMsg("m1", "hi"), map[string]any{"id": first, "role": "assistant", "content": "Hello there, friend."},
		userMsg("m2", "again")))
	if second := ofType(evs2, TextMessageStart)[0]["messageId"]; second == first {
		t.Fatalf("message id %v reused", second)
	}
	runs, err := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: "ana", Session: "t1"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs of the thread: %v %v", runs, err)
	}
}

func TestToolCallRun(t *testing.T) {
	h := newHarness(t, "scanner", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "check example.com")))
	starts := ofType(evs, ToolCallStart)
	if len(starts) != 1 || starts[0]["toolCallName"] != "lookup" {
		t.Fatalf("TOOL_CALL_START %v", starts)
	}
	id := starts[0]["toolCallId"].(string)
	if id == "call_1" {
		t.Fatal("the model's call id leaked: AG-UI ids are fresh per run")
	}
	var args strings.Builder
	for _, ev := range ofType(evs, ToolCallArgs) {
		args.WriteString(ev["delta"].(string))
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(args.String()), &a); err != nil || a["host"] != "example.com" {
		t.Fatalf("args %q: %v", args.String(), err)
	}
	res := ofType(evs, ToolCallResult)
	if len(res) != 1 || res[0]["toolCallId"] != id || res[0]["role"] != "tool" || !strings.Contains(res[0]["content"].(string), `"ok":true`) {
		t.Fatalf("TOOL_CALL_RESULT %v", res)
	}
	order := typesOf(evs)
	if i, j := slices.Index(order, ToolCallEnd), slices.Index(order, ToolCallResult); i < 0 || i > j {
		t.Fatalf("TOOL_CALL_END after the result: %v", order)
	}
	if got := text(evs); got != "example.com looks fine." {
		t.Fatalf("text %q", got)
	}
	if last(evs)["type"] != RunFinished {
		t.Fatalf("last %v", last(evs))
	}
}

// applyPatch applies the JSON Patch operations this adapter emits (add and
// replace of a member or an array end) to a state.
func applyPatch(t *testing.T, state map[string]any, ops []any) {
	t.Helper()
	for _, o := range ops {
		op := o.(map[string]any)
		parts := strings.Split(strings.TrimPrefix(op["path"].(string), "/"), "/")
		switch {
		case len(parts) == 1 && (op["op"] == "add" || op["op"] == "replace"):
			if _, ok := state[parts[0]]; op["op"] == "replace" && !ok {
				t.Fatalf("replace of a missing member %s", parts[0])
			}
			state[parts[0]] = op["value"]
		case len(parts) == 2 && parts[1] == "-" && op["op"] == "add":
			state[parts[0]] = append(state[parts[0]].([]any), op["value"])
		default:
			t.Fatalf("unexpected op %v", op)
		}
	}
}

// TestNewRunSnapshots: every new run's first snapshot holds its own input
// over the state's defaults, whatever runs came before it.
func TestNewRunSnapshots(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	for i, host := range []string{"example.com", "example.org", "example.net"} {
		evs := h.run("ana", input(fmt.Sprint("t", i), fmt.Sprint("r", i), userMsg("m1", host)))
		want := map[string]any{"question": host, "host": "", "notes": []any{}, "report": ""}
		if snaps := ofType(evs, StateSnapshot); len(snaps) == 0 || !reflect.DeepEqual(snaps[0]["snapshot"], want) {
			t.Fatalf("run %d: first snapshot %v, want %v", i, snaps, want)
		}
	}
}

func TestGraphStepsStateInterruptResume(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "example.com")))
	var steps []string
	for _, ev := range ofType(evs, StepStarted) {
		steps = append(steps, ev["stepName"].(string))
	}
	if !slices.Equal(steps, []string{"prep", "write", "approve"}) {
		t.Fatalf("steps %v", steps)
	}
	// The first snapshot is the whole initial state: defaults and input
	// (unassigned fields are absent: AG-UI sends no nulls).
	if snaps := ofType(evs, StateSnapshot); len(snaps) == 0 || !reflect.DeepEqual(snaps[0]["snapshot"],
		map[string]any{"question": "example.com", "host": "", "notes": []any{}, "report": ""}) {
		t.Fatalf("initial snapshot %v", snaps)
	}
	state := map[string]any{}
	for _, ev := range evs {
		switch ev["type"] {
		case StateSnapshot:
			state = ev["snapshot"].(map[string]any)
		case StateDelta:
			applyPatch(t, state, ev["delta"].([]any))
		}
	}
	if state["host"] != "example.com" || state["report"] != "The report on the host is ready." ||
		!reflect.DeepEqual(state["notes"], []any{"prepared"}) {
		t.Fatalf("state %v", state)
	}
	// The state changed: the checkpointed state is sent whole before the
	// interrupt outcome, and it is what the patches made of the first.
	if snaps := ofType(evs, StateSnapshot); len(snaps) != 2 || evs[len(evs)-2]["type"] != StateSnapshot ||
		!reflect.DeepEqual(snaps[1]["snapshot"], map[string]any{"question": "example.com", "host": "example.com",
			"notes": []any{"prepared"}, "report": "The report on the host is ready."}) {
		t.Fatalf("snapshots %v", snaps)
	}
	custom := ofType(evs, Custom)
	if len(custom) != 1 || custom[0]["name"] != "agentc.interrupt" {
		t.Fatalf("CUSTOM %v", custom)
	}
	fin := last(evs)
	out := fin["outcome"].(map[string]any)
	ints, _ := out["interrupts"].([]any)
	if out["type"] != "interrupt" || len(ints) != 1 {
		t.Fatalf("outcome %v", out)
	}
	it := ints[0].(map[string]any)
	if it["reason"] != "input_required" || it["message"] != "Publish the report on example.com?" || it["responseSchema"] == nil {
		t.Fatalf("interrupt %v", it)
	}
	id := it["id"].(string)

	// A new message without a resume, from a client that got the pause
	// (its history has the run's reply), runs nothing (AG-UI: pending
	// interrupts block new input): the pause is delivered again, with the
	// ids to answer in a machine-readable CUSTOM event and the same
	// interrupt outcome.
	starts := ofType(evs, TextMessageStart)
	if len(starts) != 2 {
		t.Fatalf("text messages: the report and the question: %v", starts)
	}
	reply := map[string]any{"id": starts[0]["messageId"], "role": "assistant", "content": "The report on the host is ready."}
	question := map[string]any{"id": starts[1]["messageId"], "role": "assistant", "content": "Publish the report on example.com?"}
	refused := h.run("ana", input("t1", "r2", userMsg("m1", "example.com"), reply, question, userMsg("m2", "something else")))
	checkRedelivered(t, refused, id)
	// A resume naming an unknown interrupt is refused.
	bad := input("t1", "r3", userMsg("m1", "example.com"))
	bad["resume"] = []any{map[string]any{"interruptId": "nope", "status": "resolved", "payload": map[string]any{"approved": true}}}
	if evs := h.run("ana", bad); last(evs)["code"] != "unknown_interrupt" {
		t.Fatalf("unknown interrupt %v", evs)
	}

	// The resume continues the same run.
	in := input("t1", "r4", userMsg("m1", "example.com"))
	in["resume"] = []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
	evs = h.run("ana", in)
	fin = last(evs)
	if fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "success" || fin["result"] != "The report on the host is ready." {
		t.Fatalf("after resume %v", evs)
	}
	// A resumed run's first snapshot is its whole checkpointed state
	// (read before the patches below change the decoded map).
	if snaps := ofType(evs, StateSnapshot); len(snaps) == 0 || !reflect.DeepEqual(snaps[0]["snapshot"],
		map[string]any{"question": "example.com", "host": "example.com", "notes": []any{"prepared"}, "report": "The report on the host is ready."}) {
		t.Fatalf("resume snapshot %v", snaps)
	}
	for _, ev := range evs {
		switch ev["type"] {
		case StateSnapshot:
			state = ev["snapshot"].(map[string]any)
		case StateDelta:
			applyPatch(t, state, ev["delta"].([]any))
		}
	}
	if d, _ := state["decision"].(map[string]any); d["approved"] != true || state["host"] != "example.com" {
		t.Fatalf("state after resume %v", state)
	}
	runs, err := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: "ana", Session: "t1"})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunCompleted {
		t.Fatalf("one run, completed: %+v %v", runs, err)
	}
	// Replaying the same resume is safe: nothing is open any more.
	in["runId"] = "r5"
	if evs := h.run("ana", in); last(evs)["code"] != "unknown_interrupt" {
		t.Fatalf("replayed resume %v", evs)
	}
}

func TestFrontendToolAnswersInterrupt(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	in := input("t1", "r1", userMsg("m1", "example.com"))
	in["tools"] = []any{map[string]any{"name": "approve", "description": "Ask the user to approve", "parameters": map[string]any{"type": "object"}}}
	evs := h.run("ana", in)
	starts := ofType(evs, ToolCallStart)
	if len(starts) != 1 || starts[0]["toolCallName"] != "approve" {
		t.Fatalf("frontend tool call %v", starts)
	}
	callID := starts[0]["toolCallId"].(string)
	it := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
	if it["reason"] != "tool_call" || it["toolCallId"] != callID {
		t.Fatalf("interrupt %v", it)
	}
	// The client runs its tool and sends the result back, without resume
	// entries: the same run continues.
	next := input("t1", "r2", userMsg("m1", "example.com"),
		map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{"id": callID, "type": "function",
			"function": map[string]any{"name": "approve", "arguments": "{}"}}}},
		map[string]any{"id": "tm1", "role": "tool", "toolCallId": callID, "content": `{"approved": true, "note": "ok"}`})
	evs = h.run("ana", next)
	if fin := last(evs); fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "success" {
		t.Fatalf("after the tool result %v", evs)
	}
	runs, _ := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: "ana", Session: "t1"})
	if len(runs) != 1 || runs[0].Status != store.RunCompleted {
		t.Fatalf("runs %+v", runs)
	}
}

func TestCancelledInterruptFreesThread(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "example.com")))
	id := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"]
	in := input("t1", "r2", userMsg("m1", "example.com"), map[string]any{"id": "a1", "role": "assistant", "content": "done"})
	in["resume"] = []any{map[string]any{"interruptId": id, "status": "cancelled"}}
	evs = h.run("ana", in)
	if fin := last(evs); fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "cancelled" {
		t.Fatalf("cancel %v", evs)
	}
	// The thread takes new input again.
	evs = h.run("ana", input("t1", "r3", userMsg("m2", "other.example")))
	if last(evs)["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatalf("new run %v", last(evs))
	}
}

// ledgerEnd returns the status of the thread's last run and the kind of its
// last ledger event.
func ledgerEnd(t *testing.T, h *harness, user, thread string) (store.RunStatus, *runtime.Event) {
	t.Helper()
	key := store.SessionKey{App: "app", User: user, Session: thread}
	runs, err := h.b.Sessions.Runs(context.Background(), key)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	evs, err := h.b.Sessions.Events(context.Background(), key, session.EventFilter{})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events: %v", err)
	}
	return runs[len(runs)-1].Status, evs[len(evs)-1]
}

// waitIdle waits until the Backend runs nothing.
func waitIdle(t *testing.T, b *server.Backend) {
	t.Helper()
	for i := 0; b.Running() > 0; i++ {
		if i > 1000 {
			t.Fatalf("%d runs still running", b.Running())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAbortMidStream(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := h.request(ctx, "ana", "", input("t1", "r1", userMsg("m1", "please hang")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var wg sync.WaitGroup
	frames := readFrames(t, resp.Body, &wg)
	for ev := range frames {
		if ev["type"] == TextMessageContent {
			break
		}
	}
	<-h.started
	cancel() // the client aborts
	resp.Body.Close()
	wg.Wait()
	h.waitFree("ana", "t1")
	waitIdle(t, h.b)
	status, lastEv := ledgerEnd(t, h, "ana", "t1")
	if status != store.RunCanceled || lastEv.Kind != runtime.EventRunFinished || lastEv.Status != runtime.StatusCanceled {
		t.Fatalf("after abort: run %s, last event %s %s", status, lastEv.Kind, lastEv.Status)
	}
	// The session is consistent: the thread takes the next run.
	evs := h.run("ana", input("t1", "r2", userMsg("m1", "please hang"), userMsg("m2", "hi")))
	if text(evs) != "Hello there, friend." {
		t.Fatalf("next run %v", evs)
	}
}

func TestExplicitCancel(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	resp := h.request(context.Background(), "ana", "", input("t1", "r1", userMsg("m1", "please hang")))
	defer resp.Body.Close()
	var wg sync.WaitGroup
	frames := readFrames(t, resp.Body, &wg)
	<-h.started
	// Another user cannot cancel it.
	if r := h.request(context.Background(), "bob", "/agui/cancel", map[string]any{"threadId": "t1"}); r.StatusCode != http.StatusNotFound {
		t.Fatalf("bob's cancel: %d", r.StatusCode)
	}
	if r := h.request(context.Background(), "ana", "/agui/cancel", map[string]any{"threadId": "t1", "runId": "r1"}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.StatusCode)
	}
	var evs []map[string]any
	for ev := range frames {
		evs = append(evs, ev)
	}
	wg.Wait()
	fin := last(evs)
	if fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "cancelled" {
		t.Fatalf("end %v", fin)
	}
	if ofType(evs, TextMessageEnd) == nil {
		t.Fatal("the open text message was not closed")
	}
}

func TestTenantIsolation(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	evs := h.run("ana", input("shared", "r1", userMsg("m1", "example.com")))
	id := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"]
	resume := func(user, run string) []map[string]any {
		in := input("shared", run, userMsg("m1", "example.com"))
		in["resume"] = []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
		return h.run(user, in)
	}
	// Bob cannot answer Ana's interrupt on the same thread id.
	if evs := resume("bob", "r2"); last(evs)["code"] != "unknown_interrupt" {
		t.Fatalf("bob's resume %v", evs)
	}
	// Bob's message on that thread id runs in Bob's own session.
	evs = h.run("bob", input("shared", "r3", userMsg("m1", "bob.example")))
	if it := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any); it["message"] != "Publish the report on bob.example?" {
		t.Fatalf("bob's run %v", it)
	}
	// Ana's run still waits, and her resume completes it.
	if status, _ := ledgerEnd(t, h, "ana", "shared"); status != store.RunInterrupted {
		t.Fatalf("ana's run %s", status)
	}
	if evs := resume("ana", "r4"); last(evs)["type"] != RunFinished {
		t.Fatalf("ana's resume %v", evs)
	}
	if status, _ := ledgerEnd(t, h, "bob", "shared"); status != store.RunInterrupted {
		t.Fatalf("bob's run %s", status)
	}
}

func TestBusyThreadAndOverload(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{MaxRuns: 1})
	resp := h.request(context.Background(), "ana", "", input("t1", "r1", userMsg("m1", "please hang")))
	defer resp.Body.Close()
	var wg sync.WaitGroup
	frames := readFrames(t, resp.Body, &wg)
	<-h.started
	evs := h.run("ana", input("t2", "r2", userMsg("m1", "hi")))
	if len(evs) != 1 || evs[0]["code"] != "overloaded" {
		t.Fatalf("overloaded %v", evs)
	}
	if r := h.request(context.Background(), "ana", "/agui/cancel", map[string]any{"threadId": "t1"}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel %d", r.StatusCode)
	}
	for range frames {
	}
	wg.Wait()
	waitIdle(t, h.b)

	h2 := newHarness(t, "chatter", server.Limits{})
	resp2 := h2.request(context.Background(), "ana", "", input("t1", "r1", userMsg("m1", "please hang")))
	defer resp2.Body.Close()
	frames2 := readFrames(t, resp2.Body, &wg)
	<-h2.started
	evs = h2.run("ana", input("t1", "r2", userMsg("m1", "hi")))
	if len(evs) != 1 || evs[0]["code"] != "thread_busy" {
		t.Fatalf("busy %v", evs)
	}
	if r := h2.request(context.Background(), "ana", "/agui/cancel", map[string]any{"threadId": "t1"}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel %d", r.StatusCode)
	}
	for range frames2 {
	}
	wg.Wait()
}

// garbage returns the i-th malformed request body.
func garbage(rng *rand.Rand, i int) []byte {
	valid := `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`
	switch i % 12 {
	case 0: // random bytes
		b := make([]byte, rng.IntN(200))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		return b
	case 1: // a truncated valid body
		return []byte(valid[:rng.IntN(len(valid))])
	case 2:
		return []byte(`{"threadId":1,"runId":"r","messages":[]}`)
	case 3:
		return []byte(`{"runId":"r","messages":[]}`)
	case 4:
		return []byte(`{"threadId":"t","runId":"r"}`)
	case 5:
		return []byte(`{"threadId":"t","runId":"r","messages":{}}`)
	case 6:
		return []byte(`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"wizard","content":"x"}]}`)
	case 7:
		return []byte(`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":7}]}`)
	case 8:
		return []byte(`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"maybe"}]}`)
	case 9:
		return []byte(`[1,2,3]`)
	case 10:
		return []byte(`{"threadId":"","runId":"r","messages":[]}`)
	default: // a valid body with junk after it
		return []byte(valid + `{"x":1}`)
	}
}

func TestGarbageThenGood(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		resp := h.request(context.Background(), "ana", "", garbage(rng, i))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error.Code != "invalid_input" || e.Error.Message == "" {
			t.Fatalf("garbage %d: %d %s", i, resp.StatusCode, body)
		}
	}
	// A wrong method is refused the same way.
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/agui", nil)
	req.Header.Set("Authorization", "Bearer ana")
	if resp, err := h.srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %v %v", resp, err)
	}
	evs := h.run("ana", input("t1", "good", userMsg("m1", "hi")))
	if text(evs) != "Hello there, friend." || last(evs)["type"] != RunFinished {
		t.Fatalf("good request after garbage: %v", evs)
	}
	// The backend counts a run until its event channel closes, which may
	// be just after the client has read RUN_FINISHED.
	for deadline := time.Now().Add(10 * time.Second); h.b.Running() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs left running", h.b.Running())
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{MaxBodyBytes: 128})
	in := input("t1", "r1", userMsg("m1", strings.Repeat("x", 512)))
	resp := h.request(context.Background(), "ana", "", in)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// failingWriter fails every write from the one that carries RUN_FINISHED
// on: the client is gone just as the run pauses.
type failingWriter struct {
	header http.Header
	failed bool
	body   strings.Builder
}

func (w *failingWriter) Header() http.Header { return w.header }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write(b []byte) (int, error) {
	if w.failed || strings.Contains(string(b), RunFinished) {
		w.failed = true
		return 0, io.ErrClosedPipe
	}
	return w.body.WriteString(string(b))
}

func TestUnseenInterruptDoesNotBlockThread(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	h.run("ana", input("t1", "r1", userMsg("m1", "example.com")))
	// A client that aborted before the outcome arrived has none of the
	// paused run's messages: its next message starts a new run.
	evs := h.run("ana", input("t1", "r2", userMsg("m1", "example.com"), userMsg("m2", "other.example")))
	if it := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any); it["message"] != "Publish the report on other.example?" {
		t.Fatalf("next run %v", it)
	}
	runs, _ := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: "ana", Session: "t1"})
	if len(runs) != 2 || runs[0].Status != store.RunInterrupted {
		t.Fatalf("runs %+v", runs)
	}
}

func TestUndeliveredInterruptDoesNotBlockThread(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	body, _ := json.Marshal(input("t1", "r1", userMsg("m1", "example.com")))
	req := httptest.NewRequest(http.MethodPost, "/agui", strings.NewReader(string(body)))
	req = req.WithContext(server.WithUser(req.Context(), "ana"))
	w := &failingWriter{header: http.Header{}}
	h.h.ServeHTTP(w, req)
	if !w.failed || strings.Contains(w.body.String(), RunFinished) {
		t.Fatalf("the interrupt outcome was delivered: %s", w.body.String())
	}
	if status, _ := ledgerEnd(t, h, "ana", "t1"); status != store.RunInterrupted {
		t.Fatalf("run %s", status)
	}
	// The client never saw the interrupt: its next message starts a new
	// run instead of being refused for a pending interrupt it cannot name.
	evs := h.run("ana", input("t1", "r2", userMsg("m1", "example.com"), userMsg("m2", "other.example")))
	if it := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any); it["message"] != "Publish the report on other.example?" {
		t.Fatalf("next run %v", it)
	}
}

func TestTwoInterruptsAndInvalidResume(t *testing.T) {
	h := newHarness(t, "dual", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "x")))
	ints := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)
	if len(ints) != 2 {
		t.Fatalf("interrupts %v", ints)
	}
	id := func(i int) string { return ints[i].(map[string]any)["id"].(string) }
	resume := func(run string, entries ...map[string]any) []map[string]any {
		in := input("t1", run, userMsg("m1", "x"))
		in["resume"] = entries
		return h.run("ana", in)
	}
	ans := func(i int, v any) map[string]any {
		return map[string]any{"interruptId": id(i), "status": "resolved", "payload": v}
	}
	if evs := resume("r2", ans(0, true)); last(evs)["code"] != "resume_incomplete" {
		t.Fatalf("one of two answered: %v", evs)
	}
	if evs := resume("r3", ans(0, true), ans(1, "not a bool")); last(evs)["code"] != "invalid_resume" {
		t.Fatalf("a value of the wrong type: %v", evs)
	}
	// Both answered: the run completes.
	evs = resume("r4", ans(0, true), ans(1, false))
	if fin := last(evs); fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "success" {
		t.Fatalf("both answered: %v", evs)
	}
}

// TestSubRunInterrupts: interrupts inside a sub-graph run by each item of
// a map are open interrupts with their path ids, answered by id (issue 16
// item 2).
func TestSubRunInterrupts(t *testing.T) {
	h := newHarness(t, "batch", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "x")))
	ints := last(evs)["outcome"].(map[string]any)["interrupts"].([]any)
	if len(ints) != 2 {
		t.Fatalf("interrupts %v", ints)
	}
	id := func(i int) string { return ints[i].(map[string]any)["id"].(string) }
	for i, want := range []string{"batch/each/0/gate/check#", "batch/each/1/gate/check#"} {
		if !strings.HasPrefix(id(i), want) || ints[i].(map[string]any)["message"] != "Approve "+[]string{"x", "y"}[i]+"?" {
			t.Fatalf("interrupt %d: %v", i, ints[i])
		}
	}
	in := input("t1", "r2", userMsg("m1", "x"))
	in["resume"] = []any{
		map[string]any{"interruptId": id(1), "status": "resolved", "payload": true},
		map[string]any{"interruptId": id(0), "status": "resolved", "payload": false},
	}
	evs = h.run("ana", in)
	if fin := last(evs); fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "success" {
		t.Fatalf("both answered: %v", evs)
	}
}

func TestRequestErrors(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	serve := func(method, p, body, user string) (int, string) {
		req := httptest.NewRequest(method, p, strings.NewReader(body))
		if user != "" {
			req = req.WithContext(server.WithUser(req.Context(), user))
		}
		w := httptest.NewRecorder()
		h.h.ServeHTTP(w, req)
		var e struct{ Error struct{ Code string } }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON error", method, p, w.Body.String())
		}
		return w.Code, e.Error.Code
	}
	good, _ := json.Marshal(input("t1", "r1", userMsg("m1", "hi")))
	for _, c := range []struct {
		method, path, body, user string
		status                   int
		code                     string
	}{
		{"POST", "/agui", string(good), "", http.StatusUnauthorized, "unauthorized"},
		{"PUT", "/agui", string(good), "ana", http.StatusMethodNotAllowed, "method_not_allowed"},
		{"POST", "/agui/cancel", `{"threadId":"t1"}`, "", http.StatusUnauthorized, "unauthorized"},
		{"GET", "/agui/cancel", ``, "ana", http.StatusMethodNotAllowed, "method_not_allowed"},
		{"POST", "/agui/cancel", `{"threadId":5}`, "ana", http.StatusBadRequest, "invalid_input"},
		{"POST", "/agui/cancel", `{}`, "ana", http.StatusBadRequest, "invalid_input"},
		{"POST", "/agui/cancel", `{"threadId":"t1"}`, "ana", http.StatusNotFound, "not_found"},
	} {
		if status, code := serve(c.method, c.path, c.body, c.user); status != c.status || code != c.code {
			t.Errorf("%s %s %s (user %q): %d %s, want %d %s", c.method, c.path, c.body, c.user, status, code, c.status, c.code)
		}
	}
	// Well-formed input that cannot run: one RUN_ERROR.
	for _, c := range []struct {
		in   map[string]any
		code string
	}{
		{input("t1", "r1"), "no_input"},
		{input("t1", "r1", userMsg("m1", "hi"), map[string]any{"id": "a1", "role": "assistant", "content": "hello"}), "no_input"},
		// A provider's file handle is dropped: nothing is left to run.
		{input("t1", "r1", map[string]any{"id": "m1", "role": "user", "content": []any{map[string]any{"type": "image", "source": map[string]any{"type": "file", "value": "file-abc"}}}}), "no_input"},
	} {
		evs := h.run("ana", c.in)
		if len(evs) != 1 || evs[0]["code"] != c.code {
			t.Errorf("%v: %v, want RUN_ERROR %s", c.in["messages"], evs, c.code)
		}
	}
	// Content parts: the text parts are the input.
	in := input("t2", "r1", map[string]any{"id": "m1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "hi"}, map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "http://x"}}}})
	if evs := h.run("ana", in); text(evs) != "Hello there, friend." {
		t.Errorf("content parts: %v", evs)
	}
}

// checkRedelivered checks a stream that delivers a pause again
// (interrupt_pending): RUN_STARTED, a CUSTOM agentc.interrupt_pending
// naming the open interrupt id, and RUN_FINISHED with the same interrupt
// outcome; no RUN_ERROR.
func checkRedelivered(t *testing.T, evs []map[string]any, id string) {
	t.Helper()
	if len(evs) < 3 || evs[0]["type"] != RunStarted || len(ofType(evs, RunError)) != 0 {
		t.Fatalf("re-delivered pause %v", evs)
	}
	var pending map[string]any
	for _, c := range ofType(evs, Custom) {
		if c["name"] == "agentc.interrupt_pending" {
			pending, _ = c["value"].(map[string]any)
		}
	}
	ids, _ := pending["interrupts"].([]any)
	if pending["code"] != "interrupt_pending" || len(ids) != 1 || ids[0].(map[string]any)["interruptId"] != id {
		t.Fatalf("agentc.interrupt_pending %v", pending)
	}
	fin := last(evs)
	out, _ := fin["outcome"].(map[string]any)
	ints, _ := out["interrupts"].([]any)
	if fin["type"] != RunFinished || out["type"] != "interrupt" || len(ints) != 1 || ints[0].(map[string]any)["id"] != id {
		t.Fatalf("re-delivered outcome %v", fin)
	}
}

// TestPauseNeverReceivedIsRedelivered is issue 13's problem 11: a server
// that died after the pause was committed but before its outcome reached
// the client (and before the thread's record of what it asked was
// written) leaves the client with no interrupt id. Its next message gets
// the pause again, and answering the re-delivered id resumes the run.
func TestPauseNeverReceivedIsRedelivered(t *testing.T) {
	h := newHarness(t, "", server.Limits{})
	evs := h.run("ana", input("t1", "r1", userMsg("m1", "example.com")))
	if out, _ := last(evs)["outcome"].(map[string]any); out["type"] != "interrupt" {
		t.Fatalf("first request %v", last(evs))
	}
	// The record of the asked ids is gone, as if the server died first.
	if err := h.b.Docs.ApplyDocs(context.Background(), store.DocOp{Coll: docsColl,
		Key: docKey(store.SessionKey{App: "app", User: "ana", Session: "t1"}), Delete: true}); err != nil {
		t.Fatal(err)
	}
	// The client retries with what it had: its own message only.
	again := h.run("ana", input("t1", "r2", userMsg("m1", "example.com")))
	out, _ := last(again)["outcome"].(map[string]any)
	ints, _ := out["interrupts"].([]any)
	if len(ints) != 1 {
		t.Fatalf("re-delivered %v", again)
	}
	id := ints[0].(map[string]any)["id"].(string)
	checkRedelivered(t, again, id)
	// A second retry gets the same ids.
	checkRedelivered(t, h.run("ana", input("t1", "r3", userMsg("m1", "example.com"))), id)

	in := input("t1", "r4", userMsg("m1", "example.com"))
	in["resume"] = []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
	if fin := last(h.run("ana", in)); fin["type"] != RunFinished || fin["outcome"].(map[string]any)["type"] != "success" {
		t.Fatalf("resume with the re-delivered id %v", fin)
	}
	runs, err := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: "ana", Session: "t1"})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunCompleted {
		t.Fatalf("one run, completed: %+v %v", runs, err)
	}
}

// TestStreamFraming: a stream answering a Fetch-standard client ends with
// its connection (Transfer-Encoding identity), so a client that aborts on
// RUN_FINISHED while the end arrives in the same read still settles (Node's
// fetch otherwise leaves that read pending); any other client's stream is
// on a connection kept alive (server.OwnConnection), chunked or, when no
// flush came before its end, with its length.
func TestStreamFraming(t *testing.T) {
	for i, fetch := range []bool{true, false} {
		h := newHarness(t, "chatter", server.Limits{})
		if fetch {
			h.header = http.Header{"Sec-Fetch-Mode": {"cors"}}
		}
		resp := h.request(context.Background(), "ana", "", input("t1", "r"+strconv.Itoa(i), userMsg("m1", "hi")))
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if fetch && (len(resp.TransferEncoding) != 0 || resp.ContentLength != -1 || !resp.Close) {
			t.Errorf("fetch client: transfer encoding %v, content length %d, close %v", resp.TransferEncoding, resp.ContentLength, resp.Close)
		}
		// Chunked, or with its length when the whole stream went out in
		// its end's write (no flush before: one burst); kept alive.
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		if !fetch && (!chunked && resp.ContentLength != int64(len(raw)) || resp.Close) {
			t.Errorf("other client: transfer encoding %v, content length %d, close %v", resp.TransferEncoding, resp.ContentLength, resp.Close)
		}
		if evs := parseSSE(t, raw); last(evs)["type"] != RunFinished {
			t.Fatalf("last event %v", last(evs))
		}
	}
}

// TestMediaParts: a user message's media parts are the run's files: a data
// source stored as an artifact of the thread's session, a url source a
// reference; a url source that is not http(s), or data that is not base64,
// is invalid input.
func TestMediaParts(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	png := []byte{0x89, 'P', 'N', 'G', 4}
	h.run("ana", input("t1", "r1", map[string]any{"id": "m1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "hi"},
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": base64.StdEncoding.EncodeToString(png), "mimeType": "image/png"}},
		map[string]any{"type": "document", "source": map[string]any{"type": "url", "value": "https://example.com/a.pdf"}},
	}}))
	a, err := artifact.New(h.b.Docs, nil).Get(context.Background(), artifact.Key{App: "app", User: "ana", Session: "t1", Name: "input/file-1.png"}, 0)
	if err != nil || string(a.Data) != string(png) {
		t.Fatalf("artifact %+v %v", a, err)
	}
	for _, part := range []map[string]any{
		{"type": "image", "source": map[string]any{"type": "url", "value": "file:///etc/passwd"}},
		{"type": "image", "source": map[string]any{"type": "data", "value": "!!", "mimeType": "image/png"}},
		{"type": "image"},
	} {
		body, _ := json.Marshal(input("t2", "r1", map[string]any{"id": "m1", "role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}, part}}))
		resp := h.request(context.Background(), "ana", "", body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%v: status %d", part, resp.StatusCode)
		}
	}
}

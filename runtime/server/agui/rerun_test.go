package agui

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

func threadRuns(t *testing.T, h *harness, user, thread string) int {
	t.Helper()
	runs, err := h.b.Sessions.Runs(context.Background(), store.SessionKey{App: "app", User: user, Session: thread})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// TestResentRunIDFollowsItsRun: a RunAgentInput sent again with its runId
// streams the run its first sending started (a valid AG-UI stream from the
// ledger) and starts none; in flight, also while its first request still
// streams it from this server, it follows the run to its end; a run its
// client's departure canceled continues; runIds are per user.
// The runId's record is written with the run's admission on a store that
// admits in one write, else reserved before and settled after: the rule is
// the same.
func TestResentRunIDFollowsItsRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wrap   func(*memory.Store) store.Store
		writes int32 // of the runId's record, by the adapter, for one run
	}{
		{"with its admission", nil, 0},
		{"reserved and settled", func(st *memory.Store) store.Store { return threeCalls{st} }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessOn(t, "chatter", server.Limits{}, tc.wrap)
			docs := &countRecords{AdapterStore: h.b.Docs}
			h.b.Docs, h.h.docs = docs, docs
			h.run("ana", input("t0", "r0", userMsg("m1", "hi")))
			if n := docs.n.Load(); n != tc.writes {
				t.Fatalf("the adapter wrote the runId's record %d times, want %d", n, tc.writes)
			}
			testResentRunID(t, h)
		})
	}
}

// TestResentRunIDWhileItsRunIsBusy: a request re-sent while its run is
// busy in the thread but streamed by no request here (as a run a restarted
// process resumed) follows that run: the busy thread is its own run's.
func TestResentRunIDWhileItsRunIsBusy(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	hang := input("t1", "r1", userMsg("m1", "please hang"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := h.request(ctx, "ana", "", hang)
	var wg sync.WaitGroup
	frames := readFrames(t, resp.Body, &wg)
	<-h.started
	k := regKey{"ana", "t1"}
	h.h.reg.remove(k, h.h.reg.get(k)) // no request streams it here now

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	resp2 := h.request(ctx2, "ana", "", hang)
	var wg2 sync.WaitGroup
	again := readFrames(t, resp2.Body, &wg2)
	select {
	case ev := <-again:
		if ev["type"] != RunStarted || ev["runId"] != "r1" {
			t.Errorf("the re-sent request began with %v, want its run's stream", ev)
		}
	case <-time.After(10 * time.Second):
		t.Error("the re-sent request sent nothing")
	}
	cancel2()
	resp2.Body.Close()
	wg2.Wait()
	cancel()
	resp.Body.Close()
	for range frames {
	}
	wg.Wait()
	h.waitFree("ana", "t1")
	if n := threadRuns(t, h, "ana", "t1"); n != 1 {
		t.Errorf("the thread has %d runs, want 1", n)
	}
}

// countRecords counts the writes of CollRuns records through it.
type countRecords struct {
	server.AdapterStore
	n atomic.Int32
}

func (c *countRecords) ApplyDocs(ctx context.Context, ops ...store.DocOp) error {
	for _, op := range ops {
		if op.Coll == CollRuns {
			c.n.Add(1)
		}
	}
	return c.AdapterStore.ApplyDocs(ctx, ops...)
}

func testResentRunID(t *testing.T, h *harness) {
	in := input("t1", "r1", userMsg("m1", "hi"))
	first := h.run("ana", in)
	again := h.run("ana", in) // verifyStream checks it as a stream of r1
	for _, typ := range []string{RunStarted, StateSnapshot, TextMessageStart, TextMessageContent, TextMessageEnd, RunFinished} {
		if !slices.Contains(typesOf(again), typ) {
			t.Fatalf("re-sent stream has no %s: %v", typ, typesOf(again))
		}
	}
	if text(again) != text(first) || last(again)["result"] != last(first)["result"] || threadRuns(t, h, "ana", "t1") != 1 {
		t.Fatalf("re-sent: text %q result %v (first %q %v), %d runs", text(again), last(again)["result"], text(first), last(first)["result"], threadRuns(t, h, "ana", "t1"))
	}
	h.run("bob", in)
	if threadRuns(t, h, "bob", "t1") != 1 {
		t.Fatal("bob's r1 did not start his own run")
	}

	// In flight, then canceled by its client's departure, then continued.
	hang := input("t2", "r3", userMsg("m1", "please hang"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := h.request(ctx, "ana", "", hang)
	var wg sync.WaitGroup
	frames := readFrames(t, resp.Body, &wg)
	for ev := range frames {
		if ev["type"] == TextMessageContent {
			break
		}
	}
	<-h.started
	// Re-sent while its first request still streams it from this server:
	// it follows the run (not thread_busy), to the run's end.
	fctx, fcancel := context.WithCancel(context.Background())
	defer fcancel()
	fresp := h.request(fctx, "ana", "", hang)
	var fwg sync.WaitGroup
	var followed []map[string]any
	fframes := readFrames(t, fresp.Body, &fwg)
	for ev := range fframes {
		followed = append(followed, ev)
		if ev["type"] == RunStarted || ev["type"] == RunError {
			break
		}
	}
	if len(followed) == 0 || followed[0]["type"] != RunStarted || followed[0]["runId"] != "r3" {
		t.Fatalf("re-sent while in flight: %v", followed)
	}
	if threadRuns(t, h, "ana", "t2") != 1 {
		t.Fatal("the re-sent request started a run")
	}
	cancel()
	resp.Body.Close()
	wg.Wait()
	for ev := range fframes {
		followed = append(followed, ev)
	}
	fresp.Body.Close()
	fwg.Wait()
	if e := followed[len(followed)-1]; e["type"] != RunFinished && e["type"] != RunError || e["code"] == "thread_busy" {
		t.Fatalf("the follower's stream ended with %v", e)
	}
	h.waitFree("ana", "t2")
	waitIdle(t, h.b)
	if status, _ := ledgerEnd(t, h, "ana", "t2"); status != store.RunCanceled {
		t.Fatalf("after the abort: %s", status)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	resp2 := h.request(ctx2, "ana", "", hang)
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp2.StatusCode)
	}
	var wg2 sync.WaitGroup
	seen := []string{}
	for ev := range readFrames(t, resp2.Body, &wg2) {
		seen = append(seen, ev["type"].(string))
		if ev["type"] == RunError || ev["type"] == RunFinished {
			t.Fatalf("the continued run ended at once: %v", seen)
		}
		if ev["type"] == TextMessageContent { // the live attempt streams
			break
		}
	}
	<-h.started // the model was called again: the run continues
	cancel2()
	resp2.Body.Close()
	wg2.Wait()
	h.waitFree("ana", "t2")
	waitIdle(t, h.b)
	if n := threadRuns(t, h, "ana", "t2"); n != 1 {
		t.Fatalf("thread t2 has %d runs, want the one run continued", n)
	}
}

// TestOrphanedRunIDTakenOver: a runId reserved by a process that died
// before starting its run (its claim names another instance of a store
// this process alone opens) does not answer run_in_progress forever: the
// re-sent request takes it over and runs once, and a later re-send joins
// that run.
func TestOrphanedRunIDTakenOver(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	key := store.SessionKey{App: "app", User: "ana", Session: "t9"}
	orphan := `{"claim":{"owner":"proc_dead","since":` + strconv.FormatInt(h.b.Clock.Now().UnixMilli(), 10) + `,"session":"t9","inv":"inv_dead"}}`
	if err := h.b.Docs.ApplyDocs(context.Background(), store.DocOp{Coll: CollRuns, Key: runKey(key, "r9"), Value: []byte(orphan)}); err != nil {
		t.Fatal(err)
	}
	in := input("t9", "r9", userMsg("m1", "hi"))
	first := h.run("ana", in)
	if e := last(first); e["type"] != RunFinished {
		t.Fatalf("re-sent after its process died: %v", first)
	}
	again := h.run("ana", in)
	if text(again) != text(first) || threadRuns(t, h, "ana", "t9") != 1 {
		t.Fatalf("re-sent again: %q (first %q), %d runs", text(again), text(first), threadRuns(t, h, "ana", "t9"))
	}
}

// TestRunRecordMarshal: a run record is written as json.Marshal writes it
// (a claim with every member set shows a member Claim gained since).
func TestRunRecordMarshal(t *testing.T) {
	for _, r := range []runRecord{
		{},
		{Run: "run_01J"},
		{Run: "r<&>\u2028\"\\\x01\xff é"},
		{Claim: &server.Claim{Owner: "host-1/42", Since: 1767323045000, Session: "t1", Inv: "inv_01"}},
		{Claim: &server.Claim{Owner: "<o>", Since: -1, Session: "s\"\n", Inv: "\u2029&"}},
		{Claim: &server.Claim{}},
		{Run: "run_1", Claim: &server.Claim{Owner: "o", Since: 1, Session: "s", Inv: "i"}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.marshal(); string(got) != string(want) {
			t.Errorf("%+v:\n got %s\nwant %s", r, got, want)
		}
	}
}

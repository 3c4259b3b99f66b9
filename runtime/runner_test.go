package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

func forEachBackend(t *testing.T, f func(t *testing.T, open func(testing.TB) store.Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.open) })
	}
}

// checkLedger checks the invariants every ledger keeps: sequences from 1
// without gaps, each event id once, no streamed-only kind, and every
// persisted event of the stream that belongs to a committed step present.
func checkLedger(t *testing.T, ledger []*Event) {
	t.Helper()
	seen := map[string]bool{}
	for i, e := range ledger {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		if seen[e.ID] {
			t.Errorf("event %s (%s) stored twice", e.ID, e.Kind)
		}
		seen[e.ID] = true
		if !e.Kind.Persisted() || !e.Persisted {
			t.Errorf("streamed-only event %s (%s) in the ledger", e.ID, e.Kind)
		}
	}
}

func TestInterruptThenResume(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		f := newFixture(t, open(t), buildProgram(t, progOpts{}), nil, nil, nil)
		ctx := context.Background()
		evs := f.collect(ctx, Invocation{User: "u1", Session: "s1", Input: "example.com"})
		runID := runIDOf(t, evs)
		if evs[0].Kind != EventInput || evs[0].Text != "example.com" {
			t.Fatalf("first event %v, want the input", kinds(evs[:1]))
		}
		fin := last(evs)
		if fin.Kind != EventRunFinished || fin.Status != StatusInterrupted {
			t.Fatalf("last event %s %s, want run_finished interrupted; events %v", fin.Kind, fin.Status, kinds(evs))
		}
		if len(fin.Interrupts) != 1 || fin.Interrupts[0].ID != "g/approve" || fin.Interrupts[0].Node != "approve" || fin.Interrupts[0].Prompt != "Publish?" {
			t.Fatalf("interrupts %+v", fin.Interrupts)
		}
		if fin.Interrupts[0].Schema["type"] != "boolean" {
			t.Errorf("interrupt schema %v", fin.Interrupts[0].Schema)
		}
		if got := f.runStatus(runID); got != store.RunInterrupted {
			t.Fatalf("run status %s", got)
		}
		if n := count(evs, EventModelDelta); n == 0 {
			t.Errorf("no model_delta streamed")
		}
		ledger := f.ledger("u1", "s1")
		checkLedger(t, ledger)
		if ledger[0].Kind != EventInput {
			t.Fatalf("ledger starts with %s", ledger[0].Kind)
		}
		// Every persisted event of the stream is in the ledger, once.
		stored := map[string]bool{}
		for _, e := range ledger {
			stored[e.ID] = true
		}
		for _, e := range evs {
			if e.Persisted != stored[e.ID] {
				t.Errorf("%s %s: persisted=%v, in ledger=%v", e.Kind, e.ID, e.Persisted, stored[e.ID])
			}
		}
		if last(ledger).Kind != EventRunFinished || ledger[len(ledger)-2].Kind != EventInterrupt {
			t.Errorf("ledger ends with %v", kinds(ledger[len(ledger)-2:]))
		}
		// The tool node's events and the llm loop's.
		if tr := find(ledger, EventToolResult); tr == nil || tr.Node != "lookup" || string(tr.Result) != `{"host":"example.com","ok":true}` {
			t.Errorf("tool_result %+v", tr)
		}
		if mr := find(ledger, EventModelResponse); mr == nil || mr.Text != "The report." || mr.Author != "writer" || mr.Turn != 1 || mr.Usage == nil {
			t.Errorf("model_response %+v", mr)
		}
		if sd := find(ledger, EventStateDelta); sd == nil || sd.Changes[0].Field != "host" || string(sd.Changes[0].Value) != `"example.com"` {
			t.Errorf("state_delta %+v", sd)
		}

		// A bad answer is refused before anything is recorded.
		_, err := f.r.Run(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: runID, Values: map[string]json.RawMessage{"approve": json.RawMessage(`"yes"`)}}})
		if !errors.Is(err, ErrInvalidResume) {
			t.Fatalf("resume with a string for a bool: %v", err)
		}
		_, err = f.r.Run(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: runID, Values: map[string]json.RawMessage{"nope": json.RawMessage(`true`)}}})
		if !errors.Is(err, ErrInvalidResume) || !strings.Contains(err.Error(), "g/approve") {
			t.Fatalf("resume of an unknown interrupt: %v", err)
		}
		_, err = f.r.Run(ctx, Invocation{User: "u1", Session: "other", Resume: &ResumeRequest{Run: runID}})
		if !errors.Is(err, ErrNotResumable) {
			t.Fatalf("resume from another session: %v", err)
		}
		if n := len(f.ledger("u1", "s1")); n != len(ledger) {
			t.Fatalf("refused resumes wrote %d events", n-len(ledger))
		}

		calls := f.model.calls.Load()
		evs2 := f.collect(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: runID, Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}})
		fin2 := last(evs2)
		if fin2.Status != StatusCompleted || string(fin2.Output) != `"The report."` || fin2.Run != runID {
			t.Fatalf("resumed run ended %s %s (%s); events %v", fin2.Status, fin2.Output, fin2.Run, kinds(evs2))
		}
		if evs2[0].Kind != EventInput || evs2[0].Resume == nil || fin2.Invocation == fin.Invocation {
			t.Fatalf("resume input %+v", evs2[0])
		}
		if f.model.calls.Load() != calls {
			t.Errorf("the model was called again on resume")
		}
		if got := f.runStatus(runID); got != store.RunCompleted {
			t.Fatalf("run status %s", got)
		}
		ledger2 := f.ledger("u1", "s1")
		checkLedger(t, ledger2)
		if sd := ledger2[len(ledger2)-2]; sd.Kind != EventStateDelta || sd.Changes[0].Field != "approved" {
			t.Errorf("before run_finished: %+v", sd)
		}
		// A completed run is not resumable.
		_, err = f.r.Run(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: runID, Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}})
		if !errors.Is(err, ErrNotResumable) {
			t.Fatalf("resume of a completed run: %v", err)
		}
	})
}

func TestInputPersistedWhenModelFailsAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		model := &fakeModel{name: "fast", reply: func(context.Context, *ModelRequest, func(string)) (*ModelResponse, error) {
			return nil, Errorf(vm.KindUnavailable, "provider down")
		}}
		p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
		f := newFixture(t, open(t), p, model, nil, nil)
		evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "hello"})
		runID := runIDOf(t, evs)
		fin := last(evs)
		if fin.Status != StatusFailed {
			t.Fatalf("status %s; events %v", fin.Status, kinds(evs))
		}
		re := find(evs, EventRunError)
		if re == nil || re.Error.Kind != "unavailable" || re.Error.Node != "write" || !strings.Contains(re.Error.Message, "provider down") {
			t.Fatalf("run_error %+v", re)
		}
		ledger := f.ledger("u", "s")
		checkLedger(t, ledger)
		want := []string{"input", "run_started", "run_error", "run_finished"}
		if got := kinds(ledger); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("ledger %v, want %v", got, want)
		}
		if ledger[0].Text != "hello" {
			t.Errorf("input %q", ledger[0].Text)
		}
		if got := f.runStatus(runID); got != store.RunFailed {
			t.Fatalf("run status %s", got)
		}
		// The store is consistent: step 0 committed (with run_started), no
		// pending writes of the failed step.
		cp, err := f.st.LatestCheckpoint(context.Background(), runID)
		if err != nil || cp.Step != 0 {
			t.Fatalf("latest checkpoint %d, %v", cp.Step, err)
		}
	})
}

// TestLLMLoopRecovers covers the errors that go back to the model: invalid
// tool-call JSON, an unknown tool, a tool error.
func TestLLMLoopRecovers(t *testing.T) {
	cases := []struct {
		name    string
		call    ToolCall
		tool    func(context.Context, ToolRequest) (json.RawMessage, error)
		wantErr string // in the tool message and the tool_result error
	}{
		{"invalid json", ToolCall{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"host": `)}, nil, "invalid arguments for tool lookup"},
		{"wrong type", ToolCall{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"host": 3}`)}, nil, "invalid arguments for tool lookup"},
		{"unknown tool", ToolCall{ID: "c1", Name: "nope", Args: json.RawMessage(`{}`)}, nil, `unknown tool "nope"; the available tools are: lookup`},
		{"tool error", ToolCall{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"host":"x"}`)},
			func(context.Context, ToolRequest) (json.RawMessage, error) {
				return nil, Errorf(vm.KindRateLimit, "slow down")
			}, "error (rate_limit): slow down"},
		{"bad output", ToolCall{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"host":"x"}`)},
			func(context.Context, ToolRequest) (json.RawMessage, error) { return json.RawMessage(`[1]`), nil },
			"returned output that does not fit Scan"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{name: "fast", rec: true}
			model.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
				if req.Site.Turn == 1 {
					return &ModelResponse{ToolCalls: []ToolCall{tc.call}, FinishReason: "tool_calls"}, nil
				}
				return textReply("recovered", 1)(ctx, req, onDelta)
			}
			tool := lookupTool()
			if tc.tool != nil {
				tool.fn = tc.tool
			}
			p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
			f := newFixture(t, backends[0].open(t), p, model, tool, nil)
			evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
			if fin := last(evs); fin.Status != StatusCompleted || string(fin.Output) != `"recovered"` {
				t.Fatalf("ended %s %s; %v", fin.Status, fin.Output, kinds(evs))
			}
			reqs := model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			msgs := reqs[1].Messages
			toolMsg := msgs[len(msgs)-1]
			if toolMsg.Role != RoleTool || toolMsg.ToolCallID != "c1" || !strings.Contains(toolMsg.Content, tc.wantErr) {
				t.Fatalf("tool message %+v, want it to contain %q", toolMsg, tc.wantErr)
			}
			if msgs[0].Role != RoleSystem || msgs[0].Content != "You write reports." || msgs[1].Role != RoleUser || msgs[1].Content != "q" {
				t.Errorf("messages %+v", msgs[:2])
			}
			if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "lookup" || reqs[0].Tools[0].InputSchema["type"] != "object" {
				t.Errorf("tool specs %+v", reqs[0].Tools)
			}
			tr := find(f.ledger("u", "s"), EventToolResult)
			if tr == nil || tr.Error == nil || !strings.Contains(tr.Error.Message, strings.TrimPrefix(tc.wantErr, "error (rate_limit): ")) {
				t.Fatalf("tool_result %+v", tr)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	var mu sync.Mutex
	started := 0
	both := make(chan struct{})
	tool := lookupTool()
	inner := tool.fn
	tool.fn = func(ctx context.Context, req ToolRequest) (json.RawMessage, error) {
		mu.Lock()
		started++
		if started == 2 {
			close(both)
		}
		mu.Unlock()
		select { // each call waits for the other: they must run concurrently
		case <-both:
		case <-time.After(10 * time.Second):
			return nil, errors.New("the calls did not overlap")
		}
		return inner(ctx, req)
	}
	model := &fakeModel{name: "fast", rec: true}
	model.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		if req.Site.Turn == 1 {
			return &ModelResponse{ToolCalls: []ToolCall{
				{ID: "a", Name: "lookup", Args: json.RawMessage(`{"host":"a"}`)},
				{ID: "b", Name: "lookup", Args: json.RawMessage(`{"host":"b"}`)},
			}}, nil
		}
		return textReply("done", 1)(ctx, req, onDelta)
	}
	p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
	f := newFixture(t, backends[0].open(t), p, model, tool, nil)
	evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
	if last(evs).Status != StatusCompleted {
		t.Fatalf("%v", kinds(evs))
	}
	msgs := model.requests()[1].Messages
	a, b := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if a.ToolCallID != "a" || b.ToolCallID != "b" || a.Content != `{"host":"a","ok":true}` || b.Content != `{"host":"b","ok":true}` {
		t.Fatalf("tool messages %+v %+v", a, b)
	}
}

func TestToolPanicFailsNode(t *testing.T) {
	panicky := func(context.Context, ToolRequest) (json.RawMessage, error) { panic("kaboom") }
	t.Run("tool node", func(t *testing.T) {
		tool := lookupTool()
		tool.fn = panicky
		f := newFixture(t, backends[0].open(t), buildProgram(t, progOpts{}), nil, tool, nil)
		evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
		re := find(evs, EventRunError)
		if last(evs).Status != StatusFailed || re == nil || re.Error.Kind != "internal" || re.Error.Node != "lookup" || !strings.Contains(re.Error.Message, "kaboom") {
			t.Fatalf("run_error %+v; %v", re, kinds(evs))
		}
		if got := f.runStatus(runIDOf(t, evs)); got != store.RunFailed {
			t.Fatalf("status %s", got)
		}
	})
	t.Run("llm loop", func(t *testing.T) {
		tool := lookupTool()
		tool.fn = panicky
		model := &fakeModel{name: "fast", reply: func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
			return &ModelResponse{ToolCalls: []ToolCall{{ID: "x", Name: "lookup", Args: json.RawMessage(`{"host":"a"}`)}, {ID: "y", Name: "lookup", Args: json.RawMessage(`{"host":"b"}`)}}}, nil
		}}
		p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
		f := newFixture(t, backends[0].open(t), p, model, tool, nil)
		evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
		re := find(evs, EventRunError)
		if last(evs).Status != StatusFailed || re == nil || re.Error.Kind != "internal" || re.Error.Node != "write" || !strings.Contains(re.Error.Message, "kaboom") {
			t.Fatalf("run_error %+v; %v", re, kinds(evs))
		}
		if model.calls.Load() != 1 {
			t.Errorf("the model was called %d times after the panic", model.calls.Load())
		}
	})
}

func TestStructuredOutput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []string
		status  RunStatus
		output  string
	}{
		{"first try", []string{"```json\n{\"title\":\"T\",\"score\":3}\n```"}, StatusCompleted, `{"score":3,"title":"T"}`},
		{"retried once", []string{"not json", `{"title":"T","score":4}`}, StatusCompleted, `{"score":4,"title":"T"}`},
		{"fails twice", []string{"not json", `{"title":"T"}`, `{"title":"T","score":5}`}, StatusFailed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{name: "fast", rec: true}
			model.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
				return textReply(tc.replies[req.Site.Turn-1], 0)(ctx, req, onDelta)
			}
			p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true, report: verdictType})
			f := newFixture(t, backends[0].open(t), p, model, nil, nil)
			evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
			fin := last(evs)
			if fin.Status != tc.status {
				t.Fatalf("status %s; %v", fin.Status, kinds(evs))
			}
			reqs := model.requests()
			if reqs[0].ResponseSchema == nil || reqs[0].ResponseSchema["type"] != "object" {
				t.Errorf("response schema %v", reqs[0].ResponseSchema)
			}
			if tc.status == StatusCompleted {
				var got, want any
				json.Unmarshal(fin.Output, &got)
				json.Unmarshal([]byte(tc.output), &want)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("output %s, want %s", fin.Output, tc.output)
				}
				if len(tc.replies) == 2 {
					m := reqs[1].Messages[len(reqs[1].Messages)-1]
					if m.Role != RoleUser || !strings.Contains(m.Content, "invalid JSON") {
						t.Errorf("retry message %+v", m)
					}
				}
				return
			}
			if re := find(evs, EventRunError); re == nil || re.Error.Kind != "invalid_output" {
				t.Errorf("run_error %+v", re)
			}
			if len(reqs) != 2 {
				t.Errorf("%d model calls, want 2 (one retry)", len(reqs))
			}
		})
	}
}

func TestMaxTurns(t *testing.T) {
	model := &fakeModel{name: "fast", reply: func(context.Context, *ModelRequest, func(string)) (*ModelResponse, error) {
		return &ModelResponse{ToolCalls: []ToolCall{{ID: "x", Name: "lookup", Args: json.RawMessage(`{"host":"a"}`)}}}, nil
	}}
	p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true, maxTurns: 3})
	f := newFixture(t, backends[0].open(t), p, model, nil, nil)
	evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
	re := find(evs, EventRunError)
	if re == nil || re.Error.Kind != "model_error" || !strings.Contains(re.Error.Message, "3 turns") || model.calls.Load() != 3 {
		t.Fatalf("run_error %+v after %d calls", re, model.calls.Load())
	}
}

// blockingModel blocks in Generate until released or canceled, signalling
// each entry.
func blockingModel() (*fakeModel, chan struct{}, chan struct{}) {
	entered, release := make(chan struct{}, 100), make(chan struct{})
	m := &fakeModel{name: "fast"}
	m.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		onDelta("partial ")
		entered <- struct{}{}
		select {
		case <-release:
			return textReply("released", 1)(ctx, req, onDelta)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return m, entered, release
}

func TestCancelMidRun(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		model, entered, release := blockingModel()
		f := newFixture(t, open(t), buildProgram(t, progOpts{}), model, nil, nil)
		ctx := context.Background()
		ch, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "q"})
		if err != nil {
			t.Fatal(err)
		}
		var evs []*Event
		var runID string
		for e := range ch {
			evs = append(evs, e)
			if e.Kind == EventRunStarted {
				runID = e.Run
			}
			if e.Kind == EventModelDelta {
				<-entered
				if !f.r.Cancel(runID) {
					t.Fatal("Cancel found no active run")
				}
			}
		}
		fin := last(evs)
		if fin.Status != StatusCanceled {
			t.Fatalf("status %s; %v", fin.Status, kinds(evs))
		}
		if f.r.Cancel(runID) {
			t.Error("Cancel found the run after it ended")
		}
		if got := f.runStatus(runID); got != store.RunCanceled {
			t.Fatalf("run status %s", got)
		}
		// The canceled call returned nothing: the record counts no call.
		if run, err := f.st.GetRun(ctx, runID); err != nil || run.Usage != (store.RunUsage{}) {
			t.Fatalf("canceled run's usage %+v, %v", run.Usage, err)
		}
		// No half-written step: the last checkpoint is the tool step (2),
		// the llm step left nothing, and the ledger has no event of it.
		cp, err := f.st.LatestCheckpoint(ctx, runID)
		if err != nil || cp.Step != 2 {
			t.Fatalf("latest checkpoint %d, %v", cp.Step, err)
		}
		if pw, _ := f.st.ListPendingWrites(ctx, runID, 3); len(pw) != 0 {
			t.Fatalf("pending writes of the canceled step: %v", pw)
		}
		ledger := f.ledger("u", "s")
		checkLedger(t, ledger)
		for _, e := range ledger {
			if e.Step == 3 || e.Kind == EventModelResponse {
				t.Errorf("event of the canceled step stored: %s %s", e.Kind, e.Node)
			}
		}
		if re := find(ledger, EventRunError); re == nil || re.Error.Kind != "canceled" {
			t.Errorf("run_error %+v", re)
		}
		// The canceled run resumes from its last step and completes.
		close(release)
		evs2 := f.collect(ctx, Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: runID}})
		if fin := last(evs2); fin.Status != StatusInterrupted {
			t.Fatalf("resumed run ended %s; %v", fin.Status, kinds(evs2))
		}
		if run, err := f.st.GetRun(ctx, runID); err != nil || run.Usage.ModelCalls != 1 || run.Status != store.RunInterrupted {
			t.Fatalf("resumed run's record %+v, %v; want 1 model call", run, err)
		}
		if f.tool.calls.Load() != 1 {
			t.Errorf("the tool ran %d times", f.tool.calls.Load())
		}
		checkLedger(t, f.ledger("u", "s"))
	})
}

func TestCallerCancelDropsEvents(t *testing.T) {
	model, entered, _ := blockingModel()
	f := newFixture(t, backends[0].open(t), buildProgram(t, progOpts{}), model, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel() // the caller gives up without reading: the run must still end and free the session
	deadline := time.Now().Add(10 * time.Second)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2() // ends the second run, whose model blocks too
	for {
		_, err := f.r.Run(ctx2, Invocation{User: "u", Session: "s", Input: "again", Runnable: "g"})
		if err == nil {
			break
		}
		if !errors.Is(err, ErrSessionBusy) || time.Now().After(deadline) {
			t.Fatalf("session not freed: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	_ = ch
}

func TestSessionBusy(t *testing.T) {
	model, entered, release := blockingModel()
	p := buildProgram(t, progOpts{noInterrupt: true})
	f := newFixture(t, backends[0].open(t), p, model, nil, nil)
	ctx := context.Background()
	ch, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if _, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "q2"}); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("second run: %v", err)
	}
	// Another session is not affected.
	other := make(chan []*Event)
	go func() { other <- f.collect(ctx, Invocation{User: "u", Session: "other", Input: "q"}) }()
	<-entered
	close(release)
	if fin := last(drain(t, ch)); fin.Status != StatusCompleted {
		t.Fatalf("first run %s", fin.Status)
	}
	if fin := last(<-other); fin.Status != StatusCompleted {
		t.Fatalf("other session %s", fin.Status)
	}
	// The busy rejection wrote nothing.
	if n := count(f.ledger("u", "s"), EventInput); n != 1 {
		t.Fatalf("%d inputs in the ledger", n)
	}
}

// TestInvocationDeadline: a run past its Invocation.Deadline is canceled
// and its caller, still reading, gets every event, run_finished
// (canceled, the deadline's error) included.
func TestInvocationDeadline(t *testing.T) {
	model, entered, _ := blockingModel()
	f := newFixture(t, backends[0].open(t), buildProgram(t, progOpts{noInterrupt: true}), model, nil, nil)
	ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q",
		Deadline: time.Now().Add(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	evs := drain(t, ch)
	fin := last(evs)
	if fin.Kind != EventRunFinished || fin.Status != StatusCanceled {
		t.Fatalf("last event %+v; %v", fin, kinds(evs))
	}
	if e := evs[len(evs)-2]; e.Kind != EventRunError || e.Error == nil ||
		!strings.Contains(e.Error.Message, context.DeadlineExceeded.Error()) {
		t.Fatalf("run_error %+v; %v", e, kinds(evs))
	}
	if got := f.runStatus(fin.Run); got != store.RunCanceled {
		t.Fatalf("run status %s", got)
	}
}

// waitingSession starts run "one" of session u/s on a SessionWait Runner
// and returns once it is blocked in its model, which answers when release
// is closed.
func waitingSession(t *testing.T) (f *fixture, ch1 <-chan *Event, release chan struct{}) {
	model, entered, release := blockingModel()
	p := buildProgram(t, progOpts{noInterrupt: true})
	f = newFixture(t, backends[0].open(t), p, model, nil, func(c *RunnerConfig) { c.SessionPolicy = SessionWait })
	ch1, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	return f, ch1, release
}

func TestSessionWait(t *testing.T) {
	f, ch1, release := waitingSession(t)
	ctx := context.Background()
	// A waiter gives up with its context.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := f.r.Run(wctx, Invocation{User: "u", Session: "s", Input: "never"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v", err)
	}
	second := make(chan (<-chan *Event), 1)
	go func() {
		ch, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "two"})
		if err != nil {
			t.Error(err)
		}
		second <- ch
	}()
	select {
	case <-second:
		t.Fatal("the second run started while the first was active")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	drain(t, ch1)
	if fin := last(drain(t, <-second)); fin.Status != StatusCompleted {
		t.Fatalf("second run %s", fin.Status)
	}
	inputs := []string{}
	for _, e := range f.ledger("u", "s") {
		if e.Kind == EventInput {
			inputs = append(inputs, e.Text)
		}
	}
	if strings.Join(inputs, ",") != "one,two" {
		t.Fatalf("inputs %v", inputs)
	}
}

// TestSessionWaitClose: a run waiting for its session's slot gives up
// with ErrClosed when Close stops waiting for the runs.
func TestSessionWaitClose(t *testing.T) {
	f, ch1, _ := waitingSession(t)
	ctx := context.Background()
	waited := make(chan error, 1)
	go func() {
		_, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "two"})
		waited <- err
	}()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_ = f.r.Close(cctx) // gives up on the blocked run: its deadline passes
	if err := <-waited; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiter: %v, want ErrClosed", err)
	}
	drain(t, ch1)
}

func TestManySessionsConcurrently(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		sessions, runs := 50, 4
		if testing.Short() {
			sessions = 10
		}
		p := buildProgram(t, progOpts{noInterrupt: true})
		f := newFixture(t, open(t), p, nil, nil, func(c *RunnerConfig) { c.SessionPolicy = SessionWait })
		var wg sync.WaitGroup
		for s := range sessions {
			for i := range runs {
				wg.Go(func() {
					ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: fmt.Sprint("s", s), Input: fmt.Sprint("q", i)})
					if err != nil {
						t.Error(err)
						return
					}
					var fin *Event
					for e := range ch {
						fin = e
					}
					if fin == nil || fin.Status != StatusCompleted || string(fin.Output) != `"The report."` {
						t.Errorf("session %d run %d: %+v", s, i, fin)
					}
				})
			}
		}
		wg.Wait()
		for s := range sessions {
			ledger := f.ledger("u", fmt.Sprint("s", s))
			checkLedger(t, ledger)
			if count(ledger, EventInput) != runs || count(ledger, EventRunFinished) != runs {
				t.Fatalf("session %d: %v", s, kinds(ledger))
			}
			// Runs of one session do not interleave in the ledger.
			open := ""
			for _, e := range ledger {
				switch {
				case e.Kind == EventInput:
					if open != "" {
						t.Fatalf("session %d: input while run %s is open", s, open)
					}
				case e.Kind == EventRunStarted:
					open = e.Run
				case e.Run != open:
					t.Fatalf("session %d: event of run %s inside run %s", s, e.Run, open)
				}
				if e.Kind == EventRunFinished {
					open = ""
				}
			}
		}
	})
}

func TestNeedsDecisionSurfaced(t *testing.T) {
	// A side-effect tool canceled mid-call may or may not have acted: the
	// VM records its intent but no result, so resuming needs a decision.
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		entered := make(chan struct{}, 10)
		block := true
		tool := lookupTool()
		inner := tool.fn
		tool.fn = func(ctx context.Context, req ToolRequest) (json.RawMessage, error) {
			if req.IdempotencyKey == "" {
				return nil, errors.New("no idempotency key for a side effect")
			}
			if block {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return inner(ctx, req)
		}
		p := buildProgram(t, progOpts{noInterrupt: true, lookupEffect: bytecode.EffectSideEffect})
		f := newFixture(t, open(t), p, nil, tool, nil)
		ctx := context.Background()
		ch, err := f.r.Run(ctx, Invocation{User: "u", Session: "s", Input: "q"})
		if err != nil {
			t.Fatal(err)
		}
		var evs []*Event
		for e := range ch {
			evs = append(evs, e)
			if e.Kind == EventToolCall {
				<-entered
				f.r.Cancel(e.Run)
			}
		}
		runID := runIDOf(t, evs)
		if last(evs).Status != StatusCanceled {
			t.Fatalf("%v", kinds(evs))
		}
		block = false
		evs2 := f.collect(ctx, Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: runID}})
		fin := last(evs2)
		if fin.Status != StatusNeedsDecision || len(fin.Decisions) != 1 || fin.Decisions[0].ID != "g/lookup" || fin.Decisions[0].Key == "" {
			t.Fatalf("ended %s %+v; %v", fin.Status, fin.Decisions, kinds(evs2))
		}
		if find(evs2, EventRunError) != nil {
			t.Errorf("needs_decision reported as an error")
		}
		if got := f.runStatus(runID); got != "needs_decision" {
			t.Fatalf("run status %s", got)
		}
		if f.tool.calls.Load() != 1 {
			t.Fatalf("the side effect ran %d times", f.tool.calls.Load())
		}
		evs3 := f.collect(ctx, Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: runID,
			Decisions: map[string]DecisionRequest{"g/lookup": {Action: "result", Value: json.RawMessage(`{"host":"q","ok":false}`)}}}})
		if fin := last(evs3); fin.Status != StatusCompleted {
			t.Fatalf("ended %s; %v %+v", fin.Status, kinds(evs3), find(evs3, EventRunError).Error)
		}
		if f.tool.calls.Load() != 1 {
			t.Fatalf("the side effect ran %d times", f.tool.calls.Load())
		}
		checkLedger(t, f.ledger("u", "s"))
	})
}

func TestRunnableSelection(t *testing.T) {
	p := buildProgram(t, progOpts{noInterrupt: true})
	f := newFixture(t, backends[0].open(t), p, nil, nil, nil)
	if _, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s", Runnable: "nope"}); !errors.Is(err, ErrUnknownRunnable) || !strings.Contains(err.Error(), "g") {
		t.Fatalf("unknown runnable: %v", err)
	}
	if _, err := f.r.Run(context.Background(), Invocation{User: "u"}); !errors.Is(err, ErrInvalidInvocation) {
		t.Fatalf("no session: %v", err)
	}
	if gi, err := f.r.SelectRunnable(""); err != nil || gi != 0 {
		t.Fatalf("default runnable %d %v", gi, err)
	}
}

func TestMissingImplementations(t *testing.T) {
	p := buildProgram(t, progOpts{})
	_, err := NewRunner(RunnerConfig{Store: backends[0].open(t), Program: p, Clock: &testClock{}, Entropy: &testEntropy{}})
	if err == nil || !strings.Contains(err.Error(), "models fast and tools lookup") {
		t.Fatalf("err %v", err)
	}
}

func TestPostRunHooks(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	firsts := map[string]uint64{}
	hook := PostRunFunc(func(ctx context.Context, job PostRun) error {
		mu.Lock()
		got[job.Session.Session+":"+string(job.Status)]++
		firsts[job.Run] = job.FirstEvent
		mu.Unlock()
		return nil
	})
	p := buildProgram(t, progOpts{noInterrupt: true})
	st := backends[0].open(t)
	cfg := RunnerConfig{Store: st, Program: p, Models: map[string]Model{"fast": &fakeModel{name: "fast", reply: textReply("ok", 1)}},
		Tools: map[string]Tool{"lookup": lookupTool()}, Clock: &testClock{}, Entropy: &testEntropy{}, Summary: hook, Workers: 2}
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ch, err := r.Run(context.Background(), Invocation{User: "u", Session: fmt.Sprint("s", i), Input: "q"})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, ch)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["s0:completed"] != 1 {
		t.Fatalf("hooks ran %v", got)
	}
	// Each job names its run's first event, as the run's record does.
	for run, first := range firsts {
		rec, err := st.GetRun(context.Background(), run)
		if err != nil || first == 0 || rec.FirstEvent != first {
			t.Errorf("run %s: the job's first event %d, the record's %d (%v)", run, first, rec.FirstEvent, err)
		}
	}
	if _, err := r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("run after close: %v", err)
	}
}

func TestCloseCancelsRuns(t *testing.T) {
	model, entered, _ := blockingModel()
	p := buildProgram(t, progOpts{})
	st := backends[0].open(t)
	r, err := NewRunner(RunnerConfig{Store: st, Program: p, Models: map[string]Model{"fast": model},
		Tools: map[string]Tool{"lookup": lookupTool()}, Clock: &testClock{}, Entropy: &testEntropy{}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var runID string
	for e := range ch {
		if e.Kind == EventRunStarted {
			runID = e.Run
		}
		if e.Kind == EventModelDelta {
			break // stop reading: Close must not wait for this reader
		}
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	run, err := st.GetRun(context.Background(), runID)
	if err != nil || run.Status != store.RunCanceled {
		t.Fatalf("run after close: %+v %v", run, err)
	}
}

// A run that stopped between its creation and the VM's first checkpoint (a
// crash) did nothing yet: resuming it starts it over under the same id from
// the input in the ledger.
func TestResumeBeforeFirstCheckpoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		f := newFixture(t, st, buildProgram(t, progOpts{}), nil, nil, nil)
		ctx := context.Background()
		key := store.SessionKey{App: f.r.App(), User: "u1", Session: "s1"}
		now := f.r.clock.Now()
		if _, _, err := st.GetOrCreateSession(ctx, key, now); err != nil {
			t.Fatal(err)
		}
		in, err := EncodeEvent(&Event{ID: "evt_in", Kind: EventInput, Time: now, App: key.App, User: key.User, Session: key.Session,
			Run: "run_crashed", Author: "user", Text: "example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendEvents(ctx, key, [][]byte{in}, now); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateRun(ctx, store.Run{ID: "run_crashed", Session: key, Runnable: f.r.cur.prog.Graphs[f.r.cur.prog.DefaultGraph()].Name,
			ProgramHash: f.r.cur.hash, Status: store.RunRunning, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
		// Answers make no sense for a run that never reached a step.
		_, err = f.r.Run(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: "run_crashed",
			Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}})
		if !errors.Is(err, ErrInvalidResume) {
			t.Fatalf("resume with values: %v", err)
		}
		evs := f.collect(ctx, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: "run_crashed"}})
		fin := last(evs)
		if fin.Kind != EventRunFinished || fin.Run != "run_crashed" || fin.Status != StatusInterrupted {
			t.Fatalf("restarted run ended %s %s (run %s); events %v", fin.Kind, fin.Status, fin.Run, kinds(evs))
		}
		if sd := find(f.ledger("u1", "s1"), EventStateDelta); sd == nil || sd.Changes[0].Field != "host" || string(sd.Changes[0].Value) != `"example.com"` {
			t.Errorf("the restarted run did not start from the ledger's input: %+v", sd)
		}
		if got := f.runStatus("run_crashed"); got != store.RunInterrupted {
			t.Errorf("run status %s", got)
		}
	})
}

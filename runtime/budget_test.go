package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// budgetLoop drafts in a loop of up to five rounds; each draft uses 100
// tokens, so a budget of 250 tokens is passed on the third turn. BUDGET,
// CATCH (write's clauses) and STOP (count's: the other way to stop) are
// replaced per test.
const budgetLoop = `
model m { provider = openai, name = "x" }
agent drafter llm { model = m, max_turns = 1 }
state S { topic: string, draft: string = "", rounds: int = 0 reduce sum, note: string = "" }
graph polish(S) input topic output draft {
  BUDGET
  node write = llm drafter { prompt = "Draft {topic}, round {rounds}" } CATCH into draft
  node count = set { rounds = 1 } STOP
  node stop  = set { note = "{error.kind}: {error.message}" }
  start -> write
  write -> count
  count -> write when rounds < 5 max 5 else -> end
  count -> end otherwise
  stop  -> end
}
agent asker llm { model = m, max_turns = 1 }
state R { q: string, first: string = "", ok: bool = false, second: string = "" }
graph twice(R) input q output second {
  budget { tokens = 100 }
  node one = llm asker { prompt = q } into first
  node ask = interrupt "Go on?" returns bool into ok
  node two = llm asker { prompt = first } into second
  start -> one
  one -> ask
  ask -> two
  two -> end
}
`

const budgetFixture = `version: 1
replies:
  - match: {}
    text: a draft
    usage: {prompt_tokens: 60, completion_tokens: 40}
`

func budgetRunner(t *testing.T, budget, catch, serve string) (*runtime.Runner, store.Store) {
	t.Helper()
	stop := ""
	if catch != "catch -> stop" {
		stop = "catch -> stop"
	}
	src := strings.NewReplacer("BUDGET", budget, "CATCH", catch, "STOP", stop).Replace(budgetLoop) + serve
	return scriptedRunner(t, "b", src, budgetFixture, "m")
}

// countKind counts the events of kind; failed collects the error kinds of
// node_failed events.
func countKind(evs []*runtime.Event, kind runtime.EventKind) (n int, failed []string) {
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
		if e.Kind == runtime.EventNodeFailed && e.Error != nil {
			failed = append(failed, e.Node+":"+e.Error.Kind)
		}
	}
	return n, failed
}

// runError is the error of the run_error event, or nil.
func runError(evs []*runtime.Event) *runtime.ErrorInfo {
	for _, e := range evs {
		if e.Kind == runtime.EventRunError {
			return e.Error
		}
	}
	return nil
}

// runUsage checks the status and usage of run's record.
func runUsage(t *testing.T, st store.Store, run string, status store.RunStatus, want store.RunUsage) {
	t.Helper()
	got, err := st.GetRun(context.Background(), run)
	if err != nil || got.Status != status || got.Usage != want {
		t.Errorf("run record: status %s usage %+v, %v; want %s %+v", got.Status, got.Usage, err, status, want)
	}
}

// ledgerOf returns the session's persisted events.
func ledgerOf(t *testing.T, st store.Store, session string) []*runtime.Event {
	t.Helper()
	ens, err := st.ListEvents(context.Background(), store.SessionKey{App: "b", User: "u", Session: session}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*runtime.Event
	for _, en := range ens {
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// A loop that would pass its budget on the third turn: the third call's
// usage takes the run to 300 tokens of 250, the node fails with
// budget_exceeded, the catch route runs, and the run completes with the
// second round's draft. The ledger records the three calls and the
// failure.
func TestBudgetLoopTakesCatchRoute(t *testing.T) {
	r, st := budgetRunner(t, "budget { tokens = 250 }", "catch -> stop", "")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "polish", Input: "tls"})
	fin := evs[len(evs)-1]
	if fin.Kind != runtime.EventRunFinished || fin.Status != runtime.StatusCompleted {
		t.Fatalf("last event %s %s %+v", fin.Kind, fin.Status, fin.Error)
	}
	var out string
	if err := json.Unmarshal(fin.Output, &out); err != nil || out != "a draft" {
		t.Errorf("output %s", fin.Output)
	}
	led := ledgerOf(t, st, "s")
	calls, failed := countKind(led, runtime.EventModelResponse)
	if calls != 3 || len(failed) != 1 || failed[0] != "write:budget_exceeded" {
		t.Errorf("ledger: %d model calls, failures %v; want 3 and [write:budget_exceeded]", calls, failed)
	}
	var note string
	for _, e := range led {
		for _, c := range e.Changes {
			if c.Field == "note" {
				_ = json.Unmarshal(c.Value, &note)
			}
			if c.Field == "rounds" && string(c.Value) != "1" && string(c.Value) != "2" {
				t.Errorf("rounds became %s", c.Value)
			}
		}
	}
	if !strings.HasPrefix(note, "budget_exceeded: agent drafter: the run has used 300 tokens, past its budget of 250") {
		t.Errorf("the catch route read %q", note)
	}
}

// model_calls refuses the third call before it is made; without a catch
// route the run fails with budget_exceeded (not retried: retry 2 does not
// repeat it), recorded in the ledger's run_error.
func TestBudgetModelCallsFailsRun(t *testing.T) {
	r, st := budgetRunner(t, "budget { model_calls = 2 }", "retry 2", "")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "polish", Input: "tls"})
	fin, rerr := evs[len(evs)-1], runError(evs)
	if fin.Status != runtime.StatusFailed || rerr == nil || rerr.Kind != "budget_exceeded" ||
		!strings.Contains(rerr.Message, "made its 2 model calls (budget model_calls = 2)") {
		t.Fatalf("run_finished %s, run_error %+v", fin.Status, rerr)
	}
	// The ledger keeps the two calls (committed with their steps) and the
	// run's error; the failed step itself is not committed.
	led := ledgerOf(t, st, "s")
	calls, _ := countKind(led, runtime.EventModelResponse)
	if e := runError(led); calls != 2 || e == nil || e.Kind != "budget_exceeded" {
		t.Errorf("ledger: %d model calls, run_error %+v; want 2 and budget_exceeded", calls, e)
	}
	runUsage(t, st, fin.Run, store.RunFailed, store.RunUsage{ModelCalls: 2, InputTokens: 120, OutputTokens: 80})
}

// The serve block's budget tightens the runnable's.
func TestBudgetServeTightens(t *testing.T) {
	r, _ := budgetRunner(t, "budget { model_calls = 4 }", "catch -> stop", "serve { run = polish, budget { model_calls = 1 } }\n")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "polish", Input: "tls"})
	calls, failed := countKind(evs, runtime.EventModelResponse)
	if calls != 1 || len(failed) != 1 || failed[0] != "write:budget_exceeded" {
		t.Errorf("%d model calls, failures %v; want 1 and [write:budget_exceeded]", calls, failed)
	}
}

// A budget counts the whole run: the call before an interrupt counts
// against the resumption, which the ledger tells the Runner.
func TestBudgetCountsAcrossResume(t *testing.T) {
	r, st := budgetRunner(t, "", "", "")
	first := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "twice", Input: "q"})
	f := first[len(first)-1]
	if f.Status != runtime.StatusInterrupted {
		t.Fatalf("first invocation: %s %+v", f.Status, f.Error)
	}
	runUsage(t, st, f.Run, store.RunInterrupted, store.RunUsage{ModelCalls: 1, InputTokens: 60, OutputTokens: 40})
	second := collect(t, r, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: f.Run,
		Values: map[string]json.RawMessage{"twice/ask": json.RawMessage("true")}}})
	fin, rerr := second[len(second)-1], runError(second)
	if fin.Status != runtime.StatusFailed || rerr == nil || rerr.Kind != "budget_exceeded" ||
		!strings.Contains(rerr.Message, "the run has used 100 tokens (budget tokens = 100)") {
		t.Fatalf("resumption: %s %+v", fin.Status, rerr)
	}
	rec, err := st.GetRun(context.Background(), f.Run)
	if err != nil || rec.FirstEvent == 0 {
		t.Fatalf("the run's record: %+v, %v", rec, err)
	}
	// From the ledger's start, or from the run's first event: the same.
	for _, first := range []uint64{0, rec.FirstEvent} {
		u, err := runtime.LedgerRunUsage(context.Background(), st, store.SessionKey{App: "b", User: "u", Session: "s"}, f.Run, first)
		if err != nil {
			t.Fatal(err)
		}
		if u.Calls != 1 || u.Usage != (runtime.Usage{PromptTokens: 60, CompletionTokens: 40}) {
			t.Errorf("LedgerRunUsage from %d = %+v", first, u)
		}
	}
	// The record counts on from the first invocation (the refused call
	// made none).
	runUsage(t, st, f.Run, store.RunFailed, store.RunUsage{ModelCalls: 1, InputTokens: 60, OutputTokens: 40})
}

// A budget_exceeded inside a sub-run (a chain agent called by an agent
// node) keeps its kind: the calling node's catch route takes it.
func TestBudgetInsideComposition(t *testing.T) {
	r, _ := scriptedRunner(t, "b", `
model m { provider = openai, name = "x" }
agent a llm { model = m, max_turns = 1 }
agent b llm { model = m, max_turns = 1 }
agent pair chain { agents = [a, b] }
state S { q: string, out: string = "", note: string = "" }
graph g(S) input q output note {
  budget { model_calls = 1 }
  node both = agent pair { prompt = q } catch -> stop into out
  node stop = set { note = error.kind }
  start -> both
  both -> end
  stop -> end
}
`, budgetFixture, "m")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "g", Input: "q"})
	fin := evs[len(evs)-1]
	if fin.Status != runtime.StatusCompleted || string(fin.Output) != `"budget_exceeded"` {
		t.Errorf("run_finished %s output %s error %+v", fin.Status, fin.Output, runError(evs))
	}
}

// A sub-graph's budget holds for each call of it: its third call is
// refused, the calling node's catch route runs, and the caller's own model
// calls go on (the caller has no budget). An llm agent's budget holds for
// each of its calls the same way.
func TestBudgetOfCalledGraphAndAgent(t *testing.T) {
	r, _ := scriptedRunner(t, "b", `
model m { provider = openai, name = "x" }
agent a llm { model = m, max_turns = 1 }
agent thrifty llm { model = m, max_turns = 1, budget { tokens = 50 } }
state In { q: string, x: string = "", n: int = 0 reduce sum }
graph inner(In) input q output x {
  budget { model_calls = 2 }
  node w = llm a { prompt = q } into x
  node c = set { n = 1 }
  start -> w
  w -> c
  c -> w when n < 3 max 3 else -> end
  c -> end otherwise
}
state S { q: string, out: string = "", note: string = "", last: string = "", cheap: string = "" }
graph g(S) input q output note {
  node sub   = graph inner { q = q } catch -> stop into out
  node stop  = set { note = error.message }
  node after = llm a { prompt = q } into last
  node small = llm thrifty { prompt = q } catch -> end2 into cheap
  node end2  = set { note = note + " | " + error.message }
  start -> sub
  sub   -> after
  stop  -> after
  after -> small
  small -> end
  end2  -> end
}
`, budgetFixture, "m")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "g", Input: "q"})
	fin := evs[len(evs)-1]
	var note string
	_ = json.Unmarshal(fin.Output, &note)
	if fin.Status != runtime.StatusCompleted ||
		note != "agent a: graph inner has made its 2 model calls (budget model_calls = 2) | agent thrifty: agent thrifty has used 100 tokens, past its budget of 50" {
		t.Errorf("run_finished %s, note %q, error %+v", fin.Status, note, runError(evs))
	}
	if calls, _ := countKind(evs, runtime.EventModelResponse); calls != 4 {
		t.Errorf("%d model calls, want 2 in inner, 1 after, 1 of thrifty", calls)
	}
}

// An agent run as the runnable is under the run's budget (its own).
func TestBudgetOfAgentRunnable(t *testing.T) {
	r, _ := scriptedRunner(t, "b", `
model m { provider = openai, name = "x" }
agent thrifty llm { model = m, max_turns = 1, budget { tokens = 50 } }
`, budgetFixture, "m")
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "thrifty", Input: "q"})
	if e := runError(evs); e == nil || e.Kind != "budget_exceeded" || e.Message != "agent thrifty: the run has used 100 tokens, past its budget of 50" {
		t.Errorf("run_error %+v", e)
	}
}

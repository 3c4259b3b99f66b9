package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

func encodeList(t *testing.T, xs ...types.Value) []byte {
	t.Helper()
	b, err := types.AppendValue(nil, types.MakeList(xs))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStateAtDeltaSemantics: time travel rebuilds a state with the VM's
// delta semantics (vm.FieldDelta.Apply), so that the state it shows is the
// state a resume continues from. A delta whose append carries a scalar, or
// whose merge carries a non-map, is a damaged record both refuse (time
// travel used to store the scalar into a null field, where resume refused
// the chain).
func TestStateAtDeltaSemantics(t *testing.T) {
	ctx := context.Background()
	p := buildProgram(t, progOpts{})
	g := &p.Graphs[0]
	nf := len(p.States[g.State].Fields)
	m, _ := types.MakeMap([]string{"k"}, []types.Value{types.MakeInt(1)})
	tests := []struct {
		name  string
		delta []byte
		want  string // field 0 after the delta; "" when the chain must be refused
	}{
		{"set", encodeList(t, types.MakeInt(0), types.MakeInt(1), types.MakeString("q")), `"q"`},
		{"append to null", encodeList(t, types.MakeInt(0), types.MakeInt(2), types.MakeList([]types.Value{types.MakeInt(1)})), `[1]`},
		{"merge into null", encodeList(t, types.MakeInt(0), types.MakeInt(3), m), `{"k": 1}`},
		{"append of a scalar", encodeList(t, types.MakeInt(0), types.MakeInt(2), types.MakeString("q")), ""},
		{"merge of a list", encodeList(t, types.MakeInt(0), types.MakeInt(3), types.MakeList(nil)), ""},
		{"unknown op", encodeList(t, types.MakeInt(0), types.MakeInt(9), types.MakeString("q")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memory.New()
			now := time.Unix(1, 0)
			run := store.Run{ID: "run_1", Session: store.SessionKey{App: "a", User: "u", Session: "s"}, Runnable: g.Name,
				ProgramHash: "h", Status: store.RunRunning, Created: now, Updated: now}
			if _, _, err := st.GetOrCreateSession(ctx, run.Session, now); err != nil {
				t.Fatal(err)
			}
			if err := st.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			full := make([]types.Value, nf)
			for step, cp := range []store.Checkpoint{
				{Kind: store.Full, State: encodeList(t, full...)},
				{Kind: store.Delta, State: tt.delta},
			} {
				cp.Run, cp.Step, cp.Time = run.ID, uint64(step), now
				if _, err := st.CommitStep(ctx, store.StepCommit{Checkpoint: cp}); err != nil {
					t.Fatal(err)
				}
			}
			ss, err := StateAt(ctx, st, p, run, 1)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("a damaged delta was accepted: field 0 = %s", ss.Fields[0].Value)
				}
				if !strings.Contains(err.Error(), "run_1") {
					t.Errorf("error %q does not name the run", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ss.Fields[0].Value.String(); got != tt.want {
				t.Errorf("field 0 = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestRunnerStateMethods: the adapters' view of state through the Runner:
// the state a new run starts from, and a waiting run's state at its last
// step (the interrupt it waits on included).
func TestRunnerStateMethods(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, memory.New(), buildProgram(t, progOpts{}), nil, nil, nil)
	init, err := f.r.InitialState("", "example.com")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, fl := range init.Fields {
		byName[fl.Name] = fl.Value.String()
	}
	if byName["question"] != `"example.com"` || byName["host"] != `""` || byName["approved"] != "false" {
		t.Errorf("initial state %v", byName)
	}
	if _, err := f.r.InitialState("nope", ""); !errors.Is(err, ErrUnknownRunnable) {
		t.Errorf("unknown runnable: %v", err)
	}
	evs := f.collect(ctx, Invocation{User: "u1", Session: "s1", Input: "example.com"})
	runID := runIDOf(t, evs)
	ss, err := f.r.LatestState(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Interrupts) != 1 || ss.Interrupts[0].ID != "g/approve" || ss.Interrupts[0].Prompt != "Publish?" {
		t.Errorf("interrupts %+v", ss.Interrupts)
	}
	if len(ss.Frontier) == 0 {
		t.Error("a waiting run has an empty frontier")
	}
	at, err := f.r.StateAt(ctx, runID, 0)
	if err != nil || at.Step != 0 {
		t.Fatalf("state at 0: %v %v", at, err)
	}
	if _, err := f.r.LatestState(ctx, "run_nope"); err == nil {
		t.Error("state of an unknown run")
	}
	if _, err := f.r.LookupRun(ctx, runID); err != nil {
		t.Error(err)
	}
}

// TestForkHoldsListSizes: a fork's edit may not set a list longer than its
// field's size (spec/language.md §9.1); within the size it forks.
func TestForkHoldsListSizes(t *testing.T) {
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "sized.agent", `workflow sized
state S { xs: list<string> max 2 = [], ok: bool = false }
graph g(S) input xs {
  node ask = interrupt "OK?" returns bool into ok
  start -> ask
  ask -> end
}
`)
	st := memory.New()
	f := newFixture(t, st, prog, nil, nil, nil)
	runID := runIDOf(t, f.collect(ctx, Invocation{User: "u1", Session: "s1", Input: `["a"]`}))
	req := ForkRequest{Run: runID, Step: 0, Clock: &testClock{}, Entropy: &testEntropy{}}
	req.Set = map[string]json.RawMessage{"xs": json.RawMessage(`["a", "b", "c"]`)}
	if _, err := Fork(ctx, st, prog, req); !errors.Is(err, ErrBadEdit) || !strings.Contains(err.Error(), "field xs: a list of 3 elements, past its max of 2") {
		t.Errorf("fork past the size: %v", err)
	}
	req.Set = map[string]json.RawMessage{"xs": json.RawMessage(`["a", "b"]`)}
	key := store.SessionKey{App: f.r.App(), User: "u1", Session: "s1"}
	before, err := st.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	nr, err := Fork(ctx, st, prog, req)
	if err != nil {
		t.Fatalf("fork within the size: %v", err)
	}
	// The fork's record names its first event: after the ledger as it
	// was, and no event of the fork precedes it.
	if rec, err := st.GetRun(ctx, nr.ID); err != nil || rec.FirstEvent != before.LastSeq+1 || nr.FirstEvent != rec.FirstEvent {
		t.Fatalf("the fork's first event: %d (returned %d), %v; want %d", rec.FirstEvent, nr.FirstEvent, err, before.LastSeq+1)
	}
	es, err := st.ListEvents(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if ev, err := DecodeEvent(e.Data); err == nil && ev.Run == nr.ID {
			if e.Seq < nr.FirstEvent {
				t.Errorf("the fork's event %d precedes its first event %d", e.Seq, nr.FirstEvent)
			}
		}
	}
}

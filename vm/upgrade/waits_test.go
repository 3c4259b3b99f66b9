package upgrade_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/internal/upgradetest"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/vm"
	"github.com/agentc/agentc/vm/upgrade"
)

// subHost runs a graph node's callee as a sub-run of the same machine, as
// the runtime does (runtime/host.go, subRun): a sub-run that stops at
// interrupts parks the calling task, and an answer continues it from its
// snapshot.
type subHost struct {
	m     *vm.Machine
	clock vm.Clock
}

func (h subHost) Call(ctx context.Context, req vm.CallRequest) (types.Value, error) {
	id := req.Node
	if req.MapIndex >= 0 {
		id += "/" + strconv.Itoa(req.MapIndex)
	}
	opts := vm.Options{RunID: req.Run, PathPrefix: id, Host: h, Fields: req.Args, Clock: h.clock}
	var res *vm.Result
	var err error
	if req.SubRun != nil && req.SubRun.From != nil {
		res, err = h.m.Resume(ctx, int(req.Callee), vm.ResumeInput{From: req.SubRun.From, Answers: req.SubRun.Answers}, opts)
	} else {
		res, err = h.m.Run(ctx, int(req.Callee), opts)
	}
	if err != nil {
		return types.Value{}, err
	}
	if res.Status == vm.StatusInterrupted {
		return types.Value{}, &vm.Suspension{Snapshot: res.Snapshot, Interrupts: res.Interrupts}
	}
	return res.Output, nil
}

// parkedRun runs upgradetest.Nested until its map items wait inside their
// sub-runs; nw rewords the sub-run's prompt.
func parkedRun(t testing.TB) (old, nw *bytecode.Program, m *vm.Machine, st *vm.MemStore, opts vm.Options) {
	old = runtimetest.CompileSource(t, "w.agent", upgradetest.Nested)
	nw = runtimetest.CompileSource(t, "w.agent", strings.Replace(upgradetest.Nested, "Approve {item}?", "Approve {item} now?", 1))
	m, err := vm.New(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	gi, _ := m.Graph("g")
	st = vm.NewMemStore()
	clock := &runtimetest.Clock{}
	opts = vm.Options{RunID: "r", Checkpointer: st, Host: subHost{m, clock}, Clock: clock}
	res, err := m.Run(context.Background(), gi, opts)
	if err != nil || res.Status != vm.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("run: %v %v", res, err)
	}
	return old, nw, m, st, opts
}

// FuzzPlanInterrupts: a damaged interrupts record (parked sub-runs, host
// state, timers) is refused by Plan (U710), never a panic.
func FuzzPlanInterrupts(f *testing.F) {
	old, nw, _, st, _ := parkedRun(f)
	chain := st.Chain("r")
	f.Add(chain[len(chain)-1].Interrupts)
	f.Fuzz(func(t *testing.T, b []byte) {
		c := slices.Clone(chain)
		c[len(c)-1].Interrupts = b
		_, _ = upgrade.Plan(old, nw, "g", c, 0)
	})
}

// TestPlanRefusesParkedSubRuns: a run whose map items wait inside their
// sub-runs (path ids g/each/0/ask/q, …) is not moved, even to a program
// that only rewords a prompt: the parked snapshots are the old program's
// (U712, at the sub-run's interrupt). Answered on its own program, it
// finishes there.
func TestPlanRefusesParkedSubRuns(t *testing.T) {
	old, nw, m, st, opts := parkedRun(t)
	gi, _ := m.Graph("g")
	ctx := context.Background()
	var res *vm.Result
	var err error
	if !upgrade.Check(old, nw).Compatible() {
		t.Fatalf("Check refuses a reworded prompt: %v", upgrade.Check(old, nw).Issues)
	}
	rec, rep := upgrade.Plan(old, nw, "g", st.Chain("r"), 0)
	if rec != nil || !slices.Contains(codes(rep), "U712") {
		t.Fatalf("Plan = %v, codes %v, want U712", rec != nil, codes(rep))
	}
	if !strings.Contains(rep.Error(), "g/each/0/ask/q") || !rep.Issues[0].Old.IsValid() {
		t.Errorf("the refusal does not name the path id at its position: %s", rep.Error())
	}
	// On its own program the run goes on: one answer at a time.
	for _, id := range []string{"g/each/0/ask/q", "g/each/1/ask/q"} {
		opts.Checkpointer = st
		res, err = m.Resume(ctx, gi, vm.ResumeInput{Chain: st.Chain("r"), Answers: map[string]types.Value{id: types.MakeString("ok")}}, opts)
		if err != nil {
			t.Fatal(err)
		}
	}
	if res.Status != vm.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].ID != "g/close" {
		t.Fatalf("after both answers: %s %+v, want waiting at g/close", res.Status, res.Interrupts)
	}
	// Waiting at its own graph's interrupt, it moves.
	if rec, rep := upgrade.Plan(old, nw, "g", st.Chain("r"), 0); rec == nil {
		t.Fatalf("refused at g/close: %v", rep.Issues)
	}
}

const timed = `workflow w
state S { ok: bool = false, note: string = "" }
graph g(S) output note {
  node cool = wait 1h
  node ask  = interrupt "Close?" returns bool timeout 48h else -> esc into ok
  node esc  = set { note = "escalated: {error.kind}" }
  node fin  = set { note = "closed {ok}" }
  start -> cool
  cool  -> ask
  ask   -> fin
  esc   -> end
  fin   -> end
}
`

// TestPlanMovesTimers: a run waiting at a wait node, then at an interrupt
// with a timeout, moves to a program with reworded nodes keeping each
// deadline it armed: resumed after it, the new program fires it. An
// interrupt that gains or loses its timeout refuses the move (U713).
func TestPlanMovesTimers(t *testing.T) {
	old := runtimetest.CompileSource(t, "w.agent", timed)
	edited := strings.NewReplacer(`"Close?"`, `"Close this ticket?"`, `"escalated: {error.kind}"`, `"timed out: {error.kind}"`).Replace(timed)
	nw := runtimetest.CompileSource(t, "w.agent", edited)
	m, err := vm.New(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := vm.NewMemStore()
	ctx := context.Background()
	start := runtimetest.DefaultStart
	res, err := m.Run(ctx, 0, vm.Options{RunID: "r", Checkpointer: st, Clock: &runtimetest.Clock{Start: start}})
	if err != nil || res.Status != vm.StatusInterrupted || len(res.Timers) != 1 || !res.Timers[0].Wait {
		t.Fatalf("run: %v %v", res, err)
	}
	due := res.Timers[0].Due

	// Moved while it waits at cool: the wait's deadline is kept.
	rec, rep := upgrade.Plan(old, nw, "g", st.Chain("r"), 0)
	if rec == nil {
		t.Fatalf("refused: %v", rep.Issues)
	}
	waits, err := vm.DecodeWaits(nw, 0, rec.Interrupts)
	if err != nil || len(waits) != 1 || !waits[0].Wait || !waits[0].Due.Equal(due) || waits[0].ID != "g/cool" {
		t.Fatalf("moved record waits on %+v (%v), want g/cool until %s", waits, err, due)
	}
	mn, err := vm.New(nw, nil)
	if err != nil {
		t.Fatal(err)
	}
	nst := vm.NewMemStore()
	res, err = mn.Resume(ctx, 0, vm.ResumeInput{Chain: []vm.StepRecord{*rec}}, vm.Options{Checkpointer: nst, Clock: &runtimetest.Clock{Start: due}})
	if err != nil || res.Status != vm.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Prompt != "Close this ticket?" || len(res.Timers) != 1 {
		t.Fatalf("resumed after cool's deadline on the new program: %v %v", res, err)
	}
	askDue := res.Timers[0].Due

	// Moved back while it waits at ask: the timeout's deadline is kept, and
	// resuming after it fires it into the else route.
	rec, rep = upgrade.Plan(nw, old, "g", nst.Chain("r"), 0)
	if rec == nil {
		t.Fatalf("refused: %v", rep.Issues)
	}
	ost := vm.NewMemStore()
	res, err = m.Resume(ctx, 0, vm.ResumeInput{Chain: []vm.StepRecord{*rec}}, vm.Options{Checkpointer: ost, Clock: &runtimetest.Clock{Start: askDue.Add(time.Minute)}})
	if err != nil || res.Status != vm.StatusCompleted || res.Output.Str() != "escalated: timeout" {
		t.Fatalf("resumed after ask's deadline: %v %v", res, err)
	}

	// Without its timeout the interrupt would wait forever where the old
	// program armed a deadline, and the other way round.
	noTimeout := runtimetest.CompileSource(t, "w.agent", strings.NewReplacer(
		" timeout 48h else -> esc", "", `"escalated: {error.kind}"`, `"declined"`,
		"  ask   -> fin\n", "  ask   -> fin when ok\n  ask   -> esc otherwise\n").Replace(timed))
	for _, pair := range [][2]string{{"old", "new"}, {"new", "old"}} {
		a, b := nw, noTimeout
		if pair[0] == "new" {
			a, b = noTimeout, nw
		}
		r := upgrade.Check(a, b)
		if r.Compatible() || !slices.Contains(codes(r), "U713") {
			t.Errorf("Check from %s to %s: codes %v, want U713", pair[0], pair[1], codes(r))
		}
	}
	if rec, rep := upgrade.Plan(nw, noTimeout, "g", nst.Chain("r"), 0); rec != nil || !slices.Contains(codes(rep), "U713") {
		t.Errorf("Plan = %v, codes %v, want U713", rec != nil, codes(rep))
	}
}

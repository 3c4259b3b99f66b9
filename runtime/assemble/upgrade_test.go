package assemble

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/internal/upgradetest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm/upgrade"
)

// supportVariant compiles the support example with variant v ("": none)
// and returns the program and its project root.
func supportVariant(t *testing.T, v string) (*bytecode.Program, string) {
	t.Helper()
	return upgradetest.Program(t, "../../examples", v)
}

func supportRunner(t *testing.T, st store.Store, p *bytecode.Program, root string) *runtime.Runner {
	t.Helper()
	r, err := New(st, Options{Program: p, Verified: true, Root: root, Replay: DefaultReplay(p), Env: envOf(nil),
		Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func finished(t *testing.T, ch <-chan *runtime.Event) *runtime.Event {
	t.Helper()
	var fin *runtime.Event
	for e := range ch {
		if e.Kind == runtime.EventRunFinished {
			fin = e
		}
	}
	if fin == nil {
		t.Fatal("no run_finished")
	}
	return fin
}

// waitAtApprove starts a run of the original support example that waits
// at approve, and returns its id.
func waitAtApprove(t *testing.T, st store.Store, session string) string {
	t.Helper()
	p, root := supportVariant(t, "")
	r := supportRunner(t, st, p, root)
	ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: session,
		Input: "prod.example.com fails with x509: certificate signed by unknown authority"})
	if err != nil {
		t.Fatal(err)
	}
	fin := finished(t, ch)
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 1 || fin.Interrupts[0].Node != "approve" {
		t.Fatalf("the run did not wait at approve: %s %+v", fin.Status, fin.Interrupts)
	}
	return fin.Run
}

func latestProgram(t *testing.T, st store.Store, run string) string {
	t.Helper()
	cp, err := st.LatestCheckpoint(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return cp.ProgramHash
}

// TestSupportUpgrades: a run of the support example waiting at approve,
// resumed by a process whose program is an edit of it. Without an upgrade
// it finishes on its own program (pinned); with one it moves when the edit
// is compatible (an edited prompt, a new defaulted field) and finishes on
// the new program, and is refused, keeping its program, when the edit
// changes approve's resume type or removes approve.
func TestSupportUpgrades(t *testing.T) {
	ctx := context.Background()
	answer := map[string]json.RawMessage{"approve": json.RawMessage(`{"approved": true}`)}
	for _, v := range upgradetest.Variants {
		for _, up := range []runtime.Upgrade{runtime.UpgradeNever, runtime.UpgradeIfCompatible, runtime.UpgradeRequired} {
			name := v.Name + []string{"/pinned", "/if-compatible", "/upgrade"}[up]
			t.Run(name, func(t *testing.T) {
				st := memstore.New()
				run := waitAtApprove(t, st, "s")
				oldHash := latestProgram(t, st, run)
				p, root := supportVariant(t, v.Name)
				newHash := hex.EncodeToString(p.Hash[:])
				r := supportRunner(t, st, p, root)
				ch, err := r.Run(ctx, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run, Values: answer, Upgrade: up}})
				if up == runtime.UpgradeRequired && !v.Compatible {
					var ue *runtime.UpgradeError
					if !errors.Is(err, runtime.ErrUpgradeRefused) || !errors.As(err, &ue) {
						t.Fatalf("resume: %v, want ErrUpgradeRefused", err)
					}
					i := slices.IndexFunc(ue.Report.Issues, func(i upgrade.Issue) bool { return string(i.Code) == v.Code })
					if i < 0 || !ue.Report.Issues[i].Old.IsValid() || !ue.Report.Issues[i].New.IsValid() {
						t.Fatalf("the refusal lacks %s with both positions: %v", v.Code, ue.Report.Issues)
					}
					if got := latestProgram(t, st, run); got != oldHash {
						t.Errorf("a refused upgrade wrote a checkpoint of %s", got)
					}
					// The run keeps its program: resumed without the
					// upgrade, it finishes there.
					ch, err = r.Run(ctx, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run, Values: answer}})
					up = runtime.UpgradeNever
				}
				if err != nil {
					t.Fatal(err)
				}
				fin := finished(t, ch)
				if fin.Status != runtime.StatusCompleted {
					t.Fatalf("the resumed run ended %s: %+v", fin.Status, fin.Error)
				}
				want := oldHash
				if up == runtime.UpgradeRequired || up == runtime.UpgradeIfCompatible && v.Compatible {
					want = newHash
				}
				if got := latestProgram(t, st, run); got != want {
					t.Errorf("the run finished on program %.12s, want %.12s (old %.12s, new %.12s)", got, want, oldHash, newHash)
				}
				if v.Name == "defaulted-field" && up != runtime.UpgradeNever {
					ss, err := r.LatestState(ctx, run)
					if err != nil {
						t.Fatal(err)
					}
					i := slices.IndexFunc(ss.Fields, func(f runtime.StateField) bool { return f.Name == "reviews" })
					if i < 0 || ss.Fields[i].Value.Int() != 0 {
						t.Errorf("the new field: %+v", ss.Fields)
					}
				}
			})
		}
	}
}

// TestUpgradeWaitsInsideSubRuns: a run whose map items wait inside their
// sub-runs is refused an upgrade (U712) and keeps its program, though the
// edit only rewords prompts; answered there one item at a time, it moves
// once it waits at its own graph's interrupt, and finishes on the new
// program.
func TestUpgradeWaitsInsideSubRuns(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	runner := func(src string) (*runtime.Runner, string) {
		p := runtimetest.CompileSource(t, "w.agent", src)
		r, err := New(st, Options{Program: p, Verified: true, Env: envOf(nil), Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r, hex.EncodeToString(p.Hash[:])
	}
	old, oldHash := runner(upgradetest.Nested)
	ch, err := old.Run(ctx, runtime.Invocation{User: "u", Session: "s", Runnable: "g", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	fin := finished(t, ch)
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 2 {
		t.Fatalf("the run did not wait inside its map items: %s %+v", fin.Status, fin.Interrupts)
	}
	run := fin.Run
	nw, newHash := runner(strings.NewReplacer("Approve {item}?", "Approve item {item}?", "Close {notes}?", "Close with {notes}?").Replace(upgradetest.Nested))
	answer := func(id string, up runtime.Upgrade) (<-chan *runtime.Event, error) {
		return nw.Run(ctx, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run,
			Values: map[string]json.RawMessage{id: json.RawMessage(`"yes"`)}, Upgrade: up}})
	}
	_, err = answer("each/0/ask/q", runtime.UpgradeRequired)
	var ue *runtime.UpgradeError
	if !errors.As(err, &ue) || !slices.ContainsFunc(ue.Report.Issues, func(i upgrade.Issue) bool { return i.Code == upgrade.WaitsInside }) {
		t.Fatalf("resume with --upgrade inside a sub-run: %v, want U712", err)
	}
	// Tried for every resume (serve --upgrade-waiting), it stays on its
	// program while the items wait, and moves at close.
	for i, id := range []string{"each/0/ask/q", "each/1/ask/q"} {
		ch, err := answer(id, runtime.UpgradeIfCompatible)
		if err != nil {
			t.Fatal(err)
		}
		fin = finished(t, ch)
		if fin.Status != runtime.StatusInterrupted || latestProgram(t, st, run) != oldHash {
			t.Fatalf("answer %d: %s on %.12s, want interrupted on the old program", i, fin.Status, latestProgram(t, st, run))
		}
	}
	if len(fin.Interrupts) != 1 || fin.Interrupts[0].Prompt != "Close [\"yes\",\"yes\"]?" {
		t.Fatalf("waits on %+v, want the old program's close", fin.Interrupts)
	}
	ch, err = nw.Run(ctx, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run,
		Values: map[string]json.RawMessage{"close": json.RawMessage(`true`)}, Upgrade: runtime.UpgradeRequired}})
	if err != nil {
		t.Fatal(err)
	}
	if fin = finished(t, ch); fin.Status != runtime.StatusCompleted || latestProgram(t, st, run) != newHash {
		t.Fatalf("close answered with --upgrade: %s on %.12s, want completed on the new program", fin.Status, latestProgram(t, st, run))
	}
}

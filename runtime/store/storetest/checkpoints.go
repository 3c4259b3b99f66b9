package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

func testCommitAndGet(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	_, err := s.LatestCheckpoint(ctx, "run_1")
	wantErr(t, "latest of a run without checkpoints", err, store.ErrNotFound)

	c0 := checkpoint("run_1", 0, store.Full)
	c0.State = []byte{0, 1, 2, 0xFF, 0} // arbitrary binary
	c0.Interrupts = nil
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: c0})
	must(t, err)
	c1 := checkpoint("run_1", 1, store.Delta)
	c1.ProgramHash, c1.SchemaHash = "prog-2", "schema-2"
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: c1, Status: store.RunInterrupted})
	must(t, err)

	for _, want := range []store.Checkpoint{c0, c1} {
		got, err := s.GetCheckpoint(ctx, "run_1", want.Step)
		must(t, err)
		if err := sameCheckpoint(got, want); err != nil {
			t.Error(err)
		}
	}
	latest, err := s.LatestCheckpoint(ctx, "run_1")
	must(t, err)
	if err := sameCheckpoint(latest, c1); err != nil {
		t.Errorf("latest: %v", err)
	}
	r, err := s.GetRun(ctx, "run_1")
	must(t, err)
	if r.Status != store.RunInterrupted || !r.Updated.Equal(c1.Time) {
		t.Errorf("run after commit with status: %s at %v, want interrupted at %v", r.Status, r.Updated, c1.Time)
	}
	// A commit without a status leaves it alone.
	commit(t, s, "run_1", 2, store.Delta)
	r, err = s.GetRun(ctx, "run_1")
	must(t, err)
	if r.Status != store.RunInterrupted {
		t.Errorf("status after commit without one: %s", r.Status)
	}
	_, err = s.GetCheckpoint(ctx, "run_1", 3)
	wantErr(t, "missing step", err, store.ErrNotFound)
	if err != nil && !strings.Contains(err.Error(), "run_1") {
		t.Errorf("error %q does not name the run", err)
	}
}

func testCommitRules(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	newRun(t, s, sess("app", "u", "s"), "run_2")
	_, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 0, store.Delta)})
	wantErr(t, "delta as first checkpoint", err, store.ErrInvalid)
	commit(t, s, "run_1", 5, store.Full)
	for _, step := range []uint64{5, 3, 0} {
		_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", step, store.Delta)})
		wantErr(t, fmt.Sprintf("step %d after 5", step), err, store.ErrConflict)
	}
	commit(t, s, "run_1", 9, store.Delta) // steps need not be contiguous
	commit(t, s, "run_2", 0, store.Full)  // other runs are independent
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("nosuch", 0, store.Full)})
	wantErr(t, "commit to missing run", err, store.ErrNotFound)
	bad := checkpoint("run_1", 10, 0)
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: bad})
	wantErr(t, "kind 0", err, store.ErrInvalid)
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("", 10, store.Full)})
	wantErr(t, "empty run", err, store.ErrInvalid)
	// Refused commits wrote nothing.
	cps, err := s.ListCheckpoints(ctx, "run_1", store.CheckpointFilter{})
	must(t, err)
	if got := steps(cps); fmt.Sprint(got) != "[9 5]" {
		t.Errorf("steps after refused commits = %v, want [9 5]", got)
	}
}

func testListCheckpoints(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	newRun(t, s, sess("app", "u", "s"), "run_2")
	kinds := map[uint64]store.CheckpointKind{}
	for step := uint64(0); step < 10; step++ {
		k := store.Delta
		if step%4 == 0 {
			k = store.Full
		}
		kinds[step] = k
		commit(t, s, "run_1", step, k)
	}
	commit(t, s, "run_2", 0, store.Full)
	for _, before := range []uint64{0, 1, 5, 9, 10, 100} {
		for _, kind := range []store.CheckpointKind{0, store.Full, store.Delta} {
			for _, limit := range []int{0, 1, 2, 3, 100} {
				f := store.CheckpointFilter{Before: before, Kind: kind, Limit: limit}
				var want []uint64
				for step := uint64(9); step != ^uint64(0); step-- {
					if (before == 0 || step < before) && (kind == 0 || kinds[step] == kind) && (limit == 0 || len(want) < limit) {
						want = append(want, step)
					}
				}
				got, err := s.ListCheckpoints(ctx, "run_1", f)
				must(t, err)
				if fmt.Sprint(steps(got)) != fmt.Sprint(want) {
					t.Errorf("ListCheckpoints(%+v) = %v, want %v", f, steps(got), want)
				}
				for _, c := range got {
					if err := sameCheckpoint(c, checkpoint("run_1", c.Step, kinds[c.Step])); err != nil {
						t.Error(err)
					}
				}
			}
		}
	}
	got, err := s.ListCheckpoints(ctx, "nosuch", store.CheckpointFilter{})
	must(t, err)
	if len(got) != 0 {
		t.Errorf("checkpoints of a missing run: %v", steps(got))
	}
}

// testDeltaChain checks delta history with periodic full snapshots: every
// chain starts at the last full snapshot and holds every delta after it.
func testDeltaChain(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	for i := uint64(0); i < 12; i++ {
		step := i * 10 // sparse steps
		k := store.Delta
		if i%4 == 0 {
			k = store.Full
		}
		commit(t, s, "run_1", step, k)
	}
	for _, tc := range []struct {
		step uint64
		want []uint64
	}{
		{0, []uint64{0}}, {30, []uint64{0, 10, 20, 30}}, {40, []uint64{40}},
		{70, []uint64{40, 50, 60, 70}}, {110, []uint64{80, 90, 100, 110}},
	} {
		chain, err := s.CheckpointChain(ctx, "run_1", tc.step)
		must(t, err)
		if fmt.Sprint(steps(chain)) != fmt.Sprint(tc.want) {
			t.Errorf("CheckpointChain(%d) = %v, want %v", tc.step, steps(chain), tc.want)
		}
		for i, c := range chain {
			want := store.Delta
			if i == 0 {
				want = store.Full
			}
			if err := sameCheckpoint(c, checkpoint("run_1", c.Step, want)); err != nil {
				t.Error(err)
			}
		}
	}
	for _, step := range []uint64{5, 120} {
		_, err := s.CheckpointChain(ctx, "run_1", step)
		wantErr(t, fmt.Sprintf("chain of missing step %d", step), err, store.ErrNotFound)
	}
	_, err := s.CheckpointChain(ctx, "nosuch", 0)
	wantErr(t, "chain of missing run", err, store.ErrNotFound)
}

func testPrune(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	for step := uint64(0); step < 12; step++ {
		k := store.Delta
		if step%4 == 0 {
			k = store.Full
		}
		commit(t, s, "run_1", step, k)
	}
	n, err := s.PruneCheckpoints(ctx, "run_1", 9)
	must(t, err)
	if n != 8 {
		t.Errorf("pruned %d, want 8 (steps 0-7)", n)
	}
	cps, err := s.ListCheckpoints(ctx, "run_1", store.CheckpointFilter{})
	must(t, err)
	if fmt.Sprint(steps(cps)) != "[11 10 9 8]" {
		t.Errorf("after prune: %v, want [11 10 9 8]", steps(cps))
	}
	chain, err := s.CheckpointChain(ctx, "run_1", 11)
	must(t, err)
	if fmt.Sprint(steps(chain)) != "[8 9 10 11]" {
		t.Errorf("chain after prune: %v", steps(chain))
	}
	n, err = s.PruneCheckpoints(ctx, "run_1", 9)
	must(t, err)
	if n != 0 {
		t.Errorf("second prune deleted %d", n)
	}
	_, err = s.GetCheckpoint(ctx, "run_1", 3)
	wantErr(t, "pruned step", err, store.ErrNotFound)
	_, err = s.PruneCheckpoints(ctx, "run_1", 3)
	wantErr(t, "prune at a missing step", err, store.ErrNotFound)
}

func testPendingWrites(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	commit(t, s, "run_1", 0, store.Full)
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "b", 0, []byte("b0")))
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "a", 1, []byte("a1")))
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "a", 0, []byte("a0")))
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "team/writer", 0, nil))
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "a", 0, []byte("a0"))) // idempotent
	wantErr(t, "different writes for one attempt", s.PutPendingWrite(ctx, "run_1", 1, "a", 0, []byte("x")), store.ErrConflict)
	must(t, s.PutPendingWrite(ctx, "run_1", 2, "c", 0, []byte("c0")))

	list := func(step uint64) string {
		t.Helper()
		ws, err := s.ListPendingWrites(ctx, "run_1", step)
		must(t, err)
		var parts []string
		for _, w := range ws {
			parts = append(parts, fmt.Sprintf("%s/%d=%s", w.Node, w.Attempt, w.Writes))
		}
		return strings.Join(parts, " ")
	}
	if got := list(1); got != "a/0=a0 a/1=a1 b/0=b0 team/writer/0=" {
		t.Errorf("pending writes of step 1: %q", got)
	}
	commit(t, s, "run_1", 1, store.Delta)
	if got := list(1); got != "" {
		t.Errorf("pending writes of committed step 1: %q", got)
	}
	if got := list(2); got != "c/0=c0" {
		t.Errorf("pending writes of step 2 after committing step 1: %q", got)
	}
	wantErr(t, "write to a committed step", s.PutPendingWrite(ctx, "run_1", 1, "d", 0, []byte("d")), store.ErrConflict)
	wantErr(t, "write to a missing run", s.PutPendingWrite(ctx, "nosuch", 1, "d", 0, nil), store.ErrNotFound)
	ws, err := s.ListPendingWrites(ctx, "nosuch", 1)
	must(t, err)
	if len(ws) != 0 {
		t.Errorf("pending writes of a missing run: %v", ws)
	}
}

func testEffects(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	key, err := s.PutIntent(ctx, "run_1", "pay", 0)
	must(t, err)
	if want := store.IdempotencyKey("run_1", "pay", 0); key != want {
		t.Errorf("intent key %q, want %q", key, want)
	}
	again, err := s.PutIntent(ctx, "run_1", "pay", 0)
	must(t, err)
	if again != key {
		t.Errorf("second PutIntent returned %q, want %q", again, key)
	}
	key1, err := s.PutIntent(ctx, "run_1", "pay", 1)
	must(t, err)
	if key1 == key {
		t.Errorf("attempts 0 and 1 share key %q", key)
	}
	odd, err := s.PutIntent(ctx, "run_1", "team/pay:v2 %[0]", 3) // escapes round-trip
	must(t, err)

	_, err = s.GetEffectResult(ctx, key)
	wantErr(t, "result before it is recorded", err, store.ErrNotFound)
	lookup := func(k string) string {
		t.Helper()
		e, err := s.LookupEffect(ctx, k)
		must(t, err)
		if e.Key != k {
			t.Errorf("LookupEffect(%q).Key = %q", k, e.Key)
		}
		return fmt.Sprintf("intent=%v done=%v result=%q", e.Intent, e.Done, e.Result)
	}
	if got := lookup(key); got != `intent=true done=false result=""` {
		t.Errorf("effect with an intent only: %s", got)
	}
	if got := lookup(store.IdempotencyKey("run_1", "pay", 7)); got != `intent=false done=false result=""` {
		t.Errorf("effect never attempted: %s", got)
	}
	if got := lookup(store.IdempotencyKey("nosuch", "pay", 0)); got != `intent=false done=false result=""` {
		t.Errorf("effect of a missing run: %s", got)
	}
	must(t, s.PutEffectResult(ctx, key, []byte("charged 42")))
	must(t, s.PutEffectResult(ctx, key, []byte("charged 42")))
	wantErr(t, "a different result", s.PutEffectResult(ctx, key, []byte("charged 43")), store.ErrConflict)
	must(t, s.PutEffectResult(ctx, odd, []byte("odd")))
	for k, want := range map[string]string{key: "charged 42", odd: "odd"} {
		got, err := s.GetEffectResult(ctx, k)
		must(t, err)
		if string(got) != want {
			t.Errorf("GetEffectResult(%q) = %q, want %q", k, got, want)
		}
	}
	if got := lookup(key); got != `intent=true done=true result="charged 42"` {
		t.Errorf("effect with a result: %s", got)
	}
	_, err = s.GetEffectResult(ctx, key1)
	wantErr(t, "result of another attempt", err, store.ErrNotFound)
	_, err = s.LookupEffect(ctx, "garbage")
	wantErr(t, "lookup of a malformed key", err, store.ErrInvalid)
	wantErr(t, "result without intent", s.PutEffectResult(ctx, store.IdempotencyKey("run_1", "pay", 9), nil), store.ErrNotFound)
	wantErr(t, "result of a missing run", s.PutEffectResult(ctx, store.IdempotencyKey("nosuch", "pay", 0), nil), store.ErrNotFound)
	wantErr(t, "malformed key", s.PutEffectResult(ctx, "no-colons", nil), store.ErrInvalid)
	_, err = s.GetEffectResult(ctx, "a:b:c:d")
	wantErr(t, "malformed key", err, store.ErrInvalid)
	_, err = s.PutIntent(ctx, "nosuch", "pay", 0)
	wantErr(t, "intent of a missing run", err, store.ErrNotFound)
}

func testJournal(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	newRun(t, s, sess("app", "u", "s"), "run_2")
	commits := []struct {
		step      uint64
		journal   []string
		wantFirst uint64
		wantNext  uint64
	}{
		{0, []string{"clock 1", "rand 7"}, 1, 3},
		{1, nil, 0, 3},
		{2, []string{"model reply"}, 3, 4},
	}
	for _, c := range commits {
		k := store.Delta
		if c.step == 0 {
			k = store.Full
		}
		done, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", c.step, k), Journal: byteses(c.journal...)})
		must(t, err)
		if done.FirstJournal != c.wantFirst {
			t.Errorf("step %d: first journal seq %d, want %d", c.step, done.FirstJournal, c.wantFirst)
		}
		cp, err := s.GetCheckpoint(ctx, "run_1", c.step)
		must(t, err)
		if cp.JournalNext != c.wantNext {
			t.Errorf("step %d: JournalNext %d, want %d", c.step, cp.JournalNext, c.wantNext)
		}
	}
	_, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_2", 0, store.Full), Journal: byteses("other")})
	must(t, err)
	checkEntries(t, "ListJournal(from", func(from uint64, limit int) ([]store.Entry, error) {
		return s.ListJournal(ctx, "run_1", from, limit)
	}, []entriesCase{
		{0, 0, "[1 2 3] [clock 1 rand 7 model reply]"},
		{1, 0, "[1 2 3] [clock 1 rand 7 model reply]"},
		{3, 0, "[3] [model reply]"},
		{4, 0, "[] []"},
		{1, 2, "[1 2] [clock 1 rand 7]"},
		{2, 1, "[2] [rand 7]"},
	})
	es, err := s.ListJournal(ctx, "run_2", 0, 0)
	must(t, err)
	if got := fmt.Sprint(seqs(es), datas(es)); got != "[1] [other]" {
		t.Errorf("journal of run_2 = %s", got)
	}
}

// testDeleteRun fills two runs of one session with every kind of record,
// deletes one, and checks by listing that all of it, and nothing of the
// other, is gone.
func testDeleteRun(t *testing.T, s store.Store) {
	key := sess("app", "u", "s")
	fill := func(run string) string {
		newRun(t, s, key, run)
		for step := uint64(0); step < 3; step++ {
			k := store.Delta
			if step == 0 {
				k = store.Full
			}
			_, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint(run, step, k),
				Events: byteses("event of " + run), Journal: byteses("journal of " + run)})
			must(t, err)
		}
		must(t, s.PutPendingWrite(ctx, run, 3, "n", 0, []byte("w")))
		ik, err := s.PutIntent(ctx, run, "pay", 0)
		must(t, err)
		must(t, s.PutEffectResult(ctx, ik, []byte("paid")))
		must(t, s.PutTaskIndex(ctx, "u", "task-"+run, run))
		return ik
	}
	gone, kept := fill("run_a"), fill("run_b")
	must(t, s.DeleteRun(ctx, "run_a"))

	_, err := s.GetRun(ctx, "run_a")
	wantErr(t, "deleted run", err, store.ErrNotFound)
	runs, _, err := s.ListRuns(ctx, store.RunFilter{App: "app", User: "u", Session: "s"})
	must(t, err)
	if len(runs) != 1 || runs[0].ID != "run_b" {
		t.Errorf("runs after delete: %v", runs)
	}
	check := func(run, ik string, wantGone bool) {
		t.Helper()
		cps, err := s.ListCheckpoints(ctx, run, store.CheckpointFilter{})
		must(t, err)
		ws, err := s.ListPendingWrites(ctx, run, 3)
		must(t, err)
		js, err := s.ListJournal(ctx, run, 0, 0)
		must(t, err)
		_, errEffect := s.GetEffectResult(ctx, ik)
		_, errTask := s.LookupTask(ctx, "u", "task-"+run)
		_, errLatest := s.LatestCheckpoint(ctx, run)
		counts := fmt.Sprint(len(cps), len(ws), len(js), errEffect == nil, errTask == nil, errLatest == nil)
		want := "3 1 3 true true true"
		if wantGone {
			want = "0 0 0 false false false"
		}
		if counts != want {
			t.Errorf("%s: checkpoints, pending, journal, effect, task, latest = %s, want %s", run, counts, want)
		}
	}
	check("run_a", gone, true)
	check("run_b", kept, false)
	events, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	if len(events) != 6 {
		t.Errorf("session events after DeleteRun: %d, want 6 (the ledger is kept)", len(events))
	}
	wantErr(t, "delete again", s.DeleteRun(ctx, "run_a"), store.ErrNotFound)
	// The id can be reused and starts empty: nothing of the old run leaks.
	newRun(t, s, key, "run_a")
	check("run_a", gone, true)
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_a", 0, store.Full), Journal: byteses("j")})
	must(t, err)
	js, err := s.ListJournal(ctx, "run_a", 0, 0)
	must(t, err)
	if !slices.Equal(seqs(js), []uint64{1}) {
		t.Errorf("journal of the recreated run: %v", seqs(js))
	}
	wantErr(t, "effect result of the deleted intent", s.PutEffectResult(ctx, gone, nil), store.ErrNotFound)
}

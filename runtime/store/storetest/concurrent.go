package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// testConcurrent runs writers side by side: committers of different runs (each
// with its own session) that also append events directly, and appenders
// sharing one session. Afterwards every run and session must hold exactly
// what its writers wrote, in their order, with gap-free sequences. Run it
// under -race.
func testConcurrent(t *testing.T, s store.Store) {
	const runs, stepsPerRun, appenders, appendsEach = 8, 12, 4, 15
	shared := sess("app", "shared", "s")
	newSession(t, s, shared)
	for g := range runs {
		newRun(t, s, sess("app", fmt.Sprintf("u%d", g), "s"), fmt.Sprintf("run_%d", g))
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs+appenders)
	for g := range runs {
		wg.Go(func() {
			run, key := fmt.Sprintf("run_%d", g), sess("app", fmt.Sprintf("u%d", g), "s")
			for step := uint64(0); step < stepsPerRun; step++ {
				k := store.Delta
				if step%5 == 0 {
					k = store.Full
				}
				tag := fmt.Sprintf("%s/%d", run, step)
				if err := s.PutPendingWrite(ctx, run, step, "n", 0, []byte(tag)); err != nil {
					errs <- err
					return
				}
				if _, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint(run, step, k),
					Events: byteses("commit " + tag), Journal: byteses("journal " + tag)}); err != nil {
					errs <- err
					return
				}
				if _, err := s.AppendEvents(ctx, key, byteses("direct "+tag), at(int(step))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for a := range appenders {
		wg.Go(func() {
			for i := range appendsEach {
				if _, err := s.AppendEvents(ctx, shared, byteses(fmt.Sprintf("%d/%d/a", a, i), fmt.Sprintf("%d/%d/b", a, i)), t0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	for g := range runs {
		run, key := fmt.Sprintf("run_%d", g), sess("app", fmt.Sprintf("u%d", g), "s")
		cps, err := s.ListCheckpoints(ctx, run, store.CheckpointFilter{})
		must(t, err)
		if len(cps) != stepsPerRun {
			t.Errorf("%s: %d checkpoints, want %d", run, len(cps), stepsPerRun)
		}
		for _, c := range cps {
			k := store.Delta
			if c.Step%5 == 0 {
				k = store.Full
			}
			if err := sameCheckpoint(c, checkpoint(run, c.Step, k)); err != nil {
				t.Error(err)
			}
			if ws, _ := s.ListPendingWrites(ctx, run, c.Step); len(ws) != 0 {
				t.Errorf("%s/%d: pending writes left after commit", run, c.Step)
			}
		}
		js, err := s.ListJournal(ctx, run, 0, 0)
		must(t, err)
		var wantJ, wantE []string
		for step := range stepsPerRun {
			tag := fmt.Sprintf("%s/%d", run, step)
			wantJ = append(wantJ, "journal "+tag)
			wantE = append(wantE, "commit "+tag, "direct "+tag)
		}
		if !slices.Equal(datas(js), wantJ) || !gapFree(js) {
			t.Errorf("%s journal: %v %v", run, seqs(js), datas(js))
		}
		es, err := s.ListEvents(ctx, key, 0, 0)
		must(t, err)
		if !slices.Equal(datas(es), wantE) || !gapFree(es) {
			t.Errorf("%s events: %v %v", run, seqs(es), datas(es))
		}
	}
	es, err := s.ListEvents(ctx, shared, 0, 0)
	must(t, err)
	if len(es) != appenders*appendsEach*2 || !gapFree(es) {
		t.Fatalf("shared session: %d events, seqs %v", len(es), seqs(es))
	}
	// Each appender's events keep its order, and each batch stays together.
	next := make([]int, appenders)
	for i := 0; i < len(es); i += 2 {
		var a, n int
		fmt.Sscanf(string(es[i].Data), "%d/%d/a", &a, &n)
		if n != next[a] || string(es[i+1].Data) != fmt.Sprintf("%d/%d/b", a, n) {
			t.Fatalf("shared session at seq %d: %q %q, want appender %d batch %d together", es[i].Seq, es[i].Data, es[i+1].Data, a, next[a])
		}
		next[a]++
	}
}

// gapFree reports whether es has sequences 1, 2, 3, ….
func gapFree(es []store.Entry) bool {
	for i, e := range es {
		if e.Seq != uint64(i)+1 {
			return false
		}
	}
	return true
}

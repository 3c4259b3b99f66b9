package main

import (
	"context"
	"testing"
)

// The harness's figures are measured by `go run ./bench/vm`; these tests
// run each in-process figure once so that the harness cannot rot, and check
// the one figure that is a count rather than a time.

func TestBytesPerStepWithinTwiceTheChange(t *testing.T) {
	h := &harness{rounds: 1, resumeRuns: 1, dir: t.TempDir()}
	if err := h.bytes(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := h.figures[len(h.figures)-1]
	if f.Value <= 0 || f.Baseline <= 0 || f.Met == nil || !*f.Met {
		t.Errorf("checkpoint bytes per step: %+v (target %s)", f, f.Target)
	}
}

func TestInMemoryFiguresRun(t *testing.T) {
	h := &harness{rounds: 1, resumeRuns: 1, dir: t.TempDir()}
	for name, fig := range map[string]func(context.Context) error{"chain": h.chain, "fanout": h.fanout} {
		n := len(h.figures)
		if err := fig(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(h.figures) == n {
			t.Fatalf("%s reported no figure", name)
		}
		if f := h.figures[len(h.figures)-1]; f.Value <= 0 || f.Baseline <= 0 {
			t.Errorf("%s: %+v", name, f)
		}
	}
}

// The durable figure's twin finds each commit's batch in the store's WAL
// (across 32 KiB blocks) and replays it; a step without one fails the run.
func TestDurableFigureRuns(t *testing.T) {
	h := &harness{rounds: 1, resumeRuns: 1, dir: t.TempDir()}
	if err := h.durable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := h.figures[len(h.figures)-1]; f.Value <= 0 || f.Baseline <= 0 || f.Met == nil {
		t.Errorf("durable: %+v", f)
	}
}

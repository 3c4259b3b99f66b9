package main

import (
	"testing"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
)

// TestHarnessRuns drives both measurements with a handful of runs against
// real replicas, so that the harness cannot rot: every figure is reported
// (every killed run was resumed, every request answered). Times are not
// checked.
func TestHarnessRuns(t *testing.T) {
	figs, err := bench(pgtest.URL(t), time.Second, 1, 2, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 6 {
		t.Fatalf("%d figures: %+v", len(figs), figs)
	}
	for _, f := range figs {
		if f.Value <= 0 {
			t.Errorf("figure %q is %v", f.Name, f.Value)
		}
	}
}

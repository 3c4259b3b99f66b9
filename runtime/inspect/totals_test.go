package inspect

import (
	"testing"

	"github.com/agentc/agentc/runtime"
)

// A run's totals sum its invocations' run_finished events (a resumed run
// has several); usage and cost stay unknown (nil) without any.
func TestAddTotals(t *testing.T) {
	fin := func(run string, u *runtime.Usage, cost *float64) *runtime.Event {
		return &runtime.Event{Kind: runtime.EventRunFinished, Run: run, Usage: u, Cost: cost}
	}
	runs := []Run{{ID: "r1"}, {ID: "r2"}, {ID: "r3"}}
	addTotals(runs, []*runtime.Event{
		fin("r1", &runtime.Usage{PromptTokens: 10, CompletionTokens: 1}, new(0.25)),
		fin("r2", &runtime.Usage{PromptTokens: 5}, nil),                            // an unpriced model
		fin("r1", &runtime.Usage{PromptTokens: 20, CompletionTokens: 2}, new(0.5)), // the resumption
		fin("gone", &runtime.Usage{PromptTokens: 1}, new(9.0)),                     // a run not listed
		{Kind: runtime.EventModelResponse, Run: "r3", Cost: new(1.0)},              // not a total
	})
	if u := runs[0].Usage; u == nil || *u != (runtime.Usage{PromptTokens: 30, CompletionTokens: 3}) || runs[0].Cost == nil || *runs[0].Cost != 0.75 {
		t.Errorf("r1: usage %v cost %v", runs[0].Usage, runs[0].Cost)
	}
	if u := runs[1].Usage; u == nil || u.PromptTokens != 5 || runs[1].Cost != nil {
		t.Errorf("r2: usage %v cost %v", runs[1].Usage, runs[1].Cost)
	}
	if runs[2].Usage != nil || runs[2].Cost != nil {
		t.Errorf("r3: usage %v cost %v", runs[2].Usage, runs[2].Cost)
	}
}

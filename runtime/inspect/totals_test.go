package inspect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// A run's totals are its record's usage; tokens and cost stay unknown (nil)
// when no call reported tokens or none was priced (a record written
// before runs kept usage has neither).
func TestTotalsOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage store.RunUsage
		want  Totals
	}{
		{"none", store.RunUsage{}, Totals{}},
		{"priced", store.RunUsage{ModelCalls: 2, InputTokens: 30, OutputTokens: 3, CachedTokens: 10, Cost: 0.75, Priced: true},
			Totals{ModelCalls: 2, Usage: &runtime.Usage{PromptTokens: 30, CompletionTokens: 3, CachedTokens: 10}, Cost: new(0.75)}},
		{"unpriced", store.RunUsage{ModelCalls: 1, InputTokens: 5}, Totals{ModelCalls: 1, Usage: &runtime.Usage{PromptTokens: 5}}},
		{"free", store.RunUsage{ModelCalls: 1, Priced: true}, Totals{ModelCalls: 1, Cost: new(0.0)}},
	} {
		got := totalsOf(store.Run{Usage: tc.usage})
		if got.ModelCalls != tc.want.ModelCalls || (got.Usage == nil) != (tc.want.Usage == nil) || got.Usage != nil && *got.Usage != *tc.want.Usage ||
			(got.Cost == nil) != (tc.want.Cost == nil) || got.Cost != nil && *got.Cost != *tc.want.Cost {
			t.Errorf("%s: %+v (usage %v cost %v), want %+v", tc.name, got, got.Usage, got.Cost, tc.want)
		}
	}
}

// The session, the run list and the run detail show the run record's
// usage, not a sum of the ledger's run_finished events.
func TestTotalsFromTheRecord(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	key := store.SessionKey{App: "mini", User: "u", Session: "s"}
	u := store.RunUsage{ModelCalls: 4, InputTokens: 400, OutputTokens: 40, CachedTokens: 100, Cost: 0.5, Priced: true}
	// A run_finished that says otherwise: the record wins.
	fin, err := runtime.EncodeEvent(&runtime.Event{ID: "e", Kind: runtime.EventRunFinished, Run: run, Status: runtime.StatusInterrupted,
		Usage: &runtime.Usage{PromptTokens: 1, CompletionTokens: 1}, Cost: new(9.0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.cfg.Store.EndRun(ctx, run, [][]byte{fin}, store.RunInterrupted, &u, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	want := Totals{ModelCalls: 4, Usage: &runtime.Usage{PromptTokens: 400, CompletionTokens: 40, CachedTokens: 100}, Cost: new(0.5)}
	same := func(what string, got Totals) {
		t.Helper()
		if got.ModelCalls != want.ModelCalls || got.Usage == nil || *got.Usage != *want.Usage || got.Cost == nil || *got.Cost != *want.Cost {
			t.Errorf("%s: %+v (usage %v, cost %v), want %+v", what, got, got.Usage, got.Cost, want)
		}
	}
	s, err := in.Session(ctx, key)
	if err != nil || len(s.Runs) != 1 {
		t.Fatalf("Session = %+v, %v", s, err)
	}
	same("Session", s.Runs[0].Totals)
	runs, _, err := in.Runs(ctx, store.RunFilter{App: "mini"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	same("Runs", runs[0].Totals)
	d, err := in.RunDetail(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	same("RunDetail", d.Run.Totals)
	b, err := json.Marshal(s.Runs[0])
	if err != nil || !strings.Contains(string(b), `"model_calls":4,"usage":{"prompt_tokens":400,"completion_tokens":40,"cached_tokens":100},"cost":0.5`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}

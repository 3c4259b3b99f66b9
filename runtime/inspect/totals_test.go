package inspect

import (
	"testing"

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

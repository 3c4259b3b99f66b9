package inspect

import (
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

// TestText: the text forms the inspection commands print.
func TestText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cost := 0.0125
	s := Session{App: "app", User: "u", Session: "s", Created: at, Updated: at, Events: 7,
		Runs: []Run{{ID: "run_1", Runnable: "g", Status: "completed", Totals: Totals{ModelCalls: 1, Cost: &cost, Usage: &runtime.Usage{PromptTokens: 10, CompletionTokens: 2}}},
			{ID: "run_2", Runnable: "g", Status: "interrupted"},
			{ID: "run_3", Runnable: "g", Status: "failed", Totals: Totals{ModelCalls: 2, Usage: &runtime.Usage{PromptTokens: 30, CompletionTokens: 4, CachedTokens: 20}}}}}
	for _, tc := range []struct{ got, want string }{
		{s.Line(), "u\ts\t7 events\tupdated 2026-01-02T03:04:05Z"},
		{s.String(), "session s (user u, app app)\ncreated 2026-01-02T03:04:05Z, updated 2026-01-02T03:04:05Z, 7 events\n" +
			"  run_1\tg\tcompleted\tcost $0.0125\ttokens 10 in, 2 out\n  run_2\tg\tinterrupted\n  run_3\tg\tfailed\ttokens 30 in, 4 out, 20 cached\n"},
		{EventLine(&runtime.Event{Seq: 3, Kind: runtime.EventNodeFinished, Node: "n"}), "3\tnode_finished\tn\t"},
		{Checkpoint{Step: 2, Kind: "delta", Time: at, Bytes: 40}.Line(), "2\tdelta\t-\t2026-01-02T03:04:05Z\t40 bytes"},
		{Checkpoint{Step: 3, Kind: "full", Nodes: []string{"a", "b[1]"}, Time: at, Bytes: 9}.Line(), "3\tfull\ta,b[1]\t2026-01-02T03:04:05Z\t9 bytes"},
		{Replay{Identical: true, Run: "run_1", Step: 4}.String(), "replay of run_1 reached step 4: identical state\n"},
		{Replay{Run: "run_1", Step: 4, WantStep: 5, DivergedAt: 3, Diverged: []string{"a: 1 != 2"}}.String(),
			"replay of run_1 diverges at step 3 (replay reached step 4, the run committed step 5):\n  a: 1 != 2\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q\nwant %q", tc.got, tc.want)
		}
	}
}

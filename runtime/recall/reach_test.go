package recall

import (
	"context"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// ReachesElsewhere: the recall tools can find something outside the current
// session only when the policy's scopes reach the user's other sessions and
// one of them has events.
func TestReachesElsewhere(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	cur := store.SessionKey{App: "w", User: "ana", Session: "s1"}
	for _, tc := range []struct {
		name   string
		scopes string
		others []store.SessionKey // sessions with one event each
		empty  []store.SessionKey // sessions without events
		want   bool
	}{
		{name: "alone", scopes: `"current_hidden", "other_sessions"`, want: false},
		{name: "another session", scopes: `"current_hidden", "other_sessions"`, others: []store.SessionKey{{App: "w", User: "ana", Session: "s0"}}, want: true},
		{name: "all_sessions", scopes: `"all_sessions"`, others: []store.SessionKey{{App: "w", User: "ana", Session: "s2"}}, want: true},
		{name: "current scopes only", scopes: `"current_hidden", "current_session"`, others: []store.SessionKey{{App: "w", User: "ana", Session: "s0"}}, want: false},
		{name: "another user's session", scopes: `"other_sessions"`, others: []store.SessionKey{{App: "w", User: "bob", Session: "s0"}}, want: false},
		{name: "another app's session", scopes: `"other_sessions"`, others: []store.SessionKey{{App: "w2", User: "ana", Session: "s0"}}, want: false},
		{name: "an empty session", scopes: `"other_sessions"`, empty: []store.SessionKey{{App: "w", User: "ana", Session: "s0"}}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New()
			p := programWithRecall(t, "scopes = ["+tc.scopes+"]")
			for _, k := range append([]store.SessionKey{cur}, append(tc.others, tc.empty...)...) {
				if _, _, err := st.GetOrCreateSession(ctx, k, now); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range append([]store.SessionKey{cur}, tc.others...) {
				if _, err := st.AppendEvents(ctx, k, [][]byte{[]byte(`{"id":"e1","kind":"input","text":"hi"}`)}, now); err != nil {
					t.Fatal(err)
				}
			}
			if got := ReachesElsewhere(ctx, st, p, AgentIndex(p, "helper"), cur); got != tc.want {
				t.Fatalf("ReachesElsewhere = %v, want %v", got, tc.want)
			}
		})
	}
}

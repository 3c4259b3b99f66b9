package history_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

func toolNames(specs []runtime.ToolSpec) string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// The recall tools are offered only when recall could find something: the
// request's projection hides events (a summary note, another filter key's
// turns, a compacted result) or the agent's scopes reach another session
// (Config.RecallElsewhere). Otherwise session_search and session_load
// would add their descriptions to every request for nothing.
func TestRecallToolsOnlyWhenSomethingIsHidden(t *testing.T) {
	ctx := context.Background()
	specs := []runtime.ToolSpec{{Name: "lookup", Description: "Looks up a host"},
		{Name: "session_search", Description: "Searches the session"}, {Name: "session_load", Description: "Loads events"}}
	const all, without = "lookup,session_search,session_load", "lookup"
	big := strings.Repeat("inventory line with an asset tag AT-00017 ", 200) // above 1,024 tokens
	for _, tc := range []struct {
		name      string
		node      string
		agent     string
		setup     func(l *ledger)
		elsewhere func(context.Context, runtime.ContextCall) bool // nil: Config.RecallElsewhere unset
		want      string
	}{
		{name: "nothing hidden", node: "recaller", agent: "recaller",
			setup:     func(l *ledger) { l.turn("run_1", "recaller", "first question", nil, "first answer") },
			elsewhere: func(context.Context, runtime.ContextCall) bool { return false }, want: without},
		{name: "empty session", node: "recaller", agent: "recaller", setup: func(*ledger) {},
			elsewhere: func(context.Context, runtime.ContextCall) bool { return false }, want: without},
		{name: "a summary hides the start", node: "recaller", agent: "recaller",
			setup: func(l *ledger) {
				l.turn("run_1", "recaller", "first question", nil, "first answer")
				l.turn("run_2", "recaller", "second question", nil, "second answer")
				if err := l.st.PutSummary(context.Background(), key, store.Summary{FilterKey: "recaller", Text: "EARLIER", Boundary: 4}); err != nil {
					l.t.Fatal(err)
				}
			},
			elsewhere: func(context.Context, runtime.ContextCall) bool { return false }, want: all},
		{name: "another key's turns", node: "recaller", agent: "recaller",
			setup: func(l *ledger) {
				l.turn("run_1", "other", "first question", []toolRound{{"lookup", "host is up"}}, "other node's answer")
			},
			elsewhere: func(context.Context, runtime.ContextCall) bool { return false }, want: all},
		{name: "a compacted result", node: "recaller", agent: "recaller",
			setup: func(l *ledger) {
				l.turn("run_1", "recaller", "dump it", []toolRound{{"lookup", big}}, "done")
				l.turn("run_2", "recaller", "second question", nil, "second answer")
			},
			elsewhere: func(context.Context, runtime.ContextCall) bool { return false }, want: all},
		{name: "other sessions reachable", node: "recaller", agent: "recaller",
			setup:     func(l *ledger) { l.turn("run_1", "recaller", "first question", nil, "first answer") },
			elsewhere: func(context.Context, runtime.ContextCall) bool { return true }, want: all},
		{name: "elsewhere unknown", node: "recaller", agent: "recaller",
			setup: func(l *ledger) { l.turn("run_1", "recaller", "first question", nil, "first answer") }, want: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileProgram(t, progOpts{})
			st := memory.New()
			l := newLedger(t, st)
			tc.setup(l)
			l.append(&runtime.Event{Kind: runtime.EventInput, Run: "run_9", Author: "user", Text: "current input"})
			svc := newService(t, st, p, nil, "proc-1", func(c *history.Config) { c.RecallElsewhere = tc.elsewhere })
			ai := agentIndex(t, p, tc.agent)
			v, err := svc.OpenView(ctx, runtime.ContextCall{Session: key, Run: "run_9", Node: tc.node, FilterKey: tc.node, Program: p, Agent: ai,
				Tools: []string{"lookup", "session_search", "session_load"}})
			if err != nil {
				t.Fatal(err)
			}
			turn := runtime.ContextTurn{Turn: 1, Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current input"}}, Tools: specs}
			b := v.Build(ctx, turn)
			if got := toolNames(v.Tools(ctx, turn)); got != tc.want {
				t.Fatalf("tools offered = %s, want %s", got, tc.want)
			}
			if got := toolNames(b.Tools); got != tc.want {
				t.Fatalf("Built.Tools = %s, want %s", got, tc.want)
			}
			if toolNames(turn.Tools) != all {
				t.Fatalf("the turn's tools were modified: %s", toolNames(turn.Tools))
			}
		})
	}
}

// Through the Runner: the first run of a session sends no recall tools;
// once a summary hides the start, the next run's requests offer them.
func TestRecallToolsReachTheModelWhenHidden(t *testing.T) {
	ctx := context.Background()
	p := compileProgram(t, progOpts{summary: "  min_tokens = 1000000"})
	st := memory.New()
	bot := scripted(t, "fast", "version: 1\ndefault:\n  text: \"ok\"\n")
	models := map[string]runtime.Model{"fast": bot, "scribe": bot}
	svc := newService(t, st, p, models, "proc-1", func(c *history.Config) {
		c.RecallElsewhere = func(context.Context, runtime.ContextCall) bool { return false }
	})
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: p, Models: models, Tools: testTools(), Funcs: funcs(p),
		Clock: newClock(), Entropy: &runtimetest.Entropy{}, Context: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	drain(t, r, runtime.Invocation{User: key.User, Session: key.Session, Runnable: "recaller", Input: "one"})
	drain(t, r, runtime.Invocation{User: key.User, Session: key.Session, Runnable: "recaller", Input: "two"})
	sess, err := st.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The summary of the agent's filter key (its model_response events').
	entries, err := st.ListEvents(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	fk := "-"
	for _, en := range entries {
		if e, err := runtime.DecodeEvent(en.Data); err == nil && e.Kind == runtime.EventModelResponse {
			fk = e.FilterKey
		}
	}
	if err := st.PutSummary(ctx, key, store.Summary{FilterKey: fk, Text: "the user said one", Boundary: sess.LastSeq}); err != nil {
		t.Fatal(err)
	}
	drain(t, r, runtime.Invocation{User: key.User, Session: key.Session, Runnable: "recaller", Input: "three"})
	reqs := bot.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	for i, want := range []string{"lookup", "lookup", "lookup,session_search,session_load"} {
		if got := toolNames(reqs[i].Tools); got != want {
			t.Errorf("run %d offered %s, want %s", i+1, got, want)
		}
	}
	if !slices.ContainsFunc(reqs[2].Messages, func(m runtime.Message) bool { return strings.HasPrefix(m.Content, "[summary]") }) {
		t.Fatalf("the third run's request has no summary note: %+v", reqs[2].Messages)
	}
}

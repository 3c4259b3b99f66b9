package assemble

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/openaitest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

// filler is about n bytes of deterministic prose without the planted fact.
func filler(seed, n int) string {
	words := strings.Fields(`latency throughput deploy rollout canary cluster node queue broker cache shard replica
		index migration schema backup snapshot restore failover region gateway proxy ingress token rotation quota
		budget alert pager incident runbook dashboard metric trace span sampling retention archive compaction`)
	var b strings.Builder
	x := uint32(seed*2654435761 + 1)
	for b.Len() < n {
		x = x*1664525 + 1013904223
		b.WriteString(words[x>>16%uint32(len(words))])
		if x>>8%11 == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// TestRecallAfterRelief is issue 17's relief-then-recall case through the
// OpenAI wire: a fact arrives with ~30 KB of filler, a ~17 KB turn pushes
// the next request over sync_ratio so pressure relief summarizes the first
// run away (the summary leaves the fact out) while the post-run delta stays
// under the trigger, so the full-session summary never advances. Asked for
// the fact, the model searches current_hidden as the summary note invites:
// the planted value must come back.
func TestRecallAfterRelief(t *testing.T) {
	const value = "BX-5521-QZ"
	first := "Keep this for later: the badge code for the west lab is " + value + ". " + filler(1, 30<<10)
	second := "Here is the changelog to review. " + filler(2, 17<<10)
	const question = "What is the badge code for the west lab?"

	c := history.CounterFor("gpt-4o-mini")
	c1, c2 := c.Count(first), c.Count(second)
	// The second request (c1 + c2 and a little) reaches 0.7 of the window;
	// the first run's history (c1) and the second's delta (c2) stay under
	// the default trigger, context_ratio(0.5).
	window := (c1 + c2) * 100 / 75
	if c1 >= window/2 || c2 >= window/2 {
		t.Fatalf("filler sizes do not fit the scenario: %d and %d tokens, window %d", c1, c2, window)
	}
	src := fmt.Sprintf(`workflow w "relief then recall"
model fast { provider = openai, name = "gpt-4o-mini", context_window = %d }
summary rolling { model = fast }
compaction lean { sync_ratio = 0.7, tool_result_max_tokens = 100000 }
recall past { scopes = [current_hidden, current_session] }
agent helper llm "helps" {
  model       = fast
  instruction = "Answer from the conversation; search hidden history when you cannot see something."
  tools       = [session_search, session_load]
  summary     = rolling
  compaction  = lean
  recall      = past
  max_turns   = 4
}
`, window)
	prog := runtimetest.CompileSource(t, "w.agent", src)

	var summaries, searches int
	fake := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "rolling summary of a conversation") {
				summaries++
				return openaitest.Reply{Text: "The user shared a long operations note and then a changelog to review."}
			}
		}
		user := r.Last("user").Content
		if !strings.Contains(user, question) {
			return openaitest.Reply{Text: "Noted."}
		}
		last := r.Messages[len(r.Messages)-1]
		if last.Role != "tool" {
			searches++
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("call_search_", searches), Name: "session_search",
				Arguments: `{"query": "badge code west lab", "scope": "current_hidden"}`}}}
		}
		if strings.Contains(last.Content, value) {
			return openaitest.Reply{Text: "The badge code is " + value + "."}
		}
		return openaitest.Reply{Text: "UNKNOWN: " + last.Content}
	})
	defer fake.Close()

	st := memstore.New()
	ctx := context.Background()
	key := store.SessionKey{App: "app", User: "ana", Session: "s1"}
	clock := &runtimetest.Clock{}
	turn := func(input string) string {
		t.Helper()
		r, err := New(st, Options{Program: prog, App: key.App, Clock: clock, Entropy: &runtimetest.Entropy{},
			Env: envOf(map[string]string{"OPENAI_API_KEY": "sk-fake", "OPENAI_BASE_URL": fake.BaseURL})})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := r.Run(ctx, runtime.Invocation{User: key.User, Session: key.Session, Input: input, Runnable: "helper"})
		if err != nil {
			t.Fatal(err)
		}
		var last *runtime.Event
		var text string
		for e := range ch {
			last = e
			if e.Kind == runtime.EventModelResponse && e.Text != "" {
				text = e.Text
			}
		}
		if err := r.Close(ctx); err != nil { // drains the post-run hooks
			t.Fatal(err)
		}
		if last == nil || last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusCompleted {
			t.Fatalf("run ended with %+v", last)
		}
		return text
	}
	turn(first)
	if summaries != 0 {
		t.Fatalf("the first run was summarized (%d summarizer calls): the scenario needs it under the trigger", summaries)
	}
	turn(second)
	if summaries != 1 {
		t.Fatalf("%d summarizer calls in the second run, want 1 (pressure relief)", summaries)
	}
	branch, err := st.GetSummary(ctx, key, "helper")
	if err != nil || branch.Boundary == 0 {
		t.Fatalf("relief left no branch summary: %+v, %v", branch, err)
	}
	if _, err := st.GetSummary(ctx, key, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the full-session summary advanced (%v): the scenario needs only the branch's", err)
	}
	if got := turn(question); !strings.Contains(got, value) {
		t.Fatalf("after relief the model answered %q, want the planted %s", got, value)
	}
	// The note the model saw names the branch boundary; the search result
	// it got did not contradict it.
	var sawNote bool
	for _, q := range fake.Requests() {
		for _, m := range q.Messages {
			if strings.HasPrefix(m.Content, "[summary]") && strings.Contains(m.Content, fmt.Sprintf("events up to #%d", branch.Boundary)) {
				sawNote = true
			}
			if m.Role == "tool" && strings.Contains(m.Content, "no summary hides") {
				t.Errorf("session_search contradicts the summary note: %s", m.Content)
			}
		}
	}
	if !sawNote {
		t.Error("no request carried the summary note")
	}
}

package assemble

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/openaitest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

// inventoryTool answers with a ~12 KB inventory dump that holds one
// planted line.
type inventoryTool struct{ line string }

func (inventoryTool) Spec() runtime.ToolSpec {
	return runtime.ToolSpec{Name: "inventory_dump", Description: "dumps a rack's inventory", InputSchema: map[string]any{"type": "object"}}
}
func (inventoryTool) Effect() runtime.Effect { return runtime.Effect(0) }
func (t inventoryTool) Call(context.Context, runtime.ToolRequest) (json.RawMessage, error) {
	var b strings.Builder
	for i := 0; b.Len() < 12<<10; i++ {
		if i == 60 {
			b.WriteString(t.line + "\n")
		}
		fmt.Fprintf(&b, "inventory: host node-%04d asset tag AT-%05d rack r%02d status ok\n", i*37%10000, i*7919%100000, i%40)
	}
	return json.Marshal(b.String())
}

// TestRecallRanksTheOriginal is issue 17's recall-noise case through the
// OpenAI wire: a tool result holds a fact; five later runs ask for it, and
// each searches, loads the top card and answers with the value. Asked a
// sixth time, the search's top hit is still the original tool result — not
// an earlier question, answer, search result or loaded window — and the
// current run's own question is not a hit.
func TestRecallRanksTheOriginal(t *testing.T) {
	const value = "AT-31337"
	const question = "What is the asset tag of orion-17 in the inventory dump?"
	src := `workflow w "recall noise"
model fast { provider = openai, name = "gpt-4o-mini" }
recall past { scopes = [current_session] }
tool inventory_dump "Dumps a rack's inventory" {
  input  { rack: int }
  output string
  run    = http { url = "http://127.0.0.1:9/inventory" }
  effect = read_only
}
agent helper llm "helps" {
  model     = fast
  tools     = [inventory_dump, session_search, session_load]
  recall    = past
  max_turns = 5
}
`
	prog := runtimetest.CompileSource(t, "w.agent", src)
	var searches []string // every session_search result, in order
	fake := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		user := r.Last("user").Content
		last := r.Messages[len(r.Messages)-1]
		if !strings.Contains(user, question) {
			if last.Role == "tool" {
				return openaitest.Reply{Text: "Dumped rack 7."}
			}
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_dump", Name: "inventory_dump", Arguments: `{"rack": 7}`}}}
		}
		n := len(r.Messages)
		switch {
		case last.Role != "tool":
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("call_s", n), Name: "session_search",
				Arguments: `{"query": "asset tag of orion-17 in the inventory dump", "scope": "current_session"}`}}}
		case strings.Contains(last.Content, `"hits"`):
			searches = append(searches, last.Content)
			var res recall.SearchResult
			if err := json.Unmarshal([]byte(last.Content), &res); err != nil || len(res.Hits) == 0 {
				return openaitest.Reply{Text: "UNKNOWN"}
			}
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("call_l", n), Name: "session_load",
				Arguments: fmt.Sprintf(`{"event_id": %q, "after": 0}`, res.Hits[0].EventID)}}}
		case strings.Contains(last.Content, value):
			return openaitest.Reply{Text: "The asset tag of orion-17 is " + value + " (from the inventory dump)."}
		default:
			return openaitest.Reply{Text: "UNKNOWN"}
		}
	})
	defer fake.Close()

	st := memstore.New()
	ctx := context.Background()
	key := store.SessionKey{App: "app", User: "ana", Session: "s1"}
	clock := &runtimetest.Clock{}
	turn := func(input string) {
		t.Helper()
		r, err := New(st, Options{Program: prog, App: key.App, Clock: clock, Entropy: &runtimetest.Entropy{},
			Env:   envOf(map[string]string{"OPENAI_API_KEY": "sk-fake", "OPENAI_BASE_URL": fake.BaseURL}),
			Tools: map[string]runtime.Tool{"inventory_dump": inventoryTool{line: "inventory: host orion-17 asset tag " + value + " rack r07 status ok"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(ctx)
		ch, err := r.Run(ctx, runtime.Invocation{User: key.User, Session: key.Session, Input: input, Runnable: "helper"})
		if err != nil {
			t.Fatal(err)
		}
		var last *runtime.Event
		for e := range ch {
			last = e
		}
		if last == nil || last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusCompleted {
			t.Fatalf("run ended with %+v", last)
		}
	}
	turn("Dump the inventory of rack 7.")
	for range 6 {
		turn(question)
	}
	if len(searches) != 6 {
		t.Fatalf("%d searches, want 6", len(searches))
	}
	events, err := session.New(st).Events(ctx, key, session.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var original string
	var lastInput *runtime.Event
	for _, e := range events {
		if e.Kind == runtime.EventToolResult && e.ToolCall != nil && e.ToolCall.Name == "inventory_dump" {
			original = e.ID
		}
		if e.Kind == runtime.EventInput {
			lastInput = e
		}
	}
	var res recall.SearchResult
	if err := json.Unmarshal([]byte(searches[5]), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].EventID != original {
		var got []string
		for _, h := range res.Hits {
			got = append(got, fmt.Sprintf("%s/%s %.3f %.60q", h.Kind, h.ToolName, h.Score, h.Snippet))
		}
		t.Errorf("after five recall rounds the top hit is not the original tool result %s:\n%s", original, strings.Join(got, "\n"))
	}
	for _, h := range res.Hits {
		if h.EventID == lastInput.ID {
			t.Errorf("the current run's own question is a hit: %+v", h)
		}
		if h.ToolName == recall.SearchToolName || h.ToolName == recall.LoadToolName {
			t.Errorf("recall's own traffic is a hit: %+v", h)
		}
	}
}

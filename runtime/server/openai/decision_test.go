package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/decidetest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// TestDecisionsOverTheProtocols: a run whose side effect was cut off
// mid-call needs a decision; the OpenAI-compatible endpoint and AG-UI list
// it like an interrupt (a prompt, the answer's schema) and settle it with
// {"decision": "done", "result": …} (runtime.DecisionAnswer, the CLI's
// --decide too): the run completes with that result, the side effect
// called once (issue 16 item 4).
func TestDecisionsOverTheProtocols(t *testing.T) {
	for _, proto := range []string{"openai", "agui"} {
		t.Run(proto, func(t *testing.T) {
			tool := decidetest.NewPokeTool()
			e := newEnv(t, envOpts{source: decidetest.Source, all: true, tools: map[string]runtime.Tool{"poke": tool}})
			ctx := context.Background()
			key := store.SessionKey{App: "dec", User: "alice", Session: "s1"}
			run, err := e.b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Input: "go"})
			if err != nil {
				t.Fatal(err)
			}
			<-tool.Entered
			e.b.Runner.Cancel(run.ID)
			for range run.Events {
			}
			resumed, err := e.b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Resume: &runtime.ResumeRequest{Run: run.ID}})
			if err != nil {
				t.Fatal(err)
			}
			var fin *runtime.Event
			for ev := range resumed.Events {
				if ev.Kind == runtime.EventRunFinished {
					fin = ev
				}
			}
			if fin == nil || fin.Status != runtime.StatusNeedsDecision || len(fin.Decisions) != 1 {
				t.Fatalf("the resumed run: %+v", fin)
			}
			d := fin.Decisions[0]
			if d.Prompt == "" || d.Schema["required"] == nil || !strings.Contains(string(mustJSON(t, d.Schema)), `"enum":["done","retry","fail"]`) {
				t.Fatalf("the pending decision is not typed: %+v", d)
			}
			answer := `{"decision": "done", "result": "it happened"}`
			switch proto {
			case "openai":
				// A wrong answer is refused and the run keeps waiting.
				r := e.chat(aliceToken, chatBody("dec", false, "user", `{"decision": "maybe"}`), "X-Agentc-Session", "s1")
				if r.status != 400 || !strings.Contains(string(r.body), "invalid_resume") {
					t.Fatalf("a bad decision: %d %s", r.status, r.body)
				}
				r = e.chat(aliceToken, chatBody("dec", false, "user", answer), "X-Agentc-Session", "s1")
				if r.status != 200 || !strings.Contains(string(r.body), "it happened") {
					t.Fatalf("the decision: %d %s", r.status, r.body)
				}
			case "agui":
				in := map[string]any{"threadId": "s1", "runId": "r2", "messages": []any{map[string]any{"id": "m1", "role": "user", "content": "go"}},
					"resume": []any{map[string]any{"interruptId": "decision:" + d.ID + "#" + fin.ID, "status": "resolved", "payload": json.RawMessage(answer)}}}
				r := e.do("POST", "/agui", aliceToken, string(mustJSON(t, in)), "Accept", "text/event-stream")
				if r.status != 200 || !strings.Contains(string(r.body), `"RUN_FINISHED"`) || !strings.Contains(string(r.body), "it happened") {
					t.Fatalf("the decision: %d %s", r.status, r.body)
				}
			}
			runs, err := session.New(e.b.Docs.(store.Store)).Runs(ctx, key)
			if err != nil || len(runs) != 1 || runs[0].Status != store.RunCompleted {
				t.Fatalf("runs after the decision: %+v %v", runs, err)
			}
			if n := tool.Calls.Load(); n != 1 {
				t.Errorf("the side effect was called %d times, want once", n)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package recall

import (
	"context"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/memory"
)

const runFixture = `version: 1
model: fast
replies:
  - match: {input: "^Remember", turn: 1}
    text: "Noted."
  - match: {input: "^What was", turn: 1}
    tool_calls:
      - {id: call_s, name: session_search, args: {query: "disk serial", scope: current_session}}
  - match: {input: "hits.*SN-7788-QQ", turn: 2}
    text: "It is SN-7788-QQ."
  - match: {input: "^Show", turn: 1}
    tool_calls:
      - {id: call_l, name: session_load, args: {tool_call_id: call_s, before: 0, after: 0}}
  - match: {input: "Historical context only.*SN-7788-QQ", turn: 2}
    text: "Here it is."
`

// TestThroughTheRunner runs an llm agent whose model calls session_search
// and session_load through the Runner: the tools get the session and the
// agent from the ToolRequest, search finds the first run's input, and load
// resolves the second run's tool call id.
func TestThroughTheRunner(t *testing.T) {
	prog := programWithRecall(t, "scopes = [current_session, all_sessions]")
	fx, err := model.LoadFixture("run.yaml", []byte(runFixture))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	x := NewIndex(st, nil)
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, App: "support",
		Models: map[string]runtime.Model{"fast": model.NewScripted(runtime.ModelInfo{Name: "fast"}, fx)},
		Tools:  map[string]runtime.Tool{SearchToolName: NewSearchTool(x, prog), LoadToolName: NewLoadTool(x, prog)},
		Clock:  &runtimetest.Clock{Start: t0}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ctx := context.Background()
	// The third run loads the second run's search result by its tool call
	// id (a call of the running node is not in the ledger until its step
	// commits; an earlier run's is).
	for _, input := range []string{"Remember: the disk serial is SN-7788-QQ.", "What was the disk serial?", "Show me that search again."} {
		ch, err := r.Run(ctx, runtime.Invocation{User: "ana", Session: "s1", Input: input, Runnable: "helper"})
		if err != nil {
			t.Fatal(err)
		}
		var last *runtime.Event
		for e := range ch {
			last = e
			if e.Error != nil {
				t.Logf("%s %s: %+v", e.Kind, e.Node, e.Error)
			}
		}
		if last == nil || last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusCompleted {
			t.Fatalf("%q: run ended with %+v", input, last)
		}
	}
	events, err := session.New(st).Events(ctx, key("ana", "s1"), session.EventFilter{Kinds: []runtime.EventKind{runtime.EventToolResult}})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("%d tool results", len(events))
	}
	for _, e := range events {
		if e.Error != nil || !strings.Contains(string(e.Result), "SN-7788-QQ") {
			t.Errorf("%s result %s error %+v", e.ToolCall.Name, e.Result, e.Error)
		}
	}
	if !strings.Contains(string(events[1].Result), "Historical context only") {
		t.Errorf("session_load result is not marked as evidence: %s", events[1].Result)
	}
}

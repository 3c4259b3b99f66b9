package memory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

const runFixture = `version: 1
model: fast
replies:
  - match: {node: helper}
    tool_calls:
      - {id: c1, name: memory_add, args: {memory: "The user is on call on Fridays.", topics: [schedule]}}
    times: 1
  - match: {node: helper}
    text: "Noted, metric it is."
  - match: {node: memory/extract, input: "metric"}
    text: '{"facts": ["The user prefers metric units."]}'
`

// TestThroughTheRunner runs an agent with auto memory: its model stores a
// fact with memory_add (agentic), and after the run the extractor, as the
// Runner's Memory hook, stores the fact it distils from the session.
func TestThroughTheRunner(t *testing.T) {
	prog := programWithMemory(t, "mode = auto\n  max_memories = 10")
	st := memstore.New()
	clock := &runtimetest.Clock{Start: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)}
	svc := New(st, clock)
	m := scriptedModel(t, runFixture)
	x, err := NewExtractor(ExtractorConfig{Service: svc, Ledger: st, Docs: st, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, App: "support",
		Models: map[string]runtime.Model{"fast": m, "small": m},
		Tools:  map[string]runtime.Tool{SearchToolName: NewSearchTool(svc), AddToolName: NewAddTool(svc, prog)},
		Memory: x, Clock: clock, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ch, err := r.Run(ctx, runtime.Invocation{User: "ana", Session: "s1", Input: "Please always use metric units.", Runnable: "helper"})
	if err != nil {
		t.Fatal(err)
	}
	var last *runtime.Event
	for e := range ch {
		last = e
	}
	if last == nil || last.Status != runtime.StatusCompleted {
		t.Fatalf("run ended with %+v", last)
	}
	if err := r.Close(ctx); err != nil { // drains the post-run workers
		t.Fatal(err)
	}
	all, err := svc.List(ctx, ana)
	if err != nil || len(all) != 2 {
		t.Fatalf("memories %+v %v", all, err)
	}
	if !strings.Contains(all[0].Text, "Fridays") || !strings.Contains(all[1].Text, "metric") {
		t.Errorf("memories %+v", all)
	}
	rec, _ := st.GetSession(ctx, store.SessionKey{App: "support", User: "ana", Session: "s1"})
	if c, _ := x.Cursor(ctx, rec.Key); c != rec.LastSeq || c == 0 {
		t.Errorf("cursor %d, ledger ends at %d", c, rec.LastSeq)
	}
}

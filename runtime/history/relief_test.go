package history_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/store/memory"
)

// reliefSetup is a session of six ≈ 900-token runs under a summary and a
// compaction policy that relieves at half the window, a summarizer
// answering reply, and a view of the next call.
func reliefSetup(t *testing.T, summary, reply string, mod func(*history.Config)) (*history.View, *funcModel, *[]*runtime.ModelRequest, *memory.Store) {
	t.Helper()
	p := compileProgram(t, progOpts{summary: "  min_tokens = 0\n  model = scribe\n  trigger = event_count(100000)" + summary,
		compaction: "  sync_ratio = 0.5\n  tool_result_max_tokens = 100000"})
	mem := memory.New()
	l := newLedger(t, mem)
	for i := range 6 {
		l.turn(fmt.Sprint("run_", i), "bot", "q "+strings.Repeat("lorem ipsum ", 300), nil, "a")
	}
	var seen []*runtime.ModelRequest
	scribe := &funcModel{name: "scribe", fn: func(_ context.Context, req *runtime.ModelRequest) (*runtime.ModelResponse, error) {
		c := *req
		seen = append(seen, &c)
		return &runtime.ModelResponse{Text: reply}, nil
	}}
	bot := scripted(t, "fast", "version: 1\ndefault: {text: x}\n")
	s := newService(t, mem, p, map[string]runtime.Model{"fast": bot, "scribe": scribe}, "p", mod)
	v, err := s.OpenView(context.Background(), runtime.ContextCall{Session: key, Run: "run_cur", Node: "bot", FilterKey: "bot", Program: p,
		Agent: agentIndex(t, p, "bot"), Model: bot, Tools: []string{"lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	return v, scribe, &seen, mem
}

var reliefTools = []runtime.ToolSpec{{Name: "lookup", Description: "Looks a thing up", InputSchema: map[string]any{"type": "object",
	"properties": map[string]any{"q": map[string]any{"type": "string"}}}}}

// TestReliefForkKeepsTools: the cache-safe fork sends the parent's tools
// and its messages byte for byte, so a provider's cached prefix (tools
// first, then messages) is the parent's; the summarizer may not call them.
func TestReliefForkKeepsTools(t *testing.T) {
	v, _, seen, _ := reliefSetup(t, "", "SHORT SUMMARY", nil)
	turn := runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}},
		Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current question"}}, Tools: reliefTools}
	parent := runtime.JoinMessages(turn.Head, v.Projection().Messages, turn.Tail)
	b := v.Build(context.Background(), turn)
	if b.Relief == nil || !b.Relief.Rebuilt || len(*seen) != 1 {
		t.Fatalf("relief %+v, %d summarizer calls", b.Relief, len(*seen))
	}
	fork := (*seen)[0]
	if !reflect.DeepEqual(fork.Tools, reliefTools) {
		t.Fatalf("the fork's tools are %+v, want the parent's %+v", fork.Tools, reliefTools)
	}
	if fork.ToolChoice != "none" {
		t.Errorf("the fork's tool_choice is %q, want none", fork.ToolChoice)
	}
	if len(fork.Messages) != len(parent)+1 || !reflect.DeepEqual(fork.Messages[:len(parent)], parent) {
		t.Fatalf("the fork's messages are not the parent's followed by the instruction: %q", roles(fork.Messages))
	}
}

// TestReliefRebuildMustBeSmaller: a summary that makes the rebuilt request
// no smaller than the original (seen: 15,073 → 15,083 tokens) leaves the
// original request, with a warning and a count.
func TestReliefRebuildMustBeSmaller(t *testing.T) {
	var logs bytes.Buffer
	var outcomes []string
	long := strings.Repeat("an overly long summary ", 1200) // ≈ 6,000 tokens, more than the history it replaces
	v, _, _, _ := reliefSetup(t, "", long, func(c *history.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.OnRelief = func(app, outcome string) { outcomes = append(outcomes, app+":"+outcome) }
	})
	turn := runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}},
		Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current question"}}}
	plain := runtime.JoinMessages(turn.Head, v.Projection().Messages, turn.Tail)
	b := v.Build(context.Background(), turn)
	if b.Relief == nil || !b.Relief.Advanced || b.Relief.Rebuilt {
		t.Fatalf("relief %+v", b.Relief)
	}
	if !reflect.DeepEqual(b.Messages, plain) || b.Tokens != b.Relief.Tokens {
		t.Fatalf("a rebuilt request no smaller than the original was sent (%d → %d tokens)", b.Relief.Tokens, b.Relief.TokensAfter)
	}
	if b.Relief.TokensAfter < b.Relief.Tokens || !strings.Contains(b.Relief.Reason, "not smaller") {
		t.Errorf("relief %+v", b.Relief)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "not smaller") {
		t.Errorf("no warning: %s", logs.String())
	}
	if !reflect.DeepEqual(outcomes, []string{"hist:not_smaller"}) {
		t.Errorf("outcomes %v", outcomes)
	}
	// Later turns keep the original projection and do not ask again.
	if nb := v.Build(context.Background(), turn); nb.Relief != nil || !reflect.DeepEqual(nb.Messages, plain) {
		t.Fatalf("next turn: relief %+v", nb.Relief)
	}
}

// TestDefaultSummaryCap: without max_summary_tokens the summarizer is
// still asked for a bounded summary: a cap derived from the agent model's
// window, in the request and the instruction.
func TestDefaultSummaryCap(t *testing.T) {
	for _, tc := range []struct {
		summary string
		want    int
	}{
		{"", history.DefaultSummaryCap(8192)},
		{"\n  max_summary_tokens = 300", 300},
	} {
		v, _, seen, _ := reliefSetup(t, tc.summary, "SHORT SUMMARY", nil)
		v.Build(context.Background(), runtime.ContextTurn{Turn: 1, Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "q"}}})
		if len(*seen) != 1 {
			t.Fatalf("%d summarizer calls", len(*seen))
		}
		req := (*seen)[0]
		last := req.Messages[len(req.Messages)-1].Content
		if req.MaxTokens != tc.want || !strings.Contains(last, fmt.Sprintf("under %d tokens", tc.want)) {
			t.Errorf("%q: max_tokens %d, instruction %q; want %d", tc.summary, req.MaxTokens, last, tc.want)
		}
	}
	if got := history.DefaultSummaryCap(8192); got < 256 || got > 1024 {
		t.Errorf("cap of an 8K window %d", got)
	}
	if a, b := history.DefaultSummaryCap(128000), history.DefaultSummaryCap(1<<30); a <= history.DefaultSummaryCap(8192) || b > 4096 {
		t.Errorf("caps %d %d", a, b)
	}
}

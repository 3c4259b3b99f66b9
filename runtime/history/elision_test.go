package history_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/store/memory"
)

// elisionProgram is the test program with a summary policy that always
// fires and a compaction policy that keeps fetch: elider has a summary
// policy and session_load but no compaction policy (recall-backed elision
// applies), forgetter no session_load, keeper a compaction policy of its
// own.
func elisionProgram(t testing.TB) *bytecode.Program {
	t.Helper()
	return compileProgram(t, progOpts{summary: "  min_tokens = 0\n  model = scribe\n  trigger = event_count(0)", compaction: "  protect_recent = 1\n  keep = [fetch]"})
}

// bigResult is a tool result above the 1,024-token limit.
func bigResult(tag string) string {
	return strings.Repeat("inventory line "+tag+" with an asset tag AT-00017 ", 200)
}

// An agent with a summary policy and session_load but no compaction policy
// gets recall-backed elision: consumed results of earlier runs above the
// default limit become placeholders naming their event (session_load
// returns them), the last run included; the current run's results a recall
// call follows too, when the tool may be run again. Small results, the
// current run's results before a recall call, results of a side-effecting
// tool the agent cannot load yet, agents without session_load and
// Config.NoRecallElision stay verbatim.
func TestRecallElision(t *testing.T) {
	ctx := context.Background()
	p := elisionProgram(t)
	specs := []runtime.ToolSpec{{Name: "lookup"}, {Name: "pay"}, {Name: "session_search"}, {Name: "session_load"}}
	recallCall := runtime.ToolCall{ID: "r1", Name: "session_search", Args: []byte(`{"query":"x"}`)}
	for _, tc := range []struct {
		name  string
		agent string
		// own: the current call's turns after the prompt.
		own       []runtime.Message
		noElision bool
		// wantElided: the results (by content tag) replaced by a placeholder.
		wantElided []string
		wantKept   []string
	}{
		{name: "earlier runs, every one", agent: "elider", wantElided: []string{"R1", "R2", "P2"}, wantKept: []string{"small"}},
		{name: "recall detour", agent: "elider",
			own: []runtime.Message{
				{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: "o1", Name: "lookup"}, {ID: "o2", Name: "pay"}}},
				{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "o1", Content: bigResult("OWNL")},
				{Role: runtime.RoleTool, Name: "pay", ToolCallID: "o2", Content: bigResult("OWNP")},
				{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{recallCall}},
				{Role: runtime.RoleTool, Name: "session_search", ToolCallID: "r1", Content: `{"hits":[]}`},
			},
			wantElided: []string{"R1", "R2", "P2", "OWNL"}, wantKept: []string{"OWNP", "small"}},
		{name: "current run before a recall call", agent: "elider",
			own: []runtime.Message{
				{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: "o1", Name: "lookup"}}},
				{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "o1", Content: bigResult("OWNL")},
			},
			wantElided: []string{"R1", "R2", "P2"}, wantKept: []string{"OWNL", "small"}},
		{name: "no session_load", agent: "forgetter", wantKept: []string{"R1", "R2", "P2", "small"}},
		{name: "NoRecallElision", agent: "elider", noElision: true, wantKept: []string{"R1", "R2", "P2", "small"}},
		{name: "a compaction policy governs", agent: "keeper", wantElided: []string{"R1"}, wantKept: []string{"R2", "P2", "small"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New()
			l := newLedger(t, st)
			node := tc.agent
			l.turn("run_1", node, "dump it", []toolRound{{"lookup", bigResult("R1")}, {"lookup", "small"}}, "done")
			l.turn("run_2", node, "again", []toolRound{{"lookup", bigResult("R2")}, {"pay", bigResult("P2")}}, "paid")
			l.append(&runtime.Event{Kind: runtime.EventInput, Run: "run_3", Author: "user", Text: "current input"})
			svc := newService(t, st, p, nil, "proc-1", func(c *history.Config) { c.NoRecallElision = tc.noElision })
			ai := agentIndex(t, p, tc.agent)
			var tools []string
			for _, id := range p.Agents[ai].Tools {
				tools = append(tools, p.Tools[id].Name)
			}
			v, err := svc.OpenView(ctx, runtime.ContextCall{Session: key, Run: "run_3", Node: node, FilterKey: node, Program: p, Agent: ai, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			tail := append([]runtime.Message{{Role: runtime.RoleUser, Content: "current input"}}, tc.own...)
			b := v.Build(ctx, runtime.ContextTurn{Turn: 1, Tail: tail, Tools: specs})
			find := func(tag string) *runtime.Message {
				for i := range b.Messages {
					m := &b.Messages[i]
					if m.Role == runtime.RoleTool && (strings.Contains(m.Content, tag) || strings.Contains(m.ToolCallID, tag)) {
						return m
					}
				}
				return nil
			}
			elided := 0
			for i := range b.Messages {
				if strings.HasPrefix(b.Messages[i].Content, "[elided]") {
					elided++
				}
			}
			if elided != len(tc.wantElided) || b.Stats.Elided != len(tc.wantElided) {
				t.Fatalf("%d placeholders, Stats.Elided %d, want %d (%v)", elided, b.Stats.Elided, len(tc.wantElided), tc.wantElided)
			}
			for _, tag := range tc.wantKept {
				if m := find(tag); m == nil || strings.HasPrefix(m.Content, "[elided]") {
					t.Errorf("result %s was not kept verbatim", tag)
				}
			}
			// An elided result of an earlier run names its event and
			// session_load.
			if len(tc.wantElided) > 0 && tc.agent == "elider" {
				var ph *runtime.Message
				for i := range b.Messages {
					if strings.HasPrefix(b.Messages[i].Content, "[elided]") {
						ph = &b.Messages[i]
						break
					}
				}
				if !strings.Contains(ph.Content, "event_id: ev") || !strings.Contains(ph.Content, "Use session_load") {
					t.Fatalf("placeholder does not name its event and session_load:\n%s", ph.Content)
				}
			}
			for _, m := range tail {
				if strings.HasPrefix(m.Content, "[elided]") {
					t.Fatal("the turn's tail was modified")
				}
			}
		})
	}
}

// RecallElision applies only to an agent with a summary policy and
// session_load and without a compaction policy; it protects no earlier run.
func TestRecallElisionPolicy(t *testing.T) {
	p := elisionProgram(t)
	for _, tc := range []struct {
		agent string
		ok    bool
	}{{"elider", true}, {"forgetter", false}, {"keeper", false}} {
		ap := history.PoliciesOf(p, agentIndex(t, p, tc.agent))
		pol, ok := history.RecallElision(ap)
		if ok != tc.ok {
			t.Fatalf("%s: RecallElision ok = %v, want %v", tc.agent, ok, tc.ok)
		}
		if ok && (pol.ToolResultMaxTokens != history.DefaultToolResultMaxTokens || pol.ProtectRecent != 0 || pol.OversizedMaxTokens != 0 || pol.SyncRatio != 0) {
			t.Fatalf("%s: policy = %+v", tc.agent, pol)
		}
	}
}

// The summarizer of an agent with session_load gets a large committed tool
// result as its head and tail with a marker naming its event; small
// results, errors, placeholders, keep tools, recall's own results,
// uncommitted results and every result of an agent without session_load
// stay whole. The input is not modified.
func TestSummarizerExcerpts(t *testing.T) {
	p := elisionProgram(t)
	c := history.CounterFor("")
	big := bigResult("X")
	msgs := []runtime.Message{
		{Role: runtime.RoleUser, Content: big},
		{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "c1", Content: big},
		{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "c2", Content: "small"},
		{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "c3", Content: "error (tool): " + big},
		{Role: runtime.RoleTool, Name: "fetch", ToolCallID: "c4", Content: big},
		{Role: runtime.RoleTool, Name: "session_load", ToolCallID: "c5", Content: big},
		{Role: runtime.RoleTool, Name: "lookup", ToolCallID: "c6", Content: big},
	}
	origins := []runtime.HistoryOrigin{{EventID: "ev1"}, {EventID: "ev2"}, {EventID: "ev3"}, {EventID: "ev4"}, {EventID: "ev5"}, {EventID: "ev6"}, {}}
	for _, tc := range []struct {
		agent string
		cut   []int // indexes of msgs cut
	}{
		{"elider", []int{1, 4}},
		{"keeper", []int{1}}, // fetch is a keep tool of its compaction policy
		{"forgetter", nil},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			before := append([]runtime.Message(nil), msgs...)
			out, n := history.SummarizerExcerpts(history.PoliciesOf(p, agentIndex(t, p, tc.agent)), msgs, origins, c)
			if n != len(tc.cut) {
				t.Fatalf("%d cut, want %d", n, len(tc.cut))
			}
			for i := range msgs {
				if msgs[i].Content != before[i].Content {
					t.Fatalf("input message %d was modified", i)
				}
				cut := false
				for _, j := range tc.cut {
					cut = cut || i == j
				}
				if !cut {
					if out[i].Content != msgs[i].Content {
						t.Errorf("message %d changed", i)
					}
					continue
				}
				if got := c.Count(out[i].Content); got > history.SummaryExcerptTokens+64 {
					t.Errorf("message %d: excerpt of %d tokens, want about %d", i, got, history.SummaryExcerptTokens)
				}
				if !strings.Contains(out[i].Content, "event_id="+origins[i].EventID) || !strings.Contains(out[i].Content, "use session_load") {
					t.Errorf("message %d: the excerpt does not name its event and session_load: %q", i, out[i].Content)
				}
			}
		})
	}
}

// Through Summarize: the summarizer's request holds the excerpt and the
// instruction to name the event; with Config.NoRecallElision it gets the
// whole result.
func TestSummaryInputExcerpts(t *testing.T) {
	ctx := context.Background()
	p := elisionProgram(t)
	for _, noElision := range []bool{false, true} {
		st := memory.New()
		l := newLedger(t, st)
		l.turn("run_1", "elider", "dump it", []toolRound{{"lookup", bigResult("R1")}}, "done")
		var input string
		scribe := &funcModel{name: "scribe", fn: func(_ context.Context, req *runtime.ModelRequest) (*runtime.ModelResponse, error) {
			for _, m := range req.Messages {
				input += m.Content + "\n"
			}
			return &runtime.ModelResponse{Text: "dumped"}, nil
		}}
		s := newService(t, st, p, map[string]runtime.Model{"scribe": scribe}, "p1", func(c *history.Config) { c.NoRecallElision = noElision })
		res, err := s.Summarize(ctx, history.SummarizeRequest{Session: key, FilterKey: "elider", Agent: agentIndex(t, p, "elider")})
		if err != nil || !res.Advanced {
			t.Fatalf("advanced = %v, err = %v (%s)", res.Advanced, err, res.Reason)
		}
		whole := strings.Contains(input, bigResult("R1"))
		named := strings.Contains(input, "characters truncated from tool result; event_id=ev") && strings.Contains(input, "name its event_id")
		if whole == !noElision || named == noElision {
			t.Fatalf("NoRecallElision %v: whole result sent %v, excerpt and instruction %v", noElision, whole, named)
		}
	}
}

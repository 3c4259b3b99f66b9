package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// compactFixture is a request of three earlier runs with one big tool
// result each (fetch, lookup, pay) and a current run with a big, not yet
// consumed lookup result.
func compactFixture() ([]runtime.Message, []runtime.HistoryOrigin) {
	big := strings.Repeat("0123456789abcdef ", 40) // 680 bytes ≈ 170 estimated tokens
	var msgs []runtime.Message
	var origins []runtime.HistoryOrigin
	add := func(m runtime.Message, run string) {
		n := len(msgs) + 1
		msgs = append(msgs, m)
		og := runtime.HistoryOrigin{Run: run}
		if run != "" && run != "cur" {
			og.EventID, og.Seq = fmt.Sprintf("ev%d", n), uint64(n)
		}
		origins = append(origins, og)
	}
	add(runtime.Message{Role: runtime.RoleSystem, Content: "instruction"}, "")
	for i, tool := range []string{"fetch", "lookup", "pay"} {
		run := fmt.Sprint("run_", i+1)
		id := fmt.Sprint("call_", tool)
		add(runtime.Message{Role: runtime.RoleUser, Content: "q"}, run)
		add(runtime.Message{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: id, Name: tool, Args: json.RawMessage(`{}`)}}}, run)
		add(runtime.Message{Role: runtime.RoleTool, ToolCallID: id, Name: tool, Content: big}, run)
		add(runtime.Message{Role: runtime.RoleAssistant, Content: "a"}, run)
	}
	add(runtime.Message{Role: runtime.RoleUser, Content: "current"}, "cur")
	add(runtime.Message{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: "call_cur", Name: "lookup", Args: json.RawMessage(`{}`)}}}, "cur")
	add(runtime.Message{Role: runtime.RoleTool, ToolCallID: "call_cur", Name: "lookup", Content: big}, "cur")
	return msgs, origins
}

func TestCompact(t *testing.T) {
	counter := history.CounterFor("scripted:x")
	rerun := func(tool string) bool { return tool != "pay" }
	for _, tc := range []struct {
		name        string
		pol         func(*history.CompactionPolicy)
		sessionLoad bool
		// what each tool result becomes: "" unchanged, "P" placeholder,
		// "T" truncated; in order fetch, lookup, pay, current lookup.
		want  string
		stats history.CompactionStats
	}{
		{"defaults: pass 1, last run protected", func(p *history.CompactionPolicy) { p.ToolResultMaxTokens = 50 }, false,
			"PP..", history.CompactionStats{Elided: 2}},
		{"protect_recent 0", func(p *history.CompactionPolicy) { p.ToolResultMaxTokens = 50; p.ProtectRecent = 0 }, true,
			"PPP.", history.CompactionStats{Elided: 3}},
		{"keep wins", func(p *history.CompactionPolicy) {
			p.ToolResultMaxTokens = 50
			p.ProtectRecent = 0
			p.Keep = []string{"lookup"}
		}, false, "P.P.", history.CompactionStats{Elided: 2}},
		{"under the limit", func(p *history.CompactionPolicy) { p.ToolResultMaxTokens = 1024; p.ProtectRecent = 0 }, false,
			"....", history.CompactionStats{}},
		{"pass 0 force_clean ignores size and protection", func(p *history.CompactionPolicy) {
			p.ToolResultMaxTokens = 100000
			p.ProtectRecent = 5
			p.ForceClean = []string{"fetch", "pay", "lookup"}
		}, false, "PPP.", history.CompactionStats{ForceCleaned: 3}},
		{"pass 2 with the current request", func(p *history.CompactionPolicy) {
			p.ToolResultMaxTokens = 100000
			p.OversizedMaxTokens = 60
		}, true, "TTTT", history.CompactionStats{Truncated: 4}},
		{"pass 2 without the current request", func(p *history.CompactionPolicy) {
			p.ToolResultMaxTokens = 100000
			p.OversizedMaxTokens = 60
			p.CurrentRequest = false
		}, false, "TTT.", history.CompactionStats{Truncated: 3}},
		{"passes 1 and 2", func(p *history.CompactionPolicy) {
			p.ToolResultMaxTokens = 50
			p.OversizedMaxTokens = 60
		}, false, "PPTT", history.CompactionStats{Elided: 2, Truncated: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, origins := compactFixture()
			orig := deepCopy(msgs)
			pol := history.DefaultCompaction()
			tc.pol(&pol)
			out, st := history.Compact(msgs, origins, history.CompactOptions{Policy: pol, Counter: counter, CurrentRun: "cur",
				SessionLoad: tc.sessionLoad, Rerunnable: rerun})
			if !reflect.DeepEqual(msgs, orig) {
				t.Fatal("Compact modified its input")
			}
			if len(out) != len(msgs) {
				t.Fatalf("%d messages out of %d", len(out), len(msgs))
			}
			var got strings.Builder
			for i, m := range out {
				if m.Role != runtime.RoleTool {
					if !reflect.DeepEqual(m, msgs[i]) {
						t.Fatalf("message %d (%s) changed", i, m.Role)
					}
					continue
				}
				switch {
				case m.Content == msgs[i].Content:
					got.WriteByte('.')
				case strings.HasPrefix(m.Content, "[elided] Previous tool call succeeded and its result was already consumed"):
					got.WriteByte('P')
					checkPlaceholder(t, m, origins[i], tc.sessionLoad)
				case strings.Contains(m.Content, "characters truncated from tool result"):
					got.WriteByte('T')
					if !strings.Contains(m.Content, "tool_call_id="+m.ToolCallID) || !strings.HasPrefix(m.Content, msgs[i].Content[:40]) ||
						!strings.HasSuffix(m.Content, msgs[i].Content[len(msgs[i].Content)-20:]) {
						t.Errorf("truncated result lacks its head, tail or ids: %q", m.Content)
					}
				default:
					got.WriteByte('?')
				}
			}
			if got.String() != tc.want {
				t.Fatalf("results = %q, want %q", got.String(), tc.want)
			}
			saved := st.TokensSaved
			st.TokensSaved = 0
			if st != tc.stats {
				t.Fatalf("stats = %+v, want %+v", st, tc.stats)
			}
			if (st.Replaced() > 0) != (saved > 0) {
				t.Fatalf("tokens saved = %d with %d replaced", saved, st.Replaced())
			}
			if st.Replaced() > 0 && counter.Messages(out)+saved != counter.Messages(msgs) {
				t.Fatalf("tokens saved %d, but %d → %d", saved, counter.Messages(msgs), counter.Messages(out))
			}
		})
	}
	// session_load output is never truncated.
	msgs := []runtime.Message{{Role: runtime.RoleTool, Name: "session_load", ToolCallID: "c", Content: strings.Repeat("x", 4000)}}
	pol := history.DefaultCompaction()
	pol.OversizedMaxTokens = 10
	if out, st := history.Compact(msgs, nil, history.CompactOptions{Policy: pol, Counter: counter}); out[0].Content != msgs[0].Content || st.Replaced() != 0 {
		t.Fatal("session_load output was truncated")
	}
}

func checkPlaceholder(t *testing.T, m runtime.Message, og runtime.HistoryOrigin, sessionLoad bool) {
	t.Helper()
	for _, want := range []string{"event_id: " + og.EventID, "tool_call_id: " + m.ToolCallID, "tool_name: " + m.Name, "reason: "} {
		if !strings.Contains(m.Content, want) {
			t.Errorf("placeholder lacks %q:\n%s", want, m.Content)
		}
	}
	switch {
	case sessionLoad:
		if !strings.Contains(m.Content, "Use session_load with event_id") {
			t.Errorf("placeholder does not recommend session_load:\n%s", m.Content)
		}
	case m.Name == "pay":
		if strings.Contains(m.Content, "session_load") || !strings.Contains(m.Content, "Do not call pay again") {
			t.Errorf("placeholder of a side-effect tool:\n%s", m.Content)
		}
	default:
		if strings.Contains(m.Content, "session_load") || !strings.Contains(m.Content, "may be called again") {
			t.Errorf("placeholder of a read-only tool:\n%s", m.Content)
		}
	}
}

func deepCopy(msgs []runtime.Message) []runtime.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
		for j := range out[i].ToolCalls {
			out[i].ToolCalls[j].Args = slices.Clone(out[i].ToolCalls[j].Args)
		}
	}
	return out
}

// Compaction through a View rewrites the request, never the ledger: the
// stored bytes are the same before and after.
func TestCompactionLeavesLedger(t *testing.T) {
	ctx := context.Background()
	p := compileProgram(t, progOpts{compaction: "  tool_result_max_tokens = 50\n  protect_recent = 0\n  force_clean = [fetch]\n  sync_ratio = 1.0"})
	st := memory.New()
	l := newLedger(t, st)
	big := strings.Repeat("result line ", 100)
	l.turn("run_1", "bot", "q1", []toolRound{{"fetch", big}, {"lookup", big}, {"pay", "ok"}}, "a1")
	before := ledgerBytes(t, st)
	bot := scripted(t, "fast", "version: 1\ndefault: {text: x}\n")
	s := newService(t, st, p, map[string]runtime.Model{"fast": bot}, "p", nil)
	v, err := s.OpenView(ctx, runtime.ContextCall{Session: key, Run: "run_2", Node: "bot", FilterKey: "bot", Program: p,
		Agent: agentIndex(t, p, "bot"), Model: bot, Tools: []string{"lookup", "fetch", "pay"}})
	if err != nil {
		t.Fatal(err)
	}
	projected := deepCopy(v.Projection().Messages)
	b := v.Build(ctx, runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "i"}},
		Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "q2"}}})
	if b.Stats.ForceCleaned != 1 || b.Stats.Elided != 1 || b.Stats.TokensSaved <= 0 {
		t.Fatalf("stats = %+v", b.Stats)
	}
	if !reflect.DeepEqual(v.Projection().Messages, projected) {
		t.Fatal("compaction modified the projection")
	}
	after := ledgerBytes(t, st)
	if len(before) != len(after) {
		t.Fatalf("ledger has %d events, had %d", len(after), len(before))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Fatalf("event %d changed:\n%s\n%s", i+1, before[i], after[i])
		}
	}
	if !bytes.Contains(bytes.Join(after, nil), []byte("result line result line")) {
		t.Fatal("the ledger lost the raw result")
	}
}

// failingSummaries fails PutSummary (the write of a summary).
type failingSummaries struct {
	store.Store
}

func (f failingSummaries) PutSummary(context.Context, store.SessionKey, store.Summary) error {
	return errors.New("disk full")
}

func TestSyncRelief(t *testing.T) {
	ctx := context.Background()
	const policy = "  min_tokens = 0\n  model = scribe\n  trigger = event_count(100000)"
	for _, tc := range []struct {
		name         string
		scribeWindow string
		reply        string
		err          error
		failPut      bool
		small        bool
		rebuilt      bool
		fork         bool
		stored       bool
		attempted    bool
	}{
		{"relieved with a cache-safe fork", "", "SHORT SUMMARY", nil, false, false, true, true, true, true},
		{"relieved with a standalone input", "3000", "SHORT SUMMARY", nil, false, false, true, false, true, true},
		{"summarizer error keeps the request", "", "", errors.New("unavailable"), false, false, false, true, false, true},
		{"empty summary keeps the request", "", "", nil, false, false, false, true, false, true},
		{"persistence failure rebuilds anyway", "", "SHORT SUMMARY", nil, true, false, true, true, false, true},
		{"below the threshold", "", "SHORT SUMMARY", nil, false, true, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileProgram(t, progOpts{summary: policy, compaction: "  sync_ratio = 0.5\n  tool_result_max_tokens = 100000", scribeWindow: tc.scribeWindow})
			mem := memory.New()
			l := newLedger(t, mem)
			turns, text := 6, strings.Repeat("lorem ipsum ", 300) // 3,600 bytes ≈ 900 tokens each
			if tc.small {
				turns = 1
			}
			for i := range turns {
				l.turn(fmt.Sprint("run_", i), "bot", "q "+text, nil, "a")
			}
			var st store.Store = mem
			if tc.failPut {
				st = failingSummaries{mem}
			}
			var seen []runtime.Message
			scribe := &funcModel{name: "scribe", fn: func(_ context.Context, req *runtime.ModelRequest) (*runtime.ModelResponse, error) {
				seen = req.Messages
				if tc.err != nil {
					return nil, tc.err
				}
				return &runtime.ModelResponse{Text: tc.reply}, nil
			}}
			bot := scripted(t, "fast", "version: 1\ndefault: {text: x}\n")
			s := newService(t, st, p, map[string]runtime.Model{"fast": bot, "scribe": scribe}, "p", nil)
			v, err := s.OpenView(ctx, runtime.ContextCall{Session: key, Run: "run_cur", Node: "bot", FilterKey: "bot", Program: p,
				Agent: agentIndex(t, p, "bot"), Model: bot})
			if err != nil {
				t.Fatal(err)
			}
			turn := runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}},
				Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current question"}}}
			plain := runtime.JoinMessages(turn.Head, v.Projection().Messages, turn.Tail)
			b := v.Build(ctx, turn)
			if (b.Relief != nil) != tc.attempted {
				t.Fatalf("relief = %+v", b.Relief)
			}
			if !tc.attempted {
				if scribe.calls.Load() != 0 || !reflect.DeepEqual(b.Messages, plain) {
					t.Fatal("a request below the threshold was changed")
				}
				return
			}
			if b.Relief.Rebuilt != tc.rebuilt {
				t.Fatalf("rebuilt = %v (%+v)", b.Relief.Rebuilt, b.Relief)
			}
			if tc.rebuilt {
				if b.Relief.TokensAfter >= b.Relief.Tokens || b.Tokens != b.Relief.TokensAfter {
					t.Fatalf("tokens %d → %d", b.Relief.Tokens, b.Relief.TokensAfter)
				}
				if !strings.Contains(b.Messages[1].Content, "SHORT SUMMARY") || b.Messages[len(b.Messages)-1].Content != "current question" ||
					len(b.Messages) >= len(plain) {
					t.Fatalf("rebuilt request = %q", roles(b.Messages))
				}
				// A fork covers the whole parent; a standalone input only what
				// fits the summarizer's window (here two of the six runs).
				if want := "system user user"; tc.fork && roles(b.Messages) != want {
					t.Fatalf("rebuilt request = %q, want %q", roles(b.Messages), want)
				}
				// The next turn keeps the relieved projection.
				if nb := v.Build(ctx, turn); nb.Relief != nil || !reflect.DeepEqual(nb.Messages, b.Messages) {
					t.Fatalf("next turn = %q, relief %+v", roles(nb.Messages), nb.Relief)
				}
			} else {
				if !reflect.DeepEqual(b.Messages, plain) {
					t.Fatal("a failed relief changed the request")
				}
				// A failed relief is not retried on every turn of the call.
				if nb := v.Build(ctx, turn); nb.Relief != nil || scribe.calls.Load() != 1 {
					t.Fatalf("relief retried: %+v, %d summarizer calls", nb.Relief, scribe.calls.Load())
				}
			}
			if tc.failPut != (b.Relief.Err != nil && strings.Contains(b.Relief.Err.Error(), "disk full")) {
				t.Fatalf("relief error = %v", b.Relief.Err)
			}
			// Cache-safe fork: the summarizer got the parent request as its prefix.
			if isFork := len(seen) == len(plain)+1 && reflect.DeepEqual(seen[:len(plain)], plain); isFork != tc.fork {
				t.Fatalf("fork = %v, want %v (%d messages)", isFork, tc.fork, len(seen))
			}
			sum, ok := getSummary(t, mem, "bot")
			if ok != tc.stored || ok && sum.Text != "SHORT SUMMARY" {
				t.Fatalf("stored summary = %+v, %v", sum, ok)
			}
		})
	}
}

// A summary on the full-session key or a failing store never fails a turn:
// Open returns the store's error (the llm loop then goes on without
// history), and Messages always returns a request.
func TestOpenStoreError(t *testing.T) {
	p := compileProgram(t, progOpts{})
	st := brokenEvents{memory.New()}
	s := newService(t, st, p, nil, "p", nil)
	if _, err := s.Open(context.Background(), runtime.ContextCall{Session: key, FilterKey: "bot", Agent: 0}); err == nil {
		t.Fatal("Open hid the store's error")
	}
}

type brokenEvents struct{ store.Store }

func (brokenEvents) ListEvents(context.Context, store.SessionKey, uint64, int) ([]store.Entry, error) {
	return nil, errors.New("io error")
}

// A recall detour: the current call's results that the model consumed
// before calling session_search or session_load are elided from the
// detour's requests (each re-sends the whole request) when above the
// limit and recoverable — a read-only or idempotent tool may be called
// again; the running call's results are not committed yet, so session_load
// cannot read them. Recall's own results and results after the last recall
// call stay.
func TestCompactRecallDetour(t *testing.T) {
	counter := history.CounterFor("scripted:x")
	rerun := func(tool string) bool { return tool != "pay" }
	big := strings.Repeat("0123456789abcdef ", 40) // ≈ 170 estimated tokens
	call := func(id, tool string) runtime.Message {
		return runtime.Message{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: id, Name: tool, Args: json.RawMessage(`{}`)}}}
	}
	result := func(id, tool string) runtime.Message {
		return runtime.Message{Role: runtime.RoleTool, ToolCallID: id, Name: tool, Content: big}
	}
	for _, tc := range []struct {
		name  string
		tail  []runtime.Message // the current call's turns after its prompt
		keep  []string
		limit int
		want  string // per tool result in order: "P" placeholder, "." unchanged
	}{
		{name: "consumed before session_search", limit: 50,
			tail: []runtime.Message{call("c1", "lookup"), result("c1", "lookup"), call("c2", "pay"), result("c2", "pay"),
				call("c3", "session_search"), result("c3", "session_search")},
			want: "P.."},
		{name: "and session_load", limit: 50,
			tail: []runtime.Message{call("c1", "lookup"), result("c1", "lookup"), call("c3", "session_search"), result("c3", "session_search"),
				call("c4", "session_load"), result("c4", "session_load")},
			want: "P.."},
		{name: "no recall call", limit: 50,
			tail: []runtime.Message{call("c1", "lookup"), result("c1", "lookup"), call("c2", "fetch"), result("c2", "fetch")},
			want: ".."},
		{name: "after the recall call", limit: 50,
			tail: []runtime.Message{call("c3", "session_search"), result("c3", "session_search"), call("c1", "lookup"), result("c1", "lookup"),
				call("c2", "fetch")},
			want: ".."},
		{name: "under the limit", limit: 1000,
			tail: []runtime.Message{call("c1", "lookup"), result("c1", "lookup"), call("c3", "session_search"), result("c3", "session_search")},
			want: ".."},
		{name: "keep", limit: 50, keep: []string{"lookup"},
			tail: []runtime.Message{call("c1", "lookup"), result("c1", "lookup"), call("c3", "session_search"), result("c3", "session_search")},
			want: ".."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := append([]runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}, {Role: runtime.RoleUser, Content: "current"}}, tc.tail...)
			origins := make([]runtime.HistoryOrigin, len(msgs))
			for i := 1; i < len(origins); i++ {
				origins[i].Run = "cur" // the call's own turns: no event id yet
			}
			orig := deepCopy(msgs)
			pol := history.DefaultCompaction()
			pol.ToolResultMaxTokens, pol.Keep = tc.limit, tc.keep
			out, st := history.Compact(msgs, origins, history.CompactOptions{Policy: pol, Counter: counter, CurrentRun: "cur",
				SessionLoad: true, Rerunnable: rerun})
			if !reflect.DeepEqual(msgs, orig) {
				t.Fatal("Compact modified its input")
			}
			var got strings.Builder
			elided := 0
			for _, m := range out {
				if m.Role != runtime.RoleTool {
					continue
				}
				if m.Content == big {
					got.WriteByte('.')
					continue
				}
				got.WriteByte('P')
				elided++
				if !strings.HasPrefix(m.Content, "[elided]") || strings.Contains(m.Content, "event_id:") ||
					!strings.Contains(m.Content, "tool_call_id: c1") || !strings.Contains(m.Content, "consumed before a recall call") ||
					!strings.Contains(m.Content, "lookup is read-only or idempotent and may be called again") {
					t.Fatalf("placeholder = %q", m.Content)
				}
			}
			if got.String() != tc.want {
				t.Fatalf("results = %s, want %s", got.String(), tc.want)
			}
			if st.Elided != elided || elided > 0 && st.TokensSaved <= 0 {
				t.Fatalf("stats = %+v, %d elided", st, elided)
			}
		})
	}
}

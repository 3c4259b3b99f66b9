package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/store/memory"
)

func TestCounterFor(t *testing.T) {
	for _, tc := range []struct {
		model, enc string
		hello      int // tokens of "hello world"
	}{
		{"gpt-4o-mini", "o200k_base", 2},
		{"openai/gpt-4.1", "o200k_base", 2},
		{"o3-mini", "o200k_base", 2},
		{"gpt-5", "o200k_base", 2},
		{"gpt-4", "cl100k_base", 2},
		{"gpt-3.5-turbo", "cl100k_base", 2},
		{"scripted:fast", "estimate", 3},
		{"llama-3-70b", "estimate", 3},
		{"", "estimate", 3},
	} {
		t.Run(tc.model, func(t *testing.T) {
			c := history.CounterFor(tc.model)
			if c.Encoding() != tc.enc {
				t.Fatalf("encoding = %s, want %s", c.Encoding(), tc.enc)
			}
			if n := c.Count("hello world"); n != tc.hello {
				t.Fatalf("Count(hello world) = %d, want %d", n, tc.hello)
			}
			if c.Count("") != 0 {
				t.Fatal("empty text has tokens")
			}
			long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50)
			first, again := c.Count(long), c.Count(long) // the second comes from the cache
			if first != again || first < 300 || first > 800 {
				t.Fatalf("Count(long) = %d then %d", first, again)
			}
		})
	}
	if history.CounterFor("gpt-4o") != history.CounterFor("gpt-4.1-mini") {
		t.Fatal("one encoding has two counters")
	}
	c := history.CounterFor("scripted:x")
	m := runtime.Message{Role: runtime.RoleAssistant, Content: "12345678", ToolCalls: []runtime.ToolCall{{ID: "c1", Name: "tool", Args: json.RawMessage(`{"a":1}`)}}}
	if got := c.Messages([]runtime.Message{m}); got != 3+4+2+(1+1+2+4) {
		t.Fatalf("Messages = %d", got)
	}
}

func BenchmarkCount(b *testing.B) {
	text := strings.Repeat("The certificate chain of prod.example.com is missing an intermediate; renew before 2026-01-01. ", 440) // ≈ 10K tokens
	for _, model := range []string{"gpt-4o", "gpt-4", "scripted:x"} {
		c := history.CounterFor(model)
		b.Run(c.Encoding()+"/uncached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for i := 0; b.Loop(); i++ {
				c.Count(text + fmt.Sprint(i)) // a new string each time: no cache hit
			}
		})
		b.Run(c.Encoding()+"/cached", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			c.Count(text) // warm
			for b.Loop() {
				c.Count(text)
			}
		})
	}
}

// BenchmarkProjectCompact measures one agent call's context on a session of
// about 100K tokens (56 runs, each a question, a 7 KB tool result and an
// answer): Open (projection: the ledger cache brings it up to date, the
// summary is read, events become messages) and one Build (compaction,
// counting); without the ledger cache (every event read and decoded); and
// a Build alone (a later turn of the same call).
func BenchmarkProjectCompact(b *testing.B) {
	ctx := context.Background()
	p := compileProgram(b, progOpts{compaction: "  tool_result_max_tokens = 1024\n  protect_recent = 1\n  sync_ratio = 1.0"})
	st := memory.New()
	l := newLedger(b, st)
	result := strings.Repeat("log line: handshake failed for host prod-17; retrying with intermediate cert\n", 90) // ≈ 7 KB
	for i := range 56 {
		l.turn(fmt.Sprint("run_", i), "bot", fmt.Sprintf("question %d about the certificate", i), []toolRound{{"lookup", result}}, "It is the intermediate certificate.")
	}
	for _, model := range []string{"scripted:x", "gpt-4o"} {
		counter := history.CounterFor(model)
		s := newService(b, st, p, nil, "p", func(c *history.Config) {
			c.Counter = func(string) *history.Counter { return counter }
		})
		call := runtime.ContextCall{Session: key, Run: "run_cur", Node: "bot", FilterKey: "bot", Program: p, Agent: agentIndex(b, p, "bot")}
		turn := runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}},
			Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current question"}}}
		v, err := s.OpenView(ctx, call)
		if err != nil {
			b.Fatal(err)
		}
		first := v.Build(ctx, turn)
		plain := counter.Messages(runtime.JoinMessages(turn.Head, v.Projection().Messages, turn.Tail))
		b.Run(counter.Encoding(), func(b *testing.B) {
			for b.Loop() {
				v, err := s.OpenView(ctx, call)
				if err != nil {
					b.Fatal(err)
				}
				v.Build(ctx, turn)
			}
			b.ReportMetric(float64(plain), "tokens-in")
			b.ReportMetric(float64(first.Tokens), "tokens-out")
			b.ReportMetric(float64(first.Stats.Elided), "elided")
		})
		cold := newService(b, st, p, nil, "p", func(c *history.Config) {
			c.Counter = func(string) *history.Counter { return counter }
			c.CacheSessions = -1
		})
		b.Run(counter.Encoding()+"/no-ledger-cache", func(b *testing.B) {
			for b.Loop() {
				v, err := cold.OpenView(ctx, call)
				if err != nil {
					b.Fatal(err)
				}
				v.Build(ctx, turn)
			}
		})
		b.Run(counter.Encoding()+"/compact-only", func(b *testing.B) {
			for b.Loop() {
				v.Build(ctx, turn)
			}
		})
	}
}

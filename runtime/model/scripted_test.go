package model

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

const matchFixture = `version: 1
model: fast
replies:
  - match: {node: triage, turn: 1, input: "x509|certificate"}
    text: cert
  - match: {node: triage, turn: 1}
    text: triage-1
  - match: {node: triage, turn: 2}
    text: triage-2
    times: 1
  - match: {node: scan, index: 1}
    text: scan-1
  - match: {node: scan}
    text: scan-any
  - match: {input: "^retry$"}
    times: 2
    text: retry
  - match: {node: tools}
    tool_calls:
      - {id: c1, name: cert_scan, args: {host: a}}
      - {name: cert_scan, args: {host: b}}
`

func mustFixture(t testing.TB, src string) *Fixture {
	t.Helper()
	fx, err := LoadFixture("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

func call(node string, index, turn int, msgs ...runtime.Message) *runtime.ModelRequest {
	return &runtime.ModelRequest{Site: runtime.CallSite{Node: node, MapIndex: index, Turn: turn}, Messages: msgs}
}

func user(s string) runtime.Message { return runtime.Message{Role: runtime.RoleUser, Content: s} }

func TestScriptedMatching(t *testing.T) {
	m := NewScripted(runtime.ModelInfo{Name: "fast", ContextWindow: 1000}, mustFixture(t, matchFixture))
	ctx := context.Background()
	steps := []struct {
		name string
		req  *runtime.ModelRequest
		want string // text, or "error: <substring>"
	}{
		{"input pattern in last user message", call("triage", -1, 1, user("old"), user("an x509 problem")), "cert"},
		{"input pattern only in an earlier message", call("triage", -1, 1, user("x509"), user("other")), "triage-1"},
		{"input in a tool message", call("triage", -1, 1, user("x"), runtime.Message{Role: runtime.RoleTool, Content: "certificate"}), "cert"},
		{"assistant messages are not input", call("triage", -1, 1, user("x"), runtime.Message{Role: runtime.RoleAssistant, Content: "certificate"}), "triage-1"},
		{"turn", call("triage", -1, 2), "triage-2"},
		{"times exhausted: next rule, none", call("triage", -1, 2), "error: no scripted reply for node triage turn 2"},
		{"index", call("scan", 1, 1), "scan-1"},
		{"other index", call("scan", 0, 1), "scan-any"},
		{"outside a map", call("scan", -1, 3), "scan-any"},
		{"input anywhere, times 2 (1)", call("other", -1, 1, user("retry")), "retry"},
		{"input anywhere, times 2 (2)", call("other", -1, 1, user("retry")), "retry"},
		{"input anywhere, times 2 (3)", call("other", -1, 1, user("retry")), "error: no scripted reply for node other turn 1"},
		{"no user message: input does not hold", call("other", -1, 1), "error: no scripted reply"},
		{"index in the message", call("nowhere", 4, 7), "error: no scripted reply for node nowhere index 4 turn 7"},
	}
	for _, s := range steps {
		resp, err := m.Generate(ctx, s.req, nil)
		if want, ok := strings.CutPrefix(s.want, "error: "); ok {
			var ve *vm.Error
			if !errors.As(err, &ve) || ve.Kind != vm.KindModelError || !strings.Contains(ve.Message, want) {
				t.Errorf("%s: err = %v, want model_error containing %q", s.name, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if resp.Text != s.want {
			t.Errorf("%s: text %q, want %q", s.name, resp.Text, s.want)
		}
		if resp.Model != "scripted:fast" || resp.FinishReason != "stop" {
			t.Errorf("%s: model %q finish %q", s.name, resp.Model, resp.FinishReason)
		}
	}
}

func TestScriptedInfo(t *testing.T) {
	fx := mustFixture(t, matchFixture)
	info := NewScripted(runtime.ModelInfo{Name: "smart", Provider: "openai", Model: "gpt-x", ContextWindow: 8000}, fx).Info()
	want := runtime.ModelInfo{Name: "smart", Provider: "scripted", Model: "scripted:smart", ContextWindow: 8000, Scripted: true}
	if info != want {
		t.Errorf("info = %+v, want %+v", info, want)
	}
	if got := NewScripted(runtime.ModelInfo{}, fx).Info().Model; got != "scripted:fast" {
		t.Errorf("unnamed model: %q, want scripted:fast (from the fixture's model key)", got)
	}
}

func TestScriptedToolCalls(t *testing.T) {
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, mustFixture(t, matchFixture))
	resp, err := m.Generate(context.Background(), call("tools", -1, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.ToolCall{
		{ID: "c1", Name: "cert_scan", Args: []byte(`{"host":"a"}`)},
		{ID: "call_3_2", Name: "cert_scan", Args: []byte(`{"host":"b"}`)},
	}
	if len(resp.ToolCalls) != 2 || resp.FinishReason != "tool_calls" {
		t.Fatalf("resp = %+v", resp)
	}
	for i, c := range resp.ToolCalls {
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Args) != string(want[i].Args) {
			t.Errorf("call %d = %+v, want %+v", i, c, want[i])
		}
	}
	// The response owns its args: changing them leaves the fixture alone.
	resp.ToolCalls[0].Args[2] = 'X'
	again, _ := m.Generate(context.Background(), call("tools", -1, 3), nil)
	if string(again.ToolCalls[0].Args) != `{"host":"a"}` {
		t.Errorf("fixture args changed through a response: %s", again.ToolCalls[0].Args)
	}
}

func TestScriptedDefaultAndErrors(t *testing.T) {
	fx := mustFixture(t, `version: 1
replies:
  - match: {node: slow}
    text: ignored when error is set
    error: {kind: rate_limit, message: "slow down"}
  - match: {node: bare}
    error: {kind: unavailable}
default:
  text: "I have nothing scripted for this."
`)
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, fx)
	ctx := context.Background()
	_, err := m.Generate(ctx, call("slow", -1, 1), nil)
	var ve *vm.Error
	if !errors.As(err, &ve) || ve.Kind != vm.KindRateLimit || ve.Message != "slow down" {
		t.Errorf("scripted error = %#v", err)
	}
	_, err = m.Generate(ctx, call("bare", -1, 1), nil)
	if !errors.As(err, &ve) || ve.Kind != vm.KindUnavailable || ve.Message != "scripted unavailable" {
		t.Errorf("scripted error without message = %#v", err)
	}
	resp, err := m.Generate(ctx, call("anything", -1, 1), nil)
	if err != nil || resp.Text != "I have nothing scripted for this." {
		t.Errorf("default: %+v, %v", resp, err)
	}
}

func TestScriptedChunks(t *testing.T) {
	fx := mustFixture(t, `version: 1
replies:
  - match: {node: a}
    text: "héllo wörld ✓"
    chunks: 4
  - match: {node: b}
    text: "ab"
    chunks: 5
  - match: {node: c}
    text: ""
    chunks: 3
  - match: {node: d}
    text: "one piece"
`)
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, fx)
	tests := []struct {
		node string
		want []string
	}{
		{"a", []string{"hél", "lo ", "wör", "ld ✓"}},
		{"b", []string{"a", "b"}},
		{"c", nil},
		{"d", []string{"one piece"}},
	}
	for _, tc := range tests {
		var got []string
		resp, err := m.Generate(context.Background(), call(tc.node, -1, 1), func(s string) { got = append(got, s) })
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("node %s: deltas %q, want %q", tc.node, got, tc.want)
		}
		if strings.Join(got, "") != resp.Text {
			t.Errorf("node %s: deltas do not add up to the text %q", tc.node, resp.Text)
		}
	}
}

func TestSplitRunes(t *testing.T) {
	for _, s := range []string{"", "a", "héllo", "日本語のテキスト", "✓✓✓"} {
		for n := 1; n <= 10; n++ {
			parts := splitRunes(s, n)
			if strings.Join(parts, "") != s {
				t.Fatalf("splitRunes(%q, %d) = %q", s, n, parts)
			}
			for _, p := range parts {
				if p == "" || !utf8Valid(p) {
					t.Fatalf("splitRunes(%q, %d) has a bad piece in %q", s, n, parts)
				}
			}
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestScriptedUsage(t *testing.T) {
	fx := mustFixture(t, `version: 1
replies:
  - match: {node: given}
    text: x
    usage: {prompt_tokens: 120, completion_tokens: 30}
  - match: {node: estimated}
    text: "12345678"
    tool_calls: [{name: ab, args: {}}]
`)
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, fx)
	resp, _ := m.Generate(context.Background(), call("given", -1, 1), nil)
	if resp.Usage != (runtime.Usage{PromptTokens: 120, CompletionTokens: 30}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	// prompt: 9 bytes → 3 tokens; completion: 8 + 2 + 2 bytes → 3 tokens.
	resp, _ = m.Generate(context.Background(), call("estimated", -1, 1, user("123456789")), nil)
	if resp.Usage != (runtime.Usage{PromptTokens: 3, CompletionTokens: 3}) {
		t.Errorf("estimated usage = %+v", resp.Usage)
	}
}

func TestScriptedContext(t *testing.T) {
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, mustFixture(t, "version: 1\ndefault: {text: hi}\n"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, call("a", -1, 1), nil)
	var ve *vm.Error
	if !errors.As(err, &ve) || ve.Kind != vm.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

// Concurrent calls never hand out a `times` rule more often than allowed.
func TestScriptedTimesConcurrent(t *testing.T) {
	fx := mustFixture(t, `version: 1
replies:
  - match: {node: n}
    times: 7
    text: limited
default:
  text: fallback
`)
	m := NewScripted(runtime.ModelInfo{Name: "fast"}, fx)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
	)
	for range 64 {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), call("n", -1, 1), func(string) {})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[resp.Text]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts["limited"] != 7 || counts["fallback"] != 57 {
		t.Errorf("counts = %v, want 7 limited and 57 fallback", counts)
	}
	// A second model from the same fixture counts on its own.
	other := NewScripted(runtime.ModelInfo{Name: "fast"}, fx)
	if resp, _ := other.Generate(context.Background(), call("n", -1, 1), nil); resp.Text != "limited" {
		t.Errorf("fresh model answered %q", resp.Text)
	}
}

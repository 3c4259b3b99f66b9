package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// scripted is the model that replays a Fixture. It is safe for concurrent
// use: the only state, how often each `times` rule has answered, is guarded
// by mu.
type scripted struct {
	info runtime.ModelInfo
	fx   *Fixture

	mu   sync.Mutex
	used []int // per rule: calls it has answered
}

// NewScripted returns a model that answers from fx. Its info is info with
// Provider "scripted", Model "scripted:<name>" and Scripted set, where name
// is info.Name, else fx.Model, else fx.Name. The model names itself only
// there: the text it returns is the fixture's, verbatim.
func NewScripted(info runtime.ModelInfo, fx *Fixture) runtime.Model {
	name := info.Name
	if name == "" {
		name = fx.Model
	}
	if name == "" {
		name = fx.Name
	}
	info.Provider = "scripted"
	info.Model = "scripted:" + name
	info.Scripted = true
	return &scripted{info: info, fx: fx, used: make([]int, len(fx.rules))}
}

func (m *scripted) Info() runtime.ModelInfo { return m.info }

// Generate answers with the first rule whose match holds for req (see
// spec/fixtures.md), else the default, else a model_error naming the call
// site. Text is streamed in the reply's `chunks` deltas.
func (m *scripted) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx, m.info.Model)
	}
	if req == nil {
		return nil, runtime.Errorf(vm.KindModelError, "%s: nil request", m.info.Model)
	}
	rep := m.choose(req)
	if rep == nil {
		return nil, runtime.Errorf(vm.KindModelError, "%s: no scripted reply for %s (fixture %s has no matching rule and no default)",
			m.info.Model, siteString(req.Site), m.fx.Name)
	}
	if rep.err != nil {
		return nil, runtime.Errorf(rep.err.kind, "%s", rep.err.message)
	}
	if onDelta != nil {
		for _, c := range splitRunes(rep.text, rep.chunks) {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, m.info.Model)
			}
			onDelta(c)
		}
	}
	resp := &runtime.ModelResponse{Text: rep.text, FinishReason: "stop", Model: m.info.Model}
	for i, c := range rep.toolCalls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.Site.Turn, i+1)
		}
		resp.ToolCalls = append(resp.ToolCalls, runtime.ToolCall{ID: id, Name: c.name, Args: append(json.RawMessage(nil), c.args...)})
	}
	if len(resp.ToolCalls) > 0 {
		resp.FinishReason = "tool_calls"
	}
	if rep.usage != nil {
		resp.Usage = *rep.usage
	} else {
		resp.Usage = estimateUsage(req.Messages, resp.Text, resp.ToolCalls)
	}
	return resp, nil
}

// choose returns the reply for req and counts it against its rule's times.
func (m *scripted) choose(req *runtime.ModelRequest) *reply {
	input, hasInput := lastInput(req.Messages)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ru := range m.fx.rules {
		if ru.times > 0 && m.used[i] >= ru.times {
			continue
		}
		if !ru.matches(req.Site, input, hasInput) {
			continue
		}
		m.used[i]++
		return &ru.reply
	}
	return m.fx.def
}

// matches reports whether every key of the rule's match holds.
func (ru *rule) matches(site runtime.CallSite, input string, hasInput bool) bool {
	switch {
	case ru.node != nil && *ru.node != site.Node:
		return false
	case ru.index != nil && *ru.index != site.MapIndex:
		return false
	case ru.turn != nil && *ru.turn != site.Turn:
		return false
	case ru.input != nil && (!hasInput || !ru.input.MatchString(input)):
		return false
	}
	return true
}

// lastInput returns the content of the last user or tool message, the text
// an `input` pattern is searched in.
func lastInput(msgs []runtime.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if r := msgs[i].Role; r == runtime.RoleUser || r == runtime.RoleTool {
			return msgs[i].Content, true
		}
	}
	return "", false
}

func siteString(s runtime.CallSite) string {
	var b strings.Builder
	b.WriteString("node ")
	if s.Node == "" {
		b.WriteString("(none)")
	} else {
		b.WriteString(s.Node)
	}
	if s.MapIndex >= 0 {
		fmt.Fprintf(&b, " index %d", s.MapIndex)
	}
	fmt.Fprintf(&b, " turn %d", s.Turn)
	return b.String()
}

// splitRunes cuts s into n pieces of nearly equal rune counts, never inside
// a rune; fewer when s has fewer than n runes, none when s is empty.
func splitRunes(s string, n int) []string {
	count := utf8.RuneCountInString(s)
	if count == 0 {
		return nil
	}
	n = max(1, min(n, count))
	out := make([]string, 0, n)
	start, runes := 0, 0
	for i := range s {
		// piece k ends before rune (k+1)*count/n
		if runes > 0 && runes == (len(out)+1)*count/n {
			out = append(out, s[start:i])
			start = i
		}
		runes++
	}
	return append(out, s[start:])
}

// bytesPerToken is the estimate used when a reply has no `usage`: about four
// bytes of UTF-8 per token, rounded up, as for English text with common
// tokenizers. It is an estimate for budgets, not a count.
const bytesPerToken = 4

func estimateTokens(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// estimateUsage estimates the prompt from the messages (content, names and
// tool-call arguments) and the completion from the reply.
func estimateUsage(msgs []runtime.Message, text string, calls []runtime.ToolCall) runtime.Usage {
	prompt := 0
	for _, m := range msgs {
		prompt += len(m.Content) + len(m.Name)
		for _, c := range m.ToolCalls {
			prompt += len(c.Name) + len(c.Args)
		}
	}
	completion := len(text)
	for _, c := range calls {
		completion += len(c.Name) + len(c.Args)
	}
	return runtime.Usage{PromptTokens: estimateTokens(prompt), CompletionTokens: estimateTokens(completion)}
}

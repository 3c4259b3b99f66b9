package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sashabaranov/go-openai"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// streamAcc assembles a streamed chat completion: text deltas (passed on to
// onDelta as they come), tool calls whose id and name come in their first
// delta and whose arguments come in fragments keyed by index, the finish
// reason and the usage chunk.
type streamAcc struct {
	model        string // as reported by the provider; the configured id until then
	text         strings.Builder
	refusal      strings.Builder
	calls        map[int]*callAcc
	finishReason string
	usage        runtime.Usage
	hasUsage     bool
	streamed     bool // a text delta was passed to onDelta: the call can no longer be retried
}

type callAcc struct {
	id, name string
	args     strings.Builder
}

func newStreamAcc(model string) *streamAcc {
	return &streamAcc{model: model, calls: map[int]*callAcc{}}
}

// add folds one chunk in. Only choice 0 is read: requests never ask for n > 1.
func (a *streamAcc) add(c openai.ChatCompletionStreamResponse, onDelta func(string)) {
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = runtime.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens}
		if d := c.Usage.PromptTokensDetails; d != nil {
			a.usage.CachedTokens = d.CachedTokens
		}
		a.hasUsage = true
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			if onDelta != nil {
				onDelta(d.Content)
				a.streamed = true
			}
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			i := 0 // a delta without an index is the first call's
			if tc.Index != nil {
				i = *tc.Index
			}
			ca := a.calls[i]
			if ca == nil {
				ca = &callAcc{}
				a.calls[i] = ca
			}
			if ca.id == "" {
				ca.id = tc.ID
			}
			if ca.name == "" {
				ca.name = tc.Function.Name
			}
			ca.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.finishReason = string(ch.FinishReason)
		}
	}
}

// finish returns the response once the stream has ended without error. A
// stream that ended before a finish reason was cut off (unavailable); a
// refusal is a model_error carrying the model's words.
func (a *streamAcc) finish(msgs []runtime.Message) (*runtime.ModelResponse, *failure) {
	if a.finishReason == "" {
		return nil, &failure{kind: vm.KindUnavailable, msg: "stream ended before the completion finished"}
	}
	if r := a.refusal.String(); r != "" {
		return nil, &failure{kind: vm.KindModelError, msg: "model refused: " + r}
	}
	resp := &runtime.ModelResponse{Text: a.text.String(), FinishReason: a.finishReason, Model: a.model}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for n, i := range idx {
		ca := a.calls[i]
		if ca.name == "" {
			return nil, &failure{kind: vm.KindModelError, msg: fmt.Sprintf("tool call %d has no name", i)}
		}
		id := ca.id
		if id == "" {
			id = fmt.Sprintf("call_%d", n+1)
		}
		args := ca.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		// Arguments may be invalid JSON; they are validated before the tool runs.
		resp.ToolCalls = append(resp.ToolCalls, runtime.ToolCall{ID: id, Name: ca.name, Args: json.RawMessage(args)})
	}
	if a.hasUsage {
		resp.Usage = a.usage
	} else {
		resp.Usage = estimateUsage(msgs, resp.Text, resp.ToolCalls)
	}
	return resp, nil
}

package runtime

// Decisions as every front end takes them (spec/runner.md, "Decisions"):
// the CLI's --decide, the inspector API, AG-UI, A2A and the
// OpenAI-compatible endpoint all turn an answer into a DecisionRequest
// here, and list a pending decision with the same schema.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// ErrBadDecision: a decision answer is malformed (an unknown decision, a
// result without done, done without a result).
var ErrBadDecision = errors.New("runtime: bad decision")

// Decision words of a DecisionAnswer.
const (
	DecisionDone  = "done"  // the side effect happened; Result is its result
	DecisionRetry = "retry" // call it again with the same idempotency key
	DecisionFail  = "fail"  // the attempt failed; no further retries
)

// DecisionAnswer is the answer to one pending decision:
// {"decision": "done", "result": …} | {"decision": "retry"} |
// {"decision": "fail"}.
type DecisionAnswer struct {
	Decision string          `json:"decision"`
	Result   json.RawMessage `json:"result,omitempty"`
}

// Request converts the answer into the Runner's DecisionRequest. The
// Runner type-checks a result against the side effect's output type.
func (d DecisionAnswer) Request() (DecisionRequest, error) {
	hasResult := len(d.Result) > 0
	if hasResult && !json.Valid(d.Result) {
		return DecisionRequest{}, fmt.Errorf("%w: the result is not JSON", ErrBadDecision)
	}
	switch d.Decision {
	case DecisionDone:
		if !hasResult {
			return DecisionRequest{}, fmt.Errorf("%w: done needs the side effect's result", ErrBadDecision)
		}
		return DecisionRequest{Action: "result", Value: d.Result}, nil
	case DecisionRetry, DecisionFail:
		if hasResult {
			return DecisionRequest{}, fmt.Errorf("%w: only done takes a result", ErrBadDecision)
		}
		if d.Decision == DecisionRetry {
			return DecisionRequest{Action: "rerun"}, nil
		}
		return DecisionRequest{Action: "fail"}, nil
	}
	return DecisionRequest{}, fmt.Errorf("%w: decision %q (want done, retry or fail)", ErrBadDecision, d.Decision)
}

// ParseDecisionAnswer decodes an answer: a DecisionAnswer object, a bare
// "retry" or "fail" string, or the older {"action": "rerun"|"result"|
// "fail", "value": …} spelling.
func ParseDecisionAnswer(raw json.RawMessage) (DecisionRequest, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return DecisionAnswer{Decision: s}.Request()
	}
	var obj struct {
		DecisionAnswer
		Action string          `json:"action"`
		Value  json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return DecisionRequest{}, fmt.Errorf(`%w: want {"decision": "done"|"retry"|"fail", "result"?}`, ErrBadDecision)
	}
	if obj.Decision == "" && obj.Action != "" {
		switch obj.Action {
		case "result":
			return DecisionAnswer{Decision: DecisionDone, Result: obj.Value}.Request()
		case "rerun":
			return DecisionAnswer{Decision: DecisionRetry}.Request()
		}
		return DecisionAnswer{Decision: obj.Action, Result: obj.Value}.Request()
	}
	return obj.DecisionAnswer.Request()
}

// DecisionSchema is the JSON Schema of an answer to a decision whose
// result has schema result (nil: any JSON).
func DecisionSchema(result map[string]any) map[string]any {
	r := map[string]any{"description": "the side effect's result, with done"}
	for k, v := range result {
		r[k] = v
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "enum": []any{DecisionDone, DecisionRetry, DecisionFail},
				"description": "done: it happened (give its result); retry: call it again with the same idempotency key; fail: the attempt failed"},
			"result": r,
		},
		"required":             []any{"decision"},
		"additionalProperties": false,
	}
}

// decisionInfo describes pending decision id of a's run with its prompt
// and answer schema.
func (a *activeRun) decisionInfo(id, node string, item int, attempt uint32, key string) DecisionInfo {
	var result map[string]any
	if t := a.p.decisionType(a.graph, a.root, id); t != nil {
		result = types.JSONSchema(t)
	}
	return DecisionInfo{ID: id, Node: node, MapIndex: item, Attempt: attempt, Key: key, Schema: DecisionSchema(result),
		Prompt: fmt.Sprintf("A side effect of node %s (attempt %d) may have happened: answer done with its result, retry, or fail.", node, attempt)}
}

// DecisionPrompts is the text of pending decisions, one "ID: prompt" per
// line (what the protocols show where they show interrupts' prompts).
func DecisionPrompts(ds []DecisionInfo) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.ID + ": " + d.Prompt)
	}
	return b.String()
}

// DecisionAnswers converts answer, a message's value, into the decisions
// of pending: one pending decision takes the answer itself, several an
// object keyed by decision id (ErrBadDecision otherwise).
func DecisionAnswers(pending []DecisionInfo, answer json.RawMessage) (map[string]DecisionRequest, error) {
	if len(pending) == 1 {
		if d, err := ParseDecisionAnswer(answer); err == nil {
			return map[string]DecisionRequest{pending[0].ID: d}, nil
		} else if !isObjectKeyedBy(answer, pending) {
			return nil, err
		}
	}
	var by map[string]json.RawMessage
	if err := json.Unmarshal(answer, &by); err != nil || len(by) == 0 {
		return nil, fmt.Errorf(`%w: answer with {"decision": "done"|"retry"|"fail", "result"?}, or an object keyed by decision id when several are pending`, ErrBadDecision)
	}
	out := map[string]DecisionRequest{}
	for id, raw := range by {
		if !slices.ContainsFunc(pending, func(p DecisionInfo) bool { return p.ID == id }) {
			return nil, fmt.Errorf("%w: %s is not a pending decision", ErrBadDecision, id)
		}
		d, err := ParseDecisionAnswer(raw)
		if err != nil {
			return nil, fmt.Errorf("decision %s: %w", id, err)
		}
		out[id] = d
	}
	return out, nil
}

// isObjectKeyedBy reports whether answer is an object with a pending
// decision's id as a key.
func isObjectKeyedBy(answer json.RawMessage, pending []DecisionInfo) bool {
	var by map[string]json.RawMessage
	if json.Unmarshal(answer, &by) != nil {
		return false
	}
	return slices.ContainsFunc(pending, func(p DecisionInfo) bool { _, ok := by[p.ID]; return ok })
}

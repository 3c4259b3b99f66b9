package openai

// Client function tools (spec/serve.md, "Client tools"): a request's
// `tools` become the invocation's client tools; a run paused on their calls
// answers with the model's tool_calls (finish_reason "tool_calls"); the
// next request's `tool` messages resume it. A client that sends no session
// header is found again through the tool call ids (CollToolCalls).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// CollToolCalls maps a client tool call id the server handed out to the
// session and run waiting for its result: key DocPath(app, user, call id),
// value a toolCallRecord.
const CollToolCalls = "openai.toolcall"

// toolCallRecord is where a handed-out tool call waits.
type toolCallRecord struct {
	V       int    `json:"v"`
	Session string `json:"session"`
	Run     string `json:"run"`
}

// ToolCallRecord reads a CollToolCalls record for retention: the run that
// waits for the call.
func ToolCallRecord(value []byte) (run string, err error) {
	var r toolCallRecord
	if err := json.Unmarshal(value, &r); err != nil {
		return "", fmt.Errorf("openai: tool call record: %w", err)
	}
	return r.Run, nil
}

// chatTool is one entry of a request's `tools`.
type chatTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// wireToolCall is a tool call in an assistant message (request or reply).
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseTools checks `tools` and `tool_choice` and returns the client tools
// (none when tool_choice is "none").
func parseTools(raw []json.RawMessage, choice json.RawMessage) ([]runtime.ToolSpec, *badRequest) {
	switch c := strings.TrimSpace(string(choice)); c {
	case "", "null", `"auto"`:
	case `"none"`:
		return nil, nil
	default:
		return nil, &badRequest{param: "tool_choice", code: "unsupported_value",
			msg: "Only tool_choice \"auto\" and \"none\" are supported: the served workflow's model decides which tools to call"}
	}
	var out []runtime.ToolSpec
	for i, r := range raw {
		p := fmt.Sprintf("tools[%d]", i)
		var t chatTool
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, &badRequest{param: p, code: "invalid_type", msg: fmt.Sprintf("Invalid type for '%s': expected a function tool object", p)}
		}
		if t.Type != "function" {
			return nil, invalid(p+".type", "Invalid value for '%s.type': %q; supported: function", p, t.Type)
		}
		if t.Function == nil {
			return nil, &badRequest{param: p + ".function", code: "missing_required_parameter", msg: fmt.Sprintf("Missing required parameter: '%s.function'", p)}
		}
		f := t.Function
		if f.Name == "" {
			return nil, &badRequest{param: p + ".function.name", code: "missing_required_parameter", msg: fmt.Sprintf("Missing required parameter: '%s.function.name'", p)}
		}
		spec := runtime.ToolSpec{Name: f.Name, Description: f.Description}
		if ps := strings.TrimSpace(string(f.Parameters)); ps != "" && ps != "null" {
			if err := json.Unmarshal(f.Parameters, &spec.InputSchema); err != nil || spec.InputSchema == nil {
				return nil, &badRequest{param: p + ".function.parameters", code: "invalid_type",
					msg: fmt.Sprintf("Invalid type for '%s.function.parameters': expected a JSON Schema object", p)}
			}
		}
		out = append(out, spec)
	}
	if err := runtime.CheckClientTools(nil, out); err != nil {
		return nil, invalid("tools", "Invalid 'tools': %s", strings.TrimPrefix(err.Error(), runtime.ErrInvalidInvocation.Error()+": "))
	}
	return out, nil
}

// checkToolNames refuses client tools named like the workflow's own.
func (h *Handler) checkToolNames(tools []runtime.ToolSpec) *badRequest {
	if len(tools) == 0 || h.b.Runner == nil {
		return nil
	}
	if err := runtime.CheckClientTools(h.b.Runner.Program(), tools); err != nil {
		return invalid("tools", "Invalid 'tools': %s", strings.TrimPrefix(err.Error(), runtime.ErrInvalidInvocation.Error()+": "))
	}
	return nil
}

// toolResults returns the request's trailing tool messages (nil when the
// last message is not one) and the index of the first.
func toolResults(msgs []chatMessage) ([]chatMessage, int) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == "tool" {
		i--
	}
	return msgs[i:], i
}

// sessionOfToolCall finds the session waiting for a tool call's result (a
// client that sends no session header); ok false when none.
func (h *Handler) sessionOfToolCall(ctx context.Context, user, id string) (string, bool, error) {
	v, err := h.b.Docs.GetDoc(ctx, CollToolCalls, store.DocPath(h.b.App(), user, id))
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var rec toolCallRecord
	if err := json.Unmarshal(v, &rec); err != nil || rec.Session == "" {
		return "", false, fmt.Errorf("openai: tool call record %s: %v", id, err)
	}
	return rec.Session, true, nil
}

// recordToolCalls remembers where each handed-out call waits.
func (h *Handler) recordToolCalls(ctx context.Context, user, sess, run string, calls []runtime.ToolCall) error {
	b, _ := json.Marshal(toolCallRecord{V: 1, Session: sess, Run: run})
	ops := make([]store.DocOp, len(calls))
	for i, tc := range calls {
		ops[i] = store.DocOp{Coll: CollToolCalls, Key: store.DocPath(h.b.App(), user, tc.ID), Value: b}
	}
	return h.b.Docs.ApplyDocs(ctx, ops...)
}

// pendingCalls is every client tool call a paused run's interrupts wait on.
func pendingCalls(in []runtime.InterruptInfo) []runtime.ToolCall {
	var out []runtime.ToolCall
	for _, it := range in {
		out = append(out, it.ToolCalls...)
	}
	return out
}

// toolResume builds the answer to a run paused on client tool calls from
// the request's trailing tool messages: each pending call answered once,
// no other id.
func toolResume(req *chatRequest, pending *pendingError) (map[string]json.RawMessage, error) {
	results, first := toolResults(req.Messages)
	for _, it := range pending.interrupts {
		if len(it.ToolCalls) == 0 {
			return nil, &badRequest{param: "messages", code: "invalid_value",
				msg: fmt.Sprintf("The session's run %s also waits for an answer to %s; answer it with a user message first", pending.run, it.ID)}
		}
	}
	byID := map[string]string{}
	for i, m := range results {
		p := fmt.Sprintf("messages[%d].tool_call_id", first+i)
		owner := slices.IndexFunc(pending.interrupts, func(it runtime.InterruptInfo) bool {
			return slices.ContainsFunc(it.ToolCalls, func(tc runtime.ToolCall) bool { return tc.ID == m.ToolCallID })
		})
		if owner < 0 {
			return nil, invalid(p, "Invalid 'tool_call_id': %q is not a tool call the session's run %s waits for (it waits for %s)", m.ToolCallID, pending.run, callIDs(pendingCalls(pending.interrupts)))
		}
		if _, dup := byID[m.ToolCallID]; dup {
			return nil, invalid(p, "Invalid 'tool_call_id': %q is answered twice", m.ToolCallID)
		}
		text, _ := m.Content.text()
		byID[m.ToolCallID] = text
	}
	var missing []string
	vals := map[string]json.RawMessage{}
	for _, it := range pending.interrupts {
		ans := map[string]string{}
		for _, tc := range it.ToolCalls {
			text, ok := byID[tc.ID]
			if !ok {
				missing = append(missing, tc.ID)
				continue
			}
			ans[tc.ID] = text
		}
		vals[it.ID], _ = json.Marshal(ans)
	}
	if len(missing) > 0 {
		return nil, &badRequest{param: "messages", code: "invalid_value",
			msg: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missing, ", ")}
	}
	return vals, nil
}

func callIDs(calls []runtime.ToolCall) string {
	ids := make([]string, len(calls))
	for i, tc := range calls {
		ids[i] = tc.ID
	}
	return strings.Join(ids, ", ")
}

// appendToolCalls appends calls in the wire form; stream adds each call's
// index (a streamed delta's).
func appendToolCalls(b []byte, calls []runtime.ToolCall, stream bool) []byte {
	b = append(b, '[')
	for i, tc := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if stream {
			b = append(b, `"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ',')
		}
		b = append(b, `"id":`...)
		b = appendString(b, tc.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendString(b, tc.Name)
		b = append(b, `,"arguments":`...)
		b = appendString(b, argumentsText(tc.Args))
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// argumentsText is a call's arguments as the wire's string: the JSON as
// it is, or the text of arguments the model gave that were not JSON (the
// event records them as a JSON string).
func argumentsText(args json.RawMessage) string {
	var s string
	if len(args) > 0 && args[0] == '"' && json.Unmarshal(args, &s) == nil {
		return s
	}
	if len(args) == 0 {
		return "{}"
	}
	return string(args)
}

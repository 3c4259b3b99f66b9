package mcp

// A tool call: its arguments into an Invocation, the run's events into
// progress notifications, its end into a result — or into elicitations
// that resume it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// userOf is the user of a call: the stdio server's, else the one the HTTP
// middleware authenticated (the SDK's token info).
func userOf(fixed string, req *sdk.CallToolRequest) string {
	if fixed != "" {
		return fixed
	}
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		return req.Extra.TokenInfo.UserID
	}
	return ""
}

var errUnauthenticated = errors.New("mcp: the call is not authenticated")

// callTool handles tools/call of a runnable's tool.
func (h *Handler) callTool(t *tool, fixedUser string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		user := userOf(fixedUser, req)
		if user == "" {
			return nil, errUnauthenticated
		}
		if req.Params.RequestState != "" {
			// The retry of a call that asked for input: the answers
			// resume the run named by the state (the client echoes it, so
			// it is looked up as this user like any run id).
			return h.answerElicitation(ctx, req, user, t, req.Params.RequestState)
		}
		input, err := t.input(req.Params.Arguments)
		if err != nil {
			h.b.Metrics.Error(Protocol, "invalid_arguments")
			return failure("", "invalid_arguments", err.Error()), nil
		}
		id := h.newID("mcp_")
		return h.run(ctx, req, runtime.Invocation{ID: id, User: user, Session: id, Input: input, Runnable: t.name}, elicits(req))
	}
}

// input turns a call's arguments into the run's input text.
func (t *tool) input(args json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(args))
	if s == "" || s == "null" {
		s = "{}"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &fields); err != nil {
		return "", fmt.Errorf("the arguments must be a JSON object: %v", err)
	}
	switch t.in {
	case inputNone:
		return "", nil
	case inputObject:
		return s, nil
	}
	for k := range fields {
		if k != "input" {
			return "", fmt.Errorf("unknown argument %q: %s takes one argument, input", k, t.name)
		}
	}
	v, ok := fields["input"]
	if !ok || string(v) == "null" {
		return "", nil // the Runner refuses a missing input the field needs
	}
	if t.in == inputText {
		var text string
		if err := json.Unmarshal(v, &text); err != nil {
			return "", fmt.Errorf("argument input must be a string")
		}
		return text, nil
	}
	return string(v), nil
}

// callResume handles tools/call of ResumeTool.
func (h *Handler) callResume(fixedUser string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		user := userOf(fixedUser, req)
		if user == "" {
			return nil, errUnauthenticated
		}
		var args struct {
			Run    string                     `json:"run"`
			Value  json.RawMessage            `json:"value"`
			Values map[string]json.RawMessage `json:"values"`
		}
		raw := req.Params.Arguments
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return failure("", "invalid_arguments", "the arguments must be {\"run\": string, \"value\": any} or {\"run\", \"values\": {id: any}}: "+err.Error()), nil
		}
		if args.Run == "" || (args.Value == nil) == (args.Values == nil) {
			return failure(args.Run, "invalid_arguments", "give run and exactly one of value or values"), nil
		}
		r, pending, err := h.waiting(ctx, user, args.Run)
		if err != nil {
			return h.lookupFailure(args.Run, err), nil
		}
		vals := args.Values
		if vals == nil {
			vals = map[string]json.RawMessage{}
			for _, in := range pending {
				vals[in.ID] = args.Value
			}
		}
		return h.run(ctx, req, runtime.Invocation{ID: h.newID("mcp_"), User: user, Session: r.Session.Session,
			Resume: &runtime.ResumeRequest{Run: r.ID, Values: vals}}, elicits(req))
	}
}

// errNotWaiting: the run exists but waits on no interrupt.
var errNotWaiting = errors.New("the run is not waiting for input")

// waiting returns user's run id and the interrupts it waits on.
func (h *Handler) waiting(ctx context.Context, user, runID string) (store.Run, []runtime.InterruptInfo, error) {
	r, err := h.b.GetRun(ctx, user, runID)
	if err != nil {
		return r, nil, err
	}
	if r.Status != store.RunInterrupted {
		return r, nil, fmt.Errorf("run %s is %s: %w", runID, r.Status, errNotWaiting)
	}
	evs, err := h.b.Sessions.RunEvents(ctx, r, session.EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}})
	if err != nil {
		return r, nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if len(evs[i].Interrupts) > 0 {
			return r, evs[i].Interrupts, nil
		}
	}
	return r, nil, fmt.Errorf("run %s: %w", runID, errNotWaiting)
}

// lookupFailure is the result of a resume whose run cannot be answered.
func (h *Handler) lookupFailure(runID string, err error) *sdk.CallToolResult {
	switch {
	case errors.Is(err, server.ErrNotFound):
		h.b.Metrics.Error(Protocol, "not_found")
		return failure(runID, "not_found", fmt.Sprintf("there is no run %s", runID))
	case errors.Is(err, errNotWaiting):
		h.b.Metrics.Error(Protocol, "not_waiting")
		return failure(runID, "not_waiting", err.Error())
	}
	h.logger().Error("mcp: look up run", "run", runID, "err", err)
	h.b.Metrics.Error(Protocol, "internal")
	return failure(runID, "internal", "could not read the run")
}

// answerElicitation resumes run with the answers of the elicitations the
// call asked for. A declined or canceled form leaves the run waiting.
func (h *Handler) answerElicitation(ctx context.Context, req *sdk.CallToolRequest, user string, t *tool, runID string) (*sdk.CallToolResult, error) {
	r, pending, err := h.waiting(ctx, user, runID)
	if err != nil {
		return h.lookupFailure(runID, err), nil
	}
	if r.Runnable != t.name {
		return h.lookupFailure(runID, server.ErrNotFound), nil
	}
	vals := map[string]json.RawMessage{}
	for _, in := range pending {
		res, ok := req.Params.InputResponses[in.ID].(*sdk.ElicitResult)
		if !ok || res.Action != "accept" {
			why := "was not answered"
			if ok {
				why = "was " + res.Action + "d"
			}
			return waitingResult(r.ID, pending, "The form for "+in.ID+" "+why+". "), nil
		}
		_, wrap, _ := elicitSchema(in.Schema)
		var v any = res.Content
		if wrap {
			v = res.Content["value"]
		}
		b, err := json.Marshal(v)
		if err != nil {
			return failure(runID, "invalid_resume", "the answer is not JSON: "+err.Error()), nil
		}
		vals[in.ID] = b
	}
	// The SDK answers an older client's input requests once per call: a
	// run that waits again is reported as waiting, not asked for again.
	return h.run(ctx, req, runtime.Invocation{ID: h.newID("mcp_"), User: user, Session: r.Session.Session,
		Resume: &runtime.ResumeRequest{Run: r.ID, Values: vals}}, elicits(req) && multiRoundTrip(req))
}

// multiRoundTrip reports whether the caller speaks protocol 2026-07-28 or
// later, whose clients retry a call as often as it asks for input.
func multiRoundTrip(req *sdk.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p == nil || p.ProtocolVersion >= "2026-07-28"
}

// run starts inv and turns its events into progress notifications and its
// end into the call's result; elicit: a run that waits asks for the
// answers with forms where it can.
func (h *Handler) run(ctx context.Context, req *sdk.CallToolRequest, inv runtime.Invocation, elicit bool) (*sdk.CallToolResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if hc, ok := h.requestContext(req); ok {
		defer context.AfterFunc(hc, cancel)() // the client went away
	}
	run, err := h.b.Start(ctx, Protocol, inv)
	if err != nil {
		return h.startFailure(inv, err), nil
	}
	token := req.Params.GetProgressToken()
	step := 0
	var fin *runtime.Event
	for e := range run.Events {
		switch e.Kind {
		case runtime.EventRunFinished:
			fin = e
			continue
		case runtime.EventNodeStarted, runtime.EventNodeFinished, runtime.EventNodeFailed, runtime.EventInterrupt, runtime.EventToolProgress:
		default:
			continue
		}
		if token == nil || req.Session == nil {
			continue
		}
		step++
		msg := strings.TrimPrefix(string(e.Kind), "node_") + " " + e.Node
		if e.Kind == runtime.EventToolProgress && e.ToolCall != nil && e.Progress != nil {
			// A tool's own progress (an MCP server's, spec/events.md).
			msg = fmt.Sprintf("tool %s %g", e.ToolCall.Name, e.Progress.Progress)
			if e.Progress.Total > 0 {
				msg += fmt.Sprintf("/%g", e.Progress.Total)
			}
			if e.Progress.Message != "" {
				msg += ": " + e.Progress.Message
			}
		}
		if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(step), Message: msg}); err != nil {
			h.logger().Debug("mcp: progress notification", "run", run.ID, "err", err)
		}
	}
	if fin == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return failure(run.ID, "internal", "the run ended without finishing"), nil
	}
	return h.finished(fin, elicit), nil
}

// finished is the result of a run that ended with fin.
func (h *Handler) finished(fin *runtime.Event, elicit bool) *sdk.CallToolResult {
	switch fin.Status {
	case runtime.StatusCompleted:
		out := json.RawMessage(fin.Output)
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		text := string(out)
		var s string
		if json.Unmarshal(out, &s) == nil {
			text = s
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
			StructuredContent: map[string]any{"status": "completed", "run": fin.Run, "output": out}}
	case runtime.StatusInterrupted:
		if elicit {
			if irs, ok := inputRequests(fin.Interrupts); ok {
				return &sdk.CallToolResult{InputRequests: irs, RequestState: fin.Run}
			}
		}
		return waitingResult(fin.Run, fin.Interrupts, "")
	case runtime.StatusNeedsDecision:
		h.b.Metrics.Error(Protocol, "needs_decision")
		return failure(fin.Run, "needs_decision", fmt.Sprintf("Run %s stopped at a side effect whose outcome is unknown and needs a decision (retry, its result, or fail); settle it with agentc run --decide, the run inspector, AG-UI, A2A or the OpenAI-compatible endpoint.", fin.Run))
	case runtime.StatusCanceled:
		h.b.Metrics.Error(Protocol, "run_canceled")
		return failure(fin.Run, "run_canceled", fmt.Sprintf("Run %s was canceled (its time limit, the client, or a server shutdown).", fin.Run))
	}
	msg := "the run failed"
	kind := "run_failed"
	if fin.Error != nil {
		msg = fin.Error.Message
		if fin.Error.Node != "" {
			msg = "node " + fin.Error.Node + ": " + msg
		}
		if fin.Error.Kind != "" {
			kind = fin.Error.Kind
		}
	}
	h.b.Metrics.Error(Protocol, "run_failed")
	return failure(fin.Run, kind, fmt.Sprintf("Run %s failed: %s", fin.Run, msg))
}

// elicits reports whether the caller declared the elicitation capability
// (form mode, or no mode: form by default).
func elicits(req *sdk.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// inputRequests asks for every pending interrupt with a form; false when
// some interrupt's type cannot be a form.
func inputRequests(pending []runtime.InterruptInfo) (sdk.InputRequestMap, bool) {
	if len(pending) == 0 {
		return nil, false
	}
	out := sdk.InputRequestMap{}
	for _, in := range pending {
		s, _, ok := elicitSchema(in.Schema)
		if !ok {
			return nil, false
		}
		msg := in.Prompt
		if msg == "" {
			msg = "Input for " + in.ID
		}
		out[in.ID] = &sdk.ElicitParams{Mode: "form", Message: msg, RequestedSchema: s}
	}
	return out, true
}

// elicitSchema is the form schema asking for a value of schema s: s itself
// when it is a record of primitive fields (an optional field becomes a
// field that is not required), else {"value": s} when s is a primitive.
// ok is false when a form cannot ask for it (nested or list values).
func elicitSchema(s map[string]any) (form map[string]any, wrap, ok bool) {
	if s["type"] == "object" {
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			return nil, false, false
		}
		out := map[string]any{}
		for name, p := range props {
			ps, _ := p.(map[string]any)
			prim, ok := primitive(ps)
			if !ok {
				return nil, false, false
			}
			out[name] = prim
		}
		form = map[string]any{"type": "object", "properties": out}
		if req, ok := s["required"]; ok {
			form["required"] = req
		}
		return form, false, true
	}
	prim, ok := primitive(s)
	if !ok {
		return nil, false, false
	}
	return map[string]any{"type": "object", "properties": map[string]any{"value": prim}, "required": []any{"value"}}, true, true
}

// primitive returns s when it is a string, number, integer, boolean or
// string enum schema (unwrapping an optional's anyOf), else false.
func primitive(s map[string]any) (map[string]any, bool) {
	if alts, ok := s["anyOf"].([]any); ok && len(alts) == 2 {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && m["type"] != "null" {
				return primitive(m)
			}
		}
		return nil, false
	}
	switch s["type"] {
	case "string", "number", "integer", "boolean":
		return s, true
	}
	return nil, false
}

// waitingResult is the result of a run waiting on interrupts: text that
// says for what and how to answer, and the interrupts as structured
// content. It is not an error: the run is paused, not failed.
func waitingResult(runID string, pending []runtime.InterruptInfo, lead string) *sdk.CallToolResult {
	var b strings.Builder
	b.WriteString(lead)
	fmt.Fprintf(&b, "Run %s is waiting for input.", runID)
	for _, in := range pending {
		schema, _ := json.Marshal(in.Schema)
		fmt.Fprintf(&b, "\n- interrupt %s: %q expects a value of JSON Schema %s", in.ID, in.Prompt, schema)
	}
	if len(pending) == 1 {
		fmt.Fprintf(&b, "\nTo continue, call the tool %s with {\"run\": %q, \"value\": <the value>}.", ResumeTool, runID)
	} else {
		fmt.Fprintf(&b, "\nTo continue, call the tool %s with {\"run\": %q, \"values\": {<interrupt id>: <its value>, ...}}.", ResumeTool, runID)
	}
	list := make([]any, len(pending))
	for i, in := range pending {
		list[i] = map[string]any{"id": in.ID, "node": in.Node, "prompt": in.Prompt, "schema": in.Schema}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"status": "interrupted", "run": runID, "interrupts": list, "resume_tool": ResumeTool}}
}

// failure is an isError result: the message as text, and {"status":
// "failed", "run", "error": {code, message}} as structured content.
func failure(runID, code, message string) *sdk.CallToolResult {
	status := "failed"
	switch code {
	case "needs_decision":
		status = "needs_decision"
	case "run_canceled":
		status = "canceled"
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: message}},
		StructuredContent: map[string]any{"status": status, "run": runID, "error": map[string]any{"code": code, "message": message}}}
}

// startFailure maps a Backend.Start error to a result.
func (h *Handler) startFailure(inv runtime.Invocation, err error) *sdk.CallToolResult {
	run := ""
	if inv.Resume != nil {
		run = inv.Resume.Run
	}
	code, msg := "internal", "could not start the run"
	switch {
	case errors.Is(err, server.ErrOverloaded):
		code, msg = "overloaded", "The server is running its maximum number of concurrent runs; retry later."
	case errors.Is(err, server.ErrShuttingDown), errors.Is(err, runtime.ErrClosed):
		code, msg = "shutting_down", "The server is shutting down."
	case errors.Is(err, runtime.ErrSessionBusy):
		code, msg = "session_busy", "The run's session already has a run in progress; retry when it has finished."
	case errors.Is(err, runtime.ErrInvalidResume):
		code, msg = "invalid_resume", "The answer does not fit the interrupt: "+err.Error()
	case errors.Is(err, runtime.ErrInvalidInvocation), errors.Is(err, runtime.ErrNotResumable), errors.Is(err, runtime.ErrUnknownRunnable):
		code, msg = "invalid_input", err.Error()
	case errors.Is(err, context.Canceled):
		code, msg = "canceled", "The call was canceled."
	default:
		h.logger().Error("mcp: start run", "err", err)
	}
	h.b.Metrics.Error(Protocol, code)
	return failure(run, code, msg)
}

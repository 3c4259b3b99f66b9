package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// The llm agent loop (spec/runner.md, "The llm loop"): the agent's
// instruction and the node's prompt go to the model with the agent's tools;
// the tool calls of a reply run (concurrently when there are several) and
// their results — errors included — go back to the model; a reply without
// tool calls is the final answer, decoded as the node's `into` type. Every
// model call is one turn, up to the agent's max_turns.

// maxAnswerRetries is how many times a final answer that does not decode is
// returned to the model with the error (each retry is a turn).
const maxAnswerRetries = 1

// answerMode says how a final answer becomes a value.
type answerMode uint8

const (
	answerText answerMode = iota // the text as a string (string, json, or no target)
	answerEnum                   // a bare member word or a JSON string
	answerJSON                   // JSON decoded through the target's schema
)

func answerModeOf(t *types.Type) answerMode {
	if t == nil {
		return answerText
	}
	base := t
	if base.Kind() == types.KindOptional {
		base = base.Elem()
	}
	switch base.Kind() {
	case types.KindString, types.KindJSON:
		return answerText
	case types.KindEnum:
		return answerEnum
	}
	return answerJSON
}

// llm runs agent ag's loop for one call.
func (h *host) llm(ctx context.Context, c *callCtx, ag *agentInfo, prompt string, result *types.Type) (types.Value, error) {
	a := h.a
	name := ag.decl.Name
	if ag.model == nil {
		return types.Value{}, vm.NewError(vm.KindUnavailable, "agent %s has no model", name)
	}
	msgs := make([]Message, 0, 8)
	if ag.decl.Instruction != bytecode.None {
		v, err := a.p.m.Eval(ctx, int(ag.decl.Instruction), nil)
		if err != nil {
			return types.Value{}, &vm.Error{Kind: vm.KindEval, Message: "instruction of agent " + name + ": " + err.Error(), Err: err}
		}
		if text, _ := types.AppendText(nil, v); len(text) > 0 {
			msgs = append(msgs, Message{Role: RoleSystem, Content: string(text)})
		}
	}
	head := slices.Clip(msgs)
	view := h.openContext(ctx, c, ag)
	retries, first := 0, 1
	switch {
	case c.sub != nil && !c.sub.Host.IsNull():
		// A loop paused for tool confirmations (confirm.go): run the
		// reply's calls as decided, then go on with the next turn (or
		// wait for the reply's client tools).
		st, decisions, err := h.resumeLoop(c, ag, c.sub)
		if err != nil {
			return types.Value{}, err
		}
		results, err := h.runTools(ctx, c, ag, st.Turn, st.Calls, eventToolCalls(st.Calls), decisions)
		if err != nil {
			return types.Value{}, err
		}
		msgs, retries, first = append(st.Msgs, results...), st.Retries, st.Turn+1
		if len(st.Client) > 0 {
			return types.Value{}, h.pauseForClient(c, ag, st.Turn, retries, msgs, st.Client, eventToolCalls(st.Client))
		}
	case c.resume != nil:
		// A call paused on client tools continues after its last reply.
		st, err := h.resumeClient(c, ag, c.resume)
		if err != nil {
			return types.Value{}, err
		}
		msgs, retries, first = st.Msgs, st.Retries, st.Turn+1
	default:
		tail := h.preload(ctx, c, ag, prompt)
		if prompt != "" || len(head)+len(tail) == 0 {
			tail = append(tail, a.withImages(ag, Message{Role: RoleUser, Content: prompt}))
		}
		msgs = tail
	}
	specs := a.toolSpecs(ag)
	mode := answerModeOf(result)
	var schema map[string]any
	if mode != answerText {
		schemaType := result
		if schemaType.Kind() == types.KindOptional {
			schemaType = schemaType.Elem() // the answer is the value; null is not one
		}
		schema = types.JSONSchema(schemaType)
	}
	for turn := first; turn <= ag.maxTurns; turn++ {
		// A request per turn: a model may keep the previous one. Clip:
		// a model that appends to Messages cannot write into ours.
		ct := ContextTurn{Turn: turn, Head: head, Tail: slices.Clip(msgs), Tools: specs}
		sent := h.contextMessages(ctx, c, view, ct)
		req := &ModelRequest{Site: CallSite{Node: c.node, MapIndex: c.item, Turn: turn}, Messages: slices.Clip(sent),
			Tools: h.contextTools(ctx, c, view, ct), ResponseSchema: schema, Temperature: ag.temperature, TopP: ag.topP, Seed: ag.seed, MaxTokens: ag.maxTokens}
		a.sampling.apply(req)
		onDelta := func(text string) {
			ev := a.newEvent(EventModelDelta, name, c.node, c.step)
			ev.MapIndex, ev.Text, ev.Turn = c.mapIndex(), text, turn
			a.emitTask(c.sc, ev)
		}
		if err := h.admitCall(name); err != nil {
			return types.Value{}, err
		}
		gctx := ctx
		var sp Span
		if obs := a.r.obs; obs != nil {
			gctx, sp = obs.Start(ctx, &SpanStart{Kind: SpanModel, App: a.key.App, User: a.key.User, Session: a.key.Session, Run: a.id,
				Invocation: a.inv, Step: c.step, Node: c.node, MapIndex: c.item, Attempt: c.attempt, Agent: name,
				Model: ag.model.Info(), Turn: turn, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed})
		}
		resp, price, err := h.generate(gctx, c, ag, req, onDelta)
		if err == nil && resp == nil {
			err = vm.NewError(vm.KindModelError, "model of agent %s returned no response", name)
		}
		if err != nil {
			if sp != nil {
				sp.End(&SpanEnd{Err: errorInfo(err, c.node, vm.KindModelError)})
			}
			return types.Value{}, err
		}
		if len(a.client) > 0 {
			a.mintClientIDs(ag, resp)
		}
		ev := a.newEvent(EventModelResponse, name, c.node, c.step)
		ev.MapIndex, ev.Text, ev.Turn = c.mapIndex(), resp.Text, turn
		calls := eventToolCalls(resp.ToolCalls)
		ev.ToolCalls, ev.Model, ev.FinishReason = calls, resp.Model, resp.FinishReason
		if resp.Usage != (Usage{}) {
			u := resp.Usage
			ev.Usage = &u
		}
		if price != nil {
			cost := price.Cost(resp.Usage)
			ev.Cost = &cost
		}
		a.addCall(resp.Usage, ev.Cost)
		a.emitTask(c.sc, ev)
		if sp != nil {
			sp.End(&SpanEnd{EventID: ev.ID, Usage: resp.Usage, Cost: ev.Cost, FinishReason: resp.FinishReason, ResponseModel: resp.Model})
		}
		if err := h.chargeCall(name, resp.Usage, ev.Cost); err != nil {
			return types.Value{}, err
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})

		if len(resp.ToolCalls) > 0 {
			own, ownEv, client, clientEv := resp.ToolCalls, calls, []ToolCall(nil), []ToolCall(nil)
			if len(a.client) > 0 {
				own, ownEv, client, clientEv = a.splitClient(ag, resp.ToolCalls, calls)
			}
			if ask := h.confirmCalls(ag, own); len(ask) > 0 {
				return types.Value{}, h.pause(c, ag, &loopState{Turn: turn, Retries: retries, Msgs: msgs, Calls: own, Ask: ask, Client: client})
			}
			if len(own) > 0 {
				results, err := h.runTools(ctx, c, ag, turn, own, ownEv, nil)
				if err != nil {
					return types.Value{}, err
				}
				msgs = append(msgs, results...)
			}
			if len(client) > 0 {
				return types.Value{}, h.pauseForClient(c, ag, turn, retries, msgs, client, clientEv)
			}
			continue
		}
		v, derr := decodeAnswer(mode, result, resp.Text)
		if derr == nil {
			return v, nil
		}
		if retries >= maxAnswerRetries || turn == ag.maxTurns {
			return types.Value{}, &vm.Error{Kind: vm.KindInvalidOutput, Err: derr,
				Message: fmt.Sprintf("agent %s's answer does not fit %s: %v", name, result, derr)}
		}
		retries++
		hint := "Reply again with only the answer."
		if mode == answerJSON {
			hint = "Reply again with only a JSON value that matches the response schema."
		}
		msgs = append(msgs, Message{Role: RoleUser, Content: "Your answer does not fit the required type " + result.String() + ": " + derr.Error() + ". " + hint})
	}
	return types.Value{}, vm.NewError(vm.KindModelError, "agent %s used its %d turns without a final answer", name, ag.maxTurns)
}

// openContext opens the call's context view: the Runner's ContextBuilder,
// else the plain history. A failure is logged and the call goes on without
// history (context never fails a run).
func (h *host) openContext(ctx context.Context, c *callCtx, ag *agentInfo) ContextView {
	r := h.a.r
	b := r.opts.Context
	if b == nil {
		b = plainContext{st: r.st, ledger: r.ledger}
	}
	call := ContextCall{Session: h.a.key, Run: c.run, Node: c.node, FilterKey: c.node, Program: h.a.p.prog,
		Agent: ag.index, Model: ag.model, Tools: ag.toolNames}
	v, err := safeOpen(ctx, b, call)
	if err != nil || v == nil {
		if err != nil {
			r.log.Warn("runtime: session history unavailable; the call goes on without it", "agent", ag.decl.Name, "run", c.run, "node", c.node, "err", err)
		}
		return plainView{}
	}
	return v
}

// safeOpen calls b.Open, turning a panic into an error.
func safeOpen(ctx context.Context, b ContextBuilder, call ContextCall) (v ContextView, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("context builder panicked: %v", p)
		}
	}()
	return b.Open(ctx, call)
}

// contextMessages returns the messages of one turn from the view; a panic
// in it is logged and the turn goes on without history.
func (h *host) contextMessages(ctx context.Context, c *callCtx, v ContextView, t ContextTurn) (msgs []Message) {
	defer func() {
		if p := recover(); p != nil {
			h.a.r.log.Error("runtime: context view panicked; the turn goes on without history", "run", c.run, "node", c.node, "panic", p, "stack", string(debug.Stack()))
			msgs = JoinMessages(t.Head, nil, t.Tail)
		}
	}()
	return v.Messages(ctx, t)
}

// contextTools returns the tools a turn offers: the view's choice when it
// is a ContextToolView, else all the agent's; a panic in it is logged and
// the turn offers them all.
func (h *host) contextTools(ctx context.Context, c *callCtx, v ContextView, t ContextTurn) (tools []ToolSpec) {
	tv, ok := v.(ContextToolView)
	if !ok {
		return t.Tools
	}
	defer func() {
		if p := recover(); p != nil {
			h.a.r.log.Error("runtime: context view panicked choosing tools; the turn offers them all", "run", c.run, "node", c.node, "panic", p, "stack", string(debug.Stack()))
			tools = t.Tools
		}
	}()
	return tv.Tools(ctx, t)
}

// preload calls every configured Preloader once for this agent call and
// returns their messages in order; an error is logged and skipped. What a
// preloader returns is evidence drawn from untrusted history (recall,
// memories), so every message goes to the model as a user message, never
// a system one, whatever role the preloader gave it.
func (h *host) preload(ctx context.Context, c *callCtx, ag *agentInfo, prompt string) []Message {
	r := h.a.r
	var out []Message
	for i, p := range r.opts.Preloaders {
		if p == nil {
			continue
		}
		msgs, err := h.safePreload(ctx, p, PreloadRequest{Session: h.a.key, Run: c.run, Node: c.node, Program: h.a.p.prog, Agent: ag.index, Query: prompt})
		if err != nil {
			r.log.Warn("runtime: preloader failed; the call goes on without it", "preloader", i, "agent", ag.decl.Name, "run", c.run, "node", c.node, "err", err)
			continue
		}
		for _, m := range msgs {
			m.Role, m.ToolCallID, m.ToolCalls = RoleUser, "", nil
			out = append(out, m)
		}
	}
	return out
}

// safePreload calls p, turning a panic into an error.
func (h *host) safePreload(ctx context.Context, p Preloader, req PreloadRequest) (msgs []Message, err error) {
	defer func() {
		if v := recover(); v != nil {
			msgs, err = nil, fmt.Errorf("preloader panicked: %v", v)
		}
	}()
	return p.Preload(ctx, req)
}

// toolOutcome is one tool call's result as the model and the events see it.
type toolOutcome struct {
	content string          // what the model reads
	result  json.RawMessage // the output (canonical JSON), or nil on error
	err     *ErrorInfo      // the failure returned to the model
	fatal   error           // ends the node: a panic or cancellation
	span    Span            // the call's span, stopped, to be ended with its tool_result (nil: none)
}

// runTools runs a reply's tool calls, concurrently when there are several
// (the goroutines are joined before it returns), and returns the tool
// messages in call order. Tool errors go back to the model; a panicking
// tool or cancellation fails the node.
func (h *host) runTools(ctx context.Context, c *callCtx, ag *agentInfo, turn int, calls, evCalls []ToolCall, decisions map[int]confirmAnswer) ([]Message, error) {
	a := h.a
	name := ag.decl.Name
	if len(decisions) > 0 {
		// Confirmed calls: an edit runs (and is reported) with the user's
		// arguments; a rejection does not run.
		calls, evCalls = slices.Clone(calls), slices.Clone(evCalls)
		for i, d := range decisions {
			if args, _ := decided(d, &calls[i]); args != nil {
				calls[i].Args, evCalls[i].Args = args, args
			}
		}
	}
	for i := range calls {
		ev := a.newEvent(EventToolCall, name, c.node, c.step)
		ev.MapIndex, ev.Turn, ev.ToolCall = c.mapIndex(), turn, &evCalls[i]
		a.emitTask(c.sc, ev)
	}
	outs := make([]toolOutcome, len(calls))
	one := func(i int) toolOutcome {
		if d, ok := decisions[i]; ok {
			if _, rejected := decided(d, &calls[i]); rejected != "" {
				return toolOutcome{content: "error (" + string(vm.KindToolError) + "): " + rejected,
					err: &ErrorInfo{Kind: string(vm.KindToolError), Message: rejected, Node: c.node}}
			}
		}
		return h.modelTool(ctx, c, ag, turn, i, &calls[i])
	}
	if len(calls) == 1 {
		outs[0] = one(0)
	} else {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { outs[i] = one(i) })
		}
		wg.Wait()
	}
	msgs := make([]Message, len(calls))
	var fatal error
	for i := range calls {
		o := &outs[i]
		ev := a.newEvent(EventToolResult, name, c.node, c.step)
		ev.MapIndex, ev.Turn, ev.ToolCall, ev.Result, ev.Error = c.mapIndex(), turn, &evCalls[i], o.result, o.err
		a.emitTask(c.sc, ev)
		if o.span != nil {
			e := o.err
			if e == nil {
				e = errorInfo(o.fatal, c.node, vm.KindInternal)
			}
			o.span.End(&SpanEnd{EventID: ev.ID, Err: e})
		}
		if o.fatal != nil && fatal == nil {
			fatal = o.fatal
		}
		msgs[i] = Message{Role: RoleTool, ToolCallID: calls[i].ID, Name: calls[i].Name, Content: o.content}
	}
	return msgs, fatal
}

// modelTool validates and runs one tool call of a model reply.
func (h *host) modelTool(ctx context.Context, c *callCtx, ag *agentInfo, turn, idx int, tc *ToolCall) (o toolOutcome) {
	var sp Span
	defer func() {
		if p := recover(); p != nil {
			h.a.r.log.Error("runtime: tool call panicked", "tool", tc.Name, "run", c.run, "node", c.node, "panic", p, "stack", string(debug.Stack()))
			o = toolOutcome{fatal: &vm.Error{Kind: vm.KindInternal, Message: fmt.Sprintf("tool %s panicked: %v", tc.Name, p)}}
		}
		if sp != nil {
			sp.Stop()
			o.span = sp
		}
	}()
	fail := func(kind vm.ErrorKind, msg string) toolOutcome {
		return toolOutcome{content: "error (" + string(kind) + "): " + msg, err: &ErrorInfo{Kind: string(kind), Message: msg, Node: c.node}}
	}
	ti, ok := ag.byName[tc.Name]
	if !ok {
		names := make([]string, len(ag.tools))
		for i, t := range ag.tools {
			names[i] = h.a.p.tools[t].name
		}
		avail := "none"
		if len(names) > 0 {
			avail = strings.Join(names, ", ")
		}
		return fail(vm.KindToolError, fmt.Sprintf("unknown tool %q; the available tools are: %s", tc.Name, avail))
	}
	t := &h.a.p.tools[ti]
	args := tc.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	in, err := types.FromJSON(t.in, args)
	if err != nil {
		return fail(vm.KindToolError, fmt.Sprintf("invalid arguments for tool %s: %v", t.name, err))
	}
	canon, err := types.ToJSON(in)
	if err != nil {
		return fail(vm.KindToolError, fmt.Sprintf("invalid arguments for tool %s: %v", t.name, err))
	}
	var key string
	if t.decl.Effect != bytecode.EffectReadOnly {
		base := c.idem
		if base == "" {
			base = vm.IdempotencyKey(c.run, c.taskID()+"@"+strconv.FormatUint(c.step, 10), c.attempt)
		}
		key = base + "/" + strconv.Itoa(turn) + "/" + strconv.Itoa(idx)
	}
	tctx := ctx
	if obs := h.a.r.obs; obs != nil {
		tctx, sp = h.startTool(ctx, obs, c, t.name, tc.ID, turn)
	}
	out, err := h.callTool(tctx, c, t, ToolRequest{CallID: tc.ID, Args: canon, IdempotencyKey: key, Agent: ag.decl.Name})
	if err != nil {
		var ve *vm.Error
		if ctx.Err() != nil || errors.As(err, &ve) && ve.Kind == vm.KindInternal {
			return toolOutcome{fatal: err, err: errorInfo(err, c.node, vm.KindToolError), content: "error: " + err.Error()}
		}
		info := errorInfo(err, c.node, vm.KindToolError)
		return toolOutcome{content: "error (" + info.Kind + "): " + info.Message, err: info}
	}
	v, err := types.FromJSON(t.out, out)
	if err != nil {
		return fail(vm.KindInvalidOutput, fmt.Sprintf("tool %s returned output that does not fit %s: %v", t.name, t.out, err))
	}
	res, err := types.ToJSON(v)
	if err != nil {
		return fail(vm.KindInvalidOutput, fmt.Sprintf("tool %s: %v", t.name, err))
	}
	o = toolOutcome{result: res, content: string(res)}
	if v.Kind() == types.ValString {
		o.content = v.Str()
	}
	return o
}

// decodeAnswer turns a final answer into a value of the target type.
func decodeAnswer(mode answerMode, t *types.Type, text string) (types.Value, error) {
	switch mode {
	case answerText:
		return types.MakeString(text), nil
	case answerEnum:
		base := t
		if base.Kind() == types.KindOptional {
			base = base.Elem()
		}
		if w := strings.TrimSpace(text); base.HasLiteral(w) {
			return types.MakeString(w), nil
		}
	}
	return types.FromJSON(t, stripFence([]byte(text)))
}

// stripFence removes a Markdown code fence around a JSON answer.
func stripFence(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if !bytes.HasPrefix(b, []byte("```")) || !bytes.HasSuffix(b, []byte("```")) || len(b) < 6 {
		return b
	}
	b = b[3 : len(b)-3]
	if i := bytes.IndexByte(b, '\n'); i >= 0 && !bytes.ContainsAny(b[:i], "{[\"") {
		b = b[i+1:]
	}
	return bytes.TrimSpace(b)
}

// eventToolCalls returns the tool calls as events carry them: arguments
// that are not valid JSON (a model's mistake, returned to it as an error)
// are recorded as a JSON string of their text, so that the event encodes.
func eventToolCalls(calls []ToolCall) []ToolCall {
	out := calls
	for i, tc := range calls {
		if tc.Args == nil || json.Valid(tc.Args) {
			continue
		}
		if &out[0] == &calls[0] {
			out = slices.Clone(calls)
		}
		b, _ := json.Marshal(string(tc.Args))
		out[i].Args = b
	}
	return out
}

package runtime

// Client tools (Invocation.ClientTools): tools the caller runs itself, as
// an OpenAI client does with its function tools (spec/serve.md, "Client
// tools"). Every llm call of the invocation offers them to its model after
// the agent's own tools. When a reply calls one, the agent's own calls of
// that reply run, and the llm call pauses (vm.Pause): the run stops
// interrupted, its interrupt (id "graph/node") carrying the client calls
// (InterruptInfo.ToolCalls), and the loop's messages so far are kept in the
// checkpoint. The answer maps each call id to its result; the call then
// continues with the next turn, as if the tools had run in the loop.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// clientAnswerType is the type of the answer to a paused llm call: a map
// from client tool call id to its result (text, or any JSON value, given to
// the model as its JSON text).
var clientAnswerType = types.MapOf(types.JSONType)

// clientPause is what a paused llm call keeps in the checkpoint
// (vm.Pause.Data): the turn whose reply called client tools, the answer
// retries used, the loop's messages through that reply and the results of
// the agent's own calls, and the client calls waiting.
type clientPause struct {
	V       int        `json:"v"`
	Turn    int        `json:"turn"`
	Retries int        `json:"retries,omitempty"`
	Msgs    []Message  `json:"msgs"`
	Calls   []ToolCall `json:"calls"`
}

// CheckClientTools checks an invocation's client tools against program p:
// each name is 1 to 64 letters, digits, '_' or '-', used once, and names
// none of the program's tools. The error wraps ErrInvalidInvocation and
// names the tool.
func CheckClientTools(p *bytecode.Program, tools []ToolSpec) error {
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		if !validToolName(t.Name) {
			return fmt.Errorf("%w: client tool %d: the name %q must be 1 to 64 letters, digits, '_' or '-'", ErrInvalidInvocation, i, t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("%w: client tool %q is given twice", ErrInvalidInvocation, t.Name)
		}
		seen[t.Name] = true
		if p != nil && slices.ContainsFunc(p.Tools, func(d bytecode.Tool) bool { return d.Name == t.Name }) {
			return fmt.Errorf("%w: client tool %q has the name of a tool the workflow declares", ErrInvalidInvocation, t.Name)
		}
	}
	return nil
}

func validToolName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (r *Runner) checkClientTools(tools []ToolSpec) error {
	if len(tools) == 0 {
		return nil
	}
	return CheckClientTools(r.cur.prog, tools)
}

// toolSpecs is what agent ag's model is offered: its own tools, then the
// invocation's client tools.
func (a *activeRun) toolSpecs(ag *agentInfo) []ToolSpec {
	if len(a.client) == 0 {
		return ag.specs
	}
	return append(slices.Clip(ag.specs), a.client...)
}

// isClient reports whether name is a client tool of the invocation (the
// agent's own tools take precedence; CheckClientTools keeps them apart).
func (a *activeRun) isClient(ag *agentInfo, name string) bool {
	if _, own := ag.byName[name]; own {
		return false
	}
	return slices.ContainsFunc(a.client, func(t ToolSpec) bool { return t.Name == name })
}

// mintClientIDs gives each client call of a reply a fresh id (call_<ULID>):
// the ids a client answers must name one pause, whatever ids the model made
// up. The reply's calls are copied first (a model may share them).
func (a *activeRun) mintClientIDs(ag *agentInfo, resp *ModelResponse) {
	copied := false
	for i := range resp.ToolCalls {
		if !a.isClient(ag, resp.ToolCalls[i].Name) {
			continue
		}
		if !copied {
			resp.ToolCalls, copied = slices.Clone(resp.ToolCalls), true
		}
		resp.ToolCalls[i].ID = a.r.ids.nextWithPrefix("call_")
	}
}

// splitClient separates a reply's calls (and their event forms) into the
// agent's own and the client's.
func (a *activeRun) splitClient(ag *agentInfo, calls, evCalls []ToolCall) (own, ownEv, client, clientEv []ToolCall) {
	for i, tc := range calls {
		if a.isClient(ag, tc.Name) {
			client, clientEv = append(client, tc), append(clientEv, evCalls[i])
		} else {
			own, ownEv = append(own, tc), append(ownEv, evCalls[i])
		}
	}
	return own, ownEv, client, clientEv
}

// pauseForClient records the client calls (tool_call events) and returns
// the pause of the llm call, keeping msgs (through the reply and its own
// calls' results) for the resume.
func (h *host) pauseForClient(c *callCtx, ag *agentInfo, turn, retries int, msgs []Message, calls, evCalls []ToolCall) error {
	a := h.a
	names := make([]string, len(calls))
	for i := range calls {
		ev := a.newEvent(EventToolCall, ag.decl.Name, c.node, c.step)
		ev.MapIndex, ev.Turn, ev.ToolCall = c.mapIndex(), turn, &evCalls[i]
		a.emitTask(c.sc, ev)
		names[i] = calls[i].Name + " (" + calls[i].ID + ")"
	}
	data, err := json.Marshal(clientPause{V: 1, Turn: turn, Retries: retries, Msgs: msgs, Calls: evCalls})
	if err != nil {
		return &vm.Error{Kind: vm.KindInternal, Message: "pause for client tools: " + err.Error(), Err: err}
	}
	return &vm.Pause{Prompt: "Waiting for the results of client tool calls: " + strings.Join(names, ", "), Data: data}
}

// resumeClient continues a paused llm call with the client's results
// (answer: call id → result): tool_result events, and the messages the
// loop goes on with. An answer that misses a call or names another is
// invalid_resume.
func (h *host) resumeClient(c *callCtx, ag *agentInfo, res *vm.CallResume) (*clientPause, error) {
	a := h.a
	var st clientPause
	if err := json.Unmarshal(res.Data, &st); err != nil || st.V != 1 || st.Turn < 1 {
		return nil, &vm.Error{Kind: vm.KindInternal, Message: fmt.Sprintf("paused call of agent %s: unreadable pause record", ag.decl.Name)}
	}
	if res.Value.Kind() != types.ValMap {
		return nil, &vm.Error{Kind: vm.KindInvalidResume, Message: "the answer to client tool calls must map each call id to its result"}
	}
	if n := res.Value.Len(); n != len(st.Calls) {
		return nil, &vm.Error{Kind: vm.KindInvalidResume, Message: fmt.Sprintf("%d results for %d client tool calls", n, len(st.Calls))}
	}
	for i := range st.Calls {
		tc := &st.Calls[i]
		v, ok := res.Value.MapGet(tc.ID)
		if !ok {
			return nil, &vm.Error{Kind: vm.KindInvalidResume, Message: "no result for client tool call " + tc.ID}
		}
		content := ""
		if v.Kind() == types.ValString {
			content = v.Str()
		} else if b, err := types.ToJSON(v); err == nil {
			content = string(b)
		}
		out, _ := json.Marshal(content)
		ev := a.newEvent(EventToolResult, ag.decl.Name, c.node, c.step)
		ev.MapIndex, ev.Turn, ev.ToolCall, ev.Result = c.mapIndex(), st.Turn, tc, out
		a.emitTask(c.sc, ev)
		st.Msgs = append(st.Msgs, Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: content})
	}
	return &st, nil
}

// clientPauseInfo fills an interrupt of a paused llm call: its client calls
// and the schema of the answer (each call id, required).
func (a *activeRun) clientPauseInfo(info *InterruptInfo, data []byte) {
	var st clientPause
	if err := json.Unmarshal(data, &st); err != nil {
		a.r.log.Warn("runtime: unreadable pause record", "run", a.id, "interrupt", info.ID, "err", err)
		return
	}
	info.ToolCalls = st.Calls
	props := make(map[string]any, len(st.Calls))
	req := make([]any, len(st.Calls))
	for i, tc := range st.Calls {
		props[tc.ID] = map[string]any{"description": "the result of " + tc.Name}
		req[i] = tc.ID
	}
	info.Schema = map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

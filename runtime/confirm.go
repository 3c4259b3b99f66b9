package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// Tool confirmation (spec/runner.md, "Tool confirmation"). A tool declared
// `confirm = true`, or any side_effect tool of an agent with
// `confirm_side_effects = true`, is not called when a model asks for it:
// the llm loop pauses before running the reply's calls and returns a
// *vm.Suspension whose Host state is the loop (its messages, turn and the
// reply's calls). The VM parks the call like a sub-run's interrupts; each
// call to confirm is an interrupt of its own, `<task>/confirm/<turn>/<i>`,
// typed vm.ConfirmType: {decision: approve | edit | reject, args, reason}.
// Answers wake the loop; once every call of the reply is decided the
// calls run — an edited one with the user's arguments, a rejected one not
// at all, the model reading a tool_error that says the user rejected it —
// and the loop goes on with the next turn.

// loopState is a paused llm loop, kept in the run's checkpoint.
type loopState struct {
	Turn    int                      `json:"turn"`
	Retries int                      `json:"retries,omitempty"`
	Msgs    []Message                `json:"msgs"`
	Calls   []ToolCall               `json:"calls"`
	Ask     []int                    `json:"ask"`               // the calls that need a decision
	Client  []ToolCall               `json:"client,omitempty"`  // the reply's client tool calls, asked for once these run (clienttools.go)
	Decided map[string]confirmAnswer `json:"decided,omitempty"` // by call index
}

// confirmAnswer is a decision on one call.
type confirmAnswer struct {
	Decision string          `json:"decision"`
	Args     json.RawMessage `json:"args,omitempty"`
	Reason   string          `json:"reason,omitempty"`
}

// needsConfirm reports whether agent ag asks before calling tool ti.
func (ag *agentInfo) needsConfirm(t *toolInfo) bool {
	return t.confirm || ag.confirmFx && t.decl.Effect == bytecode.EffectSideEffect
}

// confirmCalls returns the calls of a reply that need a decision: those of
// a tool that asks, with arguments that fit its input (the others fail
// back to the model as usual).
func (h *host) confirmCalls(ag *agentInfo, calls []ToolCall) []int {
	var out []int
	for i := range calls {
		ti, ok := ag.byName[calls[i].Name]
		if !ok || !ag.needsConfirm(&h.a.p.tools[ti]) {
			continue
		}
		if _, err := types.FromJSON(h.a.p.tools[ti].in, orEmpty(calls[i].Args)); err != nil {
			continue
		}
		out = append(out, i)
	}
	return out
}

func orEmpty(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// confirmID is the interrupt id of call i of turn.
func confirmID(c *callCtx, turn, i int) string {
	return c.taskID() + "/confirm/" + strconv.Itoa(turn) + "/" + strconv.Itoa(i)
}

// pause returns the Suspension of a loop waiting for decisions on the
// calls of st.Ask not decided yet.
func (h *host) pause(c *callCtx, ag *agentInfo, st *loopState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return vm.NewError(vm.KindInternal, "pause the loop of agent %s: %v", ag.decl.Name, err)
	}
	sp := &vm.Suspension{Host: types.MakeString(string(b))}
	for _, i := range st.Ask {
		if _, ok := st.Decided[strconv.Itoa(i)]; ok {
			continue
		}
		tc := &st.Calls[i]
		ti := ag.byName[tc.Name]
		args := orEmpty(tc.Args)
		if v, err := types.FromJSON(h.a.p.tools[ti].in, args); err == nil {
			if canon, err := types.ToJSON(v); err == nil {
				args = canon
			}
		}
		sp.Interrupts = append(sp.Interrupts, vm.Interrupt{
			ID: confirmID(c, st.Turn, i), Node: tc.Name, Confirm: true, Tool: ti,
			Prompt: fmt.Sprintf("Allow %s to call %s with %s?", ag.decl.Name, tc.Name, args),
			Type:   vm.ConfirmType(h.a.p.prog, ti),
		})
	}
	return sp
}

// resumeLoop restores a paused loop and takes the answers it was woken
// with. It reports the calls' decisions (by call index) once every call
// that asks is decided, else the Suspension to return again.
func (h *host) resumeLoop(c *callCtx, ag *agentInfo, res *vm.SubResume) (*loopState, map[int]confirmAnswer, error) {
	var st loopState
	if res.Host.Kind() != types.ValString || json.Unmarshal([]byte(res.Host.Str()), &st) != nil || st.Turn < 1 {
		return nil, nil, vm.NewError(vm.KindInternal, "the paused loop of agent %s is damaged", ag.decl.Name)
	}
	if st.Decided == nil {
		st.Decided = map[string]confirmAnswer{}
	}
	for _, i := range st.Ask {
		v, ok := res.Answers[confirmID(c, st.Turn, i)]
		if !ok || i < 0 || i >= len(st.Calls) {
			continue
		}
		ans := confirmAnswer{Decision: "reject"}
		if d, ok := v.Field("decision"); ok && d.Kind() == types.ValString {
			ans.Decision = d.Str()
		}
		if r, ok := v.Field("reason"); ok && r.Kind() == types.ValString {
			ans.Reason = r.Str()
		}
		if a, ok := v.Field("args"); ok && !a.IsNull() {
			if b, err := types.ToJSON(a); err == nil {
				ans.Args = b
			}
		}
		st.Decided[strconv.Itoa(i)] = ans
	}
	for _, i := range st.Ask {
		if _, ok := st.Decided[strconv.Itoa(i)]; !ok {
			return nil, nil, h.pause(c, ag, &st)
		}
	}
	out := make(map[int]confirmAnswer, len(st.Decided))
	for k, v := range st.Decided {
		i, _ := strconv.Atoi(k)
		out[i] = v
	}
	return &st, out, nil
}

// decided applies a decision to a call before it runs: the arguments to
// use (an edit's), or the tool_error a rejected call returns to the model.
func decided(d confirmAnswer, tc *ToolCall) (args json.RawMessage, rejected string) {
	switch d.Decision {
	case "approve":
		return tc.Args, ""
	case "edit":
		if len(d.Args) > 0 {
			return d.Args, ""
		}
		return tc.Args, ""
	}
	msg := "the user rejected this call of " + tc.Name
	if r := strings.TrimSpace(d.Reason); r != "" {
		msg += ": " + r
	}
	return nil, msg
}

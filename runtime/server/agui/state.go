package agui

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
)

// runState is the whole visible state a run starts from, as the first
// STATE_SNAPSHOT reports it. It is read before the run starts, so that no
// step of this request is in it (the deltas that follow apply to it
// exactly once): for a resume, the waiting run's last checkpoint
// (Runner.LatestState); for a new run, the state schema's defaults with the
// input field set to the input when that field is a string
// (Runner.InitialState). Hidden fields ($…) and unassigned ones are left
// out. ok is false when the run or its graph cannot be read.
func (h *handler) runState(ctx context.Context, inv runtime.Invocation) (map[string]json.RawMessage, bool) {
	out := map[string]json.RawMessage{}
	put := func(name string, v types.Value) {
		if strings.HasPrefix(name, "$") || v.Kind() == types.ValNull { // unassigned; AG-UI sends no nulls
			return
		}
		if j, err := types.ToJSON(v); err == nil {
			out[name] = j
		}
	}
	if inv.Resume != nil {
		st, err := h.b.Runner.LatestState(ctx, inv.Resume.Run)
		if err != nil {
			return nil, false
		}
		for _, f := range st.Fields {
			put(f.Name, f.Value)
		}
		return out, true
	}
	st, err := h.b.Runner.InitialState(inv.Runnable, "")
	if err != nil {
		return nil, false
	}
	g := &h.b.Runner.Program().Graphs[st.Graph]
	for i, f := range st.Fields {
		if int32(i) == g.Input && inv.Input != "" && f.Type.Kind() == types.KindString {
			f.Value = types.MakeString(inv.Input)
		}
		put(f.Name, f.Value)
	}
	return out, true
}

// startState is the state of a request's first STATE_SNAPSHOT (runState):
// empty when the store does not answer, so that the deltas that follow add
// every member they change.
func (h *handler) startState(ctx context.Context, inv runtime.Invocation) map[string]json.RawMessage {
	st, ok := h.runState(ctx, inv)
	if !ok {
		run := ""
		if inv.Resume != nil {
			run = inv.Resume.Run
		}
		h.log.Warn("agui: the state a run starts from could not be read; the snapshot is empty", "session", inv.Session, "run", run)
		return map[string]json.RawMessage{}
	}
	return st
}

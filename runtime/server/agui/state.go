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
// exactly once): for a resume, the waiting run's last checkpoint; for a new
// run, the state schema's defaults with the input field set to the input.
// Hidden fields ($…) and unassigned ones are left out. ok is false when the
// run or its graph cannot be read; the caller then falls back to what the
// ledger says.
func (h *handler) runState(ctx context.Context, inv runtime.Invocation) (map[string]json.RawMessage, bool) {
	p := h.b.Program
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
		run, err := h.b.Store.GetRun(ctx, inv.Resume.Run)
		if err != nil {
			return nil, false
		}
		cp, err := h.b.Store.LatestCheckpoint(ctx, run.ID)
		if err != nil {
			return nil, false
		}
		st, err := runtime.StateAt(ctx, h.b.Store, p, run, cp.Step)
		if err != nil {
			return nil, false
		}
		for _, f := range st.Fields {
			put(f.Name, f.Value)
		}
		return out, true
	}
	gi := p.DefaultGraph()
	if inv.Runnable != "" {
		gi = -1
		for i := range p.Agents {
			if p.Agents[i].Name == inv.Runnable {
				gi = int(p.Agents[i].Graph)
			}
		}
		for i := range p.Graphs {
			if gi < 0 && p.Graphs[i].Name == inv.Runnable {
				gi = i
			}
		}
	}
	if gi < 0 || gi >= len(p.Graphs) {
		return nil, false
	}
	g := &p.Graphs[gi]
	for i, f := range p.States[g.State].Fields {
		if f.HasDefault && int(f.Default) < len(p.Consts) {
			put(f.Name, p.Consts[f.Default])
		}
		if int32(i) == g.Input && inv.Input != "" && p.Types[f.Type].Kind() == types.KindString {
			put(f.Name, types.MakeString(inv.Input))
		}
	}
	return out, true
}

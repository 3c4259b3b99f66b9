package memory

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/recall"
)

// Modes of a memory policy.
const (
	ModeAgentic = "agentic"
	ModeAuto    = "auto"
)

// Policy is an agent's memory policy with its defaults filled in.
type Policy struct {
	Mode        string
	Model       string // the extractor's model name ("" = the agent's)
	Preload     int    // 0 off, -1 all
	MaxMemories int
	Instruction string // "" = DefaultInstruction
}

// PolicyOf returns the memory policy of agent (an index into p.Agents), and
// whether the agent has one.
func PolicyOf(p *bytecode.Program, agent int) (Policy, bool) {
	pol := Policy{Mode: ModeAgentic, MaxMemories: DefaultMaxMemories}
	if recall.AgentPolicy(p, agent, bytecode.PolicyMemory) == nil {
		return pol, false
	}
	get := func(name string) (types.Value, bytecode.Ref, bool) {
		return recall.PolicyAttr(p, agent, bytecode.PolicyMemory, name)
	}
	if v, _, ok := get("mode"); ok && v.Kind() == types.ValString {
		pol.Mode = v.Str()
	}
	if _, r, ok := get("model"); ok && r.Kind == bytecode.RefModel && int(r.Index) < len(p.Models) {
		pol.Model = p.Models[r.Index].Name
	}
	if pol.Model == "" && agent >= 0 && agent < len(p.Agents) {
		if mi := p.Agents[agent].Model; mi >= 0 && int(mi) < len(p.Models) {
			pol.Model = p.Models[mi].Name
		}
	}
	if v, _, ok := get("preload"); ok && v.Kind() == types.ValInt {
		pol.Preload = max(-1, int(v.Int()))
	}
	if v, _, ok := get("max_memories"); ok && v.Kind() == types.ValInt && v.Int() >= 1 {
		pol.MaxMemories = int(v.Int())
	}
	if v, _, ok := get("instruction"); ok && v.Kind() == types.ValString {
		pol.Instruction = v.Str()
	}
	return pol, true
}

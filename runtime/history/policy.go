package history

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Defaults of the summary and compaction policies (spec/language.md §10).
const (
	DefaultContextRatio        = 0.5
	DefaultMinTokens           = 2000
	DefaultToolResultMaxTokens = 1024
	DefaultProtectRecent       = 1
	DefaultSyncRatio           = 0.7
	// DefaultWindow is the context window of a model that declares none.
	DefaultWindow = bytecode.DefaultContextWindow
	// MinThreshold is the least token threshold a ratio resolves to.
	MinThreshold = 2000
)

// SummaryPolicy is an agent's `summary` block, resolved.
type SummaryPolicy struct {
	Name string
	// Trigger is the Chunks index of the trigger expression, or -1 for the
	// default, context_ratio(0.5).
	Trigger          int
	MinTokens        int
	Model            string // the summarizer's declared model name; "" = the agent's
	MaxSummaryTokens int    // 0: no limit
	SkipRecent       int
	Instruction      string // "" = the built-in one
}

// CompactionPolicy is an agent's `compaction` block, resolved.
type CompactionPolicy struct {
	Name                string
	ForceClean, Keep    []string // tool names
	ToolResultMaxTokens int
	ProtectRecent       int
	OversizedMaxTokens  int // 0: pass 2 off
	CurrentRequest      bool
	SyncRatio           float64
}

// DefaultCompaction returns a compaction policy with the language's
// defaults.
func DefaultCompaction() CompactionPolicy {
	return CompactionPolicy{ToolResultMaxTokens: DefaultToolResultMaxTokens, ProtectRecent: DefaultProtectRecent,
		CurrentRequest: true, SyncRatio: DefaultSyncRatio}
}

// AgentPolicies are the context policies of one agent (nil: none).
type AgentPolicies struct {
	Summary    *SummaryPolicy
	Compaction *CompactionPolicy
	// Model is the agent's declared model name; Window its context window
	// (the declaration's context_window, else DefaultWindow).
	Model  string
	Window int
	// SessionLoad: the agent lists session_load, so a tool result it no
	// longer sees can be loaded back by event id (RecallElision,
	// summarizer excerpts).
	SessionLoad bool
}

// RecallElision returns the compaction an agent with a summary policy and
// session_load but no compaction policy gets by default (spec/context.md,
// "Recall-backed elision"): pass 1 and the recall detour at the default
// limit and protection, eliding only results the agent can get back
// (RecoverableOnly), no pressure relief. ok is false for every other agent
// (a declared compaction policy governs; without a summary or session_load
// nothing is rewritten).
func RecallElision(ap AgentPolicies) (pol CompactionPolicy, ok bool) {
	if ap.Summary == nil || ap.Compaction != nil || !ap.SessionLoad {
		return CompactionPolicy{}, false
	}
	return CompactionPolicy{Name: "recall elision", ToolResultMaxTokens: DefaultToolResultMaxTokens, ProtectRecent: 0,
		CurrentRequest: true}, true
}

// PoliciesOf resolves agent ai's summary and compaction policies and its
// model's window from the program.
func PoliciesOf(p *bytecode.Program, ai int) AgentPolicies {
	var ap AgentPolicies
	if p == nil || ai < 0 || ai >= len(p.Agents) {
		ap.Window = DefaultWindow
		return ap
	}
	ag := &p.Agents[ai]
	if ag.Model >= 0 && int(ag.Model) < len(p.Models) {
		ap.Model = p.Models[ag.Model].Name
	}
	ap.Window = ModelWindow(p, ap.Model)
	for _, ti := range ag.Tools {
		if int(ti) < len(p.Tools) && p.Tools[ti].Name == recallLoad {
			ap.SessionLoad = true
		}
	}
	for _, pi := range ag.Policies {
		if int(pi) >= len(p.Policies) {
			continue
		}
		pol := &p.Policies[pi]
		switch pol.Kind {
		case bytecode.PolicySummary:
			s := &SummaryPolicy{Name: pol.Name, Trigger: -1, MinTokens: DefaultMinTokens}
			for _, at := range pol.Attrs {
				switch at.Name {
				case "trigger":
					if at.Kind == bytecode.AttrCode {
						s.Trigger = int(at.Code)
					}
				case "min_tokens":
					s.MinTokens = constInt(p, at, s.MinTokens)
				case "max_summary_tokens":
					s.MaxSummaryTokens = constInt(p, at, 0)
				case "skip_recent":
					s.SkipRecent = constInt(p, at, 0)
				case "instruction":
					s.Instruction = constString(p, at)
				case "model":
					if len(at.Refs) > 0 {
						s.Model = p.RefName(at.Refs[0])
					}
				}
			}
			ap.Summary = s
		case bytecode.PolicyCompaction:
			c := DefaultCompaction()
			c.Name = pol.Name
			for _, at := range pol.Attrs {
				switch at.Name {
				case "force_clean":
					c.ForceClean = p.RefNames(at, bytecode.RefTool)
				case "keep":
					c.Keep = p.RefNames(at, bytecode.RefTool)
				case "tool_result_max_tokens":
					c.ToolResultMaxTokens = constInt(p, at, c.ToolResultMaxTokens)
				case "protect_recent":
					c.ProtectRecent = constInt(p, at, c.ProtectRecent)
				case "oversized_max_tokens":
					c.OversizedMaxTokens = constInt(p, at, 0)
				case "current_request":
					if v, ok := p.AttrConst(at); ok && v.Kind() == types.ValBool {
						c.CurrentRequest = v.Bool()
					}
				case "sync_ratio":
					if f, ok := p.AttrNumber(at); ok {
						c.SyncRatio = f
					}
				}
			}
			ap.Compaction = &c
		}
	}
	return ap
}

// ModelWindow returns the context_window of the declared model name (a
// constant attribute), else DefaultWindow.
func ModelWindow(p *bytecode.Program, name string) int {
	if p != nil {
		for i := range p.Models {
			if p.Models[i].Name != name {
				continue
			}
			if n := p.AttrInt(p.Models[i].Attrs, "context_window", 0); n > 0 {
				return n
			}
		}
	}
	return DefaultWindow
}

// ModelID returns the provider model id of the declared model name (its
// `name` attribute when constant, else the declared name).
func ModelID(p *bytecode.Program, name string) string {
	if p != nil {
		for i := range p.Models {
			if p.Models[i].Name == name {
				if v, ok := p.ConstAttr(p.Models[i].Attrs, "name"); ok && v.Kind() == types.ValString && v.Str() != "" {
					return v.Str()
				}
			}
		}
	}
	return name
}

func constInt(p *bytecode.Program, at bytecode.Attr, def int) int {
	if v, ok := p.AttrConst(at); ok && v.Kind() == types.ValInt {
		return int(v.Int())
	}
	return def
}

func constString(p *bytecode.Program, at bytecode.Attr) string {
	if v, ok := p.AttrConst(at); ok && v.Kind() == types.ValString {
		return v.Str()
	}
	return ""
}

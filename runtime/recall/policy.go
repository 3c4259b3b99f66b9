package recall

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Scopes of session_search (spec/language.md §10.3).
const (
	ScopeCurrentHidden = "current_hidden" // the current session, events hidden behind its summary
	ScopeCurrentSess   = "current_session"
	ScopeOtherSessions = "other_sessions" // the user's other sessions of the app
	ScopeAllSessions   = "all_sessions"
)

// Policy is an agent's recall policy with its defaults filled in.
type Policy struct {
	Search     bool
	Scopes     []string // allowed scopes; the first is the default
	TopK       int
	MinScore   float64
	SearchMode string
	LoadWindow int
	Preload    int
}

// DefaultPolicy is the policy of an agent without a recall block (and of
// tool nodes).
func DefaultPolicy() Policy {
	return Policy{Search: true, Scopes: []string{ScopeCurrentHidden, ScopeCurrentSess, ScopeOtherSessions, ScopeAllSessions},
		TopK: 5, SearchMode: "hybrid", LoadWindow: 1}
}

// AgentIndex returns the index of the agent named name in p, or -1.
func AgentIndex(p *bytecode.Program, name string) int {
	if p == nil || name == "" {
		return -1
	}
	for i := range p.Agents {
		if p.Agents[i].Name == name {
			return i
		}
	}
	return -1
}

// PolicyAttr returns the constant value of attribute attr of the agent's
// policy of kind kind; ok is false when the agent has no such policy or the
// attribute is not set as a constant (the default applies).
func PolicyAttr(p *bytecode.Program, agent int, kind bytecode.PolicyKind, attr string) (v types.Value, ref bytecode.Ref, ok bool) {
	pl := AgentPolicy(p, agent, kind)
	if pl == nil {
		return types.Value{}, bytecode.Ref{}, false
	}
	a, found := bytecode.FindAttr(pl.Attrs, attr)
	switch {
	case !found:
	case a.Kind == bytecode.AttrConst:
		if v, ok := p.AttrConst(a); ok {
			return v, bytecode.Ref{}, true
		}
	case a.Kind == bytecode.AttrRef:
		if r, ok := a.Ref(); ok {
			return types.Value{}, r, true
		}
	}
	return types.Value{}, bytecode.Ref{}, false
}

// AgentPolicy returns the agent's policy of kind kind, or nil.
func AgentPolicy(p *bytecode.Program, agent int, kind bytecode.PolicyKind) *bytecode.Policy {
	if p == nil || agent < 0 || agent >= len(p.Agents) {
		return nil
	}
	for _, pi := range p.Agents[agent].Policies {
		if int(pi) < len(p.Policies) && p.Policies[pi].Kind == kind {
			return &p.Policies[pi]
		}
	}
	return nil
}

// PolicyOf returns the recall policy of agent (an index into p.Agents; -1
// or an agent without one: DefaultPolicy).
func PolicyOf(p *bytecode.Program, agent int) Policy {
	pol := DefaultPolicy()
	get := func(name string) (types.Value, bool) {
		v, _, ok := PolicyAttr(p, agent, bytecode.PolicyRecall, name)
		return v, ok
	}
	if v, ok := get("search"); ok && v.Kind() == types.ValBool {
		pol.Search = v.Bool()
	}
	if v, ok := get("scopes"); ok && v.Kind() == types.ValList && v.Len() > 0 {
		var sc []string
		for _, e := range v.Elems() {
			if e.Kind() == types.ValString && validScope(e.Str()) {
				sc = append(sc, e.Str())
			}
		}
		if len(sc) > 0 {
			pol.Scopes = sc
		}
	}
	if v, ok := get("top_k"); ok && v.Kind() == types.ValInt {
		pol.TopK = clampInt(int(v.Int()), 1, 10)
	}
	if v, ok := get("min_score"); ok {
		switch v.Kind() {
		case types.ValFloat:
			pol.MinScore = clampFloat(v.Float(), 0, 1)
		case types.ValInt:
			pol.MinScore = clampFloat(float64(v.Int()), 0, 1)
		}
	}
	if v, ok := get("search_mode"); ok && v.Kind() == types.ValString {
		pol.SearchMode = v.Str()
	}
	if v, ok := get("load_window"); ok && v.Kind() == types.ValInt {
		pol.LoadWindow = clampInt(int(v.Int()), 0, 2)
	}
	if v, ok := get("preload"); ok && v.Kind() == types.ValInt {
		pol.Preload = max(0, int(v.Int()))
	}
	return pol
}

func validScope(s string) bool {
	switch s {
	case ScopeCurrentHidden, ScopeCurrentSess, ScopeOtherSessions, ScopeAllSessions:
		return true
	}
	return false
}

var recallKind = bytecode.PolicyRecall

func clampInt(v, lo, hi int) int           { return min(max(v, lo), hi) }
func clampFloat(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

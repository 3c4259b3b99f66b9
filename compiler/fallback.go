package compiler

import (
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Model fallback (spec/language.md §5, "Fallback"): `fallback = [m, …]` on
// a model or an llm agent names the models a call moves to, in order, when
// the one before is unavailable or rate-limited. Each must stand in for
// the agent's model where it is used: take tool calls when the agent has
// tools, structured output when a node's answer is decoded as a type, and
// have a window at least as large.

// defaultWindow is a model's context window when it declares none.
const defaultWindow = 8192

// fallbackEntry is one model of a fallback list and where the list names it.
type fallbackEntry struct {
	m  *Model
	at diag.Span
}

// entries returns the models attribute at names, each with its span.
func fallbackEntries(at *Attr) []fallbackEntry {
	if at == nil {
		return nil
	}
	var elems []*syntax.ListElem
	if l, ok := primaryOf(at.Value).(*syntax.ListLit); ok {
		elems = l.Elems
	}
	var out []fallbackEntry
	for i, d := range at.Refs {
		m, ok := d.(*Model)
		if !ok {
			continue
		}
		sp := at.Span
		if i < len(elems) {
			sp = elems[i].Span()
		}
		out = append(out, fallbackEntry{m, sp})
	}
	return out
}

// checkFallbackList reports a list naming its own model (self); a model
// named twice is N202 already.
func (c *checker) checkFallbackList(list []fallbackEntry, self *Model, what string) {
	for _, e := range list {
		if e.m == self {
			c.errorf(FallbackCycle, e.at, "%s cannot fall back to %s itself", what, e.m.name)
		}
	}
}

func (c *checker) checkModelFallback(m *Model) {
	c.checkFallbackList(fallbackEntries(m.Attrs.Get("fallback")), m, "model "+m.name)
}

// agentFallbacks is the fallback list an llm agent's calls use: its own
// `fallback`, else its model's.
func agentFallbacks(a *Agent) []fallbackEntry {
	if at := a.Attrs.Get("fallback"); at != nil {
		return fallbackEntries(at)
	}
	if a.Model != nil {
		return fallbackEntries(a.Model.Attrs.Get("fallback"))
	}
	return nil
}

// modelBool is a bool attribute of m (def when not set).
func modelBool(m *Model, name string, def bool) bool {
	if at := m.Attrs.Get(name); at != nil && at.HasConst && at.Const.Kind() == types.ValBool {
		return at.Const.Bool()
	}
	return def
}

// modelWindow is m's declared context window, else the default.
func modelWindow(m *Model) int64 {
	if at := m.Attrs.Get("context_window"); at != nil && at.HasConst && at.Const.Kind() == types.ValInt {
		return at.Const.Int()
	}
	return defaultWindow
}

// checkAgentFallback checks an llm agent's fallbacks against what every
// call of the agent needs: tool calls for its tools, structured output for
// its declared output type, and its model's window.
func (c *checker) checkAgentFallback(a *Agent) {
	own := a.Attrs.Get("fallback")
	list := agentFallbacks(a)
	if own != nil {
		c.checkFallbackList(list, a.Model, "agent "+a.name+" (model "+modelName(a.Model)+")")
	}
	if a.Model == nil || len(list) == 0 {
		return
	}
	where := func(e fallbackEntry, d *diag.Diagnostic) {
		if own == nil {
			related(d, "the fallback of agent "+a.name, a.Attrs.Get("model").Span)
		}
	}
	for _, e := range list {
		if e.m == a.Model {
			continue // reported above
		}
		if len(a.Tools) > 0 && !modelBool(e.m, "tool_calls", true) {
			d := c.errorf(FallbackUnsupported, e.at, "fallback %s takes no tool calls (tool_calls = false), but agent %s has tools", e.m.name, a.name)
			related(d, "the agent's tools", a.Attrs.Get("tools").Span)
			where(e, d)
		}
		if out := a.Attrs.Get("output"); out != nil && needsSchema(a.Output) && !modelBool(e.m, "structured_output", true) {
			d := c.errorf(FallbackUnsupported, e.at, "fallback %s has no structured output (structured_output = false), but agent %s answers %s", e.m.name, a.name, a.Output)
			related(d, "the agent's output type", out.Span)
			where(e, d)
		}
		if w, need := modelWindow(e.m), modelWindow(a.Model); w < need {
			d := c.errorf(FallbackWindow, e.at, "fallback %s has a context window of %d tokens, smaller than the %d of %s, the model of agent %s", e.m.name, w, need, a.Model.name, a.name)
			related(d, "the agent's model", a.Attrs.Get("model").Span)
			where(e, d)
		}
	}
}

func modelName(m *Model) string {
	if m == nil {
		return "none"
	}
	return m.name
}

// needsSchema reports whether an answer of type t is decoded through a
// JSON Schema (structured output): anything but text and json.
func needsSchema(t *types.Type) bool {
	if t == nil {
		return false
	}
	t = unopt(t)
	return t.Kind() != types.KindString && t.Kind() != types.KindJSON
}

// checkFallbackNode checks that the fallbacks of an llm node's agent give
// the structured output its answer type needs (an agent that declares an
// output type is checked once, at the agent).
func (c *checker) checkFallbackNode(n *Node) {
	call := n.Call
	if call == nil && n.Map != nil {
		call = n.Map.Body
	}
	if call == nil || call.Kind != "llm" || call.Agent == nil || call.Agent.Attrs.Get("output") != nil || n.Into == nil {
		return
	}
	out := n.Output
	if n.Map != nil {
		out = n.Map.ItemOutput
	}
	if !needsSchema(out) {
		return
	}
	for _, e := range agentFallbacks(call.Agent) {
		if !modelBool(e.m, "structured_output", true) {
			d := c.errorf(FallbackUnsupported, n.IntoSpan, "node %s's answer is decoded as %s, which needs structured output, but fallback %s of agent %s has none (structured_output = false)", n.Name, out, e.m.name, call.Agent.name)
			related(d, "the fallback", e.at)
		}
	}
}

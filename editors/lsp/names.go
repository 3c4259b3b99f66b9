package lsp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// What a name under the cursor stands for, from compiler.Info alone: the
// checker's Refs for uses, and the resolved declarations for the places
// that declare a name. Nothing here resolves a name.

// target is the meaning of one name occurrence.
type target struct {
	ref  compiler.Ref
	name string
	at   diag.Span // the occurrence under the cursor
	def  diag.Span // where it is declared; invalid for builtins and implicit variables
	key  syntax.Node
	typ  *types.Type // its type at the occurrence, when the checker recorded one
}

// id identifies what a target names across checks (each open document
// has its own Info, so pointers differ): the declaring span, or the
// builtin's name.
func (t *target) id() string {
	switch t.ref.Kind {
	case compiler.RefFunc:
		return "func " + t.name
	case compiler.RefVar, compiler.RefSymbol:
		return "" // no identity beyond its occurrence
	}
	if t.def.IsValid() {
		return fmt.Sprintf("%s@%d", t.def.File, t.def.Start.Offset)
	}
	if t.ref.Kind == compiler.RefDecl {
		return "builtin " + t.name
	}
	if t.ref.Kind == compiler.RefNode && t.ref.Node != nil {
		return "node " + t.ref.Node.Name + "@" + t.ref.Node.Span.File // start and end
	}
	return ""
}

// nameSpan is the span of the name a Refs key stands for (a call's
// function name, not the whole call).
func nameSpan(k syntax.Node) diag.Span {
	if c, ok := k.(*syntax.Call); ok && c.Func != nil {
		return c.Func.Span()
	}
	return k.Span()
}

func contains(sp diag.Span, file string, off int) bool {
	return sp.IsValid() && sp.File == file && sp.Start.Offset <= off && off <= sp.End.Offset
}

// refName is the name a Ref stands for.
func refName(r compiler.Ref) string {
	switch r.Kind {
	case compiler.RefField:
		if r.Field != nil {
			return r.Field.Name
		}
	case compiler.RefNode:
		if r.Node != nil {
			return r.Node.Name
		}
	case compiler.RefLoopVar:
		if r.Node != nil && r.Node.Map != nil {
			return r.Node.Map.Var
		}
		return r.Var
	case compiler.RefDecl:
		if r.Decl != nil {
			return r.Decl.Name()
		}
	case compiler.RefFunc:
		if r.Func != nil {
			return r.Func.Name
		}
	case compiler.RefVar:
		return r.Var
	case compiler.RefSymbol:
		return r.Symbol
	}
	return ""
}

// resolve fills a target's name and declaration from its Ref.
func resolve(info *compiler.Info, file string, key syntax.Node, at diag.Span, r compiler.Ref) *target {
	t := &target{ref: r, name: refName(r), at: at, key: key}
	if key != nil {
		t.typ = info.TypeOf(key)
	}
	switch r.Kind {
	case compiler.RefField:
		if r.Field == nil {
			return nil
		}
		t.def, t.typ = r.Field.Span, r.Field.Type
	case compiler.RefDecl:
		if r.Decl == nil {
			return nil
		}
		t.def = r.Decl.Span()
	case compiler.RefNode:
		if r.Node == nil {
			return nil
		}
		t.def = r.Node.Span
	case compiler.RefLoopVar:
		n := r.Node
		if n == nil {
			n = enclosingNode(info, file, at.Start.Offset)
		}
		if n != nil && n.Map != nil {
			t.def, t.typ = n.Map.VarSpan, n.Map.VarType
		}
	case compiler.RefFunc:
		if r.Func == nil {
			return nil
		}
	}
	if t.name == "" {
		return nil
	}
	return t
}

// targetAt returns the innermost name at byte offset off of file.
func targetAt(info *compiler.Info, file string, off int) *target {
	if info == nil {
		return nil
	}
	var best *target
	consider := func(key syntax.Node, at diag.Span, r compiler.Ref) {
		if !contains(at, file, off) {
			return
		}
		if best != nil && at.End.Offset-at.Start.Offset >= best.at.End.Offset-best.at.Start.Offset {
			return
		}
		if t := resolve(info, file, key, at, r); t != nil {
			best = t
		}
	}
	for k, r := range info.Refs.All() {
		consider(k, nameSpan(k), r)
	}
	for _, d := range info.Decls {
		consider(nil, d.Span(), compiler.Ref{Kind: compiler.RefDecl, Decl: d})
	}
	for _, s := range info.States {
		for _, f := range s.Fields {
			consider(nil, f.Span, compiler.Ref{Kind: compiler.RefField, Field: f})
		}
	}
	for _, g := range info.Graphs {
		for _, n := range g.Nodes {
			consider(nil, n.Span, compiler.Ref{Kind: compiler.RefNode, Node: n})
			if n.Map != nil {
				consider(nil, n.Map.VarSpan, compiler.Ref{Kind: compiler.RefLoopVar, Node: n})
			}
		}
	}
	return best
}

// enclosingNode is the graph node whose declaration holds off.
func enclosingNode(info *compiler.Info, file string, off int) *compiler.Node {
	for _, g := range info.Graphs {
		for _, n := range g.Nodes {
			if n.Syntax != nil && contains(n.Syntax.Span(), file, off) {
				return n
			}
		}
	}
	return nil
}

// occurrences returns every occurrence of what id names in info: each
// use the checker resolved, and the declaration itself.
func occurrences(info *compiler.Info, id string) []diag.Span {
	if info == nil || id == "" {
		return nil
	}
	var out []diag.Span
	for k, r := range info.Refs.All() {
		at := nameSpan(k)
		if t := resolve(info, at.File, k, at, r); t != nil && t.id() == id {
			out = append(out, at)
		}
	}
	for _, d := range info.Decls {
		if t := resolve(info, "", nil, d.Span(), compiler.Ref{Kind: compiler.RefDecl, Decl: d}); t != nil && t.id() == id {
			out = append(out, d.Span())
		}
	}
	for _, s := range info.States {
		for _, f := range s.Fields {
			if t := (&target{ref: compiler.Ref{Kind: compiler.RefField, Field: f}, def: f.Span}); t.id() == id {
				out = append(out, f.Span)
			}
		}
	}
	for _, g := range info.Graphs {
		for _, n := range g.Nodes {
			if t := (&target{ref: compiler.Ref{Kind: compiler.RefNode, Node: n}, def: n.Span}); n.Span.IsValid() && t.id() == id {
				out = append(out, n.Span)
			}
			if n.Map != nil && n.Map.VarSpan.IsValid() && fmt.Sprintf("%s@%d", n.Map.VarSpan.File, n.Map.VarSpan.Start.Offset) == id {
				out = append(out, n.Map.VarSpan)
			}
		}
	}
	return out
}

// graphOf is the graph a node belongs to.
func graphOf(info *compiler.Info, n *compiler.Node) *compiler.Graph {
	for _, g := range info.Graphs {
		if slices.Contains(g.Nodes, n) {
			return g
		}
	}
	return nil
}

// stateOf is the state declaring a field.
func stateOf(info *compiler.Info, f *compiler.Field) *compiler.State {
	for _, s := range info.States {
		if slices.Contains(s.Fields, f) {
			return s
		}
	}
	return nil
}

// reads are the state fields a node's declaration reads, in field order.
func reads(info *compiler.Info, n *compiler.Node) []*compiler.Field {
	if n.Syntax == nil {
		return nil
	}
	sp := n.Syntax.Span()
	seen := map[*compiler.Field]bool{}
	for k, r := range info.Refs.All() {
		if _, isRead := k.(*syntax.Name); !isRead || r.Kind != compiler.RefField || r.Field == nil {
			continue
		}
		if at := k.Span(); contains(sp, at.File, at.Start.Offset) {
			seen[r.Field] = true
		}
	}
	out := make([]*compiler.Field, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *compiler.Field) int { return a.Index - b.Index })
	return out
}

func fieldNames(fs []*compiler.Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = "`" + f.Name + "`"
	}
	return strings.Join(names, ", ")
}

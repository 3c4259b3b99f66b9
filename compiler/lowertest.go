package compiler

import (
	"fmt"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/syntax"
)

// The serve block and test blocks.

var protocolKinds = map[string]struct {
	kind bytecode.ProtocolKind
	path string // the default mount path
}{
	"agui":   {bytecode.ProtoAGUI, "/agui"},
	"a2a":    {bytecode.ProtoA2A, "/a2a"},
	"openai": {bytecode.ProtoOpenAI, "/v1"},
	"mcp":    {bytecode.ProtoMCP, "/mcp"},
}

// serve lowers the serve block: `run` becomes Serve.Run, each configured
// protocol a Protocol (its path, with the default when the block gives
// none; a path from env() is an option that overrides it at load), the rest
// attributes. No protocol configured means all four (the runtime's
// default).
func (l *lowerer) serve() {
	s := l.info.Serve
	if s == nil {
		return
	}
	out := &bytecode.Serve{Span: l.span(s.Span)}
	if s.Run != nil {
		r, ok := l.ref(s.Run)
		if !ok {
			l.internal("serve: run target not lowered")
		}
		out.Run = r
	}
	for _, a := range attrList(s.Attrs) {
		pk, isProto := protocolKinds[a.Name]
		switch {
		case a.Name == "run", a.Name == "budget": // budget: Program.Budgets
		case !isProto:
			out.Attrs = l.appendAttr(out.Attrs, "serve", serveSchema, a)
		case a.Block != nil:
			pr := bytecode.Protocol{Kind: pk.kind, Path: pk.path, Span: l.span(a.Span)}
			sub := serveSchema.spec(a.Name).block
			for _, b := range attrList(a.Block) {
				if b.Name == "path" && b.HasConst && b.Const.Kind() == types.ValString {
					pr.Path = b.Const.Str()
					continue
				}
				pr.Attrs = l.appendAttr(pr.Attrs, "serve."+a.Name, sub, b)
			}
			out.Protocols = append(out.Protocols, pr)
		default: // agui = "/path"
			pr := bytecode.Protocol{Kind: pk.kind, Path: pk.path, Span: l.span(a.Span)}
			if a.HasConst && a.Const.Kind() == types.ValString {
				pr.Path = a.Const.Str()
			} else {
				attrs := l.appendAttr(nil, "serve", serveSchema, a)
				for i := range attrs {
					attrs[i].Name = "path"
				}
				pr.Attrs = attrs
			}
			out.Protocols = append(out.Protocols, pr)
		}
	}
	l.p.Serve = out
}

// test lowers test block i: the input and answers as constants of their
// types, each expectation as a bool chunk over the run graph's state (an
// agent's: {input, output}) or as a visited-before order of two nodes.
func (l *lowerer) test(i int, t *Test) {
	out := bytecode.Test{Name: t.Name, Input: bytecode.None, Span: l.span(t.Span)}
	run, ok := l.ref(t.Run)
	if !ok || (run.Kind != bytecode.RefGraph && run.Kind != bytecode.RefAgent) {
		l.internal("test %q: run target not lowered", t.Name)
		return
	}
	out.Run = run
	gi := l.p.RunGraph(run)
	if gi < 0 || gi >= len(l.p.Graphs) {
		l.internal("test %q: no run graph", t.Name)
		return
	}
	state := int32(l.p.Graphs[gi].State)
	// nodeIndex finds a node of the run graph: a checked graph's node keeps
	// its index; an agent's graph is searched by name.
	nodeIndex := func(n *Node, e *syntax.Expr) (uint32, bool) {
		if n != nil {
			return uint32(n.Index), true
		}
		name, ok := visitedName(e)
		if ok {
			if g, isAgent := t.Run.(*Agent); isAgent {
				for j, nn := range l.lowered[l.agents[g]].nodes {
					if nn == name && j > 1 {
						return uint32(j), true
					}
				}
			}
		}
		l.errorf(InvalidExpect, e.Span(), "%s runs no node %s", t.Run.Name(), name)
		return 0, false
	}
	if t.Input != nil {
		in := l.info.ExprTypes.Of(t.Input)
		if a := t.Attrs.Get("input"); a != nil && a.Type != nil {
			in = a.Type
		}
		if v, ok := l.literal(t.Input, in, "a test input"); ok {
			out.Input = int32(l.constant(v))
		}
	}
	for _, r := range t.Replays {
		ref, ok := l.ref(r.Target)
		if !ok {
			l.internal("test %q: fixture target %s not lowered", t.Name, r.Target.Name())
			continue
		}
		out.Fixtures = append(out.Fixtures, bytecode.Fixture{Target: ref, Path: r.Path})
	}
	for _, a := range t.Answers {
		var want *types.Type
		if a.Node.Interrupt != nil {
			want = a.Node.Interrupt.Returns
		}
		v, ok := l.literal(a.Value, want, "an answer")
		if !ok {
			continue
		}
		out.Answers = append(out.Answers, bytecode.Answer{Node: uint32(a.Node.Index), Value: l.constant(v), Span: l.span(a.Span)})
	}
	sc := &exprScope{state: state}
	for j, e := range t.Expects {
		ex := bytecode.Expect{Kind: bytecode.ExpectCond, Code: bytecode.None, Span: l.span(e.Span)}
		if e.Before == nil {
			ex.Code = int32(l.chunk(fmt.Sprintf("test.%d.expect.%d", i, j), sc, e.Cond, types.BoolType))
		} else {
			first, ok1 := nodeIndex(e.First, e.Cond)
			then, ok2 := nodeIndex(e.Then, e.Before)
			if !ok1 || !ok2 {
				continue
			}
			ex.Kind, ex.First, ex.Then = bytecode.ExpectOrder, first, then
		}
		out.Expects = append(out.Expects, ex)
	}
	for _, a := range attrList(t.Attrs) {
		if a.Name != "run" && a.Name != "input" {
			out.Attrs = l.appendAttr(out.Attrs, "test", testSchema, a)
		}
	}
	l.p.Tests = append(l.p.Tests, out)
}

// visitedName returns the node name of visited(NAME).
func visitedName(e *syntax.Expr) (string, bool) {
	call, ok := primaryOf(e).(*syntax.Call)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	n, ok := bareName(call.Args[0])
	if !ok {
		return "", false
	}
	return n.Ident, true
}

// literal evaluates a literal expression as a value of type want. Tests
// carry their inputs and answers as constants, so anything else (a
// computation, an interpolation) is reported here.
func (l *lowerer) literal(e *syntax.Expr, want *types.Type, what string) (types.Value, bool) {
	// constValue reads nothing from the checker: a nil receiver is fine.
	v, ok := (*checker)(nil).constValue(e, want)
	if !ok {
		l.errorf(NotConstant, e.Span(), "%s must be a literal value", what)
		return types.Value{}, false
	}
	if want == nil {
		return v, true
	}
	cv, err := types.Convert(v, want)
	if err != nil {
		l.errorf(TypeMismatch, e.Span(), "%s does not fit %s: %v", what, want, err)
		return types.Value{}, false
	}
	return cv, true
}

package compiler

import (
	"slices"
	"strconv"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/syntax"
)

// Graph lowering. A graph keeps Info's node order (start 0, end 1, then the
// declared nodes in source order), so node indexes in the bytecode, in
// Info, in the checker's analysis and in both pictures agree. Each node's
// route table holds its declared edges in source order; a synthesized else
// edge becomes its bounded edge's Else, a catch edge the node's Catch.

func (l *lowerer) graph(g *Graph) {
	si, ok := l.states[g.State]
	if !ok {
		l.internal("graph %s: state not lowered", g.Name())
		return
	}
	out := bytecode.Graph{
		Name: g.Name(), Doc: g.Doc, State: si,
		Input: fieldIndex(g.Input), Output: fieldIndex(g.Output),
		Span:  l.span(g.Span()),
		Nodes: make([]bytecode.Node, len(g.Nodes)),
	}
	gl := &graphLowerer{l: l, g: g}
	gl.plain = exprScope{state: int32(si)}
	if f, ok := l.errField[g.State]; ok {
		gl.plain.vars = map[string]varSlot{"error": {field: uint32(f)}}
	}
	gl.loop = gl.plain
	gl.loop.locals, gl.loop.loop = 1, true
	for i, n := range g.Nodes {
		gl.node(&out.Nodes[i], n)
	}
	l.p.Graphs[l.graphs[g]] = out
}

func fieldIndex(f *Field) int32 {
	if f == nil {
		return bytecode.None
	}
	return int32(f.Index)
}

type graphLowerer struct {
	l *lowerer
	g *Graph
	// plain is the scope of the graph's expressions: its state, and a
	// catch target's `error`; loop adds the map variable as local 0.
	plain, loop exprScope
}

func (gl *graphLowerer) scope(loop bool) *exprScope {
	if loop {
		return &gl.loop
	}
	return &gl.plain
}

// chunkName names a chunk of node n: graph.node.part, or graph.node.partN
// when n >= 0.
func (gl *graphLowerer) chunkName(n *Node, part string, i int) string {
	b := append(gl.l.nameBuf[:0], gl.g.Name()...)
	b = append(append(append(append(b, '.'), n.Name...), '.'), part...)
	if i >= 0 {
		b = strconv.AppendInt(b, int64(i), 10)
	}
	gl.l.nameBuf = b
	return gl.l.keep(b)
}

// node lowers n into out, a zero Node (filled in place, field by field:
// a Node returned by value would be copied with a bulk write barrier).
func (gl *graphLowerer) node(out *bytecode.Node, n *Node) {
	l := gl.l
	out.Name, out.Span, out.Into, out.Catch, out.Effect = n.Name, l.span(n.Span), fieldIndex(n.Into), bytecode.None, effectOf(n.Effect)
	pol := n.Policies
	switch n.Kind {
	case NodeStart:
		out.Kind = bytecode.NodeStart
	case NodeEnd:
		out.Kind = bytecode.NodeEnd
	case NodeCall:
		out.Kind, out.Call = gl.call(n, n.Call, false)
	case NodeMap:
		out.Kind = bytecode.NodeMap
		m := n.Map
		if m == nil || m.Body == nil {
			l.internal("graph %s: map node %s has no body", gl.g.Name(), n.Name)
			break
		}
		_, out.Call = gl.call(n, m.Body, true)
		out.Map = bytecode.MapSpec{
			Var:         m.Var,
			List:        l.chunk(gl.chunkName(n, "list", -1), gl.scope(false), m.List, nil),
			Concurrency: u32(m.Concurrency),
		}
		pol = mergePolicies(n.Policies, m.Item)
	case NodeSet:
		out.Kind = bytecode.NodeSet
		if len(n.Set) > 0 {
			out.Set = share(&l.assigns, len(n.Set))
		}
		for _, it := range n.Set {
			name := gl.chunkName(n, "set."+it.Field.Name, -1)
			var code uint32
			if r := gl.mergeLiteral(n, it); r != nil {
				code = l.chunkFunc(name, gl.scope(false), func(x *exprCompiler) { x.partial = r; x.expr(it.Value, nil) })
			} else {
				code = l.chunk(name, gl.scope(false), it.Value, writeType(it.Field, l.typeOf(it.Value)))
			}
			out.Set = append(out.Set, bytecode.Assign{Field: uint32(it.Field.Index), Code: code})
		}
	case NodeInterrupt:
		out.Kind = bytecode.NodeInterrupt
		if n.Interrupt == nil || n.Interrupt.Prompt == nil {
			l.internal("graph %s: interrupt %s has no prompt", gl.g.Name(), n.Name)
			break
		}
		prompt := n.Interrupt.Prompt
		out.Interrupt = bytecode.InterruptSpec{
			Prompt: l.chunkFunc(gl.chunkName(n, "prompt", -1), gl.scope(false), func(x *exprCompiler) { x.str(prompt) }),
			Resume: l.typ(n.Interrupt.Returns),
		}
	case NodeJoin:
		out.Kind = bytecode.NodeJoin
		out.Join = gl.join(n)
	case NodeWait:
		out.Kind = bytecode.NodeWait
		if n.Wait == nil || n.Wait.For == nil {
			l.internal("graph %s: wait %s has no deadline", gl.g.Name(), n.Name)
			break
		}
		want := types.DurationType
		if n.Wait.Until {
			want = types.StringType
		}
		out.Wait = bytecode.WaitSpec{Code: l.chunk(gl.chunkName(n, "wait", -1), gl.scope(false), n.Wait.For, want), Until: n.Wait.Until}
	default:
		l.internal("graph %s: node %s has kind %s", gl.g.Name(), n.Name, n.Kind)
	}
	gl.policies(out, pol)
	gl.routes(out, n)
}

// writeType is the type a set value is converted to before its field's
// reducer sees it: the field's type, or its element type for an append of
// one element; nil (no conversion) for a merge of a partial value.
func writeType(f *Field, have *types.Type) *types.Type {
	t := f.Type
	switch f.Reducer {
	case ReduceAppend:
		if t.Kind() == types.KindList || t.Kind() == types.KindMessages {
			if have != nil && assignable(have, t.Elem()) && !assignable(have, t) {
				return t.Elem()
			}
		}
	case ReduceMerge:
		if have != nil && !assignable(have, t) {
			return nil
		}
	}
	return t
}

// mergeLiteral returns the record literal a set item of n writes into a
// merge field of record type when it names only some of the fields: it is
// built with those fields alone (not the others' defaults), so the merge
// keeps the current values of the rest.
// Only when the field holds a value before the node (a default, or
// definitely assigned): a first write stores the written value, which must
// then be whole.
func (gl *graphLowerer) mergeLiteral(n *Node, it *SetItem) *syntax.RecordLit {
	f := it.Field
	if f.Reducer != ReduceMerge {
		return nil
	}
	a := gl.g.Analysis
	held := f.HasDefault && !f.DefaultValue.IsNull() ||
		a != nil && n.Index < len(a.assigned) && a.assigned[n.Index].has(f.Index)
	if !held {
		return nil
	}
	t := unopt(it.Field.Type)
	r, ok := primaryOf(it.Value).(*syntax.RecordLit)
	if !ok || t == nil || t.Kind() != types.KindRecord || len(r.Entries) >= t.NumFields() {
		return nil
	}
	return r
}

var callKinds = map[string]struct {
	node bytecode.NodeKind
	call bytecode.CallKind
}{
	"llm":   {bytecode.NodeLLM, bytecode.CallLLM},
	"tool":  {bytecode.NodeTool, bytecode.CallTool},
	"agent": {bytecode.NodeAgent, bytecode.CallAgent},
	"graph": {bytecode.NodeGraph, bytecode.CallGraph},
}

// call lowers a call (a node's, or a map node's body): the callee and one
// argument chunk per given argument, converted to the parameter's type.
func (gl *graphLowerer) call(n *Node, c *Call, loop bool) (bytecode.NodeKind, bytecode.Call) {
	l := gl.l
	if c == nil {
		l.internal("graph %s: node %s has no call", gl.g.Name(), n.Name)
		return bytecode.NodeTool, bytecode.Call{}
	}
	k, ok := callKinds[c.Kind]
	if !ok {
		l.internal("graph %s: node %s: unknown call kind %s", gl.g.Name(), n.Name, c.Kind)
		return bytecode.NodeTool, bytecode.Call{}
	}
	out := bytecode.Call{Kind: k.call}
	var found bool
	switch {
	case c.Agent != nil:
		out.Callee, found = l.agents[c.Agent]
	case c.Tool != nil:
		out.Callee, found = l.tools[c.Tool]
	case c.Graph != nil:
		out.Callee, found = l.graphs[c.Graph]
	}
	if !found {
		l.internal("graph %s: node %s: callee not lowered", gl.g.Name(), n.Name)
	}
	sc := gl.scope(loop)
	for _, a := range attrList(c.Args) {
		out.Args = append(out.Args, bytecode.Arg{
			Name: a.Name,
			Code: l.chunk(gl.chunkName(n, "arg."+a.Name, -1), sc, a.Value, a.Type),
		})
	}
	return k.node, out
}

// join lowers a join's barrier: its predecessors are the sources of its
// in-edges, catch routes included (the checker proves liveness counting
// them, and the VM counts a caught failure's arrival like a completion).
func (gl *graphLowerer) join(n *Node) bytecode.JoinSpec {
	out := bytecode.JoinSpec{Mode: bytecode.JoinAny}
	if n.JoinAll {
		out.Mode = bytecode.JoinAll
	}
	for _, p := range n.Preds { // distinct, by index
		out.Preds = append(out.Preds, uint32(p.Index))
	}
	return out
}

// policies lowers retry, timeout, catch and cache. `retry N` makes N more
// attempts after the first, with full-jitter exponential backoff (default
// 500ms..8s).
func (gl *graphLowerer) policies(out *bytecode.Node, p Policies) {
	if r := p.Retry; r != nil && r.Attempts > 0 {
		out.Retry = bytecode.Retry{
			MaxAttempts: u32(r.Attempts) + 1,
			BackoffMin:  defaultBackoffMin, BackoffMax: defaultBackoffMax,
			Jitter: true,
			On:     slices.Clone(r.On),
		}
		if r.MinBackoff > 0 && r.MaxBackoff > 0 {
			out.Retry.BackoffMin, out.Retry.BackoffMax = r.MinBackoff, r.MaxBackoff
		}
	}
	out.Timeout = p.Timeout
	if p.Catch != nil {
		out.Catch = int32(p.Catch.Index)
	}
	if p.Cache != nil {
		out.Cache, out.CacheTTL = true, p.Cache.TTL
	}
}

var edgeKinds = map[EdgeKind]bytecode.EdgeKind{
	EdgeAlways: bytecode.EdgeAlways, EdgeWhen: bytecode.EdgeWhen, EdgeOtherwise: bytecode.EdgeOtherwise,
}

// routes lowers a node's declared out-edges into its route table.
func (gl *graphLowerer) routes(out *bytecode.Node, n *Node) {
	out.Edges = []bytecode.Edge{} // (empty, not nil, as ever)
	if len(n.Out) > 0 {
		out.Edges = share(&gl.l.edges, len(n.Out))
	}
	for _, e := range n.Out {
		kind, ok := edgeKinds[e.Kind]
		if !ok {
			continue // else and catch edges are folded into their edge and node
		}
		be := bytecode.Edge{Kind: kind, Cond: bytecode.None, Target: uint32(e.To.Index), Max: u32(e.Max),
			Else: bytecode.None, Span: gl.l.span(e.Span)}
		if e.Kind == EdgeWhen {
			name := gl.chunkName(n, "edge.", len(out.Edges))
			be.Cond = int32(gl.l.chunk(name, gl.scope(false), e.When, types.BoolType))
		}
		if e.Else != nil && e.Else.To != nil {
			be.Else = int32(e.Else.To.Index)
		}
		out.Edges = append(out.Edges, be)
	}
}

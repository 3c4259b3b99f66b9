package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Graph construction and node checks. buildGraph resolves the structure of
// every graph first (nodes, edges, catch routes, into targets), so sub-graph
// calls see each other's bindings; checkGraph then runs the proofs
// (graphcheck.go), definite assignment (flow.go), the type checks of every
// node and edge, and the concurrency analysis (concurrency.go).

// graphBuild is the checker's working state for one graph.
type graphBuild struct {
	g      *Graph
	syn    *syntax.Graph
	file   string
	byName map[string]*Node
	// flowWrites are the fields each node definitely assigns (writes of a
	// literal null do not count), by node index.
	flowWrites []bitset
	in, out    []bitset // definite assignment, by node index
	reach      []bool   // reachable from start
	// catchOnly marks nodes whose in-edges are all catch edges; they see the
	// error record as `error`.
	catchOnly []bool
	// structured marks llm calls without an `output` type: their answer is
	// decoded as the into target's type.
	structured map[*Call]bool
	tags       [][]tag // concurrency tags by node index (concurrency.go)
	// Edges with an end that did not resolve (reported as such): brokenOut
	// marks sources whose target failed (brokenWhen: on a when edge),
	// brokenIn targets whose source failed. The graph's checks stay quiet
	// about what the missing edge would have given (follow-on errors).
	brokenOut, brokenWhen, brokenIn []bool
	edges                           chunks[Edge] // the declared edges (see newEdge)
	order                           []*Node      // reverse postorder, once computed (rpo)
}

// newEdge returns a zero edge from the graph's edge chunks. (Taking the
// edge by value would make every argument escape: one heap copy per edge.)
func (b *graphBuild) newEdge() *Edge { return b.edges.get() }

// markBroken records an edge of n whose other end did not resolve.
func (b *graphBuild) markBroken(marks *[]bool, n *Node) {
	if *marks == nil {
		*marks = make([]bool, len(b.g.Nodes))
	}
	(*marks)[n.Index] = true
}

// broken reports a mark of n.
func broken(marks []bool, n *Node) bool { return marks != nil && marks[n.Index] }

func (c *checker) buildGraph(g *Graph) {
	syn, ok := g.syn.(*syntax.Graph)
	if !ok {
		return
	}
	// Nodes and edges come from chunks sized by the declarations.
	nNodes, nEdges := 0, 0
	for _, it := range syn.Items {
		switch {
		case it.Node != nil:
			nNodes++
		case it.Edge != nil:
			nEdges++
			if it.Edge.Else != nil {
				nEdges++
			}
		}
	}
	b := &graphBuild{g: g, syn: syn, file: g.file, byName: make(map[string]*Node, nNodes+2), structured: map[*Call]bool{}}
	c.graphs[g] = b
	if syn.Doc != nil {
		g.Doc, _ = syn.Doc.Literal()
	}
	g.State, _ = c.lookup(syn.State, g.file, "state", DeclState).(*State)
	g.Start = &Node{Name: "start", Kind: NodeStart, Span: g.span, Index: 0}
	g.End = &Node{Name: "end", Kind: NodeEnd, Span: g.span, Index: 1}
	g.Nodes = []*Node{g.Start, g.End}
	b.byName["start"], b.byName["end"] = g.Start, g.End
	if g.State != nil {
		g.Input = c.bindingField(g, syn.Input, "input")
		g.Output = c.bindingField(g, syn.Output, "output")
	}

	nodeSlab := chunks[Node]{left: nNodes}
	b.edges.left = nEdges
	g.Nodes = slices.Grow(g.Nodes, nNodes)

	// Nodes.
	for _, it := range syn.Items {
		nd := it.Node
		if nd == nil || nd.Name == nil {
			continue
		}
		name := nd.Name.Name
		if name == "start" || name == "end" {
			c.errorf(diag.ReservedName, nd.Name.Span(), "%s is reserved: every graph has an implicit %s node", name, name)
			continue
		}
		if prev, dup := b.byName[name]; dup {
			related(c.errorf(diag.DuplicateName, nd.Name.Span(), "node %s is declared twice", name), "first declared here", prev.Span)
			continue
		}
		n := nodeSlab.get() // (fields set one by one: no struct copy)
		n.Name, n.Span, n.Index, n.Syntax = name, nd.Name.Span(), len(g.Nodes), nd
		switch body := nd.Body.(type) {
		case *syntax.CallNode:
			n.Kind = NodeCall
		case *syntax.SetNode:
			n.Kind = NodeSet
		case *syntax.MapNode:
			n.Kind = NodeMap
		case *syntax.InterruptNode:
			n.Kind = NodeInterrupt
		case *syntax.JoinNode:
			n.Kind = NodeJoin
			n.JoinAll = body.Mode == "all"
		case *syntax.WaitNode:
			n.Kind = NodeWait
		default:
			*n = Node{} // (a slot left unused)
			continue
		}
		g.Nodes = append(g.Nodes, n)
		b.byName[name] = n
	}

	c.graphBudget(g, syn, b.file)

	// Declared edges, each followed by its else edge.
	for _, it := range syn.Items {
		es := it.Edge
		if es == nil {
			continue
		}
		from := c.edgeEnd(b, es.From, true)
		to := c.edgeEnd(b, es.To, false)
		switch {
		case from != nil && to == nil:
			b.markBroken(&b.brokenOut, from)
			if es.When != nil {
				b.markBroken(&b.brokenWhen, from)
			}
		case from == nil && to != nil:
			b.markBroken(&b.brokenIn, to)
		}
		if from == nil || to == nil {
			continue
		}
		e := b.newEdge()
		e.From, e.To, e.Span, e.Syntax, e.Kind, e.Case = from, to, es.Span(), es, EdgeAlways, -1
		switch {
		case es.When != nil:
			e.Kind, e.When = EdgeWhen, es.When
		case es.Otherwise:
			e.Kind = EdgeOtherwise
		}
		c.addEdge(g, e)
		if es.Max != nil {
			n, err := strconv.Atoi(es.Max.Text)
			if err != nil || n < 1 {
				c.errorf(InvalidBound, es.Max.Span(), "max %s: a loop bound must be at least 1", es.Max.Text)
				n = 1
			}
			e.Max = n
			if es.Else != nil {
				at := es.Else.Span()
				target := c.edgeEnd(b, es.Else, false)
				if target == nil {
					b.markBroken(&b.brokenOut, from)
					continue
				}
				el := b.newEdge()
				el.From, el.To, el.Kind, el.Span, el.Syntax, el.Parent, el.Case = from, target, EdgeElse, at, es, e, -1
				e.Else = el
				c.addEdge(g, el)
			}
		}
	}

	// Clauses: catch routes, into targets, policies.
	for _, n := range g.Nodes[2:] {
		c.nodeClauses(b, n)
	}
	// Each node's predecessors, in a share of one block (capped: an
	// append past a share gets an array of its own).
	var preds []*Node
	for _, n := range g.Nodes {
		if len(n.In) == 0 {
			continue
		}
		n.Preds = share(&preds, len(n.In))
		for _, e := range n.In {
			n.Preds = append(n.Preds, e.From)
		}
		slices.SortFunc(n.Preds, func(a, b *Node) int { return cmp.Compare(a.Index, b.Index) })
		n.Preds = slices.Compact(n.Preds)
	}
	b.catchOnly = make([]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		b.catchOnly[n.Index] = len(n.In) > 0
		for _, e := range n.In {
			if e.Kind != EdgeCatch {
				b.catchOnly[n.Index] = false
			}
		}
	}
}

func (c *checker) addEdge(g *Graph, e *Edge) {
	e.Index = len(g.Edges)
	g.Edges = append(g.Edges, e)
	e.From.Out = c.edgeList(e.From.Out, e)
	e.To.In = c.edgeList(e.To.In, e)
}

// edgeList appends e to a node's in or out edges. A node's first list is
// a share of a block (most nodes have one or two edges each way: one
// allocation per block, not one per list); its cap keeps an append past it
// from reaching a neighbour's share.
func (c *checker) edgeList(l []*Edge, e *Edge) []*Edge {
	if cap(l) == 0 {
		l = share(&c.edgeBlock, 2)
	}
	return append(l, e)
}

// bindingField resolves a graph's input or output binding.
func (c *checker) bindingField(g *Graph, id *syntax.Ident, what string) *Field {
	if id == nil {
		return nil
	}
	f := g.State.Field(id.Name)
	if f == nil {
		c.unknownField(g.State, id)
		return nil
	}
	c.info.Refs.set(id, Ref{Kind: RefField, Field: f})
	return f
}

func (c *checker) unknownField(s *State, id *syntax.Ident) {
	var names []string
	for _, f := range s.Fields {
		names = append(names, f.Name)
	}
	c.errorf(diag.UnknownName, id.Span(), "state %s has no field %s", s.name, id.Name).Detail = suggest(id.Name, names)
}

// edgeEnd resolves an edge's source (from) or target.
func (c *checker) edgeEnd(b *graphBuild, id *syntax.Ident, from bool) *Node {
	if id == nil {
		return nil
	}
	n := b.byName[id.Name]
	if n == nil {
		var names []string
		for k := range b.byName {
			names = append(names, k)
		}
		sort.Strings(names)
		c.errorf(diag.UnknownName, id.Span(), "graph %s has no node %s", b.g.name, id.Name).Detail = suggest(id.Name, names)
		return nil
	}
	c.info.Refs.set(id, Ref{Kind: RefNode, Node: n})
	switch {
	case from && n.Kind == NodeEnd:
		c.errorf(StartEndMisuse, id.Span(), "end has no out-edges: a branch that reaches end is over")
		return nil
	case !from && n.Kind == NodeStart:
		c.errorf(StartEndMisuse, id.Span(), "no edge may lead into start")
		return nil
	}
	return n
}

// clause kinds, for the allowance table.
const (
	clRetry = 1 << iota
	clTimeout
	clCatch
	clCache
	clInto
)

var clauseNames = map[int]string{clRetry: "retry", clTimeout: "timeout", clCatch: "catch", clCache: "cache", clInto: "into"}

func clauseKind(cl *syntax.Clause) int {
	switch {
	case cl.Retry != nil:
		return clRetry
	case cl.Timeout != nil:
		return clTimeout
	case cl.Catch != nil:
		return clCatch
	case cl.Cache != nil:
		return clCache
	case cl.Into != nil:
		return clInto
	}
	return 0
}

// allowedClauses by node kind; map bodies allow clItem.
var allowedClauses = map[NodeKind]int{
	NodeCall:      clRetry | clTimeout | clCatch | clCache | clInto,
	NodeSet:       clCatch,
	NodeMap:       clInto,
	NodeInterrupt: clInto | clTimeout,
	NodeJoin:      0,
	NodeWait:      clCatch,
}

const itemClauses = clRetry | clTimeout | clCatch | clCache

// nodeClauses checks a node's clauses (and a map body's), creating catch
// edges and resolving into targets.
func (c *checker) nodeClauses(b *graphBuild, n *Node) {
	nd := n.Syntax
	n.Policies = c.policies(b, n, nd.Clauses, allowedClauses[n.Kind], n.Kind.String()+" node")
	if m, ok := nd.Body.(*syntax.MapNode); ok {
		n.Map = &MapSpec{}
		n.Map.Item = c.policies(b, n, m.Clauses, itemClauses, "map body")
	}
	for _, cl := range nd.Clauses {
		if cl.Into == nil || allowedClauses[n.Kind]&clInto == 0 {
			continue
		}
		if b.g.State == nil {
			continue
		}
		f := b.g.State.Field(cl.Into.Name)
		if f == nil {
			c.unknownField(b.g.State, cl.Into)
			continue
		}
		c.info.Refs.set(cl.Into, Ref{Kind: RefField, Field: f})
		n.Into, n.IntoSpan = f, cl.Into.Span()
	}
}

// policies checks one clause list against the allowed kinds.
func (c *checker) policies(b *graphBuild, n *Node, cls []*syntax.Clause, allowed int, what string) Policies {
	var p Policies
	seen := map[int]diag.Span{}
	for _, cl := range cls {
		k := clauseKind(cl)
		if k == 0 {
			continue
		}
		if allowed&k == 0 {
			d := c.errorf(ClauseNotAllowed, cl.Span(), "%s is not allowed on %s", clauseNames[k], withArticle(what))
			switch {
			case what == "map node" && k&itemClauses != 0:
				d.Detail = "per-item policies go inside the map body, after the call"
			case what == "map body" && k == clInto:
				d.Detail = "into goes after the map's closing brace"
			}
			if k == clCatch && cl.Catch != nil {
				// The route is refused, but its target is still meant to
				// be reached through it: without the edge it would be
				// unreachable and its reads of error unbound (follow-on
				// errors). P511 keeps the program from being lowered.
				if t := c.edgeEnd(b, cl.Catch, false); t != nil {
					c.addEdge(b.g, &Edge{From: n, To: t, Kind: EdgeCatch, Span: cl.Span(), Case: -1})
				}
			}
			continue
		}
		if prev, dup := seen[k]; dup {
			related(c.errorf(ClauseNotAllowed, cl.Span(), "%s is repeated", clauseNames[k]), "first here", prev)
			continue
		}
		seen[k] = cl.Span()
		switch k {
		case clRetry:
			p.Retry = c.retry(cl.Retry)
		case clTimeout:
			p.Timeout = c.positiveDuration(cl.Timeout, "timeout")
			c.timeoutElse(b, n, cl, what, &p)
		case clCache:
			p.Cache = &CachePolicy{}
			if cl.Cache.TTL != nil {
				p.Cache.TTL = c.positiveDuration(cl.Cache.TTL, "cache ttl")
			}
		case clCatch:
			t := c.edgeEnd(b, cl.Catch, false)
			if t == nil {
				continue
			}
			p.Catch = t
			c.addEdge(b.g, &Edge{From: n, To: t, Kind: EdgeCatch, Span: cl.Span(), Case: -1})
		}
	}
	return p
}

// timeoutElse checks a timeout's else target: an interrupt's timeout
// routes there when nobody answered in time (a catch route of kind
// timeout, spec/language.md §12.4); no other timeout has one.
func (c *checker) timeoutElse(b *graphBuild, n *Node, cl *syntax.Clause, what string, p *Policies) {
	if what != "interrupt node" {
		if cl.Else != nil {
			c.errorf(ClauseNotAllowed, cl.Else.Span(), "else is only allowed on an interrupt's timeout").Detail =
				"a call's timeout fails the attempt; route failures with catch -> node"
		}
		return
	}
	if cl.Else == nil {
		c.errorf(ClauseNotAllowed, cl.Span(), "an interrupt's timeout needs else -> node: where the run goes when nobody answers in time")
		return
	}
	t := c.edgeEnd(b, cl.Else, false)
	if t == nil {
		return
	}
	p.Catch = t
	c.addEdge(b.g, &Edge{From: n, To: t, Kind: EdgeCatch, Span: cl.Span(), Case: -1})
}

func (c *checker) positiveDuration(d *syntax.DurationLit, what string) time.Duration {
	v, err := parseDuration(d.Text)
	if err != nil {
		c.errorf(diag.InvalidNumber, d.Span(), "%v", err)
		return 0
	}
	if v <= 0 {
		c.errorf(InvalidValue, d.Span(), "%s must be positive", what)
	}
	return v
}

func (c *checker) retry(r *syntax.Retry) *RetryPolicy {
	p := &RetryPolicy{}
	if r.Attempts != nil {
		n, err := strconv.Atoi(r.Attempts.Text)
		if err != nil || n < 1 {
			c.errorf(InvalidValue, r.Attempts.Span(), "retry %s: attempts must be at least 1", r.Attempts.Text)
		}
		p.Attempts = n
	}
	if r.Min != nil && r.Max != nil {
		p.MinBackoff = c.positiveDuration(r.Min, "backoff")
		p.MaxBackoff = c.positiveDuration(r.Max, "backoff")
		if p.MinBackoff > p.MaxBackoff {
			c.errorf(InvalidValue, r.Min.Span().Join(r.Max.Span()), "backoff %s..%s: the minimum is above the maximum", r.Min.Text, r.Max.Text)
		}
	}
	for _, k := range r.On {
		if !contains(c.uni.ErrorKinds, k.Name) {
			c.errorf(UnknownErrorKind, k.Span(), "unknown error kind %s", k.Name).Detail =
				"error kinds: " + quoteList(c.uni.ErrorKinds)
			continue
		}
		p.On = append(p.On, k.Name)
	}
	return p
}

// checkNode type-checks one node's body with the definitely assigned fields
// on entry.
func (c *checker) checkNode(b *graphBuild, n *Node) {
	g := b.g
	sc := c.nodeScope(b, n, b.in[n.Index])
	switch body := n.Syntax.Body.(type) {
	case *syntax.CallNode:
		n.Call = c.callBody(b, body, sc)
		if n.Call != nil {
			n.Output = n.Call.Output
		}
	case *syntax.SetNode:
		attrs := body.Body.Attrs
		var seen map[string]diag.Span // only for long lists; short ones are scanned
		if len(attrs) > 8 {
			seen = make(map[string]diag.Span, len(attrs))
		}
		if len(attrs) > 0 && n.Set == nil {
			n.Set = share(&c.setLists, len(attrs))
		}
		for i, a := range attrs {
			if a.Key == nil {
				continue
			}
			if prev, dup := firstKey(attrs[:i], a.Key.Name, seen); dup {
				related(c.errorf(diag.DuplicateAttr, a.Key.Span(), "%s is set twice", a.Key.Name), "first set here", prev)
				continue
			}
			if seen != nil {
				seen[a.Key.Name] = a.Key.Span()
			}
			if a.Value == nil {
				c.errorf(TypeMismatch, a.Key.Span(), "set takes values: %s = ...", a.Key.Name)
				continue
			}
			if g.State == nil {
				continue
			}
			f := g.State.Field(a.Key.Name)
			if f == nil {
				c.unknownField(g.State, a.Key)
				c.expr(a.Value, sc, nil)
				continue
			}
			c.info.Refs.set(a.Key, Ref{Kind: RefField, Field: f})
			n.Set = append(n.Set, c.setItem(SetItem{Field: f, Value: a.Value, Span: a.Span()}))
			t := c.expr(a.Value, sc, writeWant(f))
			c.noSecret(t, a.Value)
			if f.MaxLen > 0 { // (the message is built only when it may be needed)
				c.checkLiteralSize(f, a.Value, "the value set to "+f.Name)
			}
			if t != nil && f.Type != nil && !c.writeFits(t, f) {
				c.errorf(TypeMismatch, a.Value.Span(), "cannot %s %s %s %s (%s)", wordsOf(f).verb, t, wordsOf(f).prep, f.Name, f.Type)
			}
		}
		if len(n.Set) == 0 {
			n.Set = nil // nothing set: nil, as without the share
		}
	case *syntax.MapNode:
		m := n.Map
		if m == nil {
			m = &MapSpec{}
			n.Map = m
		}
		m.List = body.List
		if body.Var != nil {
			m.Var, m.VarSpan = body.Var.Name, body.Var.Span()
			if g.State != nil {
				if f := g.State.Field(m.Var); f != nil {
					related(c.errorf(diag.DuplicateName, body.Var.Span(), "map variable %s shadows state field %s", m.Var, m.Var), "the field", f.Span)
				}
			}
		}
		lt := c.expr(body.List, sc, nil)
		if lt != nil {
			switch lt.Kind() {
			case types.KindList, types.KindMessages:
				m.VarType = lt.Elem()
			default:
				c.errorf(InvalidMapBody, body.List.Span(), "map iterates over a list, not %s", lt)
			}
		}
		if body.Concurrency != nil {
			k, err := strconv.Atoi(body.Concurrency.Text)
			if err != nil || k < 1 {
				c.errorf(InvalidValue, body.Concurrency.Span(), "concurrency must be at least 1")
			}
			m.Concurrency = k
		}
		call, ok := body.Body.(*syntax.CallNode)
		if !ok {
			if body.Body != nil {
				c.errorf(InvalidMapBody, body.Body.Span(), "a map body is a call (llm, tool, agent or graph)")
			}
			return
		}
		isc := *sc
		isc.loopName, isc.loopType = m.Var, m.VarType
		m.Body = c.callBody(b, call, &isc)
		if m.Body != nil {
			m.ItemOutput = m.Body.Output
		}
		n.Output = m.ItemOutput
	case *syntax.InterruptNode:
		n.Interrupt = &Interrupt{Prompt: body.Prompt}
		if body.Prompt != nil {
			c.rec(body.Prompt, c.stringExpr(body.Prompt, sc, nil))
		}
		rt := c.typeOf(body.Returns, b.file)
		if containsSecret(rt) {
			c.errorf(SecretEscapes, body.Returns.Span(), "an interrupt cannot return a secret")
			rt = nil
		}
		n.Interrupt.Returns = rt
		n.Output = rt
	case *syntax.WaitNode:
		n.Wait = &Wait{For: body.For, Until: body.Until}
		want, what := types.DurationType, "wait"
		if body.Until {
			want, what = types.StringType, "wait until (an RFC 3339 time)"
		}
		c.expect(body.For, sc, want, what)
	}
	c.checkInto(b, n)
	c.checkFallbackNode(n)
}

// nodeScope is the scope of a node's expressions.
func (c *checker) nodeScope(b *graphBuild, n *Node, assigned bitset) *scope {
	sc := &scope{where: InGraph, file: b.file, state: b.g.State, assigned: assigned, quiet: b.g.State == nil, witnessGraph: b, witnessNode: n}
	if b.catchOnly != nil && n.Index < len(b.catchOnly) && b.catchOnly[n.Index] {
		sc.vars = map[string]*types.Type{"error": types.ErrorType}
	}
	return sc
}

// callBody checks an llm, tool, agent or graph call.
func (c *checker) callBody(b *graphBuild, body *syntax.CallNode, sc *scope) *Call {
	call := &Call{Kind: body.Kind}
	var attrs []*syntax.Attr
	var at diag.Span
	if body.Callee != nil {
		at = body.Callee.Span()
	}
	if body.Args != nil {
		attrs = body.Args.Attrs
	}
	switch body.Kind {
	case "llm":
		d := c.lookup(body.Callee, b.file, "llm agent", DeclAgent)
		if a, ok := d.(*Agent); ok {
			if a.Form != AgentLLM && a.Form != 0 {
				c.errorf(diag.WrongKind, at, "%s is %s agent; call it with `agent %s`", a.name, withArticle(a.Form.String()), a.name)
			} else {
				call.Agent = a
				call.Output = a.Output
				b.structured[call] = a.Attrs.Get("output") == nil
			}
		}
		call.Args = c.checkBlock(llmNodeSchema, attrs, at, sc)
	case "agent":
		if a, ok := c.lookup(body.Callee, b.file, "agent", DeclAgent).(*Agent); ok {
			if a.Form == AgentLLM {
				c.errorf(diag.WrongKind, at, "%s is an llm agent; call it with `llm %s`", a.name, a.name)
			} else {
				call.Agent = a
				call.Output = a.Output
				b.structured[call] = a.Output != nil && a.Output.Kind() == types.KindString
			}
		}
		call.Args = c.checkBlock(agentNodeSchema, attrs, at, sc)
	case "tool":
		t, _ := c.lookup(body.Callee, b.file, "tool", DeclTool).(*Tool)
		call.Tool = t
		if t == nil {
			c.looseArgs(attrs, sc)
			return call
		}
		call.Output = t.Output
		call.Args = c.recordArgs(t.Input, attrs, at, sc, "tool "+t.name, true)
		c.checkMCPArgs(t, call.Args, at)
	case "graph":
		sub, _ := c.lookup(body.Callee, b.file, "graph", DeclGraph).(*Graph)
		call.Graph = sub
		if sub == nil || sub.State == nil || sub.State.Type == nil {
			c.looseArgs(attrs, sc)
			return call
		}
		if sub.Output != nil {
			call.Output = sub.Output.Type
		}
		call.Args = c.recordArgs(sub.State.Type, attrs, at, sc, "graph "+sub.name, false)
	}
	return call
}

// looseArgs type-checks arguments of an unresolved call (to report errors
// inside them).
func (c *checker) looseArgs(attrs []*syntax.Attr, sc *scope) {
	for _, a := range attrs {
		if a.Value != nil {
			c.expr(a.Value, sc, nil)
		}
	}
}

// recordArgs checks call arguments against a record (a tool's input, a
// sub-graph's state).
func (c *checker) recordArgs(rec *types.Type, attrs []*syntax.Attr, at diag.Span, sc *scope, what string, required bool) *Attrs {
	out := &Attrs{}
	var names []string
	for i := 0; i < rec.NumFields(); i++ {
		names = append(names, rec.Field(i).Name)
	}
	seen := c.keyedOnce(attrs, func(a *syntax.Attr, name string) {
		if a.Value == nil {
			c.errorf(TypeMismatch, a.Key.Span(), "%s takes a value: %s = ...", name, name)
			return
		}
		i := rec.FieldIndex(name)
		if i < 0 {
			c.errorf(UnknownToolArg, a.Key.Span(), "%s has no input %s", what, name).Detail = suggestOr(name, names)
			c.expr(a.Value, sc, nil)
			return
		}
		ft := rec.Field(i).Type
		c.expect(a.Value, sc, ft, name)
		out.List = append(out.List, &Attr{Name: name, Span: a.Span(), Syn: a, Value: a.Value, Type: ft})
	})
	if required {
		for i := 0; i < rec.NumFields(); i++ {
			f := rec.Field(i)
			if _, ok := seen[f.Name]; !ok && !f.HasDefault && !f.Type.Nullable() {
				c.errorf(MissingToolArg, at, "%s needs input %s (%s)", what, f.Name, f.Type)
			}
		}
	}
	return out
}

// writeWant is the expected type of a value written to f (guides literals).
func writeWant(f *Field) *types.Type {
	if f.Type == nil {
		return nil
	}
	if f.Reducer == ReduceAppend {
		return nil
	}
	return f.Type
}

// writeFits reports whether a value of type t may be written to f through
// f's reducer.
func (c *checker) writeFits(t *types.Type, f *Field) bool {
	ft := f.Type
	if t == nil || ft == nil {
		return true
	}
	switch f.Reducer {
	case ReduceAppend:
		return assignable(t, ft.Elem()) || assignable(t, ft)
	case ReduceMerge:
		return mergeable(t, ft)
	}
	return assignable(t, ft)
}

func mergeable(src, dst *types.Type) bool {
	if assignable(src, dst) {
		return true
	}
	switch dst.Kind() {
	case types.KindMap:
		if src.Kind() == types.KindRecord {
			for i := 0; i < src.NumFields(); i++ {
				if !assignable(src.Field(i).Type, dst.Elem()) {
					return false
				}
			}
			return true
		}
	case types.KindRecord:
		if src.Kind() == types.KindRecord {
			for i := 0; i < src.NumFields(); i++ {
				j := dst.FieldIndex(src.Field(i).Name)
				if j < 0 || !assignable(src.Field(i).Type, dst.Field(j).Type) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// reducerWords are how diagnostics speak of a write through a reducer:
// "cannot append x to f", "… which cannot be appended to f".
type reducerWords struct{ verb, past, prep string }

var reducerSpeech = map[Reducer]reducerWords{
	ReduceAppend: {"append", "appended", "to"},
	ReduceMerge:  {"merge", "merged", "into"},
	ReduceSum:    {"add", "added", "to"},
}

// wordsOf is how diagnostics speak of a write to f.
func wordsOf(f *Field) reducerWords {
	if w, ok := reducerSpeech[f.Reducer]; ok {
		return w
	}
	return reducerWords{"store", "stored", "in"}
}

// checkInto checks the node's output against its into target.
func (c *checker) checkInto(b *graphBuild, n *Node) {
	f := n.Into
	if f == nil || f.Type == nil {
		return
	}
	var call *Call
	switch {
	case n.Call != nil:
		call = n.Call
	case n.Map != nil:
		call = n.Map.Body
	}
	if call != nil && call.Kind == "graph" && call.Graph != nil && call.Graph.Output == nil {
		c.errorf(BadInto, n.IntoSpan, "graph %s has no output binding, so %s produces no value", call.Graph.name, n.Name)
		return
	}
	if call != nil && b.structured[call] {
		// The answer is decoded as the target's type (structured output).
		t := unopt(f.Type) // an answer is never null
		if f.Reducer == ReduceAppend || (n.Map != nil && f.Reducer == ReduceReplace) {
			t = t.Elem()
		}
		if t == nil {
			c.errorf(BadInto, n.IntoSpan, "map results need a list target, not %s (%s)", f.Name, f.Type)
			return
		}
		n.Output = t
		if n.Map != nil {
			n.Map.ItemOutput = t
		}
		return
	}
	out := n.Output
	if out == nil {
		return
	}
	if n.Map != nil && f.Reducer == ReduceReplace {
		if !assignable(types.ListOf(out), f.Type) {
			c.errorf(BadInto, n.IntoSpan, "map %s collects list<%s>, which cannot be stored in %s (%s)", n.Name, out, f.Name, f.Type)
		}
		return
	}
	if !c.writeFits(out, f) {
		what := "outputs"
		if n.Map != nil {
			what = "produces items of type"
		}
		d := c.errorf(BadInto, n.IntoSpan, "%s %s %s, which cannot be %s %s %s (%s)", n.Name, what, out, wordsOf(f).past, wordsOf(f).prep, f.Name, f.Type)
		if f.Reducer == ReduceAppend {
			d.Detail = fmt.Sprintf("append takes %s or %s", withArticle(f.Type.Elem().String()), withArticle(f.Type.String()))
		}
	}
}

// graphRecursion reports graphs that call themselves through graph nodes.
func (c *checker) graphRecursion() {
	state := map[*Graph]uint8{}
	var visit func(g *Graph)
	visit = func(g *Graph) {
		state[g] = 1
		for _, n := range g.Nodes {
			id, sub := graphCallee(n, c)
			if sub == nil {
				continue
			}
			switch state[sub] {
			case 0:
				visit(sub)
			case 1:
				c.errorf(RecursiveCall, id.Span(), "graph %s calls itself through %s", sub.name, g.name)
			}
		}
		state[g] = 2
	}
	for _, g := range c.info.Graphs {
		if state[g] == 0 {
			visit(g)
		}
	}
}

// graphCallee returns the graph a node calls (directly or in a map body),
// resolved by name without reporting anything.
func graphCallee(n *Node, c *checker) (*syntax.Ident, *Graph) {
	if n.Syntax == nil {
		return nil, nil
	}
	body := n.Syntax.Body
	if m, ok := body.(*syntax.MapNode); ok {
		body = m.Body
	}
	cn, ok := body.(*syntax.CallNode)
	if !ok || cn.Kind != "graph" || cn.Callee == nil {
		return nil, nil
	}
	g, _ := c.info.byName[cn.Callee.Name].(*Graph)
	return cn.Callee, g
}

// withArticle is word after its indefinite article (diag.WithArticle).
func withArticle(word string) string { return diag.WithArticle(word) }

// firstKey finds an attribute named name among before (through seen when
// it is not nil), for duplicate detection.
func firstKey(before []*syntax.Attr, name string, seen map[string]diag.Span) (diag.Span, bool) {
	if seen != nil {
		sp, ok := seen[name]
		return sp, ok
	}
	for _, b := range before {
		if b.Key != nil && b.Key.Name == name {
			return b.Key.Span(), true
		}
	}
	return diag.Span{}, false
}

// graphBudget checks the graph's budget item (at most one).
func (c *checker) graphBudget(g *Graph, syn *syntax.Graph, file string) {
	var first diag.Span
	for _, it := range syn.Items {
		if it.Budget == nil {
			continue
		}
		at := it.Span()
		at.End = at.Start
		at.End.Offset += len("budget")
		at.End.Col += len("budget")
		if first.File != "" {
			related(c.errorf(diag.DuplicateAttr, at, "budget is set twice"), "first set here", first)
			continue
		}
		first = at
		g.Budget = limitsOf(c.checkBlock(budgetSchema, it.Budget.Attrs, at, &scope{where: InConst, file: file}), at)
	}
}

// setItem returns a pointer to a copy of it in a block of set items (one
// allocation per block, not per item).
func (c *checker) setItem(it SetItem) *SetItem {
	if len(c.setItems) == 0 {
		c.setItems = make([]SetItem, 256)
	}
	p := &c.setItems[0]
	c.setItems = c.setItems[1:]
	*p = it
	return p
}

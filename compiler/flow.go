package compiler

import (
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// Definite assignment: a forward must-analysis over the graph. A field is
// assigned on entry to start when it has a non-null default or is the
// graph's input binding. A node assigns its into target and the fields its
// set writes (except writes of a literal null). On entry to a node, a field
// is assigned when every in-edge carries it: a normal edge carries the
// source's state after it ran, a catch edge the source's state before it ran
// (the failed node wrote nothing). A `join all` runs after all of its
// predecessors, so it sees the union of what they carry; a `join any`, like
// any other node, the intersection. A map node does not definitely assign
// its target: with an empty list nothing is written. Unreachable predecessors
// are ignored.

// bitset is a set of field indexes.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool {
	if i < 0 || i/64 >= len(b) {
		return false
	}
	return b[i/64]&(1<<(uint(i)%64)) != 0
}

func (b bitset) set(i int) {
	if i >= 0 && i/64 < len(b) {
		b[i/64] |= 1 << (uint(i) % 64)
	}
}

func (b bitset) fill(n int) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 && len(b) > 0 {
		b[len(b)-1] = (1 << uint(r)) - 1
	}
}

func (b bitset) equal(o bitset) bool {
	for i := range b {
		if b[i] != o[i] {
			return false
		}
	}
	return true
}

// flow computes b.in and b.out for every node.
func (c *checker) flow(b *graphBuild) {
	g := b.g
	nf := 0
	if g.State != nil {
		nf = len(g.State.Fields)
	}
	nn := len(g.Nodes)
	// Every node's three sets (writes, in, out) come from one allocation.
	words := (nf + 63) / 64
	slab := make([]uint64, 3*nn*words)
	next := func() bitset {
		bs := bitset(slab[:words:words])
		slab = slab[words:]
		return bs
	}
	b.flowWrites = make([]bitset, nn)
	for _, n := range g.Nodes {
		w := next()
		if n.Into != nil && n.Kind != NodeMap {
			w.set(n.Into.Index)
		}
		for _, s := range n.Set {
			if !isNullLiteral(s.Value) {
				w.set(s.Field.Index)
			}
		}
		// A set node's writes: flow runs before checkNode fills n.Set, so
		// they come from the syntax (an unknown field is reported there).
		if sn, ok := setSyntax(n); ok && g.State != nil && sn.Body != nil {
			for _, a := range sn.Body.Attrs {
				if a.Key == nil || a.Value == nil || isNullLiteral(a.Value) {
					continue
				}
				if f := g.State.Field(a.Key.Name); f != nil {
					w.set(f.Index)
				}
			}
		}
		b.flowWrites[n.Index] = w
	}
	init := newBitset(nf)
	if g.State != nil {
		for _, f := range g.State.Fields {
			if f.HasDefault && !f.DefaultValue.IsNull() {
				init.set(f.Index)
			}
		}
	}
	if g.Input != nil {
		init.set(g.Input.Index)
	}
	b.in = make([]bitset, nn)
	b.out = make([]bitset, nn)
	for i := range g.Nodes {
		b.in[i] = next()
		b.out[i] = next()
		if i != g.Start.Index {
			b.in[i].fill(nf)
			b.out[i].fill(nf)
		}
	}
	copy(b.in[g.Start.Index], init)
	copy(b.out[g.Start.Index], init)
	order := b.rpo()
	tmp := newBitset(nf)
	for changed := true; changed; {
		changed = false
		for _, n := range order {
			if n == g.Start || !b.reach[n.Index] {
				continue
			}
			union := n.Kind == NodeJoin && n.JoinAll
			first := true
			for _, e := range n.In {
				if !b.reach[e.From.Index] {
					continue
				}
				src := b.out[e.From.Index]
				if e.Kind == EdgeCatch {
					src = b.in[e.From.Index]
				}
				switch {
				case first:
					copy(tmp, src)
					first = false
				case union:
					for i := range tmp {
						tmp[i] |= src[i]
					}
				default:
					for i := range tmp {
						tmp[i] &= src[i]
					}
				}
			}
			if first {
				continue
			}
			if !tmp.equal(b.in[n.Index]) {
				copy(b.in[n.Index], tmp)
				changed = true
			}
			w := b.flowWrites[n.Index]
			for i := range tmp {
				tmp[i] |= w[i]
			}
			if !tmp.equal(b.out[n.Index]) {
				copy(b.out[n.Index], tmp)
				changed = true
			}
		}
	}
}

// rpo returns the nodes of b's graph in reverse postorder of a depth-first
// walk from start (unreachable nodes last, by index). The graph's edges do
// not change once built, so the order is computed once and shared by the
// analyses (flow, concurrency, dominators); callers must not modify it.
func (b *graphBuild) rpo() []*Node {
	if b.order == nil {
		b.order = rpo(b.g)
	}
	return b.order
}

// rpo computes the reverse postorder of g (see graphBuild.rpo).
func rpo(g *Graph) []*Node {
	seen := make([]bool, len(g.Nodes))
	// The walk fills out from the back: a node is placed when it is done,
	// so the postorder read backwards is written in place. Unreachable
	// nodes follow the reachable ones, by index.
	reached := 0
	type frame struct {
		n *Node
		i int
	}
	stack := make([]frame, 1, min(len(g.Nodes), 1024))
	stack[0] = frame{g.Start, 0}
	seen[g.Start.Index] = true
	var post []*Node
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.i < len(top.n.Out) {
			m := top.n.Out[top.i].To
			top.i++
			if !seen[m.Index] {
				seen[m.Index] = true
				stack = append(stack, frame{m, 0})
			}
			continue
		}
		if post == nil {
			post = make([]*Node, len(g.Nodes))
		}
		reached++
		post[len(g.Nodes)-reached] = top.n
		stack = stack[:len(stack)-1]
	}
	out := post[len(g.Nodes)-reached:]
	out = out[:len(out):len(out)]
	if reached == len(g.Nodes) {
		return out
	}
	// Move the reachable part to the front, then the rest by index.
	all := post[:0]
	all = append(all, out...) // copy forward: source starts at or after destination
	for _, n := range g.Nodes {
		if !seen[n.Index] {
			all = append(all, n)
		}
	}
	return all
}

func isNullLiteral(e *syntax.Expr) bool {
	l, ok := primaryOf(e).(*syntax.Literal)
	return ok && l.Null
}

// witness describes one path from start to n along which f is never
// written, for an unassigned-read diagnostic.
func (c *checker) witness(b *graphBuild, n *Node, f *Field) string {
	g := b.g
	prev := make([]*Node, len(g.Nodes))
	seen := make([]bool, len(g.Nodes))
	seen[g.Start.Index] = true
	queue := []*Node{g.Start}
	found := n == g.Start
	for len(queue) > 0 && !found {
		u := queue[0]
		queue = queue[1:]
		for _, e := range u.Out {
			if e.Kind != EdgeCatch && u != g.Start && b.flowWrites[u.Index].has(f.Index) {
				continue
			}
			v := e.To
			if seen[v.Index] {
				continue
			}
			seen[v.Index] = true
			prev[v.Index] = u
			if v == n {
				found = true
				break
			}
			queue = append(queue, v)
		}
	}
	if !found {
		return ""
	}
	var path []string
	mapNote := ""
	for v := n; v != nil; v = prev[v.Index] {
		path = append(path, v.Name)
		if v != n && v.Kind == NodeMap && v.Into == f {
			mapNote = "; a map writes nothing when its list is empty (give " + f.Name + " a default such as [])"
		}
		if v == g.Start {
			break
		}
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return "a path that does not write " + f.Name + ": " + strings.Join(path, " -> ") + mapNote
}

// setSyntax returns n's body when n is a set node.
func setSyntax(n *Node) (*syntax.SetNode, bool) {
	if n.Syntax == nil {
		return nil, false
	}
	sn, ok := n.Syntax.Body.(*syntax.SetNode)
	return sn, ok && sn != nil
}

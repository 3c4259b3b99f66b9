package testrun

import (
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
)

// Coverage accumulates the edges tests took, per graph, in the order the
// graphs were first run. The zero value is ready to use.
type Coverage struct {
	graphs map[int]map[int]bool
	order  []int
}

// GraphCoverage is the coverage of one graph.
type GraphCoverage struct {
	Graph        string
	Taken, Total int
}

// Add counts the edges of r.
func (c *Coverage) Add(r Result) {
	if r.Graph < 0 {
		return
	}
	if c.graphs == nil {
		c.graphs = map[int]map[int]bool{}
	}
	taken := c.graphs[r.Graph]
	if taken == nil {
		taken = map[int]bool{}
		c.graphs[r.Graph] = taken
		c.order = append(c.order, r.Graph)
	}
	for e := range r.Edges {
		taken[e] = true
	}
}

// Graphs returns the coverage of each graph of p that a test ran.
func (c *Coverage) Graphs(p *bytecode.Program) []GraphCoverage {
	var out []GraphCoverage
	for _, gi := range c.order {
		out = append(out, GraphCoverage{Graph: p.Graphs[gi].Name, Taken: len(c.graphs[gi]), Total: len(EdgeList(&p.Graphs[gi]))})
	}
	return out
}

// Edge is one way out of a node: an edge's target, or its else target.
type Edge struct{ From, To int }

// EdgeList numbers the edges of g: each edge, then its else, in node order.
func EdgeList(g *bytecode.Graph) []Edge {
	var out []Edge
	for i := range g.Nodes {
		for _, e := range g.Nodes[i].Edges {
			out = append(out, Edge{i, int(e.Target)})
			if e.Else >= 0 {
				out = append(out, Edge{i, int(e.Else)})
			}
		}
	}
	return out
}

// edgesTaken infers the edges a run took from its node events: an edge
// from a node that finished at step s to a node that ran at the next step
// that ran any node, or to a join that ran at any later step; an edge to end from a node finishing the last step of
// a completed run; an edge from start to the nodes of the first step.
func edgesTaken(g *bytecode.Graph, events []*runtime.Event, completed bool) map[int]bool {
	byName := map[string]int{}
	for i, n := range g.Nodes {
		byName[n.Name] = i
	}
	type act struct {
		step uint64
		node int
	}
	var ran, done []act
	for _, e := range events {
		i, ok := byName[e.Node]
		if !ok {
			continue
		}
		switch e.Kind {
		case runtime.EventNodeStarted, runtime.EventNodeFinished, runtime.EventNodeFailed, runtime.EventInterrupt:
			ran = append(ran, act{e.Step, i})
		}
		if e.Kind == runtime.EventNodeFinished || e.Kind == runtime.EventNodeFailed {
			done = append(done, act{e.Step, i})
		}
	}
	next := func(s uint64) (uint64, bool) {
		best, found := uint64(0), false
		for _, r := range ran {
			if r.step > s && (!found || r.step < best) {
				best, found = r.step, true
			}
		}
		return best, found
	}
	ranAt := func(step uint64, node int) bool {
		return slices.Contains(ran, act{step, node})
	}
	// A join waits for its other predecessors: the edge into it from one
	// that finished at step s is taken when it runs at any later step.
	joinAfter := func(step uint64, node int) bool {
		return g.Nodes[node].Kind == bytecode.NodeJoin && slices.ContainsFunc(ran, func(r act) bool { return r.node == node && r.step > step })
	}
	edges := EdgeList(g)
	taken := map[int]bool{}
	mark := func(from int, to func(int) bool) {
		for k, e := range edges {
			if e.From == from && to(e.To) {
				taken[k] = true
			}
		}
	}
	if s, ok := next(0); ok && g.Start() >= 0 {
		mark(g.Start(), func(n int) bool { return ranAt(s, n) })
	}
	end := g.End()
	for _, d := range done {
		if s, ok := next(d.step); ok {
			mark(d.node, func(n int) bool { return ranAt(s, n) || joinAfter(d.step, n) })
		} else if completed {
			mark(d.node, func(n int) bool { return n == end })
		}
	}
	return taken
}

package compiler

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	dgraph "github.com/dominikbraun/graph"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Graph proofs: reachability from start, a path to end from every node,
// bounded cycles and the worst-case step count, well-formed switches. The
// concurrency proofs (joins, parallel writers) are in concurrency.go.
// Strongly connected components come from github.com/dominikbraun/graph
// (node indexes as vertices; its results are sorted before use); plain
// reachability, reverse postorder and dominators run on the node slices.

// Analysis is what the proofs found about one graph.
type Analysis struct {
	// Reachable[i] reports whether node i is reachable from start.
	Reachable []bool
	// Cycles are the graph's strongly connected components with more than
	// one node (or a self-loop), each with the bounded edges inside it.
	Cycles []Cycle
	// MaxSteps bounds the supersteps of a run: (1 + the sum of all `max N`
	// bounds) × the longest path without bounded edges. -1 when a cycle is
	// unbounded (an error has been reported).
	MaxSteps int
	// Switches maps a node index to its switch edges in evaluation order
	// (when edges, then otherwise); absent for nodes without a switch.
	Switches map[int][]*Edge
	// Total marks switches whose conditions are provably total.
	Total map[int]bool

	graph    *Graph
	tags     [][]tag
	assigned []bitset
}

// Cycle is one strongly connected component.
type Cycle struct {
	Nodes  []*Node // by index
	Bounds []*Edge // the bounded edges inside the component, by index
}

// MayRunConcurrently reports whether a and b may be active in the same
// superstep (conservative: "may"). A node runs concurrently with itself when
// it can be activated twice in one wave.
func (a *Analysis) MayRunConcurrently(x, y *Node) bool {
	if a == nil || a.tags == nil || x == nil || y == nil || x.Index >= len(a.tags) || y.Index >= len(a.tags) {
		return false
	}
	if x == y {
		return selfConcurrent(a.tags[x.Index])
	}
	return mhp(a.tags[x.Index], a.tags[y.Index])
}

// Concurrent returns the declared nodes that may run concurrently with n,
// by index.
func (a *Analysis) Concurrent(n *Node) []*Node {
	if a == nil || a.graph == nil {
		return nil
	}
	var out []*Node
	for _, m := range a.graph.Nodes[2:] {
		if m != n && a.MayRunConcurrently(n, m) {
			out = append(out, m)
		}
	}
	return out
}

// Assigned returns the state fields definitely assigned on entry to n, in
// field order.
func (a *Analysis) Assigned(n *Node) []*Field {
	if a == nil || a.graph == nil || a.graph.State == nil || n.Index >= len(a.assigned) {
		return nil
	}
	var out []*Field
	for _, f := range a.graph.State.Fields {
		if a.assigned[n.Index].has(f.Index) {
			out = append(out, f)
		}
	}
	return out
}

// checkGraph runs every check of one graph.
func (c *checker) checkGraph(g *Graph) {
	b := c.graphs[g]
	if b == nil {
		return
	}
	a := &Analysis{graph: g, MaxSteps: -1, Switches: map[int][]*Edge{}, Total: map[int]bool{}}
	g.Analysis = a
	c.reachability(b)
	a.Reachable = b.reach
	c.flow(b)
	a.assigned = b.in
	for _, n := range g.Nodes[2:] {
		c.checkNode(b, n)
		n.Writes = c.nodeWrites(n)
	}
	scopes := make([]*scope, len(g.Nodes))
	for _, e := range g.Edges {
		if e.When != nil {
			sc := scopes[e.From.Index]
			if sc == nil {
				sc = c.nodeScope(b, e.From, b.out[e.From.Index])
				scopes[e.From.Index] = sc
			}
			c.expect(e.When, sc, types.BoolType, "condition")
		}
	}
	c.switches(b)
	c.liveness(b)
	c.cycles(b)
	c.concurrency(b)
	a.tags = b.tags
}

func (c *checker) nodeWrites(n *Node) []*Field {
	if n.Into == nil && len(n.Set) == 0 {
		return nil
	}
	out := share(&c.writes, len(n.Set)+1)
	add := func(f *Field) {
		if f != nil && !slices.Contains(out, f) { // a node writes few fields
			out = append(out, f)
		}
	}
	add(n.Into)
	for _, s := range n.Set {
		add(s.Field)
	}
	slices.SortFunc(out, func(a, b *Field) int { return a.Index - b.Index })
	return out
}

// reachFrom marks the nodes reachable from n along out-edges (or, with
// reverse, along in-edges).
func reachFrom(g *Graph, n *Node, reverse bool) []bool {
	seen := make([]bool, len(g.Nodes))
	seen[n.Index] = true
	stack := []*Node{n}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		es := u.Out
		if reverse {
			es = u.In
		}
		for _, e := range es {
			v := e.To
			if reverse {
				v = e.From
			}
			if !seen[v.Index] {
				seen[v.Index] = true
				stack = append(stack, v)
			}
		}
	}
	return seen
}

// dominators computes the immediate dominator of every reachable node
// (Cooper, Harvey and Kennedy's iterative algorithm over reverse
// postorder) and the pre/post numbers of the dominator tree, so that
// "a dominates b" is an interval test. Unreachable nodes have idom -1.
type dominators struct {
	idom      []int
	depth     []int
	pre, post []int
}

func computeDominators(g *Graph, reach []bool, order []*Node) *dominators {
	n := len(g.Nodes)
	// One block for the per-node tables: rank, idom, depth, pre, post,
	// and the children lists (first, then the lists themselves).
	buf := make([]int, 7*n+1)
	rank, idom := buf[:n:n], buf[n:2*n:2*n]
	for i := range rank {
		rank[i] = -1
	}
	k := 0
	for _, v := range order {
		if reach[v.Index] {
			rank[v.Index] = k
			k++
		}
	}
	for i := range idom {
		idom[i] = -1
	}
	s := g.Start.Index
	idom[s] = s
	intersect := func(a, b int) int {
		for a != b {
			for rank[a] > rank[b] {
				a = idom[a]
			}
			for rank[b] > rank[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for _, v := range order {
			if v.Index == s || !reach[v.Index] {
				continue
			}
			nd := -1
			for _, e := range v.In {
				p := e.From.Index
				if idom[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd >= 0 && idom[v.Index] != nd {
				idom[v.Index] = nd
				changed = true
			}
		}
	}
	d := &dominators{idom: idom, depth: buf[2*n : 3*n : 3*n], pre: buf[3*n : 4*n : 4*n], post: buf[4*n : 5*n : 5*n]}
	// children[first[v]:first[v+1]] are v's children in the dominator
	// tree, by index (counted, then placed).
	first, children := buf[5*n:6*n+1:6*n+1], buf[6*n+1:]
	for v := range n {
		if v != s && idom[v] >= 0 {
			first[idom[v]+1]++
		}
	}
	for v := range n {
		first[v+1] += first[v]
	}
	fill := d.pre // scratch until the walk below, which starts by clearing it
	for v := range n {
		if v != s && idom[v] >= 0 {
			p := idom[v]
			children[first[p]+fill[p]] = v
			fill[p]++
		}
	}
	clear(fill)
	clock := 0
	type frame struct{ v, i int }
	stack := make([]frame, 1, min(n, 1024))
	stack[0] = frame{s, 0}
	d.pre[s] = clock
	clock++
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if kids := children[first[top.v]:first[top.v+1]]; top.i < len(kids) {
			c := kids[top.i]
			top.i++
			d.depth[c] = d.depth[top.v] + 1
			d.pre[c] = clock
			clock++
			stack = append(stack, frame{c, 0})
			continue
		}
		d.post[top.v] = clock
		clock++
		stack = stack[:len(stack)-1]
	}
	return d
}

// dominates reports whether a dominates b (both reachable).
func (d *dominators) dominates(a, b int) bool {
	if d.idom[a] < 0 || d.idom[b] < 0 {
		return false
	}
	return d.pre[a] <= d.pre[b] && d.post[b] <= d.post[a]
}

// common returns the nearest common dominator of a and b.
func (d *dominators) common(a, b int) int {
	for a != b {
		if d.depth[a] < d.depth[b] {
			a, b = b, a
		}
		a = d.idom[a]
	}
	return a
}

// sccs returns the strongly connected components as node indexes, each
// sorted, ordered by their first node.
func sccs(d dgraph.Graph[int, int]) [][]int {
	comps, err := dgraph.StronglyConnectedComponents(d)
	if err != nil {
		return nil
	}
	for _, comp := range comps {
		for i := range comp {
			comp[i]--
		}
	}
	return sortComps(comps)
}

// reachability marks the nodes reachable from start and reports the others.
func (c *checker) reachability(b *graphBuild) {
	g := b.g
	b.reach = reachFrom(g, g.Start, false)
	if len(g.Start.Out) == 0 {
		c.errorf(StartEndMisuse, g.span, "graph %s has no edge from start", g.name).Detail = "add `start -> NODE`"
	}
	// Nodes an edge with an unknown source leads to are not reported: the
	// edge was meant to reach them.
	fromBroken := reachFromAll(g, b.brokenIn, false)
	for _, n := range g.Nodes[2:] {
		if !b.reach[n.Index] && !broken(fromBroken, n) {
			c.errorf(UnreachableNode, n.Span, "node %s is unreachable from start", n.Name)
		}
	}
}

// reachFromAll is reachFrom over every marked node (nil: none marked).
func reachFromAll(g *Graph, marks []bool, reverse bool) []bool {
	var out []bool
	for i, m := range marks {
		if !m {
			continue
		}
		r := reachFrom(g, g.Nodes[i], reverse)
		if out == nil {
			out = r
			continue
		}
		for j := range out {
			out[j] = out[j] || r[j]
		}
	}
	return out
}

// liveness reports reachable nodes from which end cannot be reached.
func (c *checker) liveness(b *graphBuild) {
	g := b.g
	toEnd := reachFrom(g, g.End, true)
	// Nodes that reach an edge whose target is unknown may have been meant
	// to reach end through it.
	toBroken := reachFromAll(g, b.brokenOut, true)
	for _, n := range g.Nodes[2:] {
		if !b.reach[n.Index] || toEnd[n.Index] || broken(toBroken, n) {
			continue
		}
		if len(n.Out) == 0 {
			c.errorf(NoPathToEnd, n.Span, "node %s has no out-edges, so its branch never ends", n.Name).Detail =
				fmt.Sprintf("add `%s -> end` or an edge to the next node", n.Name)
			continue
		}
		c.errorf(NoPathToEnd, n.Span, "no path leads from node %s to end", n.Name)
	}
}

// cycles records every cycle (the nontrivial strongly connected
// components), reports cycles without a bounded edge, and computes the
// worst-case step count. Unbounded cycles lie inside the components, so they
// are searched there, on the component's unbounded edges only.
func (c *checker) cycles(b *graphBuild) {
	g, a := b.g, b.g.Analysis
	unbounded := func(e *Edge) bool { return e.Max == 0 }
	selfLoop := func(i int, keep func(*Edge) bool) bool {
		for _, e := range g.Nodes[i].Out {
			if e.To.Index == i && (keep == nil || keep(e)) {
				return true
			}
		}
		return false
	}
	inComp := make([]int, len(g.Nodes))
	core := cyclicCore(g)
	inCore := func(e *Edge) bool { return core[e.From.Index] && core[e.To.Index] }
	var coreNodes []*Node
	for _, n := range g.Nodes {
		if core[n.Index] {
			coreNodes = append(coreNodes, n)
		}
	}
	for _, comp := range sccs(dgSub(coreNodes, inCore)) {
		if len(comp) == 1 && !selfLoop(comp[0], nil) {
			continue
		}
		id := len(a.Cycles) + 1
		for _, i := range comp {
			inComp[i] = id
		}
		cy := Cycle{}
		for _, i := range comp {
			cy.Nodes = append(cy.Nodes, g.Nodes[i])
			for _, e := range g.Nodes[i].Out {
				if e.Max > 0 && inComp[e.To.Index] == id {
					cy.Bounds = append(cy.Bounds, e)
				}
			}
		}
		sort.Slice(cy.Bounds, func(i, j int) bool { return cy.Bounds[i].Index < cy.Bounds[j].Index })
		a.Cycles = append(a.Cycles, cy)
	}
	bad := false
	for k, cy := range a.Cycles {
		id := k + 1
		if !b.reach[cy.Nodes[0].Index] {
			continue
		}
		inside := func(e *Edge) bool { return e.Max == 0 && inComp[e.From.Index] == id && inComp[e.To.Index] == id }
		for _, comp := range sccs(dgSub(cy.Nodes, inside)) {
			if len(comp) == 1 && !selfLoop(comp[0], unbounded) {
				continue
			}
			bad = true
			path, first := cyclePath(g, comp, unbounded)
			d := c.errorf(UnboundedCycle, first.Span, "cycle %s has no bounded edge", strings.Join(path, " -> "))
			d.Detail = "add `max N` (and `else -> NODE`) to one of its edges"
		}
	}
	if bad {
		return
	}
	a.MaxSteps = maxSteps(g, b.reach)
}

// cyclicCore marks the nodes that may lie on a cycle: what is left after
// repeatedly removing nodes with no remaining in-edge or no remaining
// out-edge (such a node is on no cycle). Only the core goes to the SCC
// search, so a mostly acyclic graph costs little there.
func cyclicCore(g *Graph) []bool {
	n := len(g.Nodes)
	alive := make([]bool, n)
	in, out := make([]int, n), make([]int, n)
	for i := range alive {
		alive[i] = true
	}
	for _, e := range g.Edges {
		if e.From == nil || e.To == nil {
			continue
		}
		out[e.From.Index]++
		in[e.To.Index]++
	}
	var queue []int
	for i := 0; i < n; i++ {
		if in[i] == 0 || out[i] == 0 {
			queue = append(queue, i)
			alive[i] = false
		}
	}
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, e := range g.Nodes[i].Out {
			if j := e.To.Index; alive[j] {
				if in[j]--; in[j] == 0 {
					alive[j] = false
					queue = append(queue, j)
				}
			}
		}
		for _, e := range g.Nodes[i].In {
			if j := e.From.Index; alive[j] {
				if out[j]--; out[j] == 0 {
					alive[j] = false
					queue = append(queue, j)
				}
			}
		}
	}
	return alive
}

// dgSub builds a dominikbraun graph over some nodes and the kept edges
// between them. Vertex keys are node index + 1: the library's Tarjan loop
// uses the zero key as a sentinel.
func dgSub(nodes []*Node, keep func(*Edge) bool) dgraph.Graph[int, int] {
	d := dgraph.New(dgraph.IntHash, dgraph.Directed())
	for _, n := range nodes {
		_ = d.AddVertex(n.Index + 1)
	}
	for _, n := range nodes {
		for _, e := range n.Out {
			if keep(e) {
				_ = d.AddEdge(e.From.Index+1, e.To.Index+1)
			}
		}
	}
	return d
}

// sortComps sorts each component and the components by their first node.
func sortComps(comps [][]int) [][]int {
	out := comps[:0]
	for _, comp := range comps {
		if len(comp) > 0 {
			sort.Ints(comp)
			out = append(out, comp)
		}
	}
	comps = out
	sort.Slice(comps, func(i, j int) bool { return comps[i][0] < comps[j][0] })
	return comps
}

// cyclePath finds a cycle through the first node of comp using kept edges,
// and returns its node names and its first edge in source order.
func cyclePath(g *Graph, comp []int, keep func(*Edge) bool) ([]string, *Edge) {
	in := map[int]bool{}
	for _, i := range comp {
		in[i] = true
	}
	start := comp[0]
	prev := map[int]*Edge{}
	queue := []int{start}
	var closing *Edge
	for len(queue) > 0 && closing == nil {
		u := queue[0]
		queue = queue[1:]
		for _, e := range g.Nodes[u].Out {
			v := e.To.Index
			if !keep(e) || !in[v] {
				continue
			}
			if v == start {
				closing = e
				break
			}
			if _, ok := prev[v]; !ok {
				prev[v] = e
				queue = append(queue, v)
			}
		}
	}
	if closing == nil {
		return []string{g.Nodes[start].Name}, g.Nodes[start].Out[0]
	}
	edges := []*Edge{closing}
	for v := closing.From.Index; v != start; v = prev[v].From.Index {
		edges = append(edges, prev[v])
	}
	for i, j := 0, len(edges)-1; i < j; i, j = i+1, j-1 {
		edges[i], edges[j] = edges[j], edges[i]
	}
	names := []string{g.Nodes[start].Name}
	first := edges[0]
	for _, e := range edges {
		names = append(names, e.To.Name)
		if e.Index < first.Index {
			first = e
		}
	}
	return names, first
}

// maxSteps computes (1 + Σ max N) × the longest path (in nodes) of the graph
// without bounded edges, which is acyclic once every cycle is bounded.
func maxSteps(g *Graph, reach []bool) int {
	order := topoOrder(g, func(e *Edge) bool { return e.Max == 0 })
	dist := make([]int64, len(g.Nodes))
	var longest int64
	for _, n := range order {
		if !reach[n.Index] {
			continue
		}
		w := int64(1)
		if n.Kind == NodeStart || n.Kind == NodeEnd {
			w = 0
		}
		if dist[n.Index] < w {
			dist[n.Index] = w
		}
		longest = max(longest, dist[n.Index])
		for _, e := range n.Out {
			if e.Max != 0 {
				continue
			}
			wv := int64(1)
			if e.To.Kind == NodeEnd {
				wv = 0
			}
			if d := dist[n.Index] + wv; d > dist[e.To.Index] {
				dist[e.To.Index] = d
			}
		}
	}
	bounds := int64(1)
	for _, e := range g.Edges {
		if e.Max > 0 && reach[e.From.Index] {
			bounds += int64(e.Max)
			if bounds > math.MaxInt32 {
				return math.MaxInt32
			}
		}
	}
	total := bounds * longest
	if total > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(total)
}

// topoOrder is Kahn's algorithm over the kept edges (ties by node index).
// Nodes on cycles of kept edges are left out.
func topoOrder(g *Graph, keep func(*Edge) bool) []*Node {
	indeg := make([]int, len(g.Nodes))
	for _, e := range g.Edges {
		if keep(e) {
			indeg[e.To.Index]++
		}
	}
	// out doubles as the queue: out[head:] are the nodes not yet expanded.
	out := make([]*Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		if indeg[n.Index] == 0 {
			out = append(out, n)
		}
	}
	for head := 0; head < len(out); head++ {
		for _, e := range out[head].Out {
			if !keep(e) {
				continue
			}
			indeg[e.To.Index]--
			if indeg[e.To.Index] == 0 {
				out = append(out, e.To)
			}
		}
	}
	return out
}

// switches checks the declared out-edges of every node: fan-out and switches
// do not mix, otherwise comes last, conditions are distinct, and a switch
// without otherwise is provably total.
func (c *checker) switches(b *graphBuild) {
	g, a := b.g, b.g.Analysis
	var always []*Edge // per node; the array is reused
	for _, n := range g.Nodes {
		always = always[:0]
		var sw []*Edge
		var firstKind *Edge
		mixed := false
		for _, e := range n.Out {
			if e.Syntax == nil || e.Kind == EdgeElse {
				continue
			}
			if firstKind == nil {
				firstKind = e
			}
			if e.Kind == EdgeAlways {
				always = append(always, e)
			} else {
				sw = append(sw, e)
			}
			if !mixed && (e.Kind == EdgeAlways) != (firstKind.Kind == EdgeAlways) {
				mixed = true
				d := c.errorf(MixedEdges, e.Span, "node %s has both unconditional and when/otherwise edges", n.Name)
				d.Detail = "unconditional edges fan out; when edges form a switch. Route one group through an intermediate node"
				related(d, "first edge of the other kind", firstKind.Span)
			}
		}
		var seen map[*Node]*Edge
		if len(always) >= 2 {
			seen = make(map[*Node]*Edge, len(always))
		}
		for _, e := range always {
			if seen == nil {
				break
			}
			if prev, dup := seen[e.To]; dup {
				related(c.errorf(DuplicateEdge, e.Span, "edge %s -> %s is declared twice", n.Name, e.To.Name), "first here", prev.Span)
				continue
			}
			seen[e.To] = e
		}
		if len(sw) == 0 || mixed {
			continue
		}
		var otherwise *Edge
		conds := map[string]*Edge{}
		ncase := 0
		var ordered []*Edge
		lastWhen := -1
		for i, e := range sw {
			if e.Kind == EdgeWhen {
				lastWhen = i
			}
		}
		for i, e := range sw {
			if e.Kind == EdgeOtherwise {
				switch {
				case otherwise != nil:
					related(c.errorf(MisplacedOtherwise, e.Span, "node %s has a second otherwise edge", n.Name), "first otherwise", otherwise.Span)
					continue
				case i < lastWhen:
					c.errorf(MisplacedOtherwise, e.Span, "otherwise must be the last edge of %s's switch; the edges after it never fire", n.Name)
				case lastWhen < 0 && !broken(b.brokenWhen, n):
					c.errorf(MisplacedOtherwise, e.Span, "otherwise without when edges; write an unconditional edge instead")
				}
				otherwise = e
				continue
			}
			key := conditionKey(e.When)
			if prev, dup := conds[key]; dup {
				d := c.errorf(DuplicateEdge, e.Span, "condition %s repeats an earlier edge of %s; this edge never fires", ExprText(e.When), n.Name)
				related(d, "first edge with this condition", prev.Span)
				continue
			}
			conds[key] = e
			e.Case = ncase
			ncase++
			ordered = append(ordered, e)
		}
		if otherwise != nil {
			otherwise.Case = ncase
			ordered = append(ordered, otherwise)
		}
		a.Switches[n.Index] = ordered
		total, missing := c.totality(sw)
		a.Total[n.Index] = total
		if otherwise == nil && !total && !broken(b.brokenWhen, n) {
			last := sw[len(sw)-1]
			d := c.errorf(NonExhaustive, last.Span, "switch of node %s has no otherwise and its conditions are not provably total", n.Name)
			if missing != "" {
				d.Detail = "not covered: " + missing
			} else {
				d.Detail = "add `" + n.Name + " -> NODE otherwise`"
			}
		}
	}
}

// totality reports whether the when conditions cover every value of one
// bool or enum subject; missing lists what is not covered when known.
func (c *checker) totality(sw []*Edge) (bool, string) {
	subject := ""
	var domain []string
	covered := map[string]bool{}
	for _, e := range sw {
		if e.Kind != EdgeWhen {
			continue
		}
		subj, vals, dom, ok := c.caseOf(e.When)
		if !ok || (subject != "" && subj != subject) {
			return false, ""
		}
		subject, domain = subj, dom
		for _, v := range vals {
			covered[v] = true
		}
	}
	if subject == "" {
		return false, ""
	}
	var missing []string
	for _, v := range domain {
		if !covered[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return true, ""
	}
	return false, subject + " = " + quoteList(missing)
}

// caseOf decomposes a condition into subject, values and the subject's
// domain: `x`, `not x`, `x == lit`, `lit == x`, `x in [lits]` over a
// non-optional bool or enum x.
func (c *checker) caseOf(e *syntax.Expr) (string, []string, []string, bool) {
	if e == nil || e.Or == nil || len(e.Or.Tail) > 0 || e.Or.Head == nil || len(e.Or.Head.Tail) > 0 {
		return "", nil, nil, false
	}
	not := e.Or.Head.Head
	neg := false
	for not != nil && not.Not != nil {
		neg = !neg
		not = not.Not
	}
	if not == nil || not.Cmp == nil {
		return "", nil, nil, false
	}
	cmp := not.Cmp
	domainOf := func(x *syntax.AddExpr) (string, []string, bool) {
		t := c.addType(x)
		switch t.Kind() {
		case types.KindBool:
			return writeAddText(x), []string{"false", "true"}, true
		case types.KindEnum:
			return writeAddText(x), quoteAll(t.Literals()), true
		}
		return "", nil, false
	}
	switch {
	case cmp.Op == "":
		subj, dom, ok := domainOf(cmp.Left)
		if !ok || len(dom) != 2 || dom[0] != "false" {
			return "", nil, nil, false
		}
		v := "true"
		if neg {
			v = "false"
		}
		return subj, []string{v}, dom, true
	case neg:
		return "", nil, nil, false
	case cmp.Op == "==":
		for _, side := range [][2]*syntax.AddExpr{{cmp.Left, cmp.Right}, {cmp.Right, cmp.Left}} {
			subj, dom, ok := domainOf(side[0])
			if !ok {
				continue
			}
			if lit, ok := literalText(side[1]); ok {
				return subj, []string{lit}, dom, true
			}
		}
	case cmp.Op == "in":
		subj, dom, ok := domainOf(cmp.Left)
		if !ok {
			return "", nil, nil, false
		}
		list, ok := addPrimary(cmp.Right).(*syntax.ListLit)
		if !ok {
			return "", nil, nil, false
		}
		var vals []string
		for _, el := range list.Elems {
			p := primaryOf(el.X)
			if s, ok := p.(*syntax.String); ok {
				if v, ok := s.Literal(); ok {
					vals = append(vals, fmt.Sprintf("%q", v))
					continue
				}
			}
			return "", nil, nil, false
		}
		return subj, vals, dom, true
	}
	return "", nil, nil, false
}

func writeAddText(x *syntax.AddExpr) string {
	var sb exprWriter
	sb.writeAdd(x)
	return sb.String()
}

// literalText renders a bool or string literal operand as it appears in a
// domain ("true", "\"a\"").
func literalText(x *syntax.AddExpr) (string, bool) {
	switch p := addPrimary(x).(type) {
	case *syntax.Literal:
		if p.Bool != nil {
			return *p.Bool, true
		}
	case *syntax.String:
		if v, ok := p.Literal(); ok {
			return fmt.Sprintf("%q", v), true
		}
	}
	return "", false
}

var _ = diag.Error

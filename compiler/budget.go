package compiler

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Budgets (spec/checks.md, "Budgets"): what one run of each runnable may
// use at most — model calls, tokens, cost — from loop bounds, retries,
// max_turns, list literals, list sizes (`max N` on a state field) and the
// models' windows and prices; the fewest
// model calls any run from start to end makes; and the checks of declared
// budgets against both.

// Limits is a declared budget. A zero field is not limited.
type Limits struct {
	Tokens     int64
	ModelCalls int64
	Cost       float64 // USD
	Span       diag.Span
}

// IsZero reports whether nothing is limited.
func (l *Limits) IsZero() bool {
	return l == nil || l.Tokens == 0 && l.ModelCalls == 0 && l.Cost == 0
}

// Bound is what one run of a runnable may use at most, and the fewest
// model calls it makes on its cheapest path from start to end.
type Bound struct {
	// Bounded says ModelCalls, Tokens and Cost are upper bounds; otherwise
	// Why says what has none, at Where.
	Bounded    bool
	ModelCalls int64
	Tokens     int64
	Cost       float64 // USD; calls of models without a price count 0
	// MinModelCalls is a proven lower bound of every run that reaches end.
	MinModelCalls int64
	Why           string
	Where         diag.Span
}

// unbounded returns a Bound with no upper bound for why, keeping min.
func unbounded(why string, at diag.Span, min int64) Bound {
	return Bound{Why: why, Where: at, MinModelCalls: min}
}

// satAdd and satMul saturate at math.MaxInt64 (a bound that large is
// reported as it is: the budget check still holds).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// plus adds y to x (both upper and lower bounds).
func (x Bound) plus(y Bound) Bound {
	out := Bound{Bounded: x.Bounded && y.Bounded, MinModelCalls: satAdd(x.MinModelCalls, y.MinModelCalls)}
	if !out.Bounded {
		out.Why, out.Where = x.Why, x.Where
		if x.Bounded {
			out.Why, out.Where = y.Why, y.Where
		}
		return out
	}
	out.ModelCalls = satAdd(x.ModelCalls, y.ModelCalls)
	out.Tokens = satAdd(x.Tokens, y.Tokens)
	out.Cost = x.Cost + y.Cost
	return out
}

// times multiplies the upper bound by n (the lower bound is the caller's).
func (x Bound) times(n int64) Bound {
	if !x.Bounded {
		return x
	}
	x.ModelCalls = satMul(x.ModelCalls, n)
	x.Tokens = satMul(x.Tokens, n)
	x.Cost *= float64(n)
	return x
}

// zeroBound is the bound of work that calls no model.
var zeroBound = Bound{Bounded: true}

// budgets computes every runnable's bound and checks the declared budgets.
type budgets struct {
	c      *checker
	agents map[*Agent]*Bound
	graphs map[*Graph]*Bound
	busy   map[any]bool
}

func (c *checker) checkBudgets() {
	b := &budgets{c: c, agents: map[*Agent]*Bound{}, graphs: map[*Graph]*Bound{}, busy: map[any]bool{}}
	for _, a := range c.info.Agents {
		if a.Form == 0 {
			continue
		}
		bd := b.agent(a)
		a.Bound = &bd
		b.check(a.Budget, bd, "agent "+a.name)
	}
	for _, g := range c.info.Graphs {
		bd := b.graph(g)
		g.Bound = &bd
		b.check(g.Budget, bd, "graph "+g.name)
	}
	if s := c.info.Serve; s != nil && s.Budget != nil && s.Run != nil {
		switch r := s.Run.(type) {
		case *Graph:
			if r.Bound != nil {
				b.check(s.Budget, *r.Bound, "graph "+r.name)
			}
		case *Agent:
			if r.Bound != nil {
				b.check(s.Budget, *r.Bound, "agent "+r.name)
			}
		}
	}
}

// check reports a declared budget that no run can keep (G416), or that
// the compiler cannot bound (G417).
func (b *budgets) check(l *Limits, bd Bound, what string) {
	if l.IsZero() {
		return
	}
	if l.ModelCalls > 0 && bd.MinModelCalls > l.ModelCalls {
		b.c.errorf(BudgetBelowMinimum, l.Span, "%s makes at least %d model calls on its cheapest path from start to end; the budget allows %d",
			what, bd.MinModelCalls, l.ModelCalls).Detail = "every run would stop with budget_exceeded before it ends: raise model_calls, or shorten the cheapest path"
		return
	}
	if !bd.Bounded {
		d := b.c.warnf(BudgetUnbounded, l.Span, "%s has no upper bound: %s; the budget is enforced at run time only", what, bd.Why)
		if bd.Where.File != "" {
			related(d, "no bound here", bd.Where)
		}
	}
}

// modelCall is the bound of one model call: the window is every token a
// call can use (prompt and completion), and its cost at most the window
// priced as dearly as max_tokens lets it be.
func modelCall(m *Model) Bound {
	if m == nil {
		return Bound{Bounded: true, ModelCalls: 1, MinModelCalls: 1}
	}
	w := int64(bytecode.DefaultContextWindow)
	if at := m.Attrs.Get("context_window"); at != nil && at.HasConst {
		w = at.Const.Int()
	}
	out := w
	if at := m.Attrs.Get("max_tokens"); at != nil && at.HasConst {
		out = min(out, at.Const.Int())
	}
	var in, outP float64
	if p := m.Attrs.Get("price"); p != nil && p.Block != nil {
		in, outP = priceOf(p.Block, "input"), priceOf(p.Block, "output")
		// A prompt token costs input, or cached when the provider read it
		// from its cache: the dearer of the two bounds it.
		in = max(in, priceOf(p.Block, "cached"))
	}
	cost := max(float64(w)*in, float64(w-out)*in+float64(out)*outP) / 1e6
	return Bound{Bounded: true, ModelCalls: 1, Tokens: w, Cost: cost, MinModelCalls: 1}
}

func priceOf(a *Attrs, name string) float64 {
	at := a.Get(name)
	if at == nil || !at.HasConst {
		return 0
	}
	return max(constNumber(at.Const), 0)
}

// constNumber is an int or float constant as a float (an int literal fits
// a float attribute).
func constNumber(v types.Value) float64 {
	switch v.Kind() {
	case types.ValFloat:
		return v.Float()
	case types.ValInt:
		return float64(v.Int())
	}
	return 0
}

// memo returns cache[key], computing it with f the first time; a key met
// again while f computes it (a recursion P507 reports) gets loop.
func memo[K interface{ *Agent | *Graph }](b *budgets, cache map[K]*Bound, key K, loop func() Bound, f func() Bound) Bound {
	if bd, ok := cache[key]; ok {
		return *bd
	}
	if b.busy[key] {
		return loop()
	}
	b.busy[key] = true
	defer delete(b.busy, key)
	out := f()
	cache[key] = &out
	return out
}

// agent is the bound of one call of agent a.
func (b *budgets) agent(a *Agent) Bound {
	return memo(b, b.agents, a, func() Bound { return unbounded("agent "+a.name+" contains itself", a.span, 0) },
		func() Bound { return b.agentBound(a) })
}

func (b *budgets) agentBound(a *Agent) Bound {
	var out Bound
	switch a.Form {
	case AgentLLM:
		turns := int64(a.MaxTurns)
		if turns <= 0 {
			turns = bytecode.DefaultMaxTurns
		}
		out = modelCall(a.Model).times(turns)
		out.MinModelCalls = 1
		for _, t := range a.Tools {
			if t.Impl.Kind == ImplAgent && t.Impl.Agent != nil {
				out = unbounded(fmt.Sprintf("agent %s may call tool %s, which runs agent %s, any number of times per reply", a.name, t.name, t.Impl.Agent.name), a.span, 1)
				break
			}
		}
	default:
		out = zeroBound
		for _, m := range a.Agents {
			out = out.plus(b.agent(m))
		}
		if a.Form == AgentCycle && a.Max > 0 {
			min := out.MinModelCalls
			out = out.times(int64(a.Max))
			out.MinModelCalls = min
		}
	}
	return out
}

// call is the bound of one attempt of a call.
func (b *budgets) call(c *Call) Bound {
	switch {
	case c == nil:
		return zeroBound
	case c.Agent != nil:
		return b.agent(c.Agent)
	case c.Tool != nil && c.Tool.Impl.Kind == ImplAgent && c.Tool.Impl.Agent != nil:
		return b.agent(c.Tool.Impl.Agent)
	case c.Graph != nil:
		return b.graph(c.Graph)
	}
	return zeroBound
}

// attempts is how many attempts a retry policy allows.
func attempts(p Policies) int64 {
	if p.Retry != nil && p.Retry.Attempts > 0 {
		return int64(p.Retry.Attempts) + 1
	}
	return 1
}

// node is the bound of one visit of n.
func (b *budgets) node(n *Node) Bound {
	switch n.Kind {
	case NodeCall:
		one := b.call(n.Call)
		min := one.MinModelCalls
		if n.Policies.Cache != nil {
			min = 0 // a cache hit makes no call
		}
		out := one.times(attempts(n.Policies))
		out.MinModelCalls = min
		return out
	case NodeMap:
		if n.Map == nil {
			return zeroBound
		}
		one := b.call(n.Map.Body)
		if one.Bounded && one.ModelCalls == 0 {
			return zeroBound
		}
		one = one.times(attempts(n.Map.Item))
		one.MinModelCalls = 0 // the list may be empty
		if items, ok := b.listSize(n.Map.List); ok {
			return one.times(items)
		}
		if !one.Bounded {
			return one
		}
		return unbounded(fmt.Sprintf("map %s iterates over a list of unknown size", n.Name), n.Span, 0)
	}
	return zeroBound
}

// listSize is the most elements list can hold: a list literal's length, or
// the declared size of the state field it names (`max N`, which the VM
// holds on every input and write: spec/language.md §9.1).
func (b *budgets) listSize(list *syntax.Expr) (int64, bool) {
	switch p := primaryOf(list).(type) {
	case *syntax.ListLit:
		return int64(len(p.Elems)), true
	case *syntax.Name:
		if r, ok := b.c.info.Refs.Get(p); ok && r.Kind == RefField && r.Field != nil && r.Field.MaxLen > 0 {
			return int64(r.Field.MaxLen), true
		}
	}
	return 0, false
}

// graph is the bound of one run of g: every node's bound times the most
// visits it can have. Without the bounded edges (`max N`) the graph is
// acyclic (G403), and the checks of joins and fan-outs (G409, G411) let a
// node run at most once per wave; every wave starts at start or at the
// target of a bounded edge, N times at most. So a node runs at most
// [reachable from start] + Σ N over the bounded edges it is reachable from.
func (b *budgets) graph(g *Graph) Bound {
	return memo(b, b.graphs, g, func() Bound { return unbounded("graph "+g.name+" calls itself", g.span, 0) },
		func() Bound { return b.graphBound(g) })
}

func (b *budgets) graphBound(g *Graph) Bound {
	if g.Analysis == nil || g.Analysis.MaxSteps < 0 || len(g.Nodes) < 2 {
		return unbounded("graph "+g.name+" has a cycle without a bound", g.span, 0)
	}
	n := len(g.Nodes)
	var visits []int64
	reach := func(from *Node, k int64) {
		seen := make([]bool, n)
		stack := []*Node{from}
		seen[from.Index] = true
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			visits[x.Index] = satAdd(visits[x.Index], k)
			for _, e := range x.Out {
				if e.Max > 0 || e.To == nil || seen[e.To.Index] {
					continue
				}
				seen[e.To.Index] = true
				stack = append(stack, e.To)
			}
		}
	}
	// Each node's least model calls, for minCalls; the same block as visits
	// (both by node index).
	least := make([]int64, 2*n)
	visits, least = least[:n:n], least[n:]
	reach(g.Start, 1)
	for _, e := range g.Edges {
		if e.Max > 0 && e.To != nil {
			reach(e.To, int64(e.Max))
		}
	}
	out := zeroBound
	for _, x := range g.Nodes {
		nb := b.node(x)
		least[x.Index] = nb.MinModelCalls
		if visits[x.Index] == 0 {
			continue
		}
		nb = nb.times(visits[x.Index])
		nb.MinModelCalls = 0
		out = out.plus(nb)
	}
	out.MinModelCalls = minCalls(g, least)
	return out
}

// minCalls is the fewest model calls on a path from start to end, given
// each node's least calls by index: leaving
// a node by a catch route costs nothing (it may have failed before its
// first call), by any other edge its own minimum. A fan-out's branches all
// run, so a path's sum is a lower bound.
func minCalls(g *Graph, least []int64) int64 {
	const inf = math.MaxInt64
	dist := make([]int64, len(g.Nodes))
	for i := range dist {
		dist[i] = inf
	}
	dist[g.Start.Index] = 0
	q := &distQueue{{0, g.Start.Index}}
	for len(*q) > 0 {
		top := q.pop()
		u := top.node
		if top.dist > dist[u] {
			continue // stale: u was reached more cheaply since
		}
		if u == g.End.Index {
			return dist[u]
		}
		for _, e := range g.Nodes[u].Out {
			if e.To == nil {
				continue
			}
			w := least[u]
			if e.Kind == EdgeCatch {
				w = 0
			}
			if d := satAdd(dist[u], w); d < dist[e.To.Index] {
				dist[e.To.Index] = d
				q.push(distItem{d, e.To.Index})
			}
		}
	}
	return 0 // end is unreachable: no run ends (reported as such)
}

// distItem is a node reached at a distance; distQueue a min-heap of them.
type distItem struct {
	dist int64
	node int
}

type distQueue []distItem

// push and pop are container/heap's Push and Pop on the concrete type
// (the interface's any boxes each item: an allocation per push and pop).
func (q *distQueue) push(x distItem) {
	*q = append(*q, x)
	h := *q
	for j := len(h) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if i == j || !(h[j].dist < h[i].dist) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (q *distQueue) pop() distItem {
	h := *q
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h[j2].dist < h[j1].dist {
			j = j2
		}
		if !(h[j].dist < h[i].dist) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	x := h[n]
	*q = h[:n]
	return x
}

// limitsOf reads a checked budget block.
func limitsOf(a *Attrs, at diag.Span) *Limits {
	if a == nil {
		return nil
	}
	l := &Limits{Span: at}
	if x := a.Get("tokens"); x != nil && x.HasConst {
		l.Tokens = x.Const.Int()
	}
	if x := a.Get("model_calls"); x != nil && x.HasConst {
		l.ModelCalls = x.Const.Int()
	}
	if x := a.Get("cost"); x != nil && x.HasConst {
		l.Cost = constNumber(x.Const)
	}
	if l.IsZero() {
		return nil
	}
	return l
}

// budgets lowers every runnable's bound and declared budget, by graph
// index, and the serve block's budget (bytecode section 15).
func (l *lowerer) budgets() {
	add := func(gi uint32, lim *Limits, bd *Bound) {
		if bd == nil {
			return
		}
		out := bytecode.Budget{Graph: gi, Limits: bytecodeLimits(lim), Bound: bytecode.Bound{
			Bounded: bd.Bounded, MinModelCalls: uint64(bd.MinModelCalls), Why: bd.Why}}
		if bd.Bounded {
			out.Bound.ModelCalls, out.Bound.Tokens, out.Bound.Cost = uint64(bd.ModelCalls), uint64(bd.Tokens), bd.Cost
			out.Bound.MinModelCalls = min(out.Bound.MinModelCalls, out.Bound.ModelCalls)
		}
		l.p.Budgets = append(l.p.Budgets, out)
	}
	for _, g := range l.info.Graphs {
		add(l.graphs[g], g.Budget, g.Bound)
	}
	for i, a := range l.info.Agents {
		add(l.lowered[i].graph, a.Budget, a.Bound)
	}
	slices.SortFunc(l.p.Budgets, func(a, b bytecode.Budget) int { return cmp.Compare(a.Graph, b.Graph) })
	if s := l.info.Serve; s != nil {
		l.p.ServeBudget = bytecodeLimits(s.Budget)
	}
}

func bytecodeLimits(l *Limits) bytecode.Limits {
	if l == nil {
		return bytecode.Limits{}
	}
	return bytecode.Limits{Tokens: uint64(max(l.Tokens, 0)), ModelCalls: uint64(max(l.ModelCalls, 0)), Cost: max(l.Cost, 0)}
}

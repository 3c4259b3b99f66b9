package compiler

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/agentc/agentc/lang/diag"
)

// Concurrency: which nodes may run in the same superstep.
//
// Every activation carries tags. A fork (a node with two or more
// unconditional out-edges) gives the token on its i-th unconditional edge
// the tag (fork, {i}); other edges pass their source's tags on. A node's
// tags are the union over its in-edges. A `join all` merges, per fork, the
// branch sets of its predecessors into one: when they cover every branch of
// the fork the tag is dropped (the branches are over), otherwise the merged
// tag remains. A `join any` fires on the first arrival while the other
// branches go on, so it gives its successors a fresh branch of each fork it
// merges. Two nodes may run concurrently when they carry tags of one fork
// with disjoint branch sets. Timing is ignored (a branch of three steps and
// one of five are still "concurrent"), which keeps the relation
// conservative, as the proofs need.

// tag is (fork node index, set of branch atoms); atoms are big-endian
// uint32s packed in a string, sorted and distinct.
type tag struct {
	fork  int32
	atoms string
}

func atomsOf(xs ...uint32) string {
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	b := make([]byte, 0, 4*len(xs))
	var last uint32
	for i, x := range xs {
		if i > 0 && x == last {
			continue
		}
		b = binary.BigEndian.AppendUint32(b, x)
		last = x
	}
	return string(b)
}

func atomList(s string) []uint32 {
	out := make([]uint32, 0, len(s)/4)
	for i := 0; i+4 <= len(s); i += 4 {
		out = append(out, binary.BigEndian.Uint32([]byte(s[i:i+4])))
	}
	return out
}

func disjoint(a, b string) bool {
	i, j := 0, 0
	for i+4 <= len(a) && j+4 <= len(b) {
		x, y := a[i:i+4], b[j:j+4]
		switch {
		case x == y:
			return false
		case x < y:
			i += 4
		default:
			j += 4
		}
	}
	return true
}

func normTags(ts []tag) []tag {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].fork != ts[j].fork {
			return ts[i].fork < ts[j].fork
		}
		return ts[i].atoms < ts[j].atoms
	})
	out := ts[:0]
	for i, t := range ts {
		if i > 0 && t == out[len(out)-1] {
			continue
		}
		out = append(out, t)
	}
	return out
}

func tagsEqual(a, b []tag) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mhp reports whether two tag sets may be active together.
func mhp(a, b []tag) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].fork < b[j].fork:
			i++
		case a[i].fork > b[j].fork:
			j++
		default:
			f := a[i].fork
			ie := i
			for ie < len(a) && a[ie].fork == f {
				ie++
			}
			je := j
			for je < len(b) && b[je].fork == f {
				je++
			}
			for x := i; x < ie; x++ {
				for y := j; y < je; y++ {
					if disjoint(a[x].atoms, b[y].atoms) {
						return true
					}
				}
			}
			i, j = ie, je
		}
	}
	return false
}

func selfConcurrent(a []tag) bool {
	for i := 0; i < len(a); i++ {
		for j := i + 1; j < len(a) && a[j].fork == a[i].fork; j++ {
			if disjoint(a[i].atoms, a[j].atoms) {
				return true
			}
		}
	}
	return false
}

// concState holds the per-graph fork numbering.
type concState struct {
	b      *graphBuild
	forkK  []int           // number of branches of each fork node (0: not a fork)
	branch []int32         // branch index of each edge (-1: none)
	alts   [][]alternative // exclusive routes of each decision node (nil: not a decision)
	dom    *dominators
	ancBuf [][]bool // scratch for deadlock proofs
	stack  []*Node
}

func (s *concState) edgeTags(e *Edge) []tag {
	base := s.b.tags[e.From.Index]
	bi := s.branch[e.Index]
	if bi < 0 {
		return base
	}
	out := make([]tag, 0, len(base)+1)
	out = append(out, base...)
	out = append(out, tag{fork: int32(e.From.Index), atoms: atomsOf(uint32(bi))})
	return normTags(out)
}

// compute returns a node's tags from its in-edges.
func (s *concState) compute(n *Node) []tag {
	var all []tag
	for _, e := range n.In {
		if !s.b.reach[e.From.Index] {
			continue
		}
		all = append(all, s.edgeTags(e)...)
	}
	all = normTags(all)
	if n.Kind != NodeJoin {
		return all
	}
	var out []tag
	for i := 0; i < len(all); {
		f := all[i].fork
		j := i
		var atoms []uint32
		for j < len(all) && all[j].fork == f {
			atoms = append(atoms, atomList(all[j].atoms)...)
			j++
		}
		switch {
		case n.JoinAll:
			merged := atomsOf(atoms...)
			if !covers(merged, s.forkK[f]) {
				out = append(out, tag{fork: f, atoms: merged})
			}
		case j-i > 1:
			out = append(out, tag{fork: f, atoms: atomsOf(uint32(s.forkK[f] + n.Index))})
		default:
			out = append(out, all[i])
		}
		i = j
	}
	return normTags(out)
}

// covers reports whether atoms holds every branch 0..k-1.
func covers(atoms string, k int) bool {
	n := 0
	for _, a := range atomList(atoms) {
		if int(a) < k {
			n++
		}
	}
	return n >= k
}

func (c *checker) concurrency(b *graphBuild) {
	g := b.g
	s := &concState{b: b, forkK: make([]int, len(g.Nodes)), branch: make([]int32, len(g.Edges))}
	for i := range s.branch {
		s.branch[i] = -1
	}
	var always []*Edge // per node; the array is reused
	for _, n := range g.Nodes {
		always = always[:0]
		for _, e := range n.Out {
			if e.Kind == EdgeAlways {
				always = append(always, e)
			}
		}
		if len(always) >= 2 {
			always = distinctTargets(always)
		}
		if len(always) >= 2 {
			s.forkK[n.Index] = len(always)
			for i, e := range always {
				s.branch[e.Index] = int32(i)
			}
		}
	}
	b.tags = make([][]tag, len(g.Nodes))
	order := b.rpo()
	updates := make([]int, len(g.Nodes))
	const exactRounds = 32 // after this many changes, a node's tags only grow (guarantees termination)
	for changed := true; changed; {
		changed = false
		for _, n := range order {
			if n == g.Start || !b.reach[n.Index] {
				continue
			}
			nt := s.compute(n)
			old := b.tags[n.Index]
			if updates[n.Index] >= exactRounds {
				nt = normTags(append(append([]tag(nil), old...), nt...))
			}
			if !tagsEqual(nt, old) {
				b.tags[n.Index] = nt
				updates[n.Index]++
				changed = true
			}
		}
	}
	s.alts = make([][]alternative, len(g.Nodes))
	for _, n := range g.Nodes {
		if !mayDecide(n) {
			continue
		}
		if a := alternatives(n); len(a) >= 2 {
			s.alts[n.Index] = a
		}
	}
	s.dom = computeDominators(g, b.reach, b.rpo())
	c.needsJoin(s)
	c.joins(s)
	c.writeConflicts(b)
}

// distinctTargets drops the edges that repeat an earlier one's target: a
// repeated edge (G407) is not a second branch.
func distinctTargets(es []*Edge) []*Edge {
	seen := make(map[*Node]bool, len(es))
	out := es[:0]
	for _, e := range es {
		if !seen[e.To] {
			seen[e.To] = true
			out = append(out, e)
		}
	}
	return out
}

// needsJoin reports plain nodes reached by concurrent branches.
func (c *checker) needsJoin(s *concState) {
	g := s.b.g
	for _, n := range g.Nodes[2:] {
		if n.Kind == NodeJoin || !s.b.reach[n.Index] || len(n.In) < 2 {
			continue
		}
		e1, e2 := s.concurrentInEdges(n)
		if e1 == nil {
			continue
		}
		d := c.errorf(NeedsJoin, n.Span, "node %s is reached by branches that may run concurrently (from %s and %s); it would run once per branch", n.Name, e1.From.Name, e2.From.Name)
		d.Detail = "make it a `join all` (wait for every branch) or `join any` (first branch wins) node"
		related(d, "one branch", e1.Span)
		related(d, "another branch", e2.Span)
	}
}

// concurrentInEdges returns two in-edges of n whose activations may arrive
// in one wave.
func (s *concState) concurrentInEdges(n *Node) (*Edge, *Edge) {
	var ins []*Edge
	var ts [][]tag
	for _, e := range n.In {
		if s.b.reach[e.From.Index] {
			ins = append(ins, e)
			ts = append(ts, s.edgeTags(e))
		}
	}
	for i := range ins {
		for j := i + 1; j < len(ins); j++ {
			if mhp(ts[i], ts[j]) {
				return ins[i], ins[j]
			}
		}
	}
	return nil, nil
}

// joins checks every reachable join: concurrent predecessors (else a
// warning), deadlock freedom of join all, and predecessors that may
// complete twice per wave.
func (c *checker) joins(s *concState) {
	b := s.b
	g := b.g
	var sccOf []int
	for _, n := range g.Nodes {
		if n.Kind != NodeJoin || !b.reach[n.Index] {
			continue
		}
		var preds []*Node
		for _, p := range n.Preds {
			if b.reach[p.Index] {
				preds = append(preds, p)
			}
		}
		deadlock := false
		if n.JoinAll && len(preds) >= 2 {
			deadlock = c.deadlock(s, n, preds)
		}
		if e1, _ := s.concurrentInEdges(n); e1 == nil && !deadlock {
			d := c.warnf(NeedlessJoin, n.Span, "join %s: its predecessors never run concurrently", n.Name)
			if len(preds) < 2 {
				d.Detail = "a join waits for concurrent branches; this one has a single predecessor"
			} else {
				d.Detail = "at most one of them is active per wave; a plain node would do"
			}
		}
		if sccOf == nil {
			sccOf = sccIndex(g)
		}
		for _, p := range preds {
			if p.Kind == NodeStart {
				continue
			}
			if sccOf[p.Index] >= 0 && sccOf[p.Index] != sccOf[n.Index] {
				c.warnf(JoinRefire, n.Span, "join %s: predecessor %s lies on a cycle that bypasses the join and may complete more than once per wave", n.Name, p.Name).Detail =
					"the join counts the first completion of each predecessor per wave"
			}
		}
	}
}

// sccIndex numbers the nontrivial strongly connected components (cycles);
// -1 for nodes on no cycle.
func sccIndex(g *Graph) []int {
	out := make([]int, len(g.Nodes))
	for i := range out {
		out[i] = -1
	}
	if g.Analysis == nil {
		return out
	}
	for k, cy := range g.Analysis.Cycles {
		for _, n := range cy.Nodes {
			out[n.Index] = k
		}
	}
	return out
}

// mayDecide reports whether n can have two alternatives (see
// alternatives): every out-edge but the unconditional ones is one, and
// the unconditional ones together are one.
func mayDecide(n *Node) bool {
	k, always := 0, false
	for _, e := range n.Out {
		if e.Kind == EdgeAlways {
			always = true
		} else {
			k++
		}
	}
	if always {
		k++
	}
	return k >= 2
}

// alternative is one way a decision node can route: the targets activated
// and the edge that names the choice.
type alternative struct {
	to   []*Node
	edge *Edge
}

// alternatives lists the exclusive routes out of n (one for plain nodes and
// fan-outs; one per case for switches; plus catch routes and loop exits).
func alternatives(n *Node) []alternative {
	var alts []alternative
	var always []*Edge
	for _, e := range n.Out {
		switch e.Kind {
		case EdgeAlways:
			always = append(always, e)
		case EdgeWhen, EdgeOtherwise:
			alts = append(alts, alternative{to: []*Node{e.To}, edge: e})
		}
	}
	if len(always) > 0 {
		base := make([]*Node, len(always))
		for i, e := range always {
			base[i] = e.To
		}
		alts = append(alts, alternative{to: base, edge: always[0]})
		for _, e := range n.Out {
			if e.Kind != EdgeElse || e.Parent == nil || e.Parent.Kind != EdgeAlways {
				continue
			}
			alt := alternative{edge: e}
			for _, a := range always {
				if a == e.Parent {
					alt.to = append(alt.to, e.To)
				} else {
					alt.to = append(alt.to, a.To)
				}
			}
			alts = append(alts, alt)
		}
	}
	for _, e := range n.Out {
		switch {
		case e.Kind == EdgeElse && e.Parent != nil && e.Parent.Kind != EdgeAlways:
			alts = append(alts, alternative{to: []*Node{e.To}, edge: e})
		case e.Kind == EdgeCatch:
			alts = append(alts, alternative{to: []*Node{e.To}, edge: e})
		}
	}
	return alts
}

func describeAlt(a alternative) string {
	e := a.edge
	switch e.Kind {
	case EdgeWhen:
		return fmt.Sprintf("`%s -> %s when %s`", e.From.Name, e.To.Name, ExprText(e.When))
	case EdgeOtherwise:
		return fmt.Sprintf("`%s -> %s otherwise`", e.From.Name, e.To.Name)
	case EdgeElse:
		return fmt.Sprintf("the loop exit `%s -> %s` (else)", e.From.Name, e.To.Name)
	case EdgeCatch:
		return fmt.Sprintf("the catch route of %s (-> %s)", e.From.Name, e.To.Name)
	}
	return fmt.Sprintf("`%s -> %s`", e.From.Name, e.To.Name)
}

// deadlock reports a join all that waits for a predecessor some choice can
// skip while the join is still activated through another predecessor.
func (c *checker) deadlock(s *concState, j *Node, preds []*Node) bool {
	// Only decisions inside the region dominated by the preds' nearest
	// common dominator can skip one predecessor but not another: every path
	// from a decision outside it to a predecessor passes through it.
	top := preds[0].Index
	for _, p := range preds[1:] {
		top = s.dom.common(top, p.Index)
	}
	anc := make([][]bool, len(preds))
	lists := make([][]*Node, len(preds))
	for i, p := range preds {
		anc[i], lists[i] = s.ancestorsAvoiding(i, p, j, top)
	}
	defer func() {
		for i, l := range lists {
			for _, n := range l {
				anc[i][n.Index] = false
			}
		}
	}()
	reaches := func(k int, d *Node, alt alternative) bool {
		for _, t := range alt.to {
			if anc[k][t.Index] || (d == preds[k] && t == j) {
				return true
			}
		}
		return false
	}
	found := false
	for k, p := range preds {
	scan:
		for _, d := range lists[k] {
			alts := s.alts[d.Index]
			if alts == nil || !s.b.reach[d.Index] {
				continue
			}
			for _, alt := range alts {
				if reaches(k, d, alt) {
					continue
				}
				for q := range preds {
					if q == k {
						continue
					}
					if reaches(q, d, alt) || mhp(s.b.tags[d.Index], s.b.tags[preds[q].Index]) {
						dg := c.errorf(JoinDeadlock, j.Span, "join all %s can wait forever: %s skips its predecessor %s while %s still arrives", j.Name, describeAlt(alt), p.Name, preds[q].Name)
						dg.Detail = "make every branch reach the join, or use `join any`"
						related(dg, "the branch that skips "+p.Name, alt.edge.Span)
						found = true
						break scan
					}
				}
			}
		}
	}
	return found
}

// ancestorsAvoiding marks the nodes that reach p (p included) without
// passing through avoid, within the region dominated by top, in the k-th
// reusable buffer.
func (s *concState) ancestorsAvoiding(k int, p, avoid *Node, top int) ([]bool, []*Node) {
	g := s.b.g
	for len(s.ancBuf) <= k {
		s.ancBuf = append(s.ancBuf, make([]bool, len(g.Nodes)))
	}
	seen := s.ancBuf[k] // all false: the caller unmarks what it used
	seen[p.Index] = true
	list := []*Node{p}
	stack := append(s.stack[:0], p)
	defer func() { s.stack = stack[:0] }()
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range n.In {
			m := e.From
			if m == avoid || seen[m.Index] || !s.dom.dominates(top, m.Index) {
				continue
			}
			seen[m.Index] = true
			list = append(list, m)
			stack = append(stack, m)
		}
	}
	return seen, list
}

// writeConflicts reports two nodes that may run in one superstep and write
// one replace field.
//
// Two nodes may run together only when they carry tags of one fork (mhp),
// so writers without tags never take part, and a pair is only examined
// when both writers carry a tag of some common fork and their tags of that
// fork differ (or are self-concurrent). The pairs found are reported in
// the order of the full pairwise scan, each once.
func (c *checker) writeConflicts(b *graphBuild) {
	g := b.g
	if g.State == nil {
		return
	}
	var writers [][]*Node
	for _, n := range g.Nodes {
		if !b.reach[n.Index] || len(b.tags[n.Index]) == 0 {
			continue
		}
		for _, f := range n.Writes {
			if f.Reducer == ReduceReplace {
				if writers == nil {
					writers = make([][]*Node, len(g.State.Fields))
				}
				writers[f.Index] = append(writers[f.Index], n)
			}
		}
	}
	for fi, ws := range writers {
		if len(ws) < 2 {
			continue
		}
		f := g.State.Fields[fi]
		for _, p := range conflictCandidates(b.tags, ws) {
			x, y := ws[p[0]], ws[p[1]]
			if !mhp(b.tags[x.Index], b.tags[y.Index]) {
				continue
			}
			d := c.errorf(WriteConflict, writeSpan(y, f), "nodes %s and %s may run in the same superstep and both write %s, whose reducer is replace", x.Name, y.Name, f.Name)
			d.Detail = "declare a reducer for " + f.Name + " (append, merge, sum, max, min) or order the two nodes"
			related(d, x.Name+" writes "+f.Name+" here", writeSpan(x, f))
		}
	}
}

// conflictCandidates returns the pairs (i < j, sorted) of writers ws that
// share a fork in their tags with different (or self-concurrent) tags of
// that fork: a superset of the pairs mhp holds for. Writers carrying the
// same tags of a fork, such as the nodes of one branch, are grouped and
// not paired through that fork.
func conflictCandidates(tags [][]tag, ws []*Node) [][2]int {
	type group struct {
		ws   []int // writers, ascending
		self bool  // their tags of the fork are concurrent with themselves
	}
	type forkGroups struct {
		byKey map[string]int
		list  []*group
	}
	var forks []int32
	byFork := map[int32]*forkGroups{}
	var key []byte
	for w, n := range ws {
		ts := tags[n.Index]
		for i := 0; i < len(ts); {
			j := i
			key = key[:0]
			for j < len(ts) && ts[j].fork == ts[i].fork {
				key = append(key, ts[j].atoms...)
				key = append(key, 0xff)
				j++
			}
			fg := byFork[ts[i].fork]
			if fg == nil {
				fg = &forkGroups{byKey: map[string]int{}}
				byFork[ts[i].fork] = fg
				forks = append(forks, ts[i].fork)
			}
			k, ok := fg.byKey[string(key)]
			if !ok {
				k = len(fg.list)
				fg.byKey[string(key)] = k
				fg.list = append(fg.list, &group{self: selfConcurrent(ts[i:j])})
			}
			fg.list[k].ws = append(fg.list[k].ws, w)
			i = j
		}
	}
	var out [][2]int
	add := func(a, z int) { out = append(out, [2]int{min(a, z), max(a, z)}) }
	for _, f := range forks {
		gs := byFork[f].list
		for gi, g := range gs {
			if g.self {
				for a := range g.ws {
					for z := a + 1; z < len(g.ws); z++ {
						add(g.ws[a], g.ws[z])
					}
				}
			}
			for _, h := range gs[gi+1:] {
				for _, a := range g.ws {
					for _, z := range h.ws {
						add(a, z)
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	uniq := out[:0]
	for i, p := range out {
		if i == 0 || p != out[i-1] {
			uniq = append(uniq, p)
		}
	}
	return uniq
}

// writeSpan is where n writes f.
func writeSpan(n *Node, f *Field) diag.Span {
	if n.Into == f {
		return n.IntoSpan
	}
	for _, s := range n.Set {
		if s.Field == f {
			return s.Span
		}
	}
	return n.Span
}

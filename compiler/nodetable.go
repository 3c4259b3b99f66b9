package compiler

import (
	"hash/maphash"
	"iter"

	"github.com/agentc/agentc/lang/syntax"
)

// NodeTable maps syntax nodes to values: the checker's side tables
// (Info.ExprTypes, Info.Refs). Keys compare as map keys do (a key of a
// type that is not comparable panics, as in a map). Entries are
// kept in insertion order, in blocks that never move, and a small table of
// indexes (four bytes a slot) finds them: a Go map of the same entries
// holds each one in a slot of its own, with room for an eighth more, and
// rounds its tables up to a power of two, which for a few thousand nodes
// allocated and zeroed about twice the bytes, most of them in slots that
// stayed empty.
//
// The zero NodeTable is empty and ready to use.
type NodeTable[V any] struct {
	slots  []int32 // open addressing: 0 empty, else 1 + the entry's index
	blocks [][]nodeEntry[V]
	shift  uint // blocks hold 1<<shift entries (0: not chosen yet)
	n      int
}

type nodeEntry[V any] struct {
	node syntax.Node
	val  V
}

// Entry blocks hold from 1<<minShift to 1<<maxShift entries, by the hint.
const (
	minShift = 5
	maxShift = 8
)

var nodeSeed = maphash.MakeSeed()

// newNodeTable returns a table with room for about hint entries.
func newNodeTable[V any](hint int) NodeTable[V] {
	m := NodeTable[V]{shift: minShift}
	for m.shift < maxShift && 4<<m.shift < hint {
		m.shift++
	}
	if hint > 0 {
		m.slots = make([]int32, slotsFor(hint))
	}
	return m
}

// slotsFor is the table size for n entries: a power of two at most three
// quarters full.
func slotsFor(n int) int {
	size := 64
	for size*3 < n*4 {
		size *= 2
	}
	return size
}

// Len returns the number of entries.
func (m *NodeTable[V]) Len() int {
	if m == nil {
		return 0
	}
	return m.n
}

// at returns entry i.
func (m *NodeTable[V]) at(i int) *nodeEntry[V] {
	return &m.blocks[i>>m.shift][i&(1<<m.shift-1)]
}

// find returns the slot of n: its entry's, or the empty slot where it
// would go.
func (m *NodeTable[V]) find(n syntax.Node) (slot int, e *nodeEntry[V]) {
	mask := len(m.slots) - 1
	for s := int(maphash.Comparable(nodeSeed, n)) & mask; ; s = (s + 1) & mask {
		k := m.slots[s]
		if k == 0 {
			return s, nil
		}
		if e := m.at(int(k - 1)); e.node == n {
			return s, e
		}
	}
}

// getNear is Get for a caller whose lookups mostly follow the order in
// which the entries were recorded (lowering walks the tree as the checker
// did): it first looks at the entries around *hint, the index of its last
// hit, and leaves *hint at this one. In a large program the slot table and
// the entries are out of cache, and a hashed lookup is two dependent misses;
// the neighbours of the last hit are usually in cache.
func (m *NodeTable[V]) getNear(n syntax.Node, hint *int) (V, bool) {
	var zero V
	if m == nil || m.n == 0 {
		return zero, false
	}
	for i := max(*hint-2, 0); i < min(*hint+6, m.n); i++ {
		if e := m.at(i); e.node == n {
			*hint = i
			return e.val, true
		}
	}
	s, e := m.find(n)
	if e == nil {
		return zero, false
	}
	*hint = int(m.slots[s] - 1)
	return e.val, true
}

// Get returns the value of n and whether n has one.
func (m *NodeTable[V]) Get(n syntax.Node) (V, bool) {
	if m == nil || m.n == 0 {
		var zero V
		return zero, false
	}
	_, e := m.find(n)
	if e == nil {
		var zero V
		return zero, false
	}
	return e.val, true
}

// Of returns the value of n, or the zero value.
func (m *NodeTable[V]) Of(n syntax.Node) V {
	v, _ := m.Get(n)
	return v
}

// set gives n the value v.
func (m *NodeTable[V]) set(n syntax.Node, v V) {
	if (m.n+1)*4 > len(m.slots)*3 {
		m.grow()
	}
	s, e := m.find(n)
	if e != nil {
		e.val = v
		return
	}
	if m.shift == 0 {
		m.shift = minShift
	}
	if m.n>>m.shift == len(m.blocks) {
		m.blocks = append(m.blocks, make([]nodeEntry[V], 1<<m.shift))
	}
	e = m.at(m.n)
	e.node, e.val = n, v
	m.n++
	m.slots[s] = int32(m.n)
}

// grow doubles the slot table (or makes the first one).
func (m *NodeTable[V]) grow() {
	m.slots = make([]int32, max(2*len(m.slots), 64))
	mask := len(m.slots) - 1
	for i := range m.n {
		s := int(maphash.Comparable(nodeSeed, m.at(i).node)) & mask
		for m.slots[s] != 0 {
			s = (s + 1) & mask
		}
		m.slots[s] = int32(i + 1)
	}
}

// All yields every node and its value, in the order they were recorded.
func (m *NodeTable[V]) All() iter.Seq2[syntax.Node, V] {
	return func(yield func(syntax.Node, V) bool) {
		if m == nil {
			return
		}
		for i := range m.n {
			if e := m.at(i); !yield(e.node, e.val) {
				return
			}
		}
	}
}

// RefTable is Info.Refs: a NodeTable of references, each stored as its
// kind and the one thing it names (a Ref holds a field for every kind,
// 80 bytes; packed, 24), so that the table of a large graph's few thousand
// names stays small. A Ref that names more than one thing is stored whole.
type RefTable struct{ t NodeTable[packedRef] }

type packedRef struct {
	kind RefKind
	to   any // *Field, *Node, Decl, *Func, string (Var or Symbol) or, for any other Ref, *Ref
}

func newRefTable(hint int) RefTable { return RefTable{newNodeTable[packedRef](hint)} }

func pack(r Ref) packedRef {
	p := packedRef{kind: r.Kind}
	var only bool
	switch r.Kind {
	case RefField:
		p.to, only = r.Field, r == Ref{Kind: r.Kind, Field: r.Field}
	case RefNode:
		p.to, only = r.Node, r == Ref{Kind: r.Kind, Node: r.Node}
	case RefDecl:
		p.to, only = r.Decl, r == Ref{Kind: r.Kind, Decl: r.Decl}
	case RefFunc:
		p.to, only = r.Func, r == Ref{Kind: r.Kind, Func: r.Func}
	case RefVar, RefLoopVar:
		p.to, only = r.Var, r == Ref{Kind: r.Kind, Var: r.Var}
	case RefSymbol:
		p.to, only = r.Symbol, r == Ref{Kind: r.Kind, Symbol: r.Symbol}
	}
	if !only {
		whole := new(Ref) // (not &r: r would escape on every call)
		*whole = r
		p.to = whole
	}
	return p
}

func (p packedRef) ref() Ref {
	if r, ok := p.to.(*Ref); ok {
		return *r
	}
	r := Ref{Kind: p.kind}
	switch p.kind {
	case RefField:
		r.Field, _ = p.to.(*Field)
	case RefNode:
		r.Node, _ = p.to.(*Node)
	case RefDecl:
		r.Decl, _ = p.to.(Decl)
	case RefFunc:
		r.Func, _ = p.to.(*Func)
	case RefVar, RefLoopVar:
		r.Var, _ = p.to.(string)
	case RefSymbol:
		r.Symbol, _ = p.to.(string)
	}
	return r
}

// Len returns the number of references.
func (m *RefTable) Len() int {
	if m == nil {
		return 0
	}
	return m.t.Len()
}

// Get returns what n names and whether it names anything.
func (m *RefTable) Get(n syntax.Node) (Ref, bool) {
	if m == nil {
		return Ref{}, false
	}
	p, ok := m.t.Get(n)
	if !ok {
		return Ref{}, false
	}
	return p.ref(), true
}

// getNear is Get through NodeTable.getNear.
func (m *RefTable) getNear(n syntax.Node, hint *int) (Ref, bool) {
	if m == nil {
		return Ref{}, false
	}
	p, ok := m.t.getNear(n, hint)
	if !ok {
		return Ref{}, false
	}
	return p.ref(), true
}

// Of returns what n names, or the zero Ref.
func (m *RefTable) Of(n syntax.Node) Ref {
	r, _ := m.Get(n)
	return r
}

func (m *RefTable) set(n syntax.Node, r Ref) { m.t.set(n, pack(r)) }

// All yields every name and what it names, in the order they were
// resolved.
func (m *RefTable) All() iter.Seq2[syntax.Node, Ref] {
	return func(yield func(syntax.Node, Ref) bool) {
		if m == nil {
			return
		}
		for n, p := range m.t.All() {
			if !yield(n, p.ref()) {
				return
			}
		}
	}
}

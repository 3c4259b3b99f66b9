package compiler

import (
	"testing"

	"github.com/agentc/agentc/lang/syntax"
)

// TestNodeTable checks the side table against a Go map of the same
// operations: lookups, overwrites, growth past the hint, insertion order,
// and keys that compare by value (a node passed by value, not pointer).
func TestNodeTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hint  int
		nodes int
	}{
		{"zero value", -1, 300},
		{"no hint", 0, 10},
		{"exact hint", 500, 500},
		{"hint far too small", 8, 2000},
		{"hint too large", 4000, 3},
		{"empty", 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m NodeTable[int]
			if tc.hint >= 0 {
				m = newNodeTable[int](tc.hint)
			}
			want := map[syntax.Node]int{}
			var order []syntax.Node
			for i := range tc.nodes {
				var n syntax.Node = &syntax.Ident{Name: "x"}
				if i%7 == 3 {
					n = &syntax.Name{Ident: "y"}
				}
				m.set(n, i)
				want[n] = i
				order = append(order, n)
				if i%5 == 0 { // overwrite an earlier node
					k := order[i/2]
					m.set(k, -i)
					want[k] = -i
				}
			}
			if m.Len() != len(want) {
				t.Fatalf("Len = %d, want %d", m.Len(), len(want))
			}
			for k, v := range want {
				if got, ok := m.Get(k); !ok || got != v {
					t.Fatalf("Get(%p) = %d, %v; want %d, true", k, got, ok, v)
				}
			}
			if _, ok := m.Get(&syntax.Ident{Name: "x"}); ok {
				t.Fatal("Get of a node never set reports a value")
			}
			if got := m.Of(&syntax.Name{}); got != 0 {
				t.Fatalf("Of of a node never set = %d, want 0", got)
			}
			i := 0
			for k, v := range m.All() {
				if k != order[i] || v != want[k] {
					t.Fatalf("All()[%d] = %p %d, want %p %d (insertion order)", i, k, v, order[i], want[order[i]])
				}
				i++
			}
			if i != len(order) {
				t.Fatalf("All yielded %d entries, want %d", i, len(order))
			}
		})
	}

	// Keys compare as map keys: two equal values are one key.
	var m NodeTable[string]
	m.set(syntax.Ident{Name: "v"}, "first")
	m.set(syntax.Ident{Name: "v"}, "second")
	if got, ok := m.Get(syntax.Ident{Name: "v"}); !ok || got != "second" || m.Len() != 1 {
		t.Fatalf("value key: Get = %q, %v, Len %d; want second, true, 1", got, ok, m.Len())
	}

	// A nil table is empty.
	var nilTable *NodeTable[int]
	if _, ok := nilTable.Get(&syntax.Ident{}); ok || nilTable.Len() != 0 {
		t.Fatal("nil table is not empty")
	}
	for range nilTable.All() {
		t.Fatal("nil table yields entries")
	}
}

// TestRefTable: every kind of reference comes back as it was set, packed or
// (naming more than one thing) whole.
func TestRefTable(t *testing.T) {
	f, n, fn := &Field{Name: "f"}, &Node{Name: "n"}, &Func{Name: "len"}
	d := &Graph{}
	refs := []Ref{
		{Kind: RefField, Field: f},
		{Kind: RefField}, // a field that did not resolve
		{Kind: RefNode, Node: n},
		{Kind: RefLoopVar, Var: "item"},
		{Kind: RefVar, Var: "input"},
		{Kind: RefDecl, Decl: d},
		{Kind: RefDecl}, // a nil declaration
		{Kind: RefFunc, Func: fn},
		{Kind: RefSymbol, Symbol: "low"},
		{Kind: RefLoopVar, Node: n, Var: "item"}, // two things: stored whole
		{},
	}
	m := newRefTable(4)
	var keys []syntax.Node
	for i, r := range refs {
		k := &syntax.Ident{Name: string(rune('a' + i))}
		keys = append(keys, k)
		m.set(k, r)
	}
	for i, k := range keys {
		if got, ok := m.Get(k); !ok || got != refs[i] {
			t.Errorf("Get(ref %d) = %+v, %v; want %+v", i, got, ok, refs[i])
		}
	}
	i := 0
	for k, r := range m.All() {
		if k != keys[i] || r != refs[i] {
			t.Errorf("All()[%d] = %+v, want %+v", i, r, refs[i])
		}
		i++
	}
	if m.Len() != len(refs) || i != len(refs) {
		t.Errorf("Len %d, All yielded %d; want %d", m.Len(), i, len(refs))
	}
	if r, ok := m.Get(&syntax.Ident{}); ok || r != (Ref{}) {
		t.Errorf("Get of an unset node = %+v, %v", r, ok)
	}
}

// TestNodeTableGetNear: lookups near the hint, far from it, and of nodes
// never set agree with Get, and the hint follows the hits.
func TestNodeTableGetNear(t *testing.T) {
	m := newNodeTable[int](10)
	var keys []syntax.Node
	for i := range 100 {
		k := &syntax.Ident{Name: "k"}
		keys = append(keys, k)
		m.set(k, i)
	}
	hint := 0
	for _, i := range []int{0, 1, 2, 5, 4, 90, 91, 3, 99, 50, 49, 48} {
		got, ok := m.getNear(keys[i], &hint)
		if !ok || got != i || hint != i {
			t.Fatalf("getNear(key %d) = %d, %v, hint %d; want %d, true, hint %d", i, got, ok, hint, i, i)
		}
	}
	if _, ok := m.getNear(&syntax.Ident{}, &hint); ok || hint != 48 {
		t.Fatalf("getNear of a node never set: ok %v, hint %d (want false, unchanged 48)", ok, hint)
	}
	var empty NodeTable[int]
	if _, ok := empty.getNear(keys[0], &hint); ok {
		t.Fatal("getNear on an empty table reports a value")
	}
	r := newRefTable(4)
	r.set(keys[0], Ref{Kind: RefVar, Var: "input"})
	h := 0
	if got, ok := r.getNear(keys[0], &h); !ok || got != (Ref{Kind: RefVar, Var: "input"}) {
		t.Fatalf("RefTable.getNear = %+v, %v", got, ok)
	}
}

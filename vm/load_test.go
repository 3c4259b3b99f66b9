package vm

import (
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
)

// TestNewVerifiedMatchesNew: a sealed, verified program loads without
// verification to the same hash as New computes, and New leaves an unsealed
// program unmodified while hashing it.
func TestNewVerifiedMatchesNew(t *testing.T) {
	b := newGraph(t, fld("n", intT, ptr(vi(0)), 0))
	b.chain()
	m, err := New(b.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.p.Hash != ([32]byte{}) {
		t.Fatal("New modified the program's hash")
	}
	enc, err := bytecode.Seal(b.p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Hash() != bytecode.HashOf(enc) {
		t.Fatalf("New hashed %x, the encoding ends with %x", m.Hash(), bytecode.HashOf(enc))
	}
	v, err := NewVerified(b.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Hash() != m.Hash() || v.graphs[0].schemaHash != m.graphs[0].schemaHash || v.graphs[0].schemaHash != b.p.States[0].Hash {
		t.Fatalf("NewVerified: hash %x schema %x; New: %x %x", v.Hash(), v.graphs[0].schemaHash, m.Hash(), m.graphs[0].schemaHash)
	}
	if _, err := NewVerified(nil, nil); err == nil {
		t.Fatal("NewVerified(nil) loaded")
	}
}

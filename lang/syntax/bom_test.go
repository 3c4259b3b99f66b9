package syntax

import (
	"os"
	"testing"
)

// TestByteOrderMarkIgnored: a file that starts with a UTF-8 byte-order mark
// parses as the same file without it, at the same lines and columns.
func TestByteOrderMarkIgnored(t *testing.T) {
	src, err := os.ReadFile("testdata/support.agent")
	if err != nil {
		t.Fatal(err)
	}
	bom := append([]byte{0xEF, 0xBB, 0xBF}, src...)
	f1, d1 := Parse("a.agent", src)
	f2, d2 := Parse("a.agent", bom)
	if len(d1) != 0 || len(d2) != 0 {
		t.Fatalf("diagnostics: %v / %v", d1, d2)
	}
	if len(f1.Decls) != len(f2.Decls) {
		t.Fatalf("decl count differs: %d vs %d", len(f1.Decls), len(f2.Decls))
	}
	for i := range f1.Decls {
		a, b := f1.Decls[i].Span(), f2.Decls[i].Span()
		if a.Start.Line != b.Start.Line || a.Start.Col != b.Start.Col || b.Start.Offset != a.Start.Offset+3 {
			t.Errorf("decl %d at %v vs %v", i, a, b)
		}
	}
	// Only at the start: elsewhere it is still a stray character.
	if _, ds := Parse("b.agent", append(append([]byte{}, src...), 0xEF, 0xBB, 0xBF)); len(ds) == 0 {
		t.Error("a byte-order mark after the start is accepted")
	}
}

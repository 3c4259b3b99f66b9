package syntax

import (
	"os"
	"strings"
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

// TestOneErrorPerCause: a name with letters outside ASCII is one error
// however often it is used; an interpolation left open before its
// string's closing quote is one error naming it, and the rest parses.
func TestOneErrorPerCause(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"state S { q: string }\ngraph g(S) input q {\n  node résumé = set { q = \"a\" }\n  start -> résumé\n  résumé -> end\n}\n", `name "résumé" is not ASCII`},
		{"state S { q: string }\ngraph g(S) input q {\n  node n = set { q = \"hello {q\" } // \"quoted\"\n  start -> n\n  n -> end\n}\n", "interpolation is not closed before the end of the string"},
		{"state S { q: string }\ngraph g(S) input q {\n  node n = set { q = \"hello {f(q\" }\n  start -> n\n  n -> end\n}\n", "interpolation is not closed before the end of the string"},
	} {
		_, ds := Parse("a.agent", []byte(tc.src))
		if len(ds) != 1 || !strings.Contains(ds[0].Summary, tc.want) {
			t.Errorf("%q: %v, want one %q", tc.src, ds, tc.want)
		}
	}
	// Strings inside interpolations still lex as strings.
	if _, ds := Parse("b.agent", []byte("state S { q: string = \"a {q or \"b\"} {x[\"k\"]} {f(\"c\")}\" }\n")); len(ds) != 0 {
		t.Errorf("nested strings: %v", ds)
	}
}

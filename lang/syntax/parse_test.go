package syntax

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/lang/diag"
)

func mustParse(t *testing.T, name, src string) *File {
	t.Helper()
	f, ds := Parse(name, []byte(src))
	for _, d := range ds {
		t.Errorf("unexpected diagnostic: %v", d)
	}
	return f
}

func TestParseWorkedExample(t *testing.T) {
	src, err := os.ReadFile("testdata/support.agent")
	if err != nil {
		t.Fatal(err)
	}
	f := mustParse(t, "support.agent", string(src))
	kinds := map[string]int{}
	for _, d := range f.Decls {
		kinds[fmt.Sprintf("%T", d)]++
	}
	want := map[string]int{"*syntax.Workflow": 1, "*syntax.BlockDecl": 4, "*syntax.TypeDecl": 2, "*syntax.Tool": 2,
		"*syntax.Skill": 1, "*syntax.State": 1, "*syntax.Agent": 1, "*syntax.Graph": 1, "*syntax.Serve": 1, "*syntax.Test": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s: got %d, want %d", k, kinds[k], n)
		}
	}
	if len(f.Comments) == 0 {
		t.Errorf("comments were not collected")
	}
	var g *Graph
	for _, d := range f.Decls {
		if gg, ok := d.(*Graph); ok {
			g = gg
		}
	}
	if g == nil || len(g.Items) != 13 {
		t.Fatalf("graph items: got %v", g)
	}
	scan := g.Items[1].Node
	m, ok := scan.Body.(*MapNode)
	if !ok || m.Var.Name != "h" || m.Concurrency.Text != "4" || len(m.Clauses) != 3 {
		t.Fatalf("map node parsed wrong: %+v", scan.Body)
	}
	if r := m.Clauses[0].Retry; r == nil || r.Attempts.Text != "3" || r.Min.Text != "200ms" || r.Max.Text != "5s" {
		t.Errorf("retry clause parsed wrong")
	}
	last := g.Items[len(g.Items)-2].Edge // approve -> write otherwise max 3 else -> end
	if last == nil || !last.Otherwise || last.Max.Text != "3" || last.Else.Name != "end" {
		t.Errorf("bounded edge parsed wrong: %+v", last)
	}
	sp := g.Name.Span()
	if sp.File != "support.agent" || sp.Start.Line == 0 || sp.End.Col-sp.Start.Col != len("investigate") {
		t.Errorf("graph name span = %+v", sp)
	}
}

func TestOneSyntaxErrorPerDeclaration(t *testing.T) {
	src := `workflow w

state S {
  a : string
  b : int =
}

graph g(S) {
  node x = set { a = "x" }
  start -> x
  x -> end
}

tool t {
  input { q: string }
  run = builtin.
}

model m { name = "x" }
`
	f, ds := Parse("e.agent", []byte(src))
	if len(ds) != 2 {
		t.Fatalf("want 2 diagnostics, got %v", ds)
	}
	if ds[0].Subject.Start.Line != 5 && ds[0].Subject.Start.Line != 6 {
		t.Errorf("first error at %v, want line 5 or 6", ds[0].Subject)
	}
	if ds[1].Subject.Start.Line != 17 {
		t.Errorf("second error at %v, want line 17: %v", ds[1].Subject, ds[1])
	}
	var bad, good int
	for _, d := range f.Decls {
		if b, ok := d.(*BadDecl); ok {
			bad++
			if b.Name == nil {
				t.Errorf("bad decl %q lost its name", b.Keyword)
			}
		} else {
			good++
		}
	}
	if bad != 2 || good != 3 {
		t.Errorf("decls: %d bad, %d good; want 2 and 3", bad, good)
	}
}

func TestMissingBraceDoesNotSwallowFile(t *testing.T) {
	src := "state S {\n  a : string\n\ngraph g(S) {\n  start -> end\n}\n\nmodel m { name = 1 }\n"
	f, ds := Parse("b.agent", []byte(src))
	if len(ds) != 1 {
		t.Fatalf("want 1 diagnostic, got %v", ds)
	}
	if len(f.Decls) != 3 {
		t.Fatalf("want 3 decls after recovery, got %d", len(f.Decls))
	}
	if _, ok := f.Decls[1].(*Graph); !ok {
		t.Errorf("graph after the broken state was not parsed: %T", f.Decls[1])
	}
}

func TestBadInput(t *testing.T) {
	deep := "graph g(S) { node a = set { x = " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + " } }"
	cases := []struct {
		name string
		src  []byte
		code diag.Code
		line int
	}{
		{"binary", []byte{0x7f, 'E', 'L', 'F', 0xff, 0xfe, 0x00, 0x01}, diag.InvalidUTF8, 1},
		{"invalid utf8 later", []byte("workflow w\n\"caf\xe9\""), diag.InvalidUTF8, 2},
		{"too large", bytes.Repeat([]byte("// x\n"), MaxSourceSize/5+1), diag.FileTooLarge, 1},
		{"deep nesting", []byte(deep), diag.NestingTooDeep, 1},
		{"unterminated string", []byte("workflow w \"doc\nmodel m { name = \"x\" }\n"), diag.UnterminatedText, 1},
		{"unterminated text", []byte("agent a llm { instruction = \"\"\"\n hello\n"), diag.UnterminatedText, 1},
		{"unterminated comment", []byte("workflow w\n/* never closed\n"), diag.UnterminatedText, 2},
		{"unterminated interpolation", []byte("model m { name = \"{a\" }\n"), diag.UnterminatedText, 1},
		{"invalid escape", []byte("model m { name = \"a\\qb\" }\n"), diag.InvalidEscape, 1},
		{"unmatched brace in string", []byte("model m { name = \"a } b\" }\n"), diag.InvalidEscape, 1},
		{"bad duration", []byte("model m { timeout = 5sx }\n"), diag.InvalidNumber, 1},
		{"stray character", []byte("model m { name = @ }\n"), diag.SyntaxError, 1},
		{"garbage at top", []byte("hello world\n"), diag.SyntaxError, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, ds := Parse("bad.agent", tc.src)
			if time.Since(start) > 5*time.Second {
				t.Errorf("parse took %v", time.Since(start)) // a hang guard, not a benchmark
			}
			for _, d := range ds {
				if d.Code == tc.code {
					if d.Subject.Start.Line != tc.line {
						t.Errorf("%s at line %d, want %d", d.Code, d.Subject.Start.Line, tc.line)
					}
					return
				}
			}
			t.Errorf("want a %s diagnostic, got %v", tc.code, ds)
		})
	}
}

func TestCRLFMatchesLF(t *testing.T) {
	src, err := os.ReadFile("testdata/support.agent")
	if err != nil {
		t.Fatal(err)
	}
	crlf := bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))
	f1, d1 := Parse("a.agent", src)
	f2, d2 := Parse("a.agent", crlf)
	if len(d1) != 0 || len(d2) != 0 {
		t.Fatalf("diagnostics: %v / %v", d1, d2)
	}
	if len(f1.Decls) != len(f2.Decls) {
		t.Fatalf("decl count differs: %d vs %d", len(f1.Decls), len(f2.Decls))
	}
	for i := range f1.Decls {
		a, b := f1.Decls[i].Span(), f2.Decls[i].Span()
		if a.Start.Line != b.Start.Line || a.Start.Col != b.Start.Col {
			t.Errorf("decl %d at %v vs %v", i, a, b)
		}
	}
}

func TestColumnsCountRunes(t *testing.T) {
	_, ds := Parse("u.agent", []byte("model m { name = \"héllo\" x = @ }\n"))
	if len(ds) == 0 {
		t.Fatal("want a diagnostic")
	}
	if got := ds[0].Subject.Start.Col; got != 30 {
		t.Errorf("column = %d, want 30 (runes, not bytes)", got)
	}
}

func stringOf(t *testing.T, src string) *String {
	t.Helper()
	f := mustParse(t, "s.agent", "model m { v = "+src+" }")
	if len(f.Decls) != 1 {
		t.Fatalf("no decl")
	}
	post := f.Decls[0].(*BlockDecl).Body.Attrs[0].Value.Or.Head.Head.Cmp.Left.Head.Head.Postfix
	s, ok := post.Primary.(*String)
	if !ok {
		t.Fatalf("not a string: %T", post.Primary)
	}
	return s
}

func render(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Expr != nil {
			b.WriteString("<expr>")
		} else {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

func TestStringSegments(t *testing.T) {
	cases := []struct{ src, want string }{
		{`"plain"`, "plain"},
		{`"a\tb\n\"q\"\\ \u00e9"`, "a\tb\n\"q\"\\ é"},
		{`"{{json}} {x} }}"`, "{json} <expr> }"},
		{`"outer {join(xs, ", ")} done"`, "outer <expr> done"},
		{`""`, ""},
		{"\"\"\"\n    line one\n      indented {x}\n    last\n  \"\"\"", "line one\n  indented <expr>\nlast"},
		{"\"\"\"\n\tTab {{a}}\n\t\"\"\"", "Tab {a}"},
		{"\"\"\"same line\"\"\"", "same line"},
		{"\"\"\"\n  a \"quote\" inside\n\n  b\n\"\"\"", "a \"quote\" inside\n\nb"},
	}
	for _, tc := range cases {
		s := stringOf(t, tc.src)
		if got := render(s.Segments()); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.src, got, tc.want)
		}
	}
	if v, ok := stringOf(t, `"a{{b"`).Literal(); !ok || v != "a{b" {
		t.Errorf("Literal = %q, %v", v, ok)
	}
	if _, ok := stringOf(t, `"a{b}"`).Literal(); ok {
		t.Errorf("Literal of an interpolated string must fail")
	}
}

func TestKeywordsHaveOneClass(t *testing.T) {
	seen := map[string]KeywordClass{}
	for _, k := range Keywords() {
		if c, dup := seen[k.Word]; dup {
			t.Errorf("keyword %q in both %s and %s", k.Word, c, k.Class)
		}
		seen[k.Word] = k.Class
	}
	for _, w := range []string{"workflow", "graph", "test", "serve"} {
		if !IsDeclKeyword(w) {
			t.Errorf("%s must start a declaration", w)
		}
	}
}

// generate writes a workflow of about n lines: types, tools, agents and one
// long graph, exercising every production on the hot path.
func generate(n int) []byte {
	var b bytes.Buffer
	b.WriteString("workflow gen \"generated\"\n\nmodel fast {\n  provider = openai\n  name = \"m\"\n}\n\n")
	b.WriteString("state S {\n  q : string\n  n : int = 0\n  xs : list<string> reduce append\n}\n\n")
	lines := 12
	for i := 0; lines < n/2; i++ {
		fmt.Fprintf(&b, "tool t%d \"tool %d\" {\n  input { host: string, port: int = 443 }\n  output string\n  run = builtin.x\n  effect = read_only\n}\n\n", i, i)
		lines += 7
	}
	b.WriteString("graph g(S) input q {\n")
	nodes := (n - lines) / 3
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&b, "  node n%d = set { n = n + %d, q = \"step {n} of {len(xs)}\" }\n", i, i)
	}
	b.WriteString("  start -> n0\n")
	for i := 0; i+1 < nodes; i++ {
		fmt.Fprintf(&b, "  n%d -> n%d when n > %d and q != \"x\"\n  n%d -> end otherwise\n", i, i+1, i, i)
	}
	fmt.Fprintf(&b, "  n%d -> end\n}\n", nodes-1)
	return b.Bytes()
}

func BenchmarkParse10kLines(b *testing.B)  { benchParse(b, 10_000) }
func BenchmarkParse100kLines(b *testing.B) { benchParse(b, 100_000) }

func benchParse(b *testing.B, n int) {
	src := generate(n)
	if _, ds := Parse("gen.agent", src); len(ds) > 0 {
		b.Fatalf("generated source has diagnostics: %v", ds[0])
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Parse("gen.agent", src)
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.agent")
	more, _ := filepath.Glob("../../examples/*/*.agent")
	for _, p := range append(seeds, more...) {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("model m { v = \"{x {y}}\" }"))
	f.Add([]byte("\"\"\"{\"\"\""))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, ds := Parse("fuzz.agent", src)
		if file == nil {
			t.Fatal("nil file")
		}
		for _, d := range ds {
			if d.Subject.Start.Offset > len(src) || d.Subject.End.Offset > len(src)+1 {
				t.Fatalf("diagnostic out of range: %v (len %d)", d, len(src))
			}
		}
		for _, d := range file.Decls {
			if s, ok := d.(interface{ Span() diag.Span }); ok && s.Span().Start.Offset > len(src) {
				t.Fatalf("decl span out of range")
			}
		}
	})
}

package format

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/lang/syntax"
)

var update = flag.Bool("update", false, "rewrite the out.agent sections of testdata/*.txtar")

// TestGolden formats the in.agent section of every testdata/*.txtar file and
// compares the result with its out.agent section. With -update it rewrites
// out.agent instead. Every case also goes through checkInvariants.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(data)
			in, ok := ar.get("in.agent")
			if !ok {
				t.Fatalf("%s has no in.agent section", file)
			}
			got := checkInvariants(t, filepath.Base(file), in)
			if *update {
				ar.set("out.agent", got)
				if err := os.WriteFile(file, ar.format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := ar.get("out.agent")
			if !ok {
				t.Fatalf("%s has no out.agent section (run go test -update)", file)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("formatted output differs from out.agent (run go test -update to accept)\n%s", lineDiff(want, got))
			}
		})
	}
}

// checkInvariants formats src, which must parse cleanly, and checks that the
// output parses to the same tree (positions aside) with the same string
// values and comments, and formats to itself. It returns the output.
func checkInvariants(t testing.TB, name string, src []byte) []byte {
	t.Helper()
	f1, diags := syntax.Parse(name, src)
	if len(diags) > 0 {
		t.Fatalf("input does not parse: %v", diags)
	}
	out, err := Source(f1, src)
	if err != nil {
		t.Fatalf("Source: %v", err)
	}
	f2, diags := syntax.Parse(name, out)
	if len(diags) > 0 {
		t.Fatalf("output does not parse: %v\n%s", diags, out)
	}
	if d := diffAST("File", reflect.ValueOf(f1), reflect.ValueOf(f2)); d != "" {
		t.Fatalf("output's syntax tree differs at %s\n%s", d, out)
	}
	if a, b := commentTexts(f1), commentTexts(f2); !reflect.DeepEqual(a, b) {
		t.Fatalf("comments changed:\n in: %q\nout: %q\n%s", a, b, out)
	}
	again, err := Source(f2, out)
	if err != nil {
		t.Fatalf("Source of the output: %v", err)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("formatting is not idempotent:\n%s\n--- input ---\n%s", lineDiff(out, again), src)
	}
	if len(out) > 0 && (!bytes.HasSuffix(out, []byte("\n")) || bytes.HasSuffix(out, []byte("\n\n"))) {
		t.Fatalf("output does not end with exactly one newline: %q", out)
	}
	if n, max := bytes.Count(out, []byte("\r")), contentCRs(f1); n > max {
		t.Fatalf("output has %d carriage returns, only %d of the input's are string or comment content:\n%q", n, max, out)
	}
	return out
}

// contentCRs counts the carriage returns that are string or comment
// content rather than line endings: the only ones the output may keep.
func contentCRs(f *syntax.File) int {
	n := stringCRs(reflect.ValueOf(f))
	for _, text := range commentTexts(f) {
		n += strings.Count(text, "\r")
	}
	return n
}

// stringCRs counts the carriage returns in the literal parts of strings
// under v.
func stringCRs(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		if part, ok := v.Interface().(*syntax.StrPart); ok && part.Text != nil {
			return strings.Count(*part.Text, "\r")
		}
		return stringCRs(v.Elem())
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += stringCRs(v.Field(i))
			}
		}
		return n
	case reflect.Slice:
		n := 0
		for i := range v.Len() {
			n += stringCRs(v.Index(i))
		}
		return n
	}
	return 0
}

// commentTexts lists the comments of f as the printer writes them.
func commentTexts(f *syntax.File) []string {
	out := make([]string, 0, len(f.Comments))
	for _, c := range f.Comments {
		text, _ := commentText(c)
		out = append(out, text)
	}
	return out
}

var (
	atType     = reflect.TypeFor[syntax.At]()
	stringType = reflect.TypeFor[*syntax.String]()
	fileType   = reflect.TypeFor[syntax.File]()
)

// diffAST compares two syntax trees ignoring positions and returns the path
// of the first difference, or "". Strings compare by Open, Close and
// Segments(), so a string is equal exactly when its value is; File compares
// only its declarations (comments are checked separately).
func diffAST(path string, a, b reflect.Value) string {
	if a.IsValid() != b.IsValid() {
		return path
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s (%s vs %s)", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + " (nil vs non-nil)"
			}
			return ""
		}
		if a.Type() == stringType {
			return diffString(path, a.Interface().(*syntax.String), b.Interface().(*syntax.String))
		}
		return diffAST(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if f.Type == atType || (a.Type() == fileType && f.Name != "Decls") {
				continue
			}
			if d := diffAST(path+"."+f.Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s (length %d vs %d)", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffAST(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s (%q vs %q)", path, a.String(), b.String())
		}
		return ""
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return path
		}
		return ""
	}
	if !a.Equal(b) {
		return path
	}
	return ""
}

func diffString(path string, a, b *syntax.String) string {
	if a.Open != b.Open || a.Close != b.Close {
		return path + " (delimiters)"
	}
	sa, sb := a.Segments(), b.Segments()
	if len(sa) != len(sb) {
		return fmt.Sprintf("%s (value: %d vs %d segments)", path, len(sa), len(sb))
	}
	for i := range sa {
		if sa[i].Text != sb[i].Text {
			return fmt.Sprintf("%s.Segments()[%d] (%q vs %q)", path, i, sa[i].Text, sb[i].Text)
		}
		if d := diffAST(fmt.Sprintf("%s.Segments()[%d].Expr", path, i), reflect.ValueOf(sa[i].Expr), reflect.ValueOf(sb[i].Expr)); d != "" {
			return d
		}
	}
	return ""
}

// lineDiff shows the first differing lines of want and got.
func lineDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\nwant %q\n got %q\n--- got ---\n%s", i+1, a, b, got)
		}
	}
	return "(no difference)"
}

// ---- txtar ----

// archive is a txtar file: a comment and named sections ("-- name --").
type archive struct {
	comment []byte
	names   []string
	data    [][]byte
}

func parseTxtar(data []byte) *archive {
	ar := &archive{}
	cur := &ar.comment
	for len(data) > 0 {
		ln, rest, _ := bytes.Cut(data, []byte("\n"))
		if name, ok := marker(ln); ok {
			ar.names = append(ar.names, name)
			ar.data = append(ar.data, nil)
			cur = &ar.data[len(ar.data)-1]
		} else {
			*cur = append(append(*cur, ln...), '\n')
		}
		data = rest
	}
	return ar
}

func marker(ln []byte) (string, bool) {
	s := string(ln)
	if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
		return strings.TrimSpace(s[3 : len(s)-3]), true
	}
	return "", false
}

func (ar *archive) get(name string) ([]byte, bool) {
	for i, n := range ar.names {
		if n == name {
			return ar.data[i], true
		}
	}
	return nil, false
}

func (ar *archive) set(name string, data []byte) {
	for i, n := range ar.names {
		if n == name {
			ar.data[i] = data
			return
		}
	}
	ar.names = append(ar.names, name)
	ar.data = append(ar.data, data)
}

func (ar *archive) format() []byte {
	var b bytes.Buffer
	b.Write(ar.comment)
	for i, n := range ar.names {
		fmt.Fprintf(&b, "-- %s --\n", n)
		b.Write(ar.data[i])
		if len(ar.data[i]) > 0 && !bytes.HasSuffix(ar.data[i], []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// ---- focused tests ----

// CRLF line endings become LF. The one exception is documented: the
// example's multi-line text block keeps its carriage returns because they
// are part of its value.
func TestCRLF(t *testing.T) {
	ar := parseTxtar(mustRead(t, "testdata/support.txtar"))
	in, _ := ar.get("in.agent")
	want, _ := ar.get("out.agent")
	crlf := bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
	got := checkInvariants(t, "crlf.agent", crlf)
	if lf := bytes.ReplaceAll(got, []byte("\r"), nil); !bytes.Equal(lf, want) {
		t.Errorf("CRLF input formats differently from LF input\n%s", lineDiff(want, lf))
	}
	inBlock := false
	for ln := range strings.Lines(string(got)) {
		if strings.Contains(ln, "\r") && !inBlock && !strings.HasSuffix(ln, "\"\"\"\r\n") {
			t.Errorf("carriage return outside a text block: %q", ln)
		}
		if strings.Count(ln, `"""`)%2 == 1 {
			inBlock = !inBlock
		}
	}

	// A carriage return inside a "..." string is its content and stays.
	got = checkInvariants(t, "cr3.agent", []byte("model m { s = \"a\rb\" }\r\n"))
	if string(got) != "model m { s = \"a\rb\" }\n" {
		t.Errorf("got %q", got)
	}

	// Without multi-line text blocks the output is pure LF.
	src := []byte("model m {\r\n  a = 1 // c\r\n  /* x\r\n  y */\r\n  b = \"\"\"one line\"\"\"\r\n}\r\n")
	got = checkInvariants(t, "crlf2.agent", src)
	if bytes.Contains(got, []byte("\r")) {
		t.Errorf("carriage return in %q", got)
	}
}

// A carriage return inside a multi-line text block is part of its value
// today (see the package doc), so it must survive formatting.
// TestCRLFTextBlockBecomesLF: a text block's value does not depend on line
// endings (syntax.String.Segments reads CRLF as LF), so CRLF files format to
// LF everywhere, text blocks included, without changing any value.
func TestCRLFTextBlockBecomesLF(t *testing.T) {
	src := []byte("agent a llm {\r\n  instruction = \"\"\"\r\n    one\r\n    two\r\n  \"\"\"\r\n}\r\n")
	got := checkInvariants(t, "cr.agent", src)
	want := "agent a llm {\n  instruction = \"\"\"\n    one\n    two\n  \"\"\"\n}\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestEmptyAndCommentOnly(t *testing.T) {
	for src, want := range map[string]string{
		"":                      "",
		"\n\n  \n":              "",
		"// only\n\n\n// two  ": "// only\n\n// two\n",
		"/* a */ /* b */":       "/* a */ /* b */\n",
	} {
		if got := checkInvariants(t, "e.agent", []byte(src)); string(got) != want {
			t.Errorf("%q: got %q, want %q", src, got, want)
		}
	}
}

func TestSourceRefuses(t *testing.T) {
	if _, err := Source(nil, nil); err == nil {
		t.Error("nil file accepted")
	}
	for _, src := range []string{
		"model a { x = }\nmodel b { y = 1 }\n", // a BadDecl
		"model a { x = 1 }\n42 junk\n",         // text outside any declaration
		"!!!",                                  // nothing parsed at all
	} {
		f, diags := syntax.Parse("bad.agent", []byte(src))
		if len(diags) == 0 {
			t.Fatalf("%q: expected syntax errors", src)
		}
		if out, err := Source(f, []byte(src)); err == nil {
			t.Errorf("%q: Source accepted a file with syntax errors: %q", src, out)
		}
		if out, ds := Bytes("bad.agent", []byte(src)); out != nil || len(ds) == 0 {
			t.Errorf("%q: Bytes returned %q, %v", src, out, ds)
		}
	}
	f, _ := syntax.Parse("a.agent", []byte("model a {}\n"))
	if _, err := Source(f, []byte("model a {}\n\n")); err == nil {
		t.Error("Source accepted a source that does not match the tree")
	}
	if _, err := Source(&syntax.File{Decls: []syntax.Decl{&syntax.Workflow{}}}, nil); err == nil {
		t.Error("Source accepted an incomplete tree")
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---- benchmark ----

// generated returns a well-formed file of at least n lines.
func generated(n int) []byte {
	var b bytes.Buffer
	b.WriteString("// generated\nworkflow big \"A large generated file\"\n\n")
	for i := 0; bytes.Count(b.Bytes(), []byte("\n")) < n; i++ {
		fmt.Fprintf(&b, `model m%[1]d {
  provider = openai  // comment %[1]d
  name = "gpt-4o-mini"
  context_window = 128000
}
type T%[1]d { verdict: "a" | "b", hosts: list<string> }
state S%[1]d {
  question : string
  evidence : list<string> reduce append
  report : string = ""
}
agent a%[1]d llm {
  model = m%[1]d
  instruction = """
    Investigate {question} carefully.
  """
  tools = [x, y, z]
}
graph g%[1]d(S%[1]d) input question output report {
  node triage = llm a%[1]d { prompt = "Triage: {question}" } into report
  node scan = map h in evidence concurrency 4 {
    tool t { host = h }
    retry 3 backoff 200ms..5s timeout 30s
  } into evidence
  start -> triage
  triage -> scan when len(evidence) > 0 and not (report == "")
  triage -> end otherwise
  scan -> end
}

`, i)
	}
	return b.Bytes()
}

func BenchmarkSource(b *testing.B) {
	src := generated(10000)
	f, diags := syntax.Parse("big.agent", src)
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Source(f, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBytes(b *testing.B) {
	src := generated(10000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Bytes("big.agent", src); len(diags) > 0 {
			b.Fatal(diags)
		}
	}
}

// TestDiff: the unified diff from a file to its formatted form.
func TestDiff(t *testing.T) {
	src := []byte("workflow w\n\nstate S {   q: string }\n")
	out, ds := Bytes("w.agent", src)
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	d, err := Diff("w.agent", src, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- w.agent.orig\n+++ w.agent\n@@ -1,", "\n workflow w\n", "\n-state S {   q: string }\n+state S {\n+  q : string\n+}\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff\n%s\nlacks\n%s", d, want)
		}
	}
	if d, _ := Diff("w.agent", out, out); d != "" {
		t.Errorf("diff of equal files: %q", d)
	}
}

// TestWhy: CRLF line endings are named as the reason a file is not
// canonical.
func TestWhy(t *testing.T) {
	if got := Why([]byte("state S {\r\n  q : string\r\n}\r\n")); !strings.Contains(got, "CRLF") {
		t.Errorf("CRLF: %q", got)
	}
	if got := Why([]byte("state S {   q: string }\n")); got != "" {
		t.Errorf("LF: %q", got)
	}
}

package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/lang/diag"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRootNameDisplay: the root is the nearest ancestor with agentc.yaml
// or .git (else the working directory); names are root-relative, shown
// relative to the working directory, and may not leave the root.
func TestRootNameDisplay(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"proj/agentc.yaml": "", "proj/sub/deep/x": "", "bare/x": ""})
	tests := []struct {
		wd, root string
	}{
		{"proj", "proj"},
		{"proj/sub/deep", "proj"},
	}
	for _, tt := range tests {
		p := At(filepath.Join(dir, tt.wd), nil)
		if p.Root != filepath.Join(dir, tt.root) {
			t.Errorf("At(%s).Root = %s, want %s", tt.wd, p.Root, tt.root)
		}
	}
	p := At(filepath.Join(dir, "proj", "sub"), nil)
	if n, err := p.Name("deep/a.agent"); err != nil || n != "sub/deep/a.agent" {
		t.Errorf("Name = %q, %v", n, err)
	}
	if n, err := p.Name(filepath.Join(dir, "proj", "b.agent")); err != nil || n != "b.agent" {
		t.Errorf("Name of an absolute path = %q, %v", n, err)
	}
	if _, err := p.Name("../../bare/x"); err == nil || !strings.Contains(err.Error(), "outside the project root") {
		t.Errorf("a path outside the root: %v", err)
	}
	if got := p.Display("b.agent"); got != "../b.agent" {
		t.Errorf("Display = %q, want ../b.agent", got)
	}
	if got := p.Display("sub/deep/a.agent"); got != "deep/a.agent" {
		t.Errorf("Display = %q, want deep/a.agent", got)
	}
}

// TestLocalize: file names become display paths (related spans too), the
// files are read for snippets (nil when unreadable), and the result is
// sorted.
func TestLocalize(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{".git/HEAD": "", "a.agent": "workflow a\n"})
	p := At(filepath.Join(dir), nil)
	p.WD = filepath.Join(dir, "sub")
	at := func(file string, line int) diag.Span {
		return diag.Span{File: file, Start: diag.Pos{Line: line, Col: 1, Offset: line}, End: diag.Pos{Line: line, Col: 2, Offset: line + 1}}
	}
	in := []diag.Diagnostic{
		{Severity: diag.Error, Summary: "second", Subject: at("a.agent", 2)},
		{Severity: diag.Error, Summary: "first", Subject: at("a.agent", 1), Related: []diag.Related{{Span: at("gone.agent", 1), Message: "there"}}},
	}
	out, srcs := p.Localize(in)
	if len(out) != 2 || out[0].Summary != "first" || out[0].Subject.File != "../a.agent" || out[0].Related[0].Span.File != "../gone.agent" {
		t.Fatalf("Localize = %+v", out)
	}
	if in[1].Related[0].Span.File != "gone.agent" {
		t.Error("Localize changed its input's related spans")
	}
	if string(srcs["../a.agent"]) != "workflow a\n" || srcs["../gone.agent"] != nil {
		t.Errorf("sources = %q", srcs)
	}
}

// TestFiles: directories are walked for .agent files, skipping testdata,
// node_modules and hidden folders; named files are always kept; TestFiles
// keeps, of the files found, those that declare a test block.
func TestFilesAndTestFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"w/a.agent":              "workflow a\n",
		"w/b.agent":              "workflow b\n\ntest \"t\" {\n}\n",
		"w/notes.txt":            "",
		"w/testdata/c.agent":     "test \"x\" {}\n",
		"w/node_modules/d.agent": "",
		"w/.hidden/e.agent":      "",
		"w/sub/f.agent":          "  test \"y\" {}\n",
	})
	t.Chdir(dir)
	tests := []struct {
		args       []string
		files      string
		testFiles  string
		wantErrSub string
	}{
		{args: []string{"w"}, files: "w/a.agent w/b.agent w/sub/f.agent", testFiles: "w/b.agent w/sub/f.agent"},
		{args: []string{"w", "w/a.agent", "w/testdata/c.agent"}, files: "w/a.agent w/b.agent w/sub/f.agent w/testdata/c.agent",
			testFiles: "w/a.agent w/b.agent w/sub/f.agent w/testdata/c.agent"},
		{args: []string{filepath.Join(dir, "w", "a.agent")}, files: "w/a.agent", testFiles: "w/a.agent"},
		{args: []string{"nope"}, wantErrSub: "read nope"},
	}
	for _, tt := range tests {
		fs, err := Files(tt.args)
		ts, terr := TestFiles(tt.args)
		if tt.wantErrSub != "" {
			if err == nil || terr == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
				t.Errorf("%v: %v, %v; want an error saying %q", tt.args, err, terr, tt.wantErrSub)
			}
			continue
		}
		if err != nil || strings.Join(fs, " ") != tt.files {
			t.Errorf("Files(%v) = %q, %v; want %q", tt.args, fs, err, tt.files)
		}
		if terr != nil || strings.Join(ts, " ") != tt.testFiles {
			t.Errorf("TestFiles(%v) = %q, %v; want %q", tt.args, ts, terr, tt.testFiles)
		}
	}
}

// TestCheckCompile: both read the project's files, and report diagnostics
// in display form.
func TestCheckCompile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"agentc.yaml": "", "bad.agent": "workflow\n", "ok.agent": `workflow ok "ok"

state S {
  q : string
}

graph g(S) input q output q {
  node n = set { q = "x" }
  start -> n
  n -> end
}
`})
	p := At(dir, nil)
	ds, _, err := p.Check([]string{"bad.agent", "ok.agent"})
	if err != nil || len(ds) == 0 || ds[0].Subject.File != "bad.agent" {
		t.Errorf("Check = %+v, %v; want diagnostics in bad.agent", ds, err)
	}
	if n, _ := diag.CountErrors(ds); n == 0 {
		t.Error("bad.agent checked without errors")
	}
	prog, enc, ds, _, err := p.Compile("ok.agent")
	if err != nil || prog == nil || len(enc) == 0 {
		t.Errorf("Compile(ok.agent) = %v, %d bytes, %+v, %v", prog, len(enc), ds, err)
	}
	if prog, _, _, _, err := p.Compile("bad.agent"); prog != nil || err != nil {
		t.Errorf("Compile(bad.agent) = %v, %v; want no program and no error", prog, err)
	}
	if _, _, _, _, err := p.Compile("../outside.agent"); err == nil {
		t.Error("a file outside the root compiled")
	}
}

// TestTestBlocks: the test blocks of a file that does not compile are
// counted as far as it parses, at least one.
func TestTestBlocks(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"two.agent":  "workflow w\n\ntest \"a\" {\n  run = g\n}\n\ntest \"b\" {\n  run = nosuch\n}\n",
		"none.agent": "workflow w\n\nstate S { q: string }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{"two.agent": 2, "none.agent": 1, "missing.agent": 1} {
		if got := TestBlocks(filepath.Join(dir, name)); got != want {
			t.Errorf("TestBlocks(%s) = %d, want %d", name, got, want)
		}
	}
}

// TestLoad: a .agent file compiles, anything else is bytecode that must
// decode and verify; a missing file is a plain error.
func TestLoad(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".git/HEAD": "",
		"ok.agent":  "workflow ok\n\nstate S { q: string }\n\ngraph g(S) input q {\n  start -> end\n}\n",
		"notes.txt": "hello",
	})
	p := At(root, nil)
	prog, enc, _, _, err := p.Load(filepath.Join(root, "ok.agent"))
	if err != nil || prog == nil {
		t.Fatalf("ok.agent: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "ok.agb"), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _, _, _, err := p.Load(filepath.Join(root, "ok.agb")); err != nil || again.Hash != prog.Hash {
		t.Fatalf("ok.agb: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cut.agb"), enc[:len(enc)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var bad *BytecodeError
	for _, name := range []string{"notes.txt", "cut.agb"} {
		if _, _, _, _, err := p.Load(filepath.Join(root, name)); !errors.As(err, &bad) {
			t.Errorf("%s: %v, want a BytecodeError", name, err)
		}
	}
	if _, _, _, _, err := p.Load(filepath.Join(root, "missing.agent")); err == nil || errors.As(err, &bad) {
		t.Errorf("missing.agent: %v", err)
	}
}

// TestMessagePathsDisplayed: file names inside messages are shown relative
// to the working directory, as spans are; paths quoted as written are left
// as they are (issue 18).
func TestMessagePathsDisplayed(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".git/HEAD": "",
		"sub/main.agent": `workflow w
model m { provider = openai, name = "x" }
agent a llm { model = m }
test "t" {
  run = a
  model m replay "fixtures/missing.yaml"
}
test "u" {
  run = a
  model m replay "../up.yaml"
}
`,
	})
	p := At(filepath.Join(root, "sub"), nil)
	ds, _, err := p.Check([]string{"main.agent"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.Subject.File+": "+d.Summary)
	}
	want := []string{
		"main.agent: fixture fixtures/missing.yaml not found",
		`main.agent: fixture "../up.yaml": path leaves the folder of main.agent`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package spec_test

// The spec is executed (CONVENTIONS.md item 18):
//
//   - grammar.ebnf is exactly syntax.Grammar(); -update rewrites it;
//   - every ```agent block of every spec/*.md file parses (and checks) with
//     no error, and every ```agent invalid CODE block produces at least one
//     diagnostic with exactly CODE;
//   - every examples/**/*.agent file parses with no diagnostic and checks
//     with no error, and every example folder has a README.md, its fixtures
//     and its skill folders.
//
// Run `go test ./spec -run TestGrammar -update` after changing the grammar.

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
	"github.com/agentc/agentc/stdlib"
)

var update = flag.Bool("update", false, "rewrite grammar.ebnf from syntax.Grammar()")

// examplesDir is the examples tree, relative to this package's directory.
const examplesDir = "../examples"

func TestGrammar(t *testing.T) {
	const file = "grammar.ebnf"
	want := syntax.Grammar()
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./spec -run TestGrammar -update)", err)
	}
	if string(got) != want {
		t.Errorf("%s differs from syntax.Grammar(); run go test ./spec -run TestGrammar -update and review the diff\n%s",
			file, firstDifference(string(got), want))
	}
}

// firstDifference describes the first line where two texts differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  file:    %q\n  grammar: %q", i+1, gl, wl)
		}
	}
	return "(texts differ only in line endings)"
}

// block is one ```agent code block of a spec file.
type block struct {
	file string    // spec file name, e.g. "language.md"
	line int       // 1-based line of the opening fence
	code diag.Code // the expected code of an invalid block; "" if the block is valid
	src  string
	// An upgrade pair's block (spec/upgrade.md): the pair's name, "old" or
	// "new", and on the new side the finding that refuses the move ("":
	// compatible). Each side is a valid program on its own.
	pair, side string
	refuse     diag.Code
}

func (b block) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// fence matches an opening or closing code fence at the start of a line.
var fence = regexp.MustCompile("^(`{3,}|~{3,})\\s*(.*?)\\s*$")

// extractBlocks returns the ```agent blocks of a Markdown text. Other fenced
// blocks (```text, ```yaml, ...) are skipped. An "agent" info string is
// either "agent" or "agent invalid CODE"; anything else is an error, so a
// typo cannot silently turn a checked block into an unchecked one.
func extractBlocks(file, text string) ([]block, error) {
	var (
		out    []block
		open   string // the opening fence while inside a block
		isAg   bool
		cur    block
		body   strings.Builder
		lineNo int
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		if open != "" {
			if m != nil && m[2] == "" && m[1][0] == open[0] && len(m[1]) >= len(open) {
				if isAg {
					cur.src = body.String()
					out = append(out, cur)
				}
				open, isAg = "", false
				body.Reset()
				continue
			}
			if isAg {
				body.WriteString(line)
				body.WriteByte('\n')
			}
			continue
		}
		if m == nil {
			continue
		}
		open = m[1]
		fields := strings.Fields(m[2])
		if len(fields) == 0 || fields[0] != "agent" {
			continue
		}
		isAg = true
		cur = block{file: file, line: lineNo}
		switch {
		case len(fields) == 1:
		case len(fields) == 3 && fields[1] == "invalid":
			cur.code = diag.Code(fields[2])
		case fields[1] == "upgrade" && (len(fields) == 4 && (fields[3] == "old" || fields[3] == "new") || len(fields) == 5 && fields[3] == "new"):
			cur.pair, cur.side = fields[2], fields[3]
			if len(fields) == 5 {
				cur.refuse = diag.Code(fields[4])
			}
		default:
			return nil, fmt.Errorf("%s:%d: info string %q: want \"agent\", \"agent invalid CODE\" or \"agent upgrade NAME old|new [CODE]\"", file, lineNo, m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if open != "" {
		return nil, fmt.Errorf("%s: a code fence is not closed", file)
	}
	return out, nil
}

func specBlocks(t *testing.T) []block {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var all []block
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := extractBlocks(f, string(text))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	return all
}

func TestExtractBlocks(t *testing.T) {
	text := "intro\n```agent\nworkflow a\n```\n```text\n```agent\n```\n````agent invalid S101\nx\n```\ny\n````\n"
	bs, err := extractBlocks("x.md", text)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{file: "x.md", line: 2, src: "workflow a\n"},
		{file: "x.md", line: 8, code: "S101", src: "x\n```\ny\n"},
	}
	if !slices.Equal(bs, want) {
		t.Errorf("extractBlocks = %+v, want %+v", bs, want)
	}
	if _, err := extractBlocks("x.md", "```agent invalid\n```\n"); err == nil {
		t.Error("a malformed info string was accepted")
	}
}

// blockFile is the name each block is written under in its own module root.
const blockFile = "block.agent"

func TestSpecBlocks(t *testing.T) {
	blocks := specBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no ```agent blocks found in spec/*.md")
	}
	for _, b := range blocks {
		name := b.where()
		if b.code != "" {
			name += " invalid " + string(b.code)
		}
		t.Run(name, func(t *testing.T) {
			if b.code != "" {
				if _, ok := diag.Lookup(b.code); !ok {
					t.Fatalf("%s: %s is not a registered diagnostic code", b.where(), b.code)
				}
			}
			_, parsed := syntax.Parse(blockFile, []byte(b.src))
			syntaxOnly := strings.HasPrefix(string(b.code), "S")
			switch {
			case b.code == "" || !syntaxOnly:
				// Valid blocks, and blocks that must fail a semantic check,
				// are syntactically valid.
				if len(parsed) > 0 {
					t.Fatalf("%s: block must parse without diagnostics:\n%s", b.where(), render(b, parsed))
				}
			default:
				if !hasCode(parsed, b.code) {
					t.Fatalf("%s: want a %s diagnostic from the parser, got:\n%s", b.where(), b.code, render(b, parsed))
				}
				return
			}
			ds := checkBlock(t, b.src)
			if b.code == "" {
				if errs := errorsOf(ds); len(errs) > 0 {
					t.Fatalf("%s: valid block has errors:\n%s", b.where(), render(b, errs))
				}
				return
			}
			if !hasCode(ds, b.code) {
				t.Fatalf("%s: want a %s diagnostic, got:\n%s", b.where(), b.code, render(b, ds))
			}
		})
	}
}

// checkBlock writes src to a fresh module root as block.agent and runs the
// compiler's Load and Check on it, returning every diagnostic.
func checkBlock(t *testing.T, src string) []diag.Diagnostic {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, blockFile), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return check(os.DirFS(dir), ".", blockFile)
}

// check loads and checks one root file of the module rooted at root in fsys.
func check(fsys fs.FS, root, file string) []diag.Diagnostic {
	cfg := compiler.Config{FS: fsys, Root: root, Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, path.Join(root, file))
	_, cds := compiler.Check(cfg, pkg)
	return append(ds, cds...)
}

func hasCode(ds []diag.Diagnostic, code diag.Code) bool {
	return slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Code == code })
}

func errorsOf(ds []diag.Diagnostic) []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, d := range ds {
		if d.Severity == diag.Error {
			out = append(out, d)
		}
	}
	return out
}

// render lists diagnostics with positions translated to the spec file: line
// L of a block is line b.line+L of the Markdown file.
func render(b block, ds []diag.Diagnostic) string {
	if len(ds) == 0 {
		return "  (no diagnostics)"
	}
	var sb strings.Builder
	for _, d := range ds {
		at := "-"
		if d.Subject.IsValid() {
			at = fmt.Sprintf("%s:%d:%d", b.file, b.line+d.Subject.Start.Line, d.Subject.Start.Col)
		}
		fmt.Fprintf(&sb, "  %s: %s %s\n", at, d.Code, d.Summary)
	}
	return sb.String()
}

// exampleFiles returns every .agent file under examples/, slash-separated and
// relative to examples/, sorted.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(examplesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".agent") {
			rel, _ := filepath.Rel(examplesDir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatal("no .agent files under examples/")
	}
	return out
}

func TestExamples(t *testing.T) {
	fsys := os.DirFS(examplesDir)
	for _, name := range exampleFiles(t) {
		t.Run(name, func(t *testing.T) {
			src, err := fs.ReadFile(fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			f, ds := syntax.Parse(name, src)
			for _, d := range ds {
				t.Errorf("examples/%s:%d:%d: %s %s", name, d.Subject.Start.Line, d.Subject.Start.Col, d.Code, d.Summary)
			}
			if t.Failed() {
				return
			}
			checkReferencedFiles(t, fsys, name, f)
			// The examples tree is the module root, so ../common resolves.
			for _, d := range errorsOf(check(fsys, ".", name)) {
				t.Errorf("examples/%s: %s %s", d.Subject, d.Code, d.Summary)
			}
		})
	}
}

// fixtureVersion matches the schema line every fixture starts with.
var fixtureVersion = regexp.MustCompile(`(?m)^version: 1\s*$`)

// checkReferencedFiles checks, independently of the compiler, that what a
// file refers to on disk exists: imports, skill folders with SKILL.md, and
// fixtures of schema version 1.
func checkReferencedFiles(t *testing.T, fsys fs.FS, name string, f *syntax.File) {
	t.Helper()
	dir := path.Dir(name)
	lit := func(s *syntax.String) string {
		v, ok := s.Literal()
		if !ok {
			t.Errorf("examples/%s: %s: path is not a literal", name, s.Span())
		}
		return path.Join(dir, v)
	}
	exists := func(p string, at diag.Span) []byte {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			t.Errorf("examples/%s: %s: %v", name, at, err)
		}
		return b
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *syntax.Import:
			exists(lit(d.Path), d.Span())
		case *syntax.Skill:
			exists(path.Join(lit(d.From), "SKILL.md"), d.Span())
		case *syntax.Test:
			for _, it := range d.Items {
				if it.Replay == nil {
					continue
				}
				b := exists(lit(it.Replay.Fixture), it.Span())
				if b != nil && !fixtureVersion.Match(b) {
					t.Errorf("examples/%s: %s: fixture has no \"version: 1\" line", name, it.Span())
				}
			}
		}
	}
}

// TestExampleFolders checks the shape of examples/: each folder has a
// README.md, and each folder with tests keeps its fixtures in testdata/.
func TestExampleFolders(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(examplesDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
			t.Errorf("examples/%s has no README.md", e.Name())
		}
		agents, _ := filepath.Glob(filepath.Join(dir, "*.agent"))
		for _, a := range agents {
			src, err := os.ReadFile(a)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), " replay \"") {
				if st, err := os.Stat(filepath.Join(dir, "testdata")); err != nil || !st.IsDir() {
					t.Errorf("examples/%s has tests but no testdata/ folder", e.Name())
				}
			}
		}
	}
}

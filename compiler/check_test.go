package compiler

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
	"github.com/agentc/agentc/stdlib"
)

var update = flag.Bool("update", false, "rewrite golden files (spec/diagnostics.md)")

// testUniverse is the stdlib universe plus the test-only builtin
// implementation echo.
func testUniverse() *Universe {
	u := stdlib.Universe()
	u.Impls["echo"] = true
	return u
}

// checkFile loads and checks one root file of fsys.
func checkFile(fsys fs.FS, name string) (*Package, *Info, []diag.Diagnostic) {
	cfg := Config{FS: fsys, Universe: testUniverse()}
	pkg, ds := Load(cfg, name)
	info, cds := Check(cfg, pkg)
	all := append(ds, cds...)
	diag.Sort(all)
	return pkg, info, all
}

// expectation is one `// ERROR "re"` or `// WARNING "re"` comment.
type expectation struct {
	file    string
	line    int
	sev     diag.Severity
	re      *regexp.Regexp
	matched bool
}

var expectRE = regexp.MustCompile(`(ERROR|WARNING) "((?:[^"\\]|\\.)*)"`)

func expectations(t *testing.T, fsys fs.FS, files []string) []*expectation {
	var out []*expectation
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			i := strings.Index(text, "//")
			if j := strings.Index(text, "/*"); j >= 0 && (i < 0 || j < i) {
				i = j
			}
			if i < 0 {
				continue
			}
			for _, m := range expectRE.FindAllStringSubmatch(text[i:], -1) {
				pat := strings.ReplaceAll(m[2], `\"`, `"`)
				re, err := regexp.Compile(pat)
				if err != nil {
					t.Fatalf("%s:%d: bad pattern %q: %v", name, line, pat, err)
				}
				sev := diag.Error
				if m[1] == "WARNING" {
					sev = diag.Warning
				}
				out = append(out, &expectation{file: name, line: line, sev: sev, re: re})
			}
		}
	}
	return out
}

func diagText(d diag.Diagnostic) string { return string(d.Code) + " " + d.Summary }

// matchDiagnostics asserts that ds are exactly the expected diagnostics.
func matchDiagnostics(t *testing.T, ds []diag.Diagnostic, exps []*expectation) {
	t.Helper()
	for _, d := range ds {
		found := false
		for _, e := range exps {
			if !e.matched && e.file == d.Subject.File && e.line == d.Subject.Start.Line && e.sev == d.Severity && e.re.MatchString(diagText(d)) {
				e.matched, found = true, true
				break
			}
		}
		if !found {
			t.Errorf("unexpected %s: %s", d.Severity, d.Error())
		}
	}
	for _, e := range exps {
		if !e.matched {
			t.Errorf("%s:%d: missing %s matching %q", e.file, e.line, e.sev, e.re)
		}
	}
}

func agentFiles(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".agent") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// examples maps each code to the first invalid case that reports it.
type example struct {
	file  string
	src   string
	codes int // distinct codes the case reports
}

// runInvalid checks every invalid case; with assert it also asserts the
// expected diagnostics (as subtests).
func runInvalid(t *testing.T, assert bool) map[diag.Code]example {
	const dir = "testdata/invalid"
	fsys := os.DirFS(dir)
	found := map[diag.Code]example{}
	for _, name := range agentFiles(t, dir) {
		run := func(t *testing.T) {
			pkg, _, ds := checkFile(fsys, name)
			var files []string
			for _, f := range pkg.Files {
				files = append(files, f.Name)
			}
			if len(files) == 0 {
				files = []string{name}
			}
			// Diagnostics inside a skill's SKILL.md (P514) are expected by
			// comments in that file.
			for _, d := range ds {
				if f := d.Subject.File; path.Base(f) == "SKILL.md" && !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
			if assert {
				exps := expectations(t, fsys, files)
				if len(exps) == 0 {
					t.Fatalf("%s has no ERROR or WARNING expectations", name)
				}
				matchDiagnostics(t, ds, exps)
			}
			src, _ := fs.ReadFile(fsys, name)
			codes := map[diag.Code]bool{}
			for _, d := range ds {
				codes[d.Code] = true
			}
			// The example of a code is the case with the fewest distinct
			// codes (the most focused), then the first by name.
			for code := range codes {
				if prev, ok := found[code]; !ok || len(codes) < prev.codes {
					found[code] = example{file: name, src: string(src), codes: len(codes)}
				}
			}
		}
		if assert {
			t.Run(strings.TrimSuffix(name, ".agent"), run)
		} else {
			run(t)
		}
	}
	for code, ex := range syntheticExamples() {
		_, _, ds := checkFile(ex.fsys, "main.agent")
		if len(ds) != 1 || ds[0].Code != code {
			t.Errorf("synthetic example for %s gave %v", code, ds)
		}
		if _, ok := found[code]; !ok {
			found[code] = example{src: ex.doc}
		}
	}
	return found
}

type synthetic struct {
	fsys fs.FS
	doc  string
}

// syntheticExamples are cases that cannot live in testdata.
func syntheticExamples() map[diag.Code]synthetic {
	big := bytes.Repeat([]byte("// padding\n"), (8<<20)/11+2)
	return map[diag.Code]synthetic{
		diag.FileTooLarge: {fsys: fstest.MapFS{"main.agent": {Data: big}}, doc: "// a file larger than 8 MiB"},
	}
}

func TestInvalid(t *testing.T) {
	runInvalid(t, true)
}

func TestValid(t *testing.T) {
	const dir = "testdata/valid"
	fsys := os.DirFS(dir)
	for _, name := range agentFiles(t, dir) {
		t.Run(strings.TrimSuffix(name, ".agent"), func(t *testing.T) {
			_, info, ds := checkFile(fsys, name)
			for _, d := range ds {
				t.Errorf("%s (%s)", d.Error(), d.Detail)
			}
			if info == nil {
				t.Fatal("no info")
			}
		})
	}
}

// TestCodesHaveExamples requires an invalid case for every code of the
// families the front end and compiler own, and regenerates
// spec/diagnostics.md (golden; -update rewrites it).
func TestCodesHaveExamples(t *testing.T) {
	found := runInvalid(t, false)
	var missing []string
	for _, ci := range diag.Codes() {
		if !strings.ContainsAny(string(ci.Code[:1]), "SNTGP") {
			continue
		}
		if _, ok := found[ci.Code]; !ok {
			missing = append(missing, string(ci.Code))
		}
	}
	if len(missing) > 0 {
		t.Errorf("codes without an example in testdata/invalid: %s", strings.Join(missing, ", "))
	}
	doc := diagnosticsDoc(found)
	const golden = "../spec/diagnostics.md"
	if *update {
		if err := os.WriteFile(golden, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(golden)
	if err != nil || string(old) != doc {
		t.Errorf("%s is stale; run go test ./compiler -run TestCodesHaveExamples -update", golden)
	}
}

var familyTitles = map[byte]string{
	'S': "S — lexical structure and syntax",
	'N': "N — names, scopes and imports",
	'T': "T — types and expressions",
	'G': "G — graph structure and proofs",
	'P': "P — policies, tools, skills, models, serve and test blocks",
	'B': "B — bytecode",
}

func diagnosticsDoc(found map[diag.Code]example) string {
	var b strings.Builder
	b.WriteString("# Diagnostics\n\n")
	b.WriteString("<!-- Generated by `go test ./compiler -run TestCodesHaveExamples -update`; do not edit. -->\n\n")
	b.WriteString("Every diagnostic has a stable code. Codes are append-only: a code is never\n")
	b.WriteString("renumbered or reused. Each example below is a test case under\n")
	b.WriteString("`compiler/testdata/invalid`; its `// ERROR` and `// WARNING` comments mark the\n")
	b.WriteString("lines where the compiler reports, and the test asserts exactly those\n")
	b.WriteString("diagnostics. What each check proves is described in `spec/checks.md`.\n")
	codes := diag.Codes()
	var fam byte
	for _, ci := range codes {
		if ci.Code == "" {
			continue
		}
		if ci.Code[0] != fam {
			fam = ci.Code[0]
			title := familyTitles[fam]
			if title == "" {
				title = string(fam)
			}
			fmt.Fprintf(&b, "\n## %s\n", title)
		}
		fmt.Fprintf(&b, "\n### %s %s (%s)\n\n%s\n", ci.Code, ci.Title, ci.Severity, ci.Doc)
		if ex, ok := found[ci.Code]; ok && ex.file == "" {
			fmt.Fprintf(&b, "\nExample (generated by the test, not stored): `%s`.\n", ex.src)
		} else if ok {
			src := ex.src
			if !strings.Contains(src, "\x00") && isText(src) {
				info := "text"
				if standalone(ci.Code, src) {
					info = "agent invalid " + string(ci.Code)
				}
				fmt.Fprintf(&b, "\n`%s`:\n\n```%s\n%s```\n", path.Join("compiler/testdata/invalid", ex.file), info, ensureNL(src))
			} else {
				fmt.Fprintf(&b, "\nExample: `%s` (not shown: the file is not valid UTF-8 text).\n", path.Join("compiler/testdata/invalid", ex.file))
			}
		}
	}
	return b.String()
}

// standalone reports whether src, checked alone with the default universe,
// reports code (so spec_test can check the block): then the example is
// marked ```agent invalid CODE, else ```text (it needs other files).
func standalone(code diag.Code, src string) bool {
	_, pds := syntax.Parse("block.agent", []byte(src))
	if code[0] == 'S' {
		return hasCode(pds, code)
	}
	if len(pds) > 0 {
		return false
	}
	cfg := Config{FS: fstest.MapFS{"block.agent": {Data: []byte(src)}}, Universe: stdlib.Universe()}
	pkg, ds := Load(cfg, "block.agent")
	_, cds := Check(cfg, pkg)
	return hasCode(append(ds, cds...), code)
}

func hasCode(ds []diag.Diagnostic, code diag.Code) bool {
	for _, d := range ds {
		if d.Code == code {
			return true
		}
	}
	return false
}

func ensureNL(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func isText(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' {
			return false
		}
	}
	return true
}

// Package editors holds the editor support of agentc: a VS Code extension
// (vscode/) and a Vim/Neovim syntax (vim/). This test keeps their keyword
// lists equal to the one keyword table, syntax.Keywords(); with -update it
// rewrites them from the table:
//
//	go test ./editors -update
//
// Without -update the test fails whenever -update would change a file, so
// CI catches a keyword added to lang/syntax and not to the grammars.
package editors

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/lang/syntax"
)

var update = flag.Bool("update", false, "rewrite the keyword lists of the editor grammars from lang/syntax")

const (
	tmPath       = "vscode/syntaxes/agent.tmLanguage.json"
	vimPath      = "vim/syntax/agent.vim"
	manifestPath = "vscode/package.json"
	fixtureGlob  = "vscode/test/fixtures/*.agent"
	updateHint   = "run `go test ./editors -update`"
)

// classInfo says where each keyword class lives in the editor grammars.
type classInfo struct {
	class    syntax.KeywordClass
	tmKey    string // repository entry of the TextMate grammar
	tmScope  string // its scope name
	vimGroup string // syntax group of the Vim file
}

var classes = []classInfo{
	{syntax.ClassDeclaration, "keyword-declaration", "keyword.declaration.agent", "agentDeclaration"},
	{syntax.ClassNode, "keyword-node", "keyword.control.node.agent", "agentNode"},
	{syntax.ClassClause, "keyword-clause", "keyword.control.clause.agent", "agentClause"},
	{syntax.ClassOperator, "keyword-operator", "keyword.operator.word.agent", "agentOperatorWord"},
	{syntax.ClassConstant, "keyword-constant", "constant.language.agent", "agentConstant"},
	{syntax.ClassType, "keyword-type", "support.type.agent", "agentType"},
}

// table returns the keyword table as class → sorted words, and word → class.
func table(t *testing.T) (map[syntax.KeywordClass][]string, map[string]syntax.KeywordClass) {
	t.Helper()
	byClass := map[syntax.KeywordClass][]string{}
	byWord := map[string]syntax.KeywordClass{}
	for _, k := range syntax.Keywords() {
		if prev, dup := byWord[k.Word]; dup && prev != k.Class {
			t.Errorf("lang/syntax lists %q in two classes (%s, %s); an editor grammar can give it one color only", k.Word, prev, k.Class)
		}
		byClass[k.Class] = append(byClass[k.Class], k.Word)
		byWord[k.Word] = k.Class
	}
	for c := range byClass {
		if !slices.ContainsFunc(classes, func(ci classInfo) bool { return ci.class == c }) {
			t.Errorf("keyword class %q of lang/syntax has no place in the editor grammars: add it to classes in editors/editors_test.go, to %s and to %s", c, tmPath, vimPath)
		}
	}
	for c, ws := range byClass {
		slices.Sort(ws)
		byClass[c] = slices.Compact(ws)
	}
	return byClass, byWord
}

// tmKeywordPattern is the generated regex of one class: a whole word, not a
// member (x.end) and not the head of a path (input.service).
func tmKeywordPattern(words []string) string {
	return `(?<![\w.])(?:` + strings.Join(words, "|") + `)(?![\w]|\.[A-Za-z_])`
}

var tmWordsRe = regexp.MustCompile(`^\(\?<!\[\\w\.\]\)\(\?:([a-z_|]*)\)`)

// jsonInner encodes s as the inside of a JSON string literal.
func jsonInner(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// rewriteTM replaces the match string of every keyword-<class> entry of the
// grammar text with the generated pattern, leaving every other byte alone.
func rewriteTM(raw string, byClass map[syntax.KeywordClass][]string) (string, error) {
	const field = `"match": "`
	for _, c := range classes {
		key := `"` + c.tmKey + `": {`
		i := strings.Index(raw, key)
		if i < 0 {
			return "", fmt.Errorf("%s: no repository entry %q", tmPath, c.tmKey)
		}
		j := strings.Index(raw[i:], field)
		if k := strings.Index(raw[i:], "}"); j < 0 || k < j {
			return "", fmt.Errorf("%s: repository entry %q has no \"match\" on its own level", tmPath, c.tmKey)
		}
		start := i + j + len(field)
		end := start
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				end++
			}
			end++
		}
		raw = raw[:start] + jsonInner(tmKeywordPattern(byClass[c.class])) + raw[end:]
	}
	return raw, nil
}

const (
	vimBegin = `" BEGIN KEYWORDS`
	vimEnd   = `" END KEYWORDS`
)

func vimKeywordLines(byClass map[syntax.KeywordClass][]string) []string {
	lines := []string{`" Generated from lang/syntax/keywords.go by ` + "`go test ./editors -update`" + `; do not edit.`}
	for _, c := range classes {
		lines = append(lines, "syntax keyword "+c.vimGroup+" "+strings.Join(byClass[c.class], " "))
	}
	return lines
}

// rewriteVim replaces the lines between the BEGIN/END KEYWORDS markers.
func rewriteVim(raw string, byClass map[syntax.KeywordClass][]string) (string, error) {
	lines := strings.Split(raw, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, vimBegin) && begin < 0:
			begin = i
		case strings.HasPrefix(l, vimEnd) && begin >= 0 && end < 0:
			end = i
		}
	}
	if begin < 0 || end < 0 {
		return "", fmt.Errorf("%s: no %q ... %q block", vimPath, vimBegin, vimEnd)
	}
	out := append(slices.Clone(lines[:begin+1]), vimKeywordLines(byClass)...)
	out = append(out, lines[end:]...)
	return strings.Join(out, "\n"), nil
}

// diffWords reports, naming each word, what the grammar lacks and what it
// has beyond the table.
func diffWords(t *testing.T, where string, class syntax.KeywordClass, want, got []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %s keyword %q is missing (%s)", where, class, w, updateHint)
		}
	}
	for _, w := range got {
		if !slices.Contains(want, w) {
			t.Errorf("%s: %q is not a %s keyword of lang/syntax (%s)", where, w, class, updateHint)
		}
	}
}

// maybeUpdate writes want over path under -update and returns the text the
// checks should read.
func maybeUpdate(t *testing.T, path, raw, want string) string {
	t.Helper()
	if raw == want {
		return raw
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", path)
		return want
	}
	t.Errorf("%s is out of date with lang/syntax/keywords.go (%s)", path, updateHint)
	return raw
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTextMateKeywords(t *testing.T) {
	byClass, byWord := table(t)
	raw := readFile(t, tmPath)
	want, err := rewriteTM(raw, byClass)
	if err != nil {
		t.Fatal(err)
	}
	raw = maybeUpdate(t, tmPath, raw, want)

	var g map[string]any
	if err := json.Unmarshal([]byte(raw), &g); err != nil {
		t.Fatalf("%s: %v", tmPath, err)
	}
	if g["scopeName"] != "source.agent" {
		t.Errorf("%s: scopeName is %v, want source.agent", tmPath, g["scopeName"])
	}
	repo, _ := g["repository"].(map[string]any)
	keywordsIncl := map[string]bool{}
	if kw, ok := repo["keywords"].(map[string]any); ok {
		pats, _ := kw["patterns"].([]any)
		for _, p := range pats {
			if m, ok := p.(map[string]any); ok {
				inc, _ := m["include"].(string)
				keywordsIncl[strings.TrimPrefix(inc, "#")] = true
			}
		}
	}
	for _, c := range classes {
		entry, _ := repo[c.tmKey].(map[string]any)
		where := tmPath + " #" + c.tmKey
		if entry == nil {
			t.Errorf("%s: missing", where)
			continue
		}
		if entry["name"] != c.tmScope {
			t.Errorf("%s: scope is %v, want %s", where, entry["name"], c.tmScope)
		}
		if !keywordsIncl[c.tmKey] {
			t.Errorf("%s: not included by #keywords", where)
		}
		match, _ := entry["match"].(string)
		m := tmWordsRe.FindStringSubmatch(match)
		if m == nil {
			t.Errorf("%s: match %q is not of the generated form (%s)", where, match, updateHint)
			continue
		}
		var got []string
		if m[1] != "" {
			got = strings.Split(m[1], "|")
		}
		diffWords(t, where, c.class, byClass[c.class], got)
	}

	// Every other word list in the grammar (declaration headers, call
	// nodes, generic types) may name only keywords, each with its class.
	scopeClass := map[string]syntax.KeywordClass{}
	for _, c := range classes {
		scopeClass[c.tmScope] = c.class
	}
	for name, v := range repo {
		if strings.HasPrefix(name, "keyword-") {
			continue
		}
		walkRules(v, func(re string, captures map[string]any) {
			for _, grp := range wordGroups(re) {
				want := syntax.KeywordClass("")
				if grp.index > 0 {
					if cp, ok := captures[strconv.Itoa(grp.index)].(map[string]any); ok {
						scope, _ := cp["name"].(string)
						want = scopeClass[scope]
					}
				}
				for _, w := range grp.words {
					got, ok := byWord[w]
					switch {
					case !ok:
						t.Errorf("%s #%s: %q in %q is not a keyword of lang/syntax", tmPath, name, w, re)
					case want != "" && got != want:
						t.Errorf("%s #%s: %q is scoped as a %s keyword, but lang/syntax puts it in class %s", tmPath, name, w, want, got)
					}
				}
			}
		})
	}
}

// walkRules calls fn with every regex of a grammar rule tree and the
// captures that apply to it.
func walkRules(v any, fn func(re string, captures map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		caps := func(k string) map[string]any {
			if c, ok := x[k].(map[string]any); ok {
				return c
			}
			c, _ := x["captures"].(map[string]any)
			return c
		}
		if re, ok := x["match"].(string); ok {
			fn(re, caps("captures"))
		}
		if re, ok := x["begin"].(string); ok {
			fn(re, caps("beginCaptures"))
		}
		if re, ok := x["end"].(string); ok {
			fn(re, caps("endCaptures"))
		}
		for _, k := range []string{"patterns", "captures", "beginCaptures", "endCaptures"} {
			if sub, ok := x[k]; ok {
				walkRules(sub, fn)
			}
		}
	case []any:
		for _, e := range x {
			walkRules(e, fn)
		}
	}
}

type wordGroup struct {
	index int // capture number; 0 for a non-capturing group
	words []string
}

var groupWordsRe = regexp.MustCompile(`^([a-z]+(?:\|[a-z]+)*)\)`)

// wordGroups finds the groups of a regex that are a plain alternation of
// lowercase words, such as (type|state) or (?:and|or), with their capture
// numbers.
func wordGroups(re string) []wordGroup {
	var out []wordGroup
	capture, inClass := 0, false
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			body, index := i+1, 0
			switch {
			case strings.HasPrefix(re[i+1:], "?:"):
				body = i + 3
			case strings.HasPrefix(re[i+1:], "?"):
				continue // lookaround or option group
			default:
				capture++
				index = capture
			}
			if m := groupWordsRe.FindStringSubmatch(re[body:]); m != nil {
				out = append(out, wordGroup{index, strings.Split(m[1], "|")})
			}
		}
	}
	return out
}

var (
	vimKeywordRe = regexp.MustCompile(`^\s*syn(?:tax)?\s+keyword\s+(\w+)\s+(.*)$`)
	vimGroupRe   = regexp.MustCompile(`\\%\(([a-z]+(?:\\\|[a-z]+)*)\\\)`)
)

func TestVimKeywords(t *testing.T) {
	byClass, byWord := table(t)
	raw := readFile(t, vimPath)
	want, err := rewriteVim(raw, byClass)
	if err != nil {
		t.Fatal(err)
	}
	raw = maybeUpdate(t, vimPath, raw, want)

	got := map[string][]string{}
	for _, l := range strings.Split(raw, "\n") {
		if m := vimKeywordRe.FindStringSubmatch(l); m != nil {
			for _, f := range strings.Fields(m[2]) {
				if f == "contained" {
					continue
				}
				got[m[1]] = append(got[m[1]], f)
			}
		}
	}
	for _, c := range classes {
		diffWords(t, vimPath+" "+c.vimGroup, c.class, byClass[c.class], got[c.vimGroup])
	}
	// Word lists in patterns (declaration names) may name only keywords.
	for _, l := range strings.Split(raw, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), `"`) {
			continue
		}
		for _, m := range vimGroupRe.FindAllStringSubmatch(l, -1) {
			for _, w := range strings.Split(m[1], `\|`) {
				if _, ok := byWord[w]; !ok {
					t.Errorf("%s: %q in %q is not a keyword of lang/syntax", vimPath, w, strings.TrimSpace(l))
				}
			}
		}
	}
}

// TestVSCodeManifest checks that package.json wires the grammar it ships.
func TestVSCodeManifest(t *testing.T) {
	var m struct {
		Name        string
		Contributes struct {
			Languages []struct {
				ID            string
				Extensions    []string
				Configuration string
			}
			Grammars []struct {
				Language  string
				ScopeName string
				Path      string
			}
			Configuration any
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, manifestPath)), &m); err != nil {
		t.Fatalf("%s: %v", manifestPath, err)
	}
	if m.Name != "agentc" {
		t.Errorf("%s: name is %q, want agentc", manifestPath, m.Name)
	}
	if len(m.Contributes.Languages) != 1 || m.Contributes.Languages[0].ID != "agent" ||
		!slices.Contains(m.Contributes.Languages[0].Extensions, ".agent") {
		t.Errorf("%s: want one language \"agent\" for .agent files, got %+v", manifestPath, m.Contributes.Languages)
	} else if cfg := m.Contributes.Languages[0].Configuration; cfg != "" {
		var v any
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join("vscode", cfg))), &v); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
	if len(m.Contributes.Grammars) != 1 {
		t.Fatalf("%s: want one grammar, got %d", manifestPath, len(m.Contributes.Grammars))
	}
	gr := m.Contributes.Grammars[0]
	if gr.Language != "agent" || gr.ScopeName != "source.agent" || filepath.Clean(filepath.Join("vscode", gr.Path)) != filepath.Clean(tmPath) {
		t.Errorf("%s: grammar is %+v, want language agent, scope source.agent, path ./syntaxes/agent.tmLanguage.json", manifestPath, gr)
	}
	if m.Contributes.Configuration == nil {
		t.Errorf("%s: contributes no configuration", manifestPath)
	}
}

// TestFixturesParse keeps the highlighting fixtures real agentc: each must
// parse without a diagnostic, except *.invalid.agent, which must have one.
func TestFixturesParse(t *testing.T) {
	files, err := filepath.Glob(fixtureGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures match %s (%v)", fixtureGlob, err)
	}
	for _, f := range files {
		_, diags := syntax.Parse(filepath.Base(f), []byte(readFile(t, f)))
		invalid := strings.HasSuffix(f, ".invalid.agent")
		switch {
		case invalid && len(diags) == 0:
			t.Errorf("%s: want a lexical or syntax error, got none", f)
		case !invalid:
			for _, d := range diags {
				t.Errorf("%s: %v", f, d)
			}
		}
	}
}

// TestVimHighlighting loads the Vim files into headless Vim and Neovim
// (each skipped when not installed) and checks the syntax groups at a few
// places, which also proves that ftdetect sets the filetype.
func TestVimHighlighting(t *testing.T) {
	for _, bin := range []string{"vim", "nvim"} {
		t.Run(bin, func(t *testing.T) {
			path, err := exec.LookPath(bin)
			if err != nil {
				t.Skipf("%s is not installed", bin)
			}
			checkVimHighlighting(t, path)
		})
	}
}

func checkVimHighlighting(t *testing.T, vim string) {
	rtp, err := filepath.Abs("vim")
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		fixture, line, needle string
		want                  string // the innermost syntax group (transparent ones resolved)
		inStack               string // a group that must enclose the position
	}
	checks := []check{
		{"support.agent", "workflow support", "workflow", "agentDeclaration", ""},
		{"support.agent", "workflow support", "support", "agentDeclName", ""},
		{"support.agent", "type Triage", "Triage", "agentTypeName", ""},
		{"support.agent", "node scan", "scan", "agentFuncName", ""},
		{"support.agent", "node scan", "map", "agentNode", ""},
		{"support.agent", "concurrency 4", "concurrency", "agentClause", ""},
		{"support.agent", "when triage.verdict", "when", "agentClause", ""},
		{"support.agent", "retry 3", "200ms", "agentDuration", ""},
		{"support.agent", "retry 3", "..", "agentOperator", ""},
		{"support.agent", "retry 3", "->", "agentArrow", ""},
		{"support.agent", "base_url", "env", "agentFunction", ""},
		{"support.agent", "provider", "// any", "agentLineComment", ""},
		{"support.agent", "port: int", "int", "agentType", ""},
		{"support.agent", "approved: true", "true", "agentConstant", ""},
		{"support.agent", "context_window", "128000", "agentInt", ""},
		{"support.agent", "sync_ratio", "0.7", "agentFloat", ""},
		{"support.agent", "Reply with JSON", "{{", "agentBraceEscape", "agentTextBlock"},
		{"support.agent", "You investigate", "You", "agentTextBlock", ""},
		{"support.agent", "Triage: {question}", "question", "agentInterp", "agentString"},
		{"support.agent", "Triage: {question}", "{question", "agentInterpDelim", "agentString"},
		{"strings.agent", `join(xs, ", ")`, `", ")`, "agentString", "agentInterp"},
		{"strings.agent", `join(xs, ", ")`, `b"`, "agentString", ""},
		{"strings.agent", "/* a block", "block", "agentBlockComment", ""},
		{"strings.agent", `tab\t`, `\t`, "agentEscape", "agentString"},
	}
	type pos struct {
		file      string
		line, col int
	}
	var positions []pos
	for _, c := range checks {
		path, _ := filepath.Abs(filepath.Join("vscode/test/fixtures", c.fixture))
		lines := strings.Split(readFile(t, path), "\n")
		p := pos{file: path}
		for i, l := range lines {
			if j := strings.Index(l, c.line); j >= 0 {
				if k := strings.Index(l, c.needle); k >= 0 {
					p.line, p.col = i+1, k+1
					break
				}
			}
		}
		if p.line == 0 {
			t.Fatalf("%s: no line with %q and %q", c.fixture, c.line, c.needle)
		}
		positions = append(positions, p)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	var script strings.Builder
	fmt.Fprintf(&script, "set nocompatible\nlet v:errmsg = ''\nlet s:out = []\nexecute 'set runtimepath^=' . fnameescape(%q)\nfiletype on\nsyntax on\n", rtp)
	for _, p := range positions {
		fmt.Fprintf(&script, "execute 'edit' fnameescape(%q)\n", p.file)
		fmt.Fprintf(&script, "call add(s:out, &filetype . ' ' . synIDattr(synID(%d, %d, 1), 'name') . ' ' . join(map(synstack(%d, %d), 'synIDattr(v:val, \"name\")'), ','))\n", p.line, p.col, p.line, p.col)
	}
	fmt.Fprintf(&script, "call add(s:out, 'errmsg:' . v:errmsg)\ncall writefile(s:out, %q)\nqall!\n", out)
	scriptPath := filepath.Join(dir, "check.vim")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vim, "-N", "-u", "NONE", "-i", "NONE", "-n", "-es", "-S", scriptPath)
	cmd.Env = append(os.Environ(), "HOME="+dir, "VIMINIT=", "MYVIMRC=")
	outb, err := cmd.CombinedOutput()
	res, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("vim wrote no result (%v): %v\n%s", rerr, err, outb)
	}
	lines := strings.Split(strings.TrimRight(string(res), "\n"), "\n")
	if len(lines) != len(checks)+1 {
		t.Fatalf("vim returned %d lines, want %d:\n%s", len(lines), len(checks)+1, res)
	}
	if last := lines[len(lines)-1]; last != "errmsg:" {
		t.Errorf("vim reported an error: %s", strings.TrimPrefix(last, "errmsg:"))
	}
	for i, c := range checks {
		f := strings.SplitN(lines[i], " ", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		ft, group, stack := f[0], f[1], strings.Split(f[2], ",")
		where := fmt.Sprintf("%s:%d:%d %q", c.fixture, positions[i].line, positions[i].col, c.needle)
		if ft != "agent" {
			t.Errorf("%s: filetype is %q, want agent (ftdetect)", where, ft)
		}
		if group != c.want {
			t.Errorf("%s: syntax group %q, want %q (stack %v)", where, group, c.want, stack)
		}
		if c.inStack != "" && !slices.Contains(stack, c.inStack) {
			t.Errorf("%s: syntax stack %v lacks %q", where, stack, c.inStack)
		}
	}
}

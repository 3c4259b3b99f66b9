package syntax

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/lang/diag"
)

// The hand-written parser (rd.go) is checked against participle, which
// stays the executable definition of the grammar: every input is split into
// declarations and each declaration's token slice is parsed by both. Where
// participle succeeds, rd must succeed with a deep-equal AST (every field,
// nil-vs-empty slices, every Pos/EndPos); where participle fails, rd must
// fail. Error positions are compared and counted but not asserted: rd
// reports the furthest token no alternative could consume, participle the
// position of its deepest backtracked branch.
//
// Known, deliberate differences (normalised or skipped, never silently):
//
//   - participle leaks the operator of a backtracked comparison tail into
//     CmpExpr.Op with Right == nil (`a = b in { x = 1 }`); normaliseOracle
//     clears such an Op in the oracle's tree before comparing.
//   - prefix operators and nested types are bounded by maxRecursion in rd;
//     the differential inputs stay far below it.

// ---- corpus ----

type corpusEntry struct {
	name string
	src  []byte
}

// corpus gathers every source the differential tests replay.
func corpus(t testing.TB) []corpusEntry {
	var out []corpusEntry
	add := func(name string, src []byte) { out = append(out, corpusEntry{name, src}) }
	files, _ := filepath.Glob("testdata/*.agent")
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add(p, src)
	}
	_ = filepath.WalkDir("../../examples", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".agent") {
			if src, err := os.ReadFile(p); err == nil {
				add(p, src)
			}
		}
		return nil
	})
	specs, _ := filepath.Glob("../../spec/*.md")
	fence := regexp.MustCompile("(?s)```agent\n(.*?)```")
	for _, p := range specs {
		src, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for i, m := range fence.FindAllSubmatch(src, -1) {
			add(fmt.Sprintf("%s#%d", p, i), m[1])
		}
	}
	// Every string literal of the hand-written parser tests, bare and as the
	// value of an attribute (parse_test.go's stringOf does the same).
	for _, p := range []string{"ambiguity_test.go", "parse_test.go"} {
		for i, s := range goStringLiterals(t, p) {
			add(fmt.Sprintf("%s#%d", p, i), []byte(s))
			add(fmt.Sprintf("%s#%d/value", p, i), []byte("model m { v = "+s+" }"))
		}
	}
	for _, n := range []int{50, 300, 2000} {
		add(fmt.Sprintf("generate(%d)", n), generate(n))
	}
	for i, src := range edgeCases {
		add(fmt.Sprintf("edge#%d", i), []byte(src))
	}
	return out
}

// edgeCases covers, for every production, the optional and empty forms and
// the inputs where a failed alternative stops one token (backtracked) or two
// tokens (fatal) past its start.
var edgeCases = []string{
	// declarations
	`workflow w`, `workflow w "doc"`, `workflow w 3`, `workflow "x"`, `import "x"`, `import x`,
	`model m {}`, `summary s { a = 1, b = 2, }`, `evolution e { a { b { c = 1 } } }`, `model m`, `model m { a }`,
	`type T = list`, `type T = map`, `type T = list<int>?`, `type T = map<list<int>?>`, `type T = (int)`, `type T = ("a")?`,
	`type T = "a" | "b"`, `type T = "a" |`, `type T = "a" | b`, `type T { a: int = 1 reduce f, b: string }`, `type T {}`,
	`type T = list<`, `type T = list x`, `type T = ( int`, `type T = { a }`, `type T x`, `type T = {`,
	`tool t {}`, `tool t "doc" { input { a: int } output string run = builtin.x }`, `tool t { run = foo }`,
	`tool t { run x }`, `tool t { run = http { url = "u" } }`, `tool t { run = exec {} }`, `tool t { run = agent a }`,
	`tool t { run = builtin }`, `tool t { run = builtin. }`, `tool t { input = 3 }`, `tool t { input foo }`,
	`tool t { output "a" | "b" }`, `tool t { input }`, `tool t { output = x, input = y }`, `tool t { input { a: int }? }`,
	`skill s from "x"`, `skill s from "x" { a = 1 }`, `skill s "x"`, `skill s from x`,
	`state S {}`, `state S { a: int, b: list<string> reduce append c: T? = null }`, `state S { a: int reduce }`, `state S { a: int = }`,
	`state S { a: list<int> max 3 = [] reduce append, b: list<T>? max 1 }`, `state S { a: list<int> max: int }`, `state S { a: list<int> max }`,
	`state S { a: list<int> max -1 }`, `state S { a: list<int> max 1.5 }`, `state S { a: list<int> max "x" = [] }`, `type T { a: list<int> max 2 }`,
	`agent a llm {}`, `agent a llm "doc" { model = fast }`, `agent a { }`, `agent a llm "doc"`,
	`graph g(S) {}`, `graph g(S) input q output r "doc" {}`, `graph g(S) output r {}`, `graph g(S) input {}`,
	`graph g(S) input q output {}`, `graph g S {}`, `graph g() {}`,
	`serve {}`, `serve { a2a { path = "/x" } }`, `serve x`,
	`test "t" {}`, `test "t" { model fast replay "f" tool t replay "g" }`, `test "t" { model = fast }`,
	`test "t" { model fast = 3 }`, `test "t" { tool = 1 }`, `test "t" { answer a = 1 answer = 2 }`,
	`test "t" { expect a before b expect c }`, `test "t" { expect }`, `test "t" { expect a before }`, `test t {}`,
	// graph items, node bodies and clauses
	`graph g(S) { node a = set {} retry 3 on [] }`, `graph g(S) { node a = set {} retry 3 on [a] }`,
	`graph g(S) { node a = set {} retry 3 on [a, b] }`, `graph g(S) { node a = set {} retry 3 on [a,] }`,
	`graph g(S) { node a = set {} retry 3 backoff 1s..2s on [x] }`, `graph g(S) { node a = set {} retry 3 backoff x }`,
	`graph g(S) { node a = set {} retry 3 backoff 1s 2s }`, `graph g(S) { node a = set {} retry 3 on x }`,
	`graph g(S) { node a = set {} retry x }`, `graph g(S) { node a = set {} retry }`,
	`graph g(S) { node a = set {} timeout 5s catch -> b cache cache ttl 1h into c }`,
	`graph g(S) { node a = set {} timeout x }`, `graph g(S) { node a = set {} catch b }`, `graph g(S) { node a = set {} cache ttl }`,
	`graph g(S) { node a = set {} into }`, `graph g(S) { node a = llm x node b = tool t { q = 1 } node c = agent a node d = graph g }`,
	`graph g(S) { node a = map x in xs concurrency 2 { tool t retry 1 } into ys }`, `graph g(S) { node a = map x in xs { join all } }`,
	`graph g(S) { node a = map x in xs concurrency { tool t } }`, `graph g(S) { node a = map x in { tool t } }`,
	`graph g(S) { node a = interrupt "p" returns T into d }`, `graph g(S) { node a = interrupt "p" T }`,
	`graph g(S) { node a = join any node b = join x }`, `graph g(S) { node a = foo }`, `graph g(S) { node a = }`, `graph g(S) { node = set {} }`,
	`graph g(S) { node -> end start -> node }`, `graph g(S) { a -> b when x and y a -> c otherwise max 3 else -> d }`,
	`graph g(S) { a -> b when }`, `graph g(S) { a -> b max }`, `graph g(S) { a -> b max 3 else }`, `graph g(S) { a -> b max 3 else -> }`,
	`graph g(S) { a -> b max 3 else c }`, `graph g(S) { a -> }`, `graph g(S) { a b }`, `graph g(S) { a -> b otherwise when x }`,
	// expressions
	`model m { a = f() b = f(a,) c = f(a, b,) d = f(,) e = f(a b) }`, `model m { a = [] b = [a,] c = [a: b, c] d = [a: ] }`,
	`model m { a = {} b = {a: 1,} c = {"k": 1} d = {a} e = {a: } }`, `model m { a = {"k" 1} }`,
	`model m { a = not b = not not x c = a not in b d = a not b e = a in b f = not (x) }`,
	`model m { a = - b = - -1 c = -x.y d = 1 - - 2 }`, `model m { a = x.y[0].z b = x. c = x[ d = x[1 }`,
	`model m { a = (x) b = ( c = (x }`, `model m { a = true b = false() c = null.x d = true(1) }`,
	`model m { a = 1 + 2 * 3 % 4 / 5 - 6 b = 1 + c = 2 * }`, `model m { a = x == y b = x != y c = x <= y d = x >= y e = x < y f = x > y }`,
	`model m { a = x == b = 1 }`, `model m { a = x or y and z or not w }`, `model m { a = x or }`, `model m { a = x and }`,
	`model m { a = 1.5 b = 2h c = 1h30m d = "s{x}t" e = """t{{x}}""" f = "" g = "{ {a: 1} }" }`,
	`model m { a = "{" }`, `model m { a = "{}" }`, `model m { a = "{x" }`, `model m { a = "a} b" }`,
	// participle's CmpExpr leak (normalised in the oracle)
	`model m { a = b in { x = 1 } }`, `model m { a = b in ( x ) }`, `model m { a = b == [ e = 2 }`,
}

func goStringLiterals(t testing.TB, path string) []string {
	f, err := parser.ParseFile(gotoken.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

// lexUnit is a declaration unit with participle's tokens (the form the
// oracle and the token-stream mutators take).
type lexUnit struct {
	toks     []lexer.Token
	maxDepth int
}

// units lexes src the way Parse does and returns its declaration units.
func units(src []byte) []lexUnit {
	toks, text, _ := scan("d.agent", src)
	code := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.Type != tokComment {
			code = append(code, t)
		}
	}
	var out []lexUnit
	for _, u := range splitDecls("d.agent", text, code) {
		out = append(out, lexUnit{toks: lexTokens(u.file, u.text, u.toks), maxDepth: u.maxDepth})
	}
	return out
}

// parseDeclRD parses the tokens of one declaration (EOF excluded; eof is the
// token placed just past the last one) with the hand-written parser. The
// tokens are in participle's form (as the oracle takes them), all of one
// file, each value at its offset (as the lexer's are, and relay's); the
// parser's tokens point into a source rebuilt from them.
func parseDeclRD(toks []lexer.Token, eof lexer.Token) (Decl, *diag.Diagnostic) {
	size := eof.Pos.Offset
	for _, t := range toks {
		size = max(size, t.Pos.Offset+len(t.Value))
	}
	src := []byte(strings.Repeat(" ", size))
	u := unit{file: eof.Pos.Filename, toks: make([]token, len(toks))}
	for i, t := range toks {
		copy(src[t.Pos.Offset:], t.Value)
		u.toks[i] = tokenAt(tokType(t.Type), len(t.Value), t.Pos)
	}
	u.text = string(src)
	for i, t := range toks {
		if got := u.toks[i].value(u.text); got != t.Value {
			panic(fmt.Sprintf("parseDeclRD: token %d (%q at offset %d) overlaps another (%q there)", i, t.Value, t.Pos.Offset, got))
		}
	}
	return new(rdAlloc).parseDecl(u, tokenAt(tokType(eof.Type), len(eof.Value), eof.Pos))
}

func eofAfter(toks []lexer.Token) lexer.Token {
	if len(toks) == 0 {
		return lexer.Token{Type: tokEOF, Pos: lexer.Position{Filename: "d.agent", Line: 1, Column: 1}}
	}
	return lexer.Token{Type: tokEOF, Pos: endOf(toks[len(toks)-1])}
}

// ---- the differential check ----

type diffStats struct {
	units, ok, failed, samePos, leaks int
}

func (s diffStats) String() string {
	return fmt.Sprintf("%d declarations: %d parsed, %d rejected by both (%d at the same token), %d participle CmpExpr leaks normalised",
		s.units, s.ok, s.failed, s.samePos, s.leaks)
}

// oracle runs participle, turning a panic into a failure report.
func oracle(toks []lexer.Token, eof lexer.Token) (d Decl, dg *diag.Diagnostic, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	d, dg = participleDecl(toks, eof)
	return d, dg, nil
}

// checkUnit parses toks with both parsers and returns a description of the
// first disagreement, or "".
func checkUnit(toks []lexer.Token, eof lexer.Token, st *diffStats) string {
	st.units++
	toks, eof = relay(toks)
	want, wantErr, pan := oracle(toks, eof)
	if pan != nil {
		return "" // participle itself broke; nothing to compare against
	}
	got, gotErr := parseDeclRD(toks, eof)
	switch {
	case wantErr == nil && gotErr != nil:
		return fmt.Sprintf("participle parses it, rd fails: %v", gotErr)
	case wantErr != nil && gotErr == nil:
		return fmt.Sprintf("participle fails (%v), rd parses it", wantErr)
	case wantErr != nil:
		st.failed++
		if gotErr.Code != diag.SyntaxError && gotErr.Code != diag.NestingTooDeep {
			return fmt.Sprintf("rd error has code %s", gotErr.Code)
		}
		if gotErr.Subject.Start.Offset == wantErr.Subject.Start.Offset {
			st.samePos++
		}
		return ""
	}
	st.ok++
	st.leaks += normaliseOracle(reflect.ValueOf(want))
	if d := diffValues("Decl", reflect.ValueOf(&want).Elem(), reflect.ValueOf(&got).Elem()); d != "" {
		return d
	}
	if !reflect.DeepEqual(want, got) {
		return "reflect.DeepEqual disagrees with diffValues"
	}
	return ""
}

// relay gives synthetic or mutated token streams positions consistent with
// their values (strictly increasing offsets, one space between tokens), as
// the lexer's are, so node ends (just past the last token) are well defined.
// Streams from the lexer are returned unchanged.
func relay(toks []lexer.Token) ([]lexer.Token, lexer.Token) {
	consistent := true
	for i := 1; i < len(toks); i++ {
		if toks[i].Pos.Offset < endOf(toks[i-1]).Offset {
			consistent = false
			break
		}
	}
	if consistent && len(toks) > 0 {
		return toks, eofAfter(toks)
	}
	out := make([]lexer.Token, len(toks))
	pos := lexer.Position{Filename: "r.agent", Line: 1, Column: 1}
	end := pos
	for i, t := range toks {
		if t.Value == "" {
			t.Pos = end // a synthetic closer sits where the token before it ends, as the lexer puts it
			out[i] = t
			continue
		}
		t.Pos = pos
		out[i] = t
		pos.Advance(t.Value)
		end = pos
		pos.Advance(" ")
	}
	if len(out) == 0 {
		return out, lexer.Token{Type: tokEOF, Pos: pos}
	}
	return out, eofAfter(out)
}

// normaliseOracle clears the operator participle leaks into a CmpExpr whose
// right operand was backtracked (see rd.go), returning how many it cleared.
func normaliseOracle(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			if c, ok := v.Interface().(*CmpExpr); ok && c.Op != "" && c.Right == nil {
				c.Op = ""
				n++
			}
			n += normaliseOracle(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			n += normaliseOracle(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			n += normaliseOracle(v.Index(i))
		}
	}
	return n
}

// diffValues reports the first path where a and b differ ("" if none). It
// tells nil slices from empty ones and compares every position.
func diffValues(path string, a, b reflect.Value) string {
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %s vs %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: participle nil=%v, rd nil=%v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return diffValues(path, a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: participle nil=%v, rd nil=%v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		if a.Elem().Type() != b.Elem().Type() {
			return fmt.Sprintf("%s: participle %s, rd %s", path, a.Elem().Type(), b.Elem().Type())
		}
		return diffValues(fmt.Sprintf("%s.(%s)", path, a.Elem().Type()), a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diffValues(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: participle nil=%v, rd nil=%v (len %d, %d)", path, a.IsNil(), b.IsNil(), a.Len(), b.Len())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffValues(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: participle %q, rd %q", path, a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: participle %v, rd %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: participle %d, rd %d", path, a.Int(), b.Int())
		}
	default:
		return fmt.Sprintf("%s: unexpected kind %s", path, a.Kind())
	}
	return ""
}

func tokString(toks []lexer.Token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.Value)
	}
	return b.String()
}

// ---- tests ----

// TestDifferentialCorpus: every declaration of every corpus source parses
// to the same AST with both parsers (or fails with both).
func TestDifferentialCorpus(t *testing.T) {
	var st diffStats
	for _, c := range corpus(t) {
		for _, u := range units(c.src) {
			if d := checkUnit(u.toks, eofAfter(u.toks), &st); d != "" {
				t.Errorf("%s: %s\n  tokens: %s", c.name, d, tokString(u.toks))
			}
		}
	}
	if st.ok < 50 {
		t.Errorf("corpus too small: %v", st)
	}
	t.Log(st)
}

// TestDifferentialMutations replays token-level mutations of the corpus
// (deletion, duplication, swap, replacement by any vocabulary token):
// mostly invalid declarations, plus many valid variants.
func TestDifferentialMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := tokenVocabulary()
	var st diffStats
	budget := diffBudget(1_000, 8_000, 200_000)
	var bases [][]lexer.Token
	for _, c := range corpus(t) {
		if strings.HasPrefix(c.name, "generate(2000)") {
			continue // long units make every mutation slow under participle
		}
		for _, u := range units(c.src) {
			bases = append(bases, u.toks)
		}
	}
	for n := 0; n < budget; n++ {
		base := bases[rng.IntN(len(bases))]
		toks := slicesClone(base)
		for range 1 + rng.IntN(2) {
			toks = mutate(rng, toks, vocab)
		}
		if len(toks) == 0 {
			continue
		}
		if d := checkUnit(toks, eofAfter(toks), &st); d != "" {
			t.Fatalf("%s\n  tokens: %s", d, tokString(toks))
		}
	}
	t.Log(st)
}

// diffBudget sizes the randomized differential tests: short with -short,
// long with AGENTC_RD_DIFF=long (a soak run), default otherwise.
func diffBudget(short, normal, long int) int {
	switch {
	case os.Getenv("AGENTC_RD_DIFF") == "long":
		return long
	case testing.Short():
		return short
	}
	return normal
}

func slicesClone(t []lexer.Token) []lexer.Token { return append([]lexer.Token(nil), t...) }

func mutate(rng *rand.Rand, toks []lexer.Token, vocab []lexer.Token) []lexer.Token {
	if len(toks) == 0 {
		return toks
	}
	i := rng.IntN(len(toks))
	switch rng.IntN(4) {
	case 0: // delete
		return append(toks[:i:i], toks[i+1:]...)
	case 1: // duplicate
		return append(toks[:i+1:i+1], toks[i:]...)
	case 2: // swap with the next
		if i+1 < len(toks) {
			toks[i], toks[i+1] = toks[i+1], toks[i]
		}
		return toks
	default: // replace, keeping the position
		r := vocab[rng.IntN(len(vocab))]
		r.Pos = toks[i].Pos
		toks[i] = r
		return toks
	}
}

// tokenVocabulary is every keyword and punctuation token, a few names and
// literals, and the string tokens, including values that collide across
// token types (a text "=", an interpolation "{" vs a punctuation "{").
func tokenVocabulary() []lexer.Token {
	var v []lexer.Token
	add := func(typ lexer.TokenType, val string) { v = append(v, lexer.Token{Type: typ, Value: val}) }
	for _, k := range keywords {
		add(tokIdent, k.Word)
	}
	for _, id := range []string{"a", "b", "x", "fast", "S"} {
		add(tokIdent, id)
	}
	for _, p := range punct2 {
		add(tokPunct, p)
	}
	for _, c := range punct1 {
		add(tokPunct, string(c))
	}
	add(tokInt, "3")
	add(tokInt, "0")
	add(tokFloat, "2.5")
	add(tokDuration, "5s")
	add(tokDuration, "1h30m")
	add(tokStrOpen, `"`)
	add(tokStrClose, `"`)
	add(tokTextOpen, `"""`)
	add(tokTextClose, `"""`)
	add(tokText, "hello ")
	add(tokText, "=")
	add(tokText, "}")
	add(tokText, "true")
	add(tokInterpOpen, "{")
	add(tokInterpEnd, "}")
	return v
}

// decodeTokens turns fuzz bytes into a token stream over the vocabulary.
func decodeTokens(data []byte, vocab []lexer.Token) []lexer.Token {
	toks := make([]lexer.Token, 0, len(data))
	for i, b := range data {
		t := vocab[int(b)%len(vocab)]
		t.Pos = lexer.Position{Filename: "f.agent", Offset: 2 * i, Line: 1 + i/40, Column: 1 + 2*(i%40)}
		toks = append(toks, t)
	}
	return toks
}

// encodeTokens is the inverse of decodeTokens for seeds (unknown names map
// to "a").
func encodeTokens(toks []lexer.Token, vocab []lexer.Token) []byte {
	out := make([]byte, 0, len(toks))
	for _, t := range toks {
		idx := -1
		for j, v := range vocab {
			if v.Type == t.Type && v.Value == t.Value {
				idx = j
				break
			}
		}
		if idx < 0 {
			for j, v := range vocab {
				if v.Type == t.Type {
					idx = j
					break
				}
			}
		}
		if idx < 0 || idx > 255 {
			continue
		}
		out = append(out, byte(idx))
	}
	return out
}

// TestDifferentialRepeatLimit lowers participle.MaxIterations (and rd's
// maxRepeat with it) so the repetition limit is exercised on small inputs.
func TestDifferentialRepeatLimit(t *testing.T) {
	if maxRepeat != participle.MaxIterations {
		t.Fatalf("maxRepeat = %d, participle.MaxIterations = %d", maxRepeat, participle.MaxIterations)
	}
	saved := participle.MaxIterations
	defer func() { participle.MaxIterations, maxRepeat = saved, saved }()
	// Not 1: participle then also rejects every "?" group that matches
	// (its check is matches >= MaxIterations), which cannot happen at the
	// real limit.
	for _, limit := range []int{2, 3, 5} {
		participle.MaxIterations, maxRepeat = limit, limit
		var st diffStats
		for _, c := range corpus(t) {
			for _, u := range units(c.src) {
				if d := checkUnit(u.toks, eofAfter(u.toks), &st); d != "" {
					t.Errorf("limit %d, %s: %s\n  tokens: %s", limit, c.name, d, tokString(u.toks))
				}
			}
		}
		if st.failed == 0 {
			t.Errorf("limit %d rejected nothing", limit)
		}
	}
}

// TestFileLevelEquivalence: Parse and the participle pipeline agree on whole
// files: same declarations (BadDecl included), same comments, and the same
// number of diagnostics.
func TestFileLevelEquivalence(t *testing.T) {
	for _, c := range corpus(t) {
		f1, d1 := Parse("a.agent", c.src)
		f2, d2 := parseParticiple("a.agent", c.src)
		normaliseOracle(reflect.ValueOf(f2))
		if d := diffValues("File", reflect.ValueOf(f2).Elem(), reflect.ValueOf(f1).Elem()); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
		if len(d1) != len(d2) {
			t.Errorf("%s: %d diagnostics, participle %d", c.name, len(d1), len(d2))
		}
	}
}

// parseParticiple is Parse with participle as the declaration parser (the
// baseline of BenchmarkParticiple10kLines).
func parseParticiple(name string, src []byte) (*File, []diag.Diagnostic) {
	f := &File{Name: name}
	f.Pos = lexer.Position{Filename: name, Line: 1, Column: 1}
	f.EndPos = f.Pos
	if len(src) > MaxSourceSize || !utf8.Valid(src) {
		return Parse(name, src) // rejected before any declaration is parsed
	}
	toks, text, diags := scan(name, src)
	f.EndPos = toks[len(toks)-1].pos(name)
	code := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.Type == tokComment {
			f.Comments = append(f.Comments, Comment{Text: t.value(text), Pos: posOf(t.pos(name)), End: posOf(t.end(name, text))})
			continue
		}
		code = append(code, t)
	}
	if len(diags) >= maxLexErrors {
		return f, diags
	}
	lexical := len(diags)
	for _, u := range splitDecls(name, text, code) {
		decl, d := parseDeclParticiple(u)
		if d != nil && !within(diags[:lexical], u) {
			diags = append(diags, *d)
		}
		if decl != nil {
			f.Decls = append(f.Decls, decl)
		}
	}
	return f, diags
}

// TestRDErrors pins rd's messages: the furthest token nothing could
// consume, and what would have been accepted there.
func TestRDErrors(t *testing.T) {
	cases := []struct{ src, msg string }{
		{`model m { a = 1 b }`, `unexpected "}"; expected "=" or "{"`},
		{`model m { a = }`, `unexpected "}"; expected an expression`},
		{`graph g(S) { node -> }`, `unexpected "}"; expected a name`},
		{`graph g(S) { node a = foo x }`, `unexpected "foo"; expected a node body (llm, tool, agent, graph, set, map, interrupt, join or wait)`},
		{`workflow w 3`, `unexpected number 3; expected a string or a new declaration`},
		{`type T = list<string`, `unexpected end of file; expected "?" or ">"`},
		{`tool t { run = builtin. }`, `unexpected "}"; expected a name`},
		{`model m { a = f(x, }`, `unexpected "}"; expected an expression or ")"`},
	}
	for _, tc := range cases {
		_, ds := Parse("e.agent", []byte(tc.src))
		if len(ds) != 1 {
			t.Errorf("%s: want one diagnostic, got %v", tc.src, ds)
			continue
		}
		if ds[0].Code != diag.SyntaxError || ds[0].Summary != tc.msg {
			t.Errorf("%s:\n  got  %s %q\n  want %q", tc.src, ds[0].Code, ds[0].Summary, tc.msg)
		}
	}
}

// TestRDRecursionLimit: prefix operators and nested types cannot overflow
// the stack.
func TestRDRecursionLimit(t *testing.T) {
	for _, src := range []string{
		"model m { a = " + strings.Repeat("not ", 3*maxRecursion) + "x }",
		"model m { a = " + strings.Repeat("- ", 3*maxRecursion) + "1 }",
		"type T = " + strings.Repeat("list<", 3*maxRecursion) + "int" + strings.Repeat(">", 3*maxRecursion),
	} {
		_, ds := Parse("deep.agent", []byte(src))
		if len(ds) != 1 || ds[0].Code != diag.NestingTooDeep {
			t.Errorf("%.30s…: want one %s, got %v", src, diag.NestingTooDeep, ds)
		}
	}
	// Below the limit both parsers agree.
	var st diffStats
	for _, src := range []string{
		"model m { a = " + strings.Repeat("not ", 500) + "x }",
		"model m { a = " + strings.Repeat("- ", 500) + "1 }",
		"type T = " + strings.Repeat("list<", 300) + "int" + strings.Repeat(">", 300),
	} {
		for _, u := range units([]byte(src)) {
			if d := checkUnit(u.toks, eofAfter(u.toks), &st); d != "" {
				t.Errorf("%.30s…: %s", src, d)
			}
		}
	}
}

// ---- fuzzing ----

// FuzzParseDifferential parses arbitrary source with both parsers,
// declaration by declaration. Inputs whose first byte is odd are decoded as
// a token stream over tokenVocabulary instead, which reaches grammar paths
// (and token-type collisions) that mutated source rarely does. rd must
// never panic.
func FuzzParseDifferential(f *testing.F) {
	vocab := tokenVocabulary()
	for _, c := range corpus(f) {
		if len(c.src) > 4096 {
			continue
		}
		f.Add(append([]byte{0}, c.src...))
		for _, u := range units(c.src) {
			f.Add(append([]byte{1}, encodeTokens(u.toks, vocab)...))
		}
	}
	g := &gen{rng: rand.New(rand.NewPCG(5, 6))}
	for range 200 {
		f.Add(append([]byte{1}, encodeTokens(g.decl(), vocab)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 4096 {
			return
		}
		var st diffStats
		if data[0]%2 == 1 {
			toks := decodeTokens(data[1:], vocab)
			if len(toks) == 0 {
				return
			}
			if d := checkUnit(toks, eofAfter(toks), &st); d != "" {
				t.Fatalf("%s\n  tokens: %s", d, tokString(toks))
			}
			return
		}
		src := data[1:]
		for _, u := range units(src) {
			if u.maxDepth > MaxNesting {
				continue
			}
			if d := checkUnit(u.toks, eofAfter(u.toks), &st); d != "" {
				t.Fatalf("%s\n  tokens: %s", d, tokString(u.toks))
			}
		}
		Parse("fuzz.agent", src) // the whole pipeline must not panic either
	})
}

// ---- benchmarks ----

// The shared machine's wall clock is noisy, so these benchmarks also report
// cpu-ns/op: the process's user+system CPU time per operation (GC work on
// other threads included; run with GOMAXPROCS=1 for the one-core figure).

// BenchmarkParticiple10kLines is the baseline of BenchmarkParse10kLines:
// the same pipeline with participle parsing each declaration.
func BenchmarkParticiple10kLines(b *testing.B)  { benchPipeline(b, 10_000, parseParticiple) }
func BenchmarkParticiple100kLines(b *testing.B) { benchPipeline(b, 100_000, parseParticiple) }

// BenchmarkParseCPU10kLines is BenchmarkParse10kLines with cpu-ns/op.
func BenchmarkParseCPU10kLines(b *testing.B)  { benchPipeline(b, 10_000, Parse) }
func BenchmarkParseCPU100kLines(b *testing.B) { benchPipeline(b, 100_000, Parse) }

func benchPipeline(b *testing.B, n int, parse func(string, []byte) (*File, []diag.Diagnostic)) {
	src := generate(n)
	if _, ds := parse("gen.agent", src); len(ds) > 0 {
		b.Fatalf("generated source has diagnostics: %v", ds[0])
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		parse("gen.agent", src)
	}
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkLex10kLines isolates lexAll.
func BenchmarkLex10kLines(b *testing.B) {
	src := generate(10_000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		lexAll("gen.agent", src)
	}
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkLexReference10kLines is BenchmarkLex10kLines with the original
// scanner (the lexer's baseline).
func BenchmarkLexReference10kLines(b *testing.B) {
	src := generate(10_000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		refLexAll("gen.agent", src)
	}
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
}

// ---- lexer reference ----

// TestLexerMatchesReference: the optimised lexAll produces exactly the
// tokens and diagnostics of the original scanner (kept below, renamed with a
// ref prefix, as the oracle).
func TestLexerMatchesReference(t *testing.T) {
	for _, c := range corpus(t) {
		if d := diffLexers(c.src); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}
	for _, src := range []string{"a\r\n b\t\n\n  c", "\"caf\u00e9 {x}\" \"\"\"\n  \u00e9\n\"\"\"", "/* a\n b */ x // c\r\n", "5sx 1.2.3 1e 1e+ \"a\\q\" \"a } b\" @ \u00e9", "\"{\"", "\"\"\"{\"\"\"", "x = \"hi {q\" }\ny", "\"a {f(\"x\" }\nz", "\"a {q or \"b\"} {x[\"k\"]}\"", "r\u00e9sum\u00e9 = r\u00e9sum\u00e9 + \u00e9t\u00e9"} {
		if d := diffLexers([]byte(src)); d != "" {
			t.Errorf("%q: %s", src, d)
		}
	}
}

// FuzzLexerMatchesReference compares the two lexers on arbitrary bytes.
func FuzzLexerMatchesReference(f *testing.F) {
	for _, c := range corpus(f) {
		if len(c.src) <= 4096 {
			f.Add(c.src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if d := diffLexers(src); d != "" {
			t.Fatal(d)
		}
	})
}

func diffLexers(src []byte) string {
	got, gotDiags := lexAll("l.agent", src)
	want, wantDiags := refLexAll("l.agent", src)
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				return fmt.Sprintf("token %d: got %#v, want %#v", i, got[i], want[i])
			}
		}
		return fmt.Sprintf("%d tokens, want %d", len(got), len(want))
	}
	if !reflect.DeepEqual(gotDiags, wantDiags) {
		return fmt.Sprintf("diagnostics %v, want %v", gotDiags, wantDiags)
	}
	return ""
}

// The original scanner, verbatim but for the ref prefix.

// lexing modes.
type refMode uint8

const (
	refModeCode   refMode = iota // top level or inside an interpolation
	refModeString                // inside "..."
	refModeText                  // inside """..."""
)

type refFrame struct {
	refMode     refMode
	depth       int // brace depth inside an interpolation (refModeCode only)
	open        lexer.Position
	toks, diags int // tokens and diagnostics when the frame opened
}

type refScanner struct {
	file  string
	src   []byte
	pos   lexer.Position
	stack []refFrame
	toks  []lexer.Token
	diags []diag.Diagnostic
	bad   map[string]bool
}

// refLexAll splits src into tokens (comments included, whitespace dropped). It
// never fails: problems become diagnostics and the token stream stays
// well-formed (every string and interpolation is closed, EOF is last).
func refLexAll(file string, src []byte) ([]lexer.Token, []diag.Diagnostic) {
	s := &refScanner{
		file:  file,
		src:   src,
		pos:   lexer.Position{Filename: file, Line: 1, Column: 1},
		stack: []refFrame{{refMode: refModeCode}},
		toks:  make([]lexer.Token, 0, len(src)/4+1),
	}
	s.run()
	return s.toks, s.diags
}

func (s *refScanner) errorf(code diag.Code, at, end lexer.Position, format string, args ...any) {
	if len(s.diags) == maxLexErrors {
		s.diags = append(s.diags, diag.Diagnostic{Severity: diag.Error, Code: code, Summary: "too many lexical errors; giving up on this file", Subject: spanOf(at, end)})
	}
	if len(s.diags) >= maxLexErrors {
		return
	}
	s.diags = append(s.diags, diag.Diagnostic{Severity: diag.Error, Code: code, Summary: fmt.Sprintf(format, args...), Subject: spanOf(at, end)})
}

func (s *refScanner) emit(typ lexer.TokenType, start lexer.Position, n int) {
	text := string(s.src[start.Offset : start.Offset+n])
	s.toks = append(s.toks, lexer.Token{Type: typ, Value: text, Pos: start})
	s.advance(n)
}

// advance moves the cursor n bytes forward, counting lines and rune columns.
func (s *refScanner) advance(n int) {
	chunk := s.src[s.pos.Offset : s.pos.Offset+n]
	s.pos.Offset += n
	if nl := bytes.LastIndexByte(chunk, '\n'); nl >= 0 {
		s.pos.Line += bytes.Count(chunk, []byte{'\n'})
		s.pos.Column = 1 + utf8.RuneCount(chunk[nl+1:])
	} else {
		s.pos.Column += utf8.RuneCount(chunk)
	}
}

func (s *refScanner) top() *refFrame { return &s.stack[len(s.stack)-1] }

func (s *refScanner) run() {
	for s.pos.Offset < len(s.src) {
		if len(s.diags) > maxLexErrors {
			break
		}
		switch s.top().refMode {
		case refModeCode:
			s.code()
		case refModeString, refModeText:
			s.str()
		}
	}
	// Close whatever is still open so the token stream stays balanced.
	for i := len(s.stack) - 1; i > 0; i-- {
		f := s.stack[i]
		switch f.refMode {
		case refModeString:
			s.errorf(diag.UnterminatedText, f.open, s.pos, "string is not terminated")
			s.toks = append(s.toks, lexer.Token{Type: tokStrClose, Pos: s.pos})
		case refModeText:
			s.errorf(diag.UnterminatedText, f.open, s.pos, `text block is not terminated (missing """)`)
			s.toks = append(s.toks, lexer.Token{Type: tokTextClose, Pos: s.pos})
		case refModeCode:
			s.errorf(diag.UnterminatedText, f.open, s.pos, "interpolation is not terminated (missing })")
			s.toks = append(s.toks, lexer.Token{Type: tokInterpEnd, Pos: s.pos})
		}
	}
	s.stack = s.stack[:1]
	s.toks = append(s.toks, lexer.Token{Type: tokEOF, Pos: s.pos})
}

func refIsIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func refIsDigit(c byte) bool { return c >= '0' && c <= '9' }

var refPunct2 = []string{"->", "==", "!=", "<=", ">=", ".."}

const refPunct1 = "+-*/%<>=!.,:?|()[]{}"

func (s *refScanner) code() {
	src, i := s.src, s.pos.Offset
	c := src[i]
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		j := i
		for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r' || src[j] == '\n') {
			j++
		}
		s.advance(j - i)
		return
	case c == '/' && i+1 < len(src) && src[i+1] == '/':
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			j = len(src) - i
		}
		n := j
		if n > 0 && src[i+n-1] == '\r' {
			n--
		}
		s.emit(tokComment, s.pos, n)
		return
	case c == '/' && i+1 < len(src) && src[i+1] == '*':
		j := bytes.Index(src[i+2:], []byte("*/"))
		if j < 0 {
			start := s.pos
			s.advance(len(src) - i)
			s.errorf(diag.UnterminatedText, start, s.pos, "block comment is not terminated (missing */)")
			return
		}
		s.emit(tokComment, s.pos, j+4)
		return
	case c == '"':
		if bytes.HasPrefix(src[i:], []byte(`"""`)) {
			s.stack = append(s.stack, refFrame{refMode: refModeText, open: s.pos})
			s.emit(tokTextOpen, s.pos, 3)
			return
		}
		if n := len(s.stack); n >= 2 && s.stack[n-1].refMode == refModeCode && s.stack[n-2].refMode == refModeString && s.stack[n-1].depth == 0 {
			last := lexer.Token{}
			for _, t := range s.toks {
				if t.Type != tokComment {
					last = t
				}
			}
			operand := false
			switch last.Type {
			case tokIdent:
				operand = !slices.Contains([]string{"and", "or", "not", "in"}, last.Value)
			case tokInt, tokFloat, tokDuration, tokStrClose, tokTextClose:
				operand = true
			case tokPunct:
				operand = last.Value == ")" || last.Value == "]"
			}
			if operand {
				s.refEndInterp(n - 1)
				return
			}
		}
		s.stack = append(s.stack, refFrame{refMode: refModeString, open: s.pos, toks: len(s.toks), diags: len(s.diags)})
		s.emit(tokStrOpen, s.pos, 1)
		return
	case refIsIdentStart(c) || refNameRune(src[i:]) > 0:
		j, ascii := i, true
		for j < len(src) {
			if refIsIdentStart(src[j]) || refIsDigit(src[j]) {
				j++
			} else if n := refNameRune(src[j:]); n > 0 {
				j, ascii = j+n, false
			} else {
				break
			}
		}
		start, name := s.pos, string(src[i:j])
		s.emit(tokIdent, s.pos, j-i)
		if !ascii && !s.bad[name] {
			if s.bad == nil {
				s.bad = map[string]bool{}
			}
			s.bad[name] = true
			s.errorf(diag.SyntaxError, start, s.pos, "name %q is not ASCII: names are made of ASCII letters, digits and _", name)
		}
		return
	case refIsDigit(c):
		s.number()
		return
	}
	if len(s.stack) > 1 && (c == '{' || c == '}') {
		f := s.top()
		if c == '{' {
			f.depth++
		} else if f.depth == 0 {
			s.stack = s.stack[:len(s.stack)-1]
			s.emit(tokInterpEnd, s.pos, 1)
			return
		} else {
			f.depth--
		}
	}
	for _, p := range refPunct2 {
		if bytes.HasPrefix(src[i:], []byte(p)) {
			s.emit(tokPunct, s.pos, len(p))
			return
		}
	}
	if bytes.IndexByte([]byte(refPunct1), c) >= 0 {
		s.emit(tokPunct, s.pos, 1)
		return
	}
	r, size := utf8.DecodeRune(src[i:])
	start := s.pos
	s.advance(size)
	s.errorf(diag.SyntaxError, start, s.pos, "unexpected character %q", r)
}

// number lexes 12, 1.5, 2e10, and durations such as 200ms, 1h30m, 2d.
func (s *refScanner) number() {
	src, i := s.src, s.pos.Offset
	j := i
	for j < len(src) && refIsDigit(src[j]) {
		j++
	}
	// Duration: digits followed by a unit, possibly repeated.
	if k := refDurationUnit(src[j:]); k > 0 {
		for {
			j += k
			d := j
			for d < len(src) && refIsDigit(src[d]) {
				d++
			}
			if d == j {
				break
			}
			k = refDurationUnit(src[d:])
			if k == 0 {
				break
			}
			j = d
		}
		if j < len(src) && (refIsIdentStart(src[j]) || refIsDigit(src[j])) {
			s.badNumber(j)
			return
		}
		s.emit(tokDuration, s.pos, j-i)
		return
	}
	typ := lexer.TokenType(tokInt)
	if j+1 < len(src) && src[j] == '.' && refIsDigit(src[j+1]) {
		typ = tokFloat
		j++
		for j < len(src) && refIsDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && refIsDigit(src[k]) {
			typ = tokFloat
			for k < len(src) && refIsDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	if j < len(src) && (refIsIdentStart(src[j])) {
		s.badNumber(j)
		return
	}
	s.emit(typ, s.pos, j-i)
}

func (s *refScanner) badNumber(j int) {
	for j < len(s.src) && (refIsIdentStart(s.src[j]) || refIsDigit(s.src[j]) || s.src[j] == '.') {
		j++
	}
	start := s.pos
	text := string(s.src[start.Offset:j])
	s.advance(j - start.Offset)
	s.errorf(diag.InvalidNumber, start, s.pos, "invalid number or duration %q (units: ms, s, m, h, d)", text)
}

// refDurationUnit returns the length of a duration unit at the start of b.
func refDurationUnit(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("ms")):
		return 2
	case len(b) > 0 && (b[0] == 's' || b[0] == 'm' || b[0] == 'h' || b[0] == 'd'):
		return 1
	}
	return 0
}

// str lexes inside "..." or """...""": literal text runs, escapes, {{ }}
// brace escapes, the closing quote, and the start of an interpolation.
func (s *refScanner) str() {
	src, i := s.src, s.pos.Offset
	f := s.top()
	text := f.refMode == refModeText
	j := i
	for j < len(src) {
		c := src[j]
		if c == '\\' {
			if j+1 >= len(src) {
				j++
				break
			}
			if !refValidEscape(src[j+1]) {
				at := s.posAt(j)
				s.errorf(diag.InvalidEscape, at, s.posAt(j+2), "invalid escape \\%c in string", src[j+1])
			}
			j += 2
			continue
		}
		if c == '{' || c == '}' {
			if j+1 < len(src) && src[j+1] == c {
				j += 2
				continue
			}
			break
		}
		if c == '"' {
			if !text || bytes.HasPrefix(src[j:], []byte(`"""`)) {
				break
			}
		}
		if c == '\n' && !text {
			break
		}
		j++
	}
	if j > i {
		s.emit(tokText, s.pos, j-i)
		return
	}
	c := src[i]
	switch {
	case c == '{':
		s.stack = append(s.stack, refFrame{refMode: refModeCode, open: s.pos, toks: len(s.toks), diags: len(s.diags)})
		s.emit(tokInterpOpen, s.pos, 1)
	case c == '}':
		start := s.pos
		s.emit(tokText, s.pos, 1)
		s.errorf(diag.InvalidEscape, start, s.pos, "unmatched } in string (write }} for a literal brace)")
	case c == '"' && text:
		s.stack = s.stack[:len(s.stack)-1]
		s.emit(tokTextClose, s.pos, 3)
	case c == '"':
		s.stack = s.stack[:len(s.stack)-1]
		s.emit(tokStrClose, s.pos, 1)
	case c == '\n' && len(s.stack) >= 3 && s.stack[len(s.stack)-2].refMode == refModeCode && s.stack[len(s.stack)-3].refMode == refModeString:
		n := len(s.stack)
		str := s.stack[n-1]
		s.toks, s.diags, s.stack, s.pos = s.toks[:str.toks], s.diags[:str.diags], s.stack[:n-1], str.open
		s.refEndInterp(n - 2)
	case c == '\n':
		s.errorf(diag.UnterminatedText, f.open, s.pos, `string is not terminated before the end of the line (use """ for text blocks)`)
		s.stack = s.stack[:len(s.stack)-1]
		s.toks = append(s.toks, lexer.Token{Type: tokStrClose, Pos: s.pos})
	}
}

// refEndInterp ends the interpolation stack[i] at the quote ending its
// string, with a synthetic closer where its last token ends.
func (s *refScanner) refEndInterp(i int) {
	interp := s.stack[i]
	s.stack = s.stack[:i]
	end := lexer.Position{}
	for j := len(s.toks) - 1; j >= 0; j-- {
		if s.toks[j].Type != tokComment {
			end = s.toks[j].Pos
			end.Advance(s.toks[j].Value)
			break
		}
	}
	s.toks = append(s.toks, lexer.Token{Type: tokInterpEnd, Pos: end})
	s.errorf(diag.UnterminatedText, interp.open, s.pos, "interpolation is not closed before the end of the string (missing }; write {{ for a literal brace)")
}

// refNameRune is the size of a letter, digit or mark above U+007F at the
// start of b, else 0.
func refNameRune(b []byte) int {
	r, size := utf8.DecodeRune(b)
	if r >= utf8.RuneSelf && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)) {
		return size
	}
	return 0
}

// posAt computes the position of byte offset off ≥ s.pos.Offset on the
// current line run (used only for escape diagnostics).
func (s *refScanner) posAt(off int) lexer.Position {
	p := s.pos
	chunk := s.src[p.Offset:off]
	p.Offset = off
	if nl := bytes.LastIndexByte(chunk, '\n'); nl >= 0 {
		p.Line += bytes.Count(chunk, []byte{'\n'})
		p.Column = 1 + utf8.RuneCount(chunk[nl+1:])
	} else {
		p.Column += utf8.RuneCount(chunk)
	}
	return p
}

func refValidEscape(c byte) bool {
	switch c {
	case 'n', 't', 'r', '\\', '"', '{', '}', 'u':
		return true
	}
	return false
}

// ---- grammar-driven generation ----

// gen derives random token streams from the grammar (every production and
// every optional part), so the differential tests see valid declarations
// of every shape, not only the corpus's. Keywords are sometimes used as
// names, since the grammar's keywords are contextual.
type gen struct {
	rng   *rand.Rand
	toks  []lexer.Token
	depth int
}

func (g *gen) emit(typ lexer.TokenType, v string) {
	n := len(g.toks)
	g.toks = append(g.toks, lexer.Token{Type: typ, Value: v,
		Pos: lexer.Position{Filename: "g.agent", Offset: 3 * n, Line: 1 + n/30, Column: 1 + 3*(n%30)}})
}
func (g *gen) p(v string)               { g.emit(tokPunct, v) }
func (g *gen) kw(v string)              { g.emit(tokIdent, v) }
func (g *gen) chance(n int) bool        { return g.rng.IntN(n) == 0 }
func (g *gen) pick(vs ...string) string { return vs[g.rng.IntN(len(vs))] }
func (g *gen) deeper() bool             { return g.depth < 3 && !g.chance(2) }
func (g *gen) ident()                   { g.kw(genNames[g.rng.IntN(len(genNames))]) }

var genNames = []string{"a", "b", "x", "fast", "input", "output", "node", "map", "list", "in", "not", "true", "model", "tool", "run", "end", "start", "max", "on", "cache", "retry", "join", "set"}

func (g *gen) str() {
	if g.chance(4) {
		g.emit(tokTextOpen, `"""`)
	} else {
		g.emit(tokStrOpen, `"`)
	}
	for range g.rng.IntN(3) {
		if g.deeper() && g.chance(2) {
			g.depth++
			g.emit(tokInterpOpen, "{")
			g.expr()
			g.emit(tokInterpEnd, "}")
			g.depth--
		} else {
			g.emit(tokText, g.pick("t", "=", "}}", "{{"))
		}
	}
	if g.chance(4) {
		g.emit(tokTextClose, `"""`)
	} else {
		g.emit(tokStrClose, `"`)
	}
}

func (g *gen) expr() {
	g.depth++
	defer func() { g.depth-- }()
	g.andExpr()
	for g.chance(4) {
		g.kw("or")
		g.andExpr()
	}
}

func (g *gen) andExpr() {
	g.notExpr()
	for g.chance(4) {
		g.kw("and")
		g.notExpr()
	}
}

func (g *gen) notExpr() {
	if g.chance(5) {
		g.kw("not")
		g.notExpr()
		return
	}
	g.addExpr()
	if g.chance(3) {
		switch op := g.pick("==", "!=", "<=", ">=", "<", ">", "in", "not in"); op {
		case "in":
			g.kw("in")
		case "not in":
			g.kw("not")
			g.kw("in")
		default:
			g.p(op)
		}
		g.addExpr()
	}
}

func (g *gen) addExpr() {
	g.mulExpr()
	for g.chance(3) {
		g.p(g.pick("+", "-"))
		g.mulExpr()
	}
}

func (g *gen) mulExpr() {
	g.unary()
	for g.chance(4) {
		g.p(g.pick("*", "/", "%"))
		g.unary()
	}
}

func (g *gen) unary() {
	if g.chance(6) {
		g.p("-")
		g.unary()
		return
	}
	g.primary()
	for g.chance(3) {
		if g.chance(2) || !g.deeper() {
			g.p(".")
			g.ident()
		} else {
			g.p("[")
			g.expr()
			g.p("]")
		}
	}
}

// list emits ( elem ( "," elem )* ","? )? closeTok .
func (g *gen) list(elem func(), closeTok string) {
	if g.chance(3) {
		g.p(closeTok)
		return
	}
	elem()
	for g.chance(2) {
		g.p(",")
		elem()
	}
	if g.chance(3) {
		g.p(",")
	}
	g.p(closeTok)
}

func (g *gen) primary() {
	if !g.deeper() {
		switch g.rng.IntN(4) {
		case 0:
			g.ident()
		case 1:
			g.emit(tokInt, "1")
		case 2:
			g.kw(g.pick("true", "false", "null"))
		default:
			g.emit(tokDuration, "5s")
		}
		return
	}
	switch g.rng.IntN(9) {
	case 0:
		g.ident()
		g.p("(")
		g.list(g.expr, ")")
	case 1:
		g.emit(tokFloat, "2.5")
	case 2:
		g.emit(tokDuration, "1h30m")
	case 3:
		g.emit(tokInt, "7")
	case 4:
		g.ident()
	case 5:
		g.p("(")
		g.expr()
		g.p(")")
	case 6:
		g.p("[")
		g.list(func() {
			g.expr()
			if g.chance(3) {
				g.p(":")
				g.ident()
			}
		}, "]")
	case 7:
		g.p("{")
		g.list(func() {
			if g.chance(3) {
				g.str()
			} else {
				g.ident()
			}
			g.p(":")
			g.expr()
		}, "}")
	default:
		g.str()
	}
}

func (g *gen) typ() {
	g.depth++
	defer func() { g.depth-- }()
	if g.chance(4) {
		g.str()
		for g.chance(2) {
			g.p("|")
			g.str()
		}
		return
	}
	switch d := g.deeper(); {
	case d && g.chance(4):
		g.kw(g.pick("list", "map"))
		g.p("<")
		g.typ()
		g.p(">")
	case d && g.chance(4):
		g.recordType()
	case d && g.chance(4):
		g.p("(")
		g.typ()
		g.p(")")
	default:
		g.ident()
	}
	if g.chance(3) {
		g.p("?")
	}
}

func (g *gen) recordType() {
	g.p("{")
	for g.chance(2) {
		g.field()
	}
	g.p("}")
}

func (g *gen) field() {
	g.ident()
	g.p(":")
	g.typ()
	if g.chance(3) {
		g.kw("max")
		if g.chance(4) {
			g.p(":") // a next field named max
		} else {
			g.emit(tokInt, "5")
		}
	}
	if g.chance(3) {
		g.p("=")
		g.expr()
	}
	if g.chance(3) {
		g.kw("reduce")
		g.ident()
	}
	if g.chance(2) {
		g.p(",")
	}
}

func (g *gen) block() {
	g.depth++
	defer func() { g.depth-- }()
	g.p("{")
	for g.chance(2) {
		g.attr()
	}
	g.p("}")
}

func (g *gen) attr() {
	g.ident()
	if g.deeper() && g.chance(4) {
		g.block()
	} else {
		g.p("=")
		g.expr()
	}
	if g.chance(2) {
		g.p(",")
	}
}

func (g *gen) optStr() {
	if g.chance(2) {
		g.str()
	}
}

func (g *gen) nodeBody() {
	switch g.rng.IntN(5) {
	case 0:
		g.kw(g.pick("llm", "tool", "agent", "graph"))
		g.ident()
		if g.chance(2) {
			g.block()
		}
	case 1:
		g.kw("set")
		g.block()
	case 2:
		if !g.deeper() {
			g.kw("join")
			g.kw(g.pick("all", "any"))
			return
		}
		g.depth++
		g.kw("map")
		g.ident()
		g.kw("in")
		g.expr()
		if g.chance(2) {
			g.kw("concurrency")
			g.emit(tokInt, "2")
		}
		g.p("{")
		g.nodeBody()
		g.clauses()
		g.p("}")
		g.depth--
	case 3:
		g.kw("interrupt")
		g.str()
		g.kw("returns")
		g.typ()
	default:
		g.kw("join")
		g.kw(g.pick("all", "any"))
	}
}

func (g *gen) clauses() {
	for g.chance(2) {
		switch g.rng.IntN(5) {
		case 0:
			g.kw("retry")
			g.emit(tokInt, "3")
			if g.chance(2) {
				g.kw("backoff")
				g.emit(tokDuration, "200ms")
				g.p("..")
				g.emit(tokDuration, "5s")
			}
			if g.chance(2) {
				g.kw("on")
				g.p("[")
				if g.chance(3) {
					g.ident()
					for g.chance(2) {
						g.p(",")
						g.ident()
					}
				}
				g.p("]")
			}
		case 1:
			g.kw("timeout")
			g.emit(tokDuration, "30s")
		case 2:
			g.kw("catch")
			g.p("->")
			g.ident()
		case 3:
			g.kw("cache")
			if g.chance(2) {
				g.kw("ttl")
				g.emit(tokDuration, "1h")
			}
		default:
			g.kw("into")
			g.ident()
		}
	}
}

// decl derives one declaration of at most 250 tokens.
func (g *gen) decl() []lexer.Token {
	for {
		if toks := g.decl1(); len(toks) <= 250 {
			return slicesClone(toks)
		}
	}
}

func (g *gen) decl1() []lexer.Token {
	g.toks, g.depth = g.toks[:0], 0
	switch g.rng.IntN(11) {
	case 0:
		g.kw("workflow")
		g.ident()
		g.optStr()
	case 1:
		g.kw("import")
		g.str()
	case 2:
		g.kw(g.pick("model", "summary", "compaction", "recall", "memory", "evolution"))
		g.ident()
		g.block()
	case 3:
		g.kw("type")
		g.ident()
		if g.chance(2) {
			g.recordType()
		} else {
			g.p("=")
			g.typ()
		}
	case 4:
		g.kw("tool")
		g.ident()
		g.optStr()
		g.p("{")
		for g.chance(2) {
			switch g.rng.IntN(4) {
			case 0:
				g.kw(g.pick("input", "output"))
				g.typ()
			case 1:
				g.kw("run")
				g.p("=")
				switch g.rng.IntN(4) {
				case 0:
					g.kw("builtin")
					g.p(".")
					g.ident()
				case 1:
					g.kw(g.pick("http", "exec"))
					g.block()
				default:
					g.kw("agent")
					g.ident()
				}
			default:
				g.attr()
			}
		}
		g.p("}")
	case 5:
		g.kw("skill")
		g.ident()
		g.kw("from")
		g.str()
		if g.chance(2) {
			g.block()
		}
	case 6:
		g.kw("state")
		g.ident()
		g.recordType()
	case 7:
		g.kw("agent")
		g.ident()
		g.ident()
		g.optStr()
		g.block()
	case 8:
		g.graph()
	case 9:
		g.kw("serve")
		g.block()
	default:
		g.test()
	}
	return g.toks
}

func (g *gen) graph() {
	g.kw("graph")
	g.ident()
	g.p("(")
	g.ident()
	g.p(")")
	if g.chance(2) {
		g.kw("input")
		g.ident()
	}
	if g.chance(2) {
		g.kw("output")
		g.ident()
	}
	g.optStr()
	g.p("{")
	for g.chance(4) || g.chance(2) {
		if g.chance(2) {
			g.kw("node")
			g.ident()
			g.p("=")
			g.nodeBody()
			g.clauses()
			continue
		}
		g.ident()
		g.p("->")
		g.ident()
		switch g.rng.IntN(3) {
		case 0:
			g.kw("when")
			g.expr()
		case 1:
			g.kw("otherwise")
		}
		if g.chance(2) {
			g.kw("max")
			g.emit(tokInt, "3")
			if g.chance(2) {
				g.kw("else")
				g.p("->")
				g.ident()
			}
		}
	}
	g.p("}")
}

func (g *gen) test() {
	g.kw("test")
	g.str()
	g.p("{")
	for g.chance(4) || g.chance(2) {
		switch g.rng.IntN(4) {
		case 0:
			g.kw(g.pick("model", "tool"))
			g.ident()
			g.kw("replay")
			g.str()
		case 1:
			g.kw("answer")
			g.ident()
			g.p("=")
			g.expr()
		case 2:
			g.kw("expect")
			g.expr()
			if g.chance(2) {
				g.kw("before")
				g.expr()
			}
		default:
			g.attr()
		}
	}
	g.p("}")
}

// TestDifferentialGenerated: random derivations of the grammar, as they
// are and mutated once or twice.
func TestDifferentialGenerated(t *testing.T) {
	n := diffBudget(1_000, 5_000, 200_000)
	g := &gen{rng: rand.New(rand.NewPCG(3, 4))}
	vocab := tokenVocabulary()
	var valid, mutated diffStats
	for range n {
		toks := g.decl()
		if d := checkUnit(toks, eofAfter(toks), &valid); d != "" {
			t.Fatalf("%s\n  tokens: %s", d, tokString(toks))
		}
		for range 1 + g.rng.IntN(2) {
			toks = mutate(g.rng, toks, vocab)
		}
		if len(toks) == 0 {
			continue
		}
		if d := checkUnit(toks, eofAfter(toks), &mutated); d != "" {
			t.Fatalf("mutated: %s\n  tokens: %s", d, tokString(toks))
		}
	}
	t.Logf("derived: %v", valid)
	t.Logf("mutated: %v", mutated)
}

package syntax

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/agentc/agentc/lang/diag"
)

// rd.go is the hand-written recursive-descent parser behind Parse. It
// consumes the token slice of one top-level declaration and builds exactly
// the AST the participle grammar in ast.go and expr.go describes (that
// grammar stays the language's executable definition and rd_test.go uses it
// as the oracle).
//
// Emulated participle semantics (participle.UseLookahead(1)):
//
//   - Alternatives (a | b, unions) are tried in declaration order; the first
//     that succeeds wins. Groups (x)? and (x)* are greedy.
//   - A failed alternative or group iteration is backtracked ("soft") when
//     the cursor stopped at most one token past the point where it started;
//     otherwise the failure is fatal for the whole declaration (participle's
//     branch.Cursor() > ctx.Cursor()+lookahead rule). Every parse method
//     therefore leaves p.i exactly where participle's cursor would be when it
//     fails, and callers apply the rule with soft().
//   - Quoted words and punctuation are matched by token value whatever the
//     token type (participle's untyped literals, so "{" also matches an
//     interpolation's "{"); <ident>, <int>, <text>, ... are matched by type.
//     Keywords are therefore contextual.
//   - Pos is the first token of a node, EndPos just past its last token
//     (participle uses the next token's start; the oracle test normalizes)
//   - A node's optional slices stay nil when nothing was captured; a *T or
//     bool field is set only when its capture succeeded.
//   - A group stops with an error after participle.MaxIterations matches
//     (maxRepeat here).
//
// Deliberate differences (documented in rd_test.go, where the oracle is
// normalised for them):
//
//   - participle leaks the operator of a backtracked comparison tail into
//     CmpExpr.Op (e.g. `a = b in { x = 1 }` gives Op "in" with Right nil);
//     here Op is set only together with Right.
//   - prefix operators ("not", "-") and type constructors (list<...>) may
//     nest at most maxRecursion levels; participle recurses until the
//     goroutine stack overflows.
//   - the error is reported at the furthest token no alternative could
//     consume, listing what would have been accepted there.
//
// Performance: no reflection; on the success path no error values are built.
// Failures only move the cursor; when a declaration fails, it is parsed a
// second time in diagnostic mode to collect the expected-token set.

// maxRepeat mirrors participle.MaxIterations: a repetition that matches this
// many times fails the declaration (rd_test.go pins the two together).
var maxRepeat = 1_000_000

// maxRecursion bounds the parser's recursion (expressions, "not" and "-"
// chains, types), so that no input can overflow the stack: the splitter
// bounds brackets (MaxNesting) but not prefix operators or list<...>.
const maxRecursion = 10_000

// rdParser parses one declaration.
// Invariants: 0 ≤ i ≤ len(toks), except after a limit failure (i is then
// len(toks)+2, so that every enclosing choice point sees a fatal failure);
// at(i) for i ≥ len(toks) is the synthetic EOF token, which no terminal
// matches, so the cursor never moves past it.
type rdParser struct {
	file string  // the declaration's file, for positions
	text string  // the file's source: token values are substrings of it
	toks []token // the declaration's tokens, EOF excluded
	eof  token   // synthetic EOF just past the last token
	i    int     // cursor: index of the next token
	rec  int     // current recursion depth (see maxRecursion)

	// Failure bookkeeping. A limit failure (too many repetitions or too
	// deep) is sticky: the whole declaration fails.
	limitMsg  string
	limitCode diag.Code
	limitAt   int

	// Diagnostic mode (second pass after a failure): collect what was
	// expected at the furthest token where something failed to match.
	diag bool
	far  int
	exp  []string

	alloc *rdAlloc
}

// parseDecl parses the tokens of unit u, allocating the nodes from a.
func (a *rdAlloc) parseDecl(u unit, eof token) (Decl, *diag.Diagnostic) {
	file, text, toks := u.file, u.text, u.toks
	p := rdParser{file: file, text: text, toks: toks, eof: eof, alloc: a}
	if d := p.unit(); d != nil {
		return d, nil
	}
	if p.limitMsg != "" {
		return nil, p.errorAt(p.limitAt, p.limitCode, p.limitMsg)
	}
	q := rdParser{file: file, text: text, toks: toks, eof: eof, diag: true, far: -1, alloc: new(rdAlloc)}
	q.unit()
	return nil, q.syntaxError()
}

func (p *rdParser) errorAt(i int, code diag.Code, msg string) *diag.Diagnostic {
	t := p.at(i)
	end := t.end(p.file, p.text)
	if end.Offset == int(t.Offset) {
		end.Offset++
		end.Column++
	}
	return &diag.Diagnostic{Severity: diag.Error, Code: code, Summary: msg, Subject: spanOf(t.pos(p.file), end)}
}

// syntaxError builds the diagnostic of a diagnostic-mode pass.
func (p *rdParser) syntaxError() *diag.Diagnostic {
	at := p.far
	if at < 0 {
		at = p.i
	}
	msg := "unexpected " + describe(p.at(at).lex(p.file, p.text))
	if len(p.exp) > 0 {
		msg += "; expected " + orList(p.exp)
	}
	return p.errorAt(at, diag.SyntaxError, msg)
}

// orList joins "a", "b", "c" as `a, b or c`.
func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// want records, in diagnostic mode, that what would have been accepted at
// the cursor.
func (p *rdParser) want(what string) {
	if p.diag {
		p.wantSlow(what)
	}
}

func (p *rdParser) wantSlow(what string) {
	if p.i < p.far {
		return
	}
	if p.i > p.far {
		p.far = p.i
		p.exp = p.exp[:0]
	}
	if !slices.Contains(p.exp, what) {
		p.exp = append(p.exp, what)
	}
}

// limit makes the whole declaration fail at the cursor.
func (p *rdParser) limit(code diag.Code, msg string) {
	if p.limitMsg == "" {
		p.limitMsg, p.limitCode, p.limitAt = msg, code, p.i
	}
	p.i = len(p.toks) + 2 // past every choice point's start+1: fatal everywhere
}

// repeated counts one more match of a repetition; false means the limit was
// hit (participle: "too many iterations").
func (p *rdParser) repeated(n *int) bool {
	*n++
	if *n >= maxRepeat {
		p.limit(diag.SyntaxError, fmt.Sprintf("too many repetitions (the limit is %d)", maxRepeat))
		return false
	}
	return true
}

// enter and leave bound recursion; enter reports false when too deep.
func (p *rdParser) enter() bool {
	p.rec++
	if p.rec > maxRecursion {
		p.limit(diag.NestingTooDeep, fmt.Sprintf("operators or types nest more than %d levels deep", maxRecursion))
		return false
	}
	return true
}

func (p *rdParser) leave() { p.rec-- }

// soft applies participle's backtracking rule after a failed alternative or
// group iteration that started at start: it rewinds and reports true when the
// failure may be backtracked, and reports false when it is fatal.
func (p *rdParser) soft(start int) bool {
	if p.i > start+1 {
		return false
	}
	p.i = start
	return true
}

// The grammar's repetitions, with participle's semantics: an iteration
// that fails is backtracked by soft, or is fatal; a group that matches
// maxRepeat times fails the declaration (repeated). Each returns ok false on
// a fatal failure and the slice out extended by what matched (nil when out
// was nil and nothing matched). x parses one item and returns nil on
// failure, leaving the cursor where participle's would be.

// many parses X* .
func many[T any](p *rdParser, out []*T, x func() *T) ([]*T, bool) {
	count := 0
	for {
		item := p.i
		v := x()
		if v == nil {
			return out, p.soft(item)
		}
		out = appendNode(p.alloc, out, v)
		if !p.repeated(&count) {
			return nil, false
		}
	}
}

// appendNode is append(out, v), except that a list's first element goes in
// a one-element share of the allocator's pointer block: most lists of a
// node (attributes, operator tails) hold one element, and this saves an
// allocation for each. A second element moves the list to an array of its
// own, as append does with any full slice.
func appendNode[T any](a *rdAlloc, out []*T, v *T) []*T {
	if out != nil {
		return append(out, v)
	}
	if len(a.ptrs) == 0 {
		a.ptrs = make([]unsafe.Pointer, 1024)
	}
	a.ptrs[0] = unsafe.Pointer(v)
	// A *T and an unsafe.Pointer have the same representation, so the
	// share is a valid []*T (and the block, []unsafe.Pointer, is scanned
	// for pointers like one).
	one := unsafe.Slice((**T)(unsafe.Pointer(&a.ptrs[0])), 1)
	a.ptrs = a.ptrs[1:]
	return one
}

// sepTail parses ( sep X )* , the tail of X ( sep X )* .
func sepTail[T any](p *rdParser, out []*T, sep string, x func() *T) ([]*T, bool) {
	count := 0
	for {
		item := p.i
		if !p.lit(sep) {
			return out, true
		}
		v := x()
		if v == nil {
			return out, p.soft(item)
		}
		out = append(out, v)
		if !p.repeated(&count) {
			return nil, false
		}
	}
}

// braced parses "{" X* "}" ; ok is false on any failure.
func braced[T any](p *rdParser, x func() *T) ([]*T, bool) {
	if !p.lit("{") {
		return nil, false
	}
	out, ok := many(p, nil, x)
	return out, ok && p.lit("}")
}

// commaList parses ( X ( "," X )* ","? )? .
func commaList[T any](p *rdParser, x func() *T) ([]*T, bool) {
	opt := p.i
	first := x()
	if first == nil {
		return nil, p.soft(opt)
	}
	out, ok := sepTail(p, append(make([]*T, 0, 2), first), ",", x)
	if !ok {
		return nil, false
	}
	p.lit(",")
	return out, true
}

func (p *rdParser) at(i int) *token {
	if i < len(p.toks) {
		return &p.toks[i]
	}
	return &p.eof
}

func (p *rdParser) tok() *token { return p.at(p.i) }

// val is the text of token t.
func (p *rdParser) val(t *token) string { return p.text[t.Offset : t.Offset+t.Len] }

// is reports whether the next token's value is s (any token type).
func (p *rdParser) is(s string) bool { return p.val(p.at(p.i)) == s }

// lit consumes the next token if its value is s (any token type).
func (p *rdParser) lit(s string) bool {
	if p.val(p.at(p.i)) == s {
		p.i++
		return true
	}
	if p.diag {
		p.wantSlow(strconv.Quote(s))
	}
	return false
}

// span sets a node's Pos to the token at start and EndPos to the end of
// the last token it consumed.
func (p *rdParser) span(a *At, start int) {
	p.setPos(&a.Pos, p.at(start))
	p.setEnd(&a.EndPos, start)
}

// setEnd sets dst just past the last consumed token (the token before p.i),
// or to the start token's position when the node consumed nothing.
func (p *rdParser) setEnd(dst *lexer.Position, start int) {
	if p.i <= start {
		p.setPos(dst, p.at(start))
		return
	}
	last := p.i - 1
	for last > start && p.at(last).Len == 0 {
		last-- // a synthetic closer occupies no source text
	}
	t := p.at(last)
	p.setPos(dst, t)
	advance(dst, p.val(t))
}

// setPos sets dst to the position of t, field by field: a whole-struct copy
// of a type holding a pointer compiles to typedmemmove, whose bulk write
// barrier dominated the profile while the GC was marking.
func (p *rdParser) setPos(dst *lexer.Position, t *token) {
	dst.Filename = p.file
	dst.Offset = int(t.Offset)
	dst.Line = int(t.Line)
	dst.Column = int(t.Column)
}

// ---- declarations ----

// unit parses declUnit: one declaration, then EOF.
func (p *rdParser) unit() Decl {
	d := p.decl()
	if d == nil {
		return nil
	}
	if p.i < len(p.toks) {
		p.want("a new declaration")
		return nil
	}
	return d
}

// decl parses the Decl union. Its members start with distinct keywords, so
// at most one can match.
func (p *rdParser) decl() Decl {
	switch p.val(p.tok()) {
	case "workflow":
		if n := p.workflow(); n != nil {
			return n
		}
	case "import":
		if n := p.importDecl(); n != nil {
			return n
		}
	case "model", "summary", "compaction", "recall", "memory", "evolution":
		if n := p.blockDecl(); n != nil {
			return n
		}
	case "type":
		if n := p.typeDecl(); n != nil {
			return n
		}
	case "tool":
		if n := p.tool(); n != nil {
			return n
		}
	case "skill":
		if n := p.skill(); n != nil {
			return n
		}
	case "state":
		if n := p.state(); n != nil {
			return n
		}
	case "agent":
		if n := p.agent(); n != nil {
			return n
		}
	case "graph":
		if n := p.graph(); n != nil {
			return n
		}
	case "serve":
		if n := p.serve(); n != nil {
			return n
		}
	case "test":
		if n := p.test(); n != nil {
			return n
		}
	default:
		p.want("a declaration")
	}
	return nil
}

// Workflow = "workflow" Ident String? .
func (p *rdParser) workflow() *Workflow {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	n := p.alloc.workflow()
	n.Name = name
	var ok bool
	if n.Doc, ok = p.optString(); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// optString parses String? ; ok is false on a fatal failure.
func (p *rdParser) optString() (s *String, ok bool) {
	start := p.i
	if s = p.str(); s != nil {
		return s, true
	}
	return nil, p.soft(start)
}

// Import = "import" String .
func (p *rdParser) importDecl() *Import {
	start := p.i
	p.i++
	s := p.str()
	if s == nil {
		return nil
	}
	n := p.alloc.importDecl()
	n.Path = s
	p.span(&n.At, start)
	return n
}

// BlockDecl = ("model" | ...) Ident Block .
func (p *rdParser) blockDecl() *BlockDecl {
	start := p.i
	kind := p.val(p.tok())
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	body := p.block()
	if body == nil {
		return nil
	}
	n := p.alloc.blockDecl()
	n.Kind, n.Name, n.Body = kind, name, body
	p.span(&n.At, start)
	return n
}

// TypeDecl = "type" Ident ( RecordType | "=" Type ) .
func (p *rdParser) typeDecl() *TypeDecl {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	n := p.alloc.typeDecl()
	n.Name = name
	alt := p.i
	switch {
	case p.is("{"):
		if n.Record = p.recordType(); n.Record == nil {
			p.soft(alt)
			return nil
		}
	case p.is("="):
		p.i++
		if n.Alias = p.typ(); n.Alias == nil {
			p.soft(alt)
			return nil
		}
	default:
		p.want(`"{"`)
		p.want(`"="`)
		return nil
	}
	p.span(&n.At, start)
	return n
}

// Tool = "tool" Ident String? "{" ToolItem* "}" .
func (p *rdParser) tool() *Tool {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	n := p.alloc.tool()
	n.Name = name
	var ok bool
	if n.Doc, ok = p.optString(); !ok {
		return nil
	}
	if n.Items, ok = braced(p, p.toolItem); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// ToolItem = "input" Type | "output" Type | "run" "=" ToolRun | Attr .
func (p *rdParser) toolItem() *ToolItem {
	start := p.i
	switch p.val(p.tok()) {
	case "input", "output":
		out := p.val(p.tok()) == "output"
		p.i++
		if t := p.typ(); t != nil {
			n := p.alloc.toolItem()
			if out {
				n.Output = t
			} else {
				n.Input = t
			}
			p.span(&n.At, start)
			return n
		}
		if !p.soft(start) {
			return nil
		}
	case "run":
		p.i++
		if p.lit("=") {
			if r := p.toolRun(); r != nil {
				n := p.alloc.toolItem()
				n.Run = r
				p.span(&n.At, start)
				return n
			}
		}
		if !p.soft(start) {
			return nil
		}
	}
	a := p.attr()
	if a == nil {
		p.soft(start)
		return nil
	}
	n := p.alloc.toolItem()
	n.Attr = a
	p.span(&n.At, start)
	return n
}

// ToolRun = "builtin" "." Ident | "http" Block | "exec" Block | "mcp" Block | "agent" Ident .
func (p *rdParser) toolRun() *ToolRun {
	start := p.i
	n := p.alloc.toolRun()
	switch p.val(p.tok()) {
	case "builtin":
		p.i++
		if p.lit(".") {
			n.Builtin = p.ident()
		}
		if n.Builtin == nil {
			p.soft(start)
			return nil
		}
	case "http":
		p.i++
		if n.HTTP = p.block(); n.HTTP == nil {
			p.soft(start)
			return nil
		}
	case "exec":
		p.i++
		if n.Exec = p.block(); n.Exec == nil {
			p.soft(start)
			return nil
		}
	case "mcp":
		p.i++
		if n.MCP = p.block(); n.MCP == nil {
			p.soft(start)
			return nil
		}
	case "agent":
		p.i++
		if n.Agent = p.ident(); n.Agent == nil {
			p.soft(start)
			return nil
		}
	default:
		p.want(`"builtin", "http", "exec", "mcp" or "agent"`)
		return nil
	}
	p.span(&n.At, start)
	return n
}

// Skill = "skill" Ident "from" String Block? .
func (p *rdParser) skill() *Skill {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil || !p.lit("from") {
		return nil
	}
	from := p.str()
	if from == nil {
		return nil
	}
	n := p.alloc.skill()
	n.Name, n.From = name, from
	opt := p.i
	if n.Body = p.block(); n.Body == nil && !p.soft(opt) {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// State = "state" Ident "{" Field* "}" .
func (p *rdParser) state() *State {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	fields, ok := braced(p, p.field)
	if !ok {
		return nil
	}
	n := p.alloc.state()
	n.Name, n.Fields = name, fields
	p.span(&n.At, start)
	return n
}

// Agent = "agent" Ident Ident String? Block .
func (p *rdParser) agent() *Agent {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil {
		return nil
	}
	kind := p.ident()
	if kind == nil {
		return nil
	}
	n := p.alloc.agent()
	n.Name, n.Kind = name, kind
	var ok bool
	if n.Doc, ok = p.optString(); !ok {
		return nil
	}
	if n.Body = p.block(); n.Body == nil {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// Graph = "graph" Ident "(" Ident ")" ( "input" Ident )? ( "output" Ident )? String? "{" GraphItem* "}" .
func (p *rdParser) graph() *Graph {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil || !p.lit("(") {
		return nil
	}
	st := p.ident()
	if st == nil || !p.lit(")") {
		return nil
	}
	n := p.alloc.graph()
	n.Name, n.State = name, st
	var ok bool
	if n.Input, ok = p.optKeywordIdent("input"); !ok {
		return nil
	}
	if n.Output, ok = p.optKeywordIdent("output"); !ok {
		return nil
	}
	if n.Doc, ok = p.optString(); !ok {
		return nil
	}
	if n.Items, ok = braced(p, p.graphItem); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// optKeywordIdent parses ( kw Ident )? ; ok is false on a fatal failure.
func (p *rdParser) optKeywordIdent(kw string) (*Ident, bool) {
	start := p.i
	if !p.lit(kw) {
		return nil, true
	}
	if id := p.ident(); id != nil {
		return id, true
	}
	return nil, p.soft(start)
}

// GraphItem = NodeDecl | "budget" Block | Edge .
func (p *rdParser) graphItem() *GraphItem {
	start := p.i
	if p.is("node") {
		if nd := p.nodeDecl(); nd != nil {
			n := p.alloc.graphItem()
			n.Node = nd
			p.span(&n.At, start)
			return n
		}
		if !p.soft(start) {
			return nil
		}
	} else {
		p.want(`"node"`)
	}
	if p.is("budget") {
		p.i++
		if b := p.block(); b != nil {
			n := p.alloc.graphItem()
			n.Budget = b
			p.span(&n.At, start)
			return n
		}
		if !p.soft(start) {
			return nil
		}
	} else {
		p.want(`"budget"`)
	}
	e := p.edge()
	if e == nil {
		p.soft(start)
		return nil
	}
	n := p.alloc.graphItem()
	n.Edge = e
	p.span(&n.At, start)
	return n
}

// NodeDecl = "node" Ident "=" NodeBody Clause* .
func (p *rdParser) nodeDecl() *NodeDecl {
	start := p.i
	p.i++
	name := p.ident()
	if name == nil || !p.lit("=") {
		return nil
	}
	body := p.nodeBody()
	if body == nil {
		return nil
	}
	n := p.alloc.nodeDecl()
	n.Name, n.Body = name, body
	var ok bool
	if n.Clauses, ok = p.clauses(); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// clauses parses Clause* ; ok is false on a fatal failure.
func (p *rdParser) clauses() ([]*Clause, bool) { return many(p, nil, p.clause) }

// NodeBody = CallNode | SetNode | MapNode | InterruptNode | JoinNode | WaitNode .
// The members start with distinct keywords.
func (p *rdParser) nodeBody() NodeBody {
	start := p.i
	switch p.val(p.tok()) {
	case "llm", "tool", "agent", "graph":
		if n := p.callNode(); n != nil {
			return n
		}
	case "set":
		if n := p.setNode(); n != nil {
			return n
		}
	case "map":
		if n := p.mapNode(); n != nil {
			return n
		}
	case "interrupt":
		if n := p.interruptNode(); n != nil {
			return n
		}
	case "join":
		if n := p.joinNode(); n != nil {
			return n
		}
	case "wait":
		if n := p.waitNode(); n != nil {
			return n
		}
	default:
		p.want("a node body (llm, tool, agent, graph, set, map, interrupt, join or wait)")
		return nil
	}
	p.soft(start)
	return nil
}

// CallNode = ("llm" | "tool" | "agent" | "graph") Ident Block? .
func (p *rdParser) callNode() *CallNode {
	start := p.i
	kind := p.val(p.tok())
	p.i++
	callee := p.ident()
	if callee == nil {
		return nil
	}
	n := p.alloc.callNode()
	n.Kind, n.Callee = kind, callee
	opt := p.i
	if n.Args = p.block(); n.Args == nil && !p.soft(opt) {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// SetNode = "set" Block .
func (p *rdParser) setNode() *SetNode {
	start := p.i
	p.i++
	b := p.block()
	if b == nil {
		return nil
	}
	n := p.alloc.setNode()
	n.Body = b
	p.span(&n.At, start)
	return n
}

// MapNode = "map" Ident "in" Expr ( "concurrency" Int )? "{" NodeBody Clause* "}" .
func (p *rdParser) mapNode() *MapNode {
	start := p.i
	p.i++
	v := p.ident()
	if v == nil || !p.lit("in") {
		return nil
	}
	list := p.expr()
	if list == nil {
		return nil
	}
	n := p.alloc.mapNode()
	n.Var, n.List = v, list
	opt := p.i
	if p.lit("concurrency") {
		if n.Concurrency = p.intLit(); n.Concurrency == nil && !p.soft(opt) {
			return nil
		}
	}
	if !p.lit("{") {
		return nil
	}
	if n.Body = p.nodeBody(); n.Body == nil {
		return nil
	}
	var ok bool
	if n.Clauses, ok = p.clauses(); !ok || !p.lit("}") {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// InterruptNode = "interrupt" String "returns" Type .
func (p *rdParser) interruptNode() *InterruptNode {
	start := p.i
	p.i++
	prompt := p.str()
	if prompt == nil || !p.lit("returns") {
		return nil
	}
	t := p.typ()
	if t == nil {
		return nil
	}
	n := p.alloc.interruptNode()
	n.Prompt, n.Returns = prompt, t
	p.span(&n.At, start)
	return n
}

// JoinNode = "join" ( "all" | "any" ) .
func (p *rdParser) joinNode() *JoinNode {
	start := p.i
	p.i++
	mode := p.val(p.tok())
	if mode != "all" && mode != "any" {
		p.want(`"all" or "any"`)
		return nil
	}
	p.i++
	n := p.alloc.joinNode()
	n.Mode = mode
	p.span(&n.At, start)
	return n
}

// WaitNode = "wait" "until"? Expr .
func (p *rdParser) waitNode() *WaitNode {
	start := p.i
	p.i++
	until := p.lit("until")
	e := p.expr()
	if e == nil {
		return nil
	}
	n := p.alloc.waitNode()
	n.Until, n.For = until, e
	p.span(&n.At, start)
	return n
}

// Clause = Retry | "timeout" Duration ( "else" "->" Ident )? | "catch" "->" Ident | Cache | "into" Ident .
// The alternatives start with distinct keywords.
func (p *rdParser) clause() *Clause {
	start := p.i
	var n *Clause
	switch p.val(p.tok()) {
	case "retry":
		if r := p.retry(); r != nil {
			n = p.alloc.clause()
			n.Retry = r
		}
	case "timeout":
		p.i++
		if d := p.durLit(); d != nil {
			n = p.alloc.clause()
			n.Timeout = d
			var ok bool
			if n.Else, ok = p.elseArrow(); !ok {
				return nil
			}
		}
	case "catch":
		p.i++
		if p.lit("->") {
			if id := p.ident(); id != nil {
				n = p.alloc.clause()
				n.Catch = id
			}
		}
	case "cache":
		c := p.cache()
		n = p.alloc.clause()
		n.Cache = c
	case "into":
		p.i++
		if id := p.ident(); id != nil {
			n = p.alloc.clause()
			n.Into = id
		}
	default:
		p.want("a clause (retry, timeout, catch, cache or into)")
		return nil
	}
	if n == nil {
		p.soft(start)
		return nil
	}
	p.span(&n.At, start)
	return n
}

// elseArrow parses an optional `"else" "->" Ident` (a loop exit, a
// timeout's exit): nil when absent (an "else" without "->" is left
// unread); ok is false on a fatal failure (an arrow without a name).
func (p *rdParser) elseArrow() (*Ident, bool) {
	opt := p.i
	if !p.lit("else") {
		return nil, true
	}
	if !p.lit("->") {
		p.soft(opt)
		return nil, true
	}
	id := p.ident()
	return id, id != nil
}

// Retry = "retry" Int ( "backoff" Duration ".." Duration )? ( "on" "[" ( Ident ( "," Ident )* )? "]" )? .
func (p *rdParser) retry() *Retry {
	start := p.i
	p.i++
	attempts := p.intLit()
	if attempts == nil {
		return nil
	}
	n := p.alloc.retry()
	n.Attempts = attempts
	opt := p.i
	if p.lit("backoff") {
		if lo := p.durLit(); lo != nil && p.lit("..") {
			if hi := p.durLit(); hi != nil {
				n.Min, n.Max = lo, hi
			}
		}
		if n.Max == nil && !p.soft(opt) {
			return nil
		}
	}
	opt = p.i
	if p.lit("on") {
		ok := false
		if p.lit("[") {
			var on []*Ident
			if id := p.ident(); id != nil {
				var tailOK bool
				if on, tailOK = sepTail(p, append(on, id), ",", p.ident); !tailOK {
					return nil
				}
			}
			if p.lit("]") {
				n.On, ok = on, true
			}
		}
		if !ok && !p.soft(opt) {
			return nil
		}
	}
	p.span(&n.At, start)
	return n
}

// Cache = "cache" ( "ttl" Duration )? .
func (p *rdParser) cache() *Cache {
	start := p.i
	n := p.alloc.cache()
	n.Keyword = "cache"
	p.i++
	opt := p.i
	if p.lit("ttl") {
		if n.TTL = p.durLit(); n.TTL == nil {
			p.soft(opt) // always soft: one token consumed
		}
	}
	p.span(&n.At, start)
	return n
}

// Edge = Ident "->" Ident ( "when" Expr | "otherwise" )? ( "max" Int ( "else" "->" Ident )? )? .
func (p *rdParser) edge() *Edge {
	start := p.i
	from := p.ident()
	if from == nil || !p.lit("->") {
		return nil
	}
	to := p.ident()
	if to == nil {
		return nil
	}
	n := p.alloc.edge()
	n.From, n.To = from, to
	opt := p.i
	switch {
	case p.is("when"):
		p.i++
		if n.When = p.expr(); n.When == nil && !p.soft(opt) {
			return nil
		}
	case p.is("otherwise"):
		p.i++
		n.Otherwise = true
	default:
		p.want(`"when"`)
		p.want(`"otherwise"`)
	}
	opt = p.i
	if p.lit("max") {
		if max := p.intLit(); max != nil {
			n.Max = max
			var ok bool
			if n.Else, ok = p.elseArrow(); !ok {
				return nil // fatal: two tokens consumed
			}
		} else {
			p.soft(opt)
		}
	}
	p.span(&n.At, start)
	return n
}

// Serve = "serve" Block .
func (p *rdParser) serve() *Serve {
	start := p.i
	p.i++
	b := p.block()
	if b == nil {
		return nil
	}
	n := p.alloc.serve()
	n.Body = b
	p.span(&n.At, start)
	return n
}

// Test = "test" String "{" TestItem* "}" .
func (p *rdParser) test() *Test {
	start := p.i
	p.i++
	name := p.str()
	if name == nil {
		return nil
	}
	items, ok := braced(p, p.testItem)
	if !ok {
		return nil
	}
	n := p.alloc.test()
	n.Name, n.Items = name, items
	p.span(&n.At, start)
	return n
}

// TestItem = Replay | Answer | Expect | Attr .
func (p *rdParser) testItem() *TestItem {
	start := p.i
	n := p.alloc.testItem()
	switch p.val(p.tok()) {
	case "model", "tool":
		if n.Replay = p.replay(); n.Replay != nil {
			p.span(&n.At, start)
			return n
		}
	case "answer":
		if n.Answer = p.answer(); n.Answer != nil {
			p.span(&n.At, start)
			return n
		}
	case "expect":
		if n.Expect = p.expect(); n.Expect != nil {
			p.span(&n.At, start)
			return n
		}
	}
	if !p.soft(start) {
		return nil
	}
	if n.Attr = p.attr(); n.Attr == nil {
		p.soft(start)
		return nil
	}
	p.span(&n.At, start)
	return n
}

// Replay = ( "model" | "tool" ) Ident "replay" String .
func (p *rdParser) replay() *Replay {
	start := p.i
	kind := p.val(p.tok())
	p.i++
	name := p.ident()
	if name == nil || !p.lit("replay") {
		return nil
	}
	fixture := p.str()
	if fixture == nil {
		return nil
	}
	n := p.alloc.replay()
	n.Kind, n.Name, n.Fixture = kind, name, fixture
	p.span(&n.At, start)
	return n
}

// Answer = "answer" Ident "=" Expr .
func (p *rdParser) answer() *Answer {
	start := p.i
	p.i++
	node := p.ident()
	if node == nil || !p.lit("=") {
		return nil
	}
	v := p.expr()
	if v == nil {
		return nil
	}
	n := p.alloc.answer()
	n.Node, n.Value = node, v
	p.span(&n.At, start)
	return n
}

// Expect = "expect" Expr ( "before" Expr )? .
func (p *rdParser) expect() *Expect {
	start := p.i
	p.i++
	cond := p.expr()
	if cond == nil {
		return nil
	}
	n := p.alloc.expect()
	n.Cond = cond
	opt := p.i
	if p.lit("before") {
		if n.Before = p.expr(); n.Before == nil && !p.soft(opt) {
			return nil
		}
	}
	p.span(&n.At, start)
	return n
}

// Block = "{" Attr* "}" .
func (p *rdParser) block() *Block {
	start := p.i
	attrs, ok := braced(p, p.attr)
	if !ok {
		return nil
	}
	n := p.alloc.block()
	n.Attrs = attrs
	p.span(&n.At, start)
	return n
}

// Attr = Ident ( "=" Expr | Block ) ","? .
func (p *rdParser) attr() *Attr {
	start := p.i
	key := p.ident()
	if key == nil {
		return nil
	}
	n := p.alloc.attr()
	n.Key = key
	alt := p.i
	if p.lit("=") {
		if n.Value = p.expr(); n.Value == nil && !p.soft(alt) {
			return nil
		}
	}
	if n.Value == nil {
		// The "=" alternative failed softly (or was absent): try Block at alt.
		if n.Block = p.block(); n.Block == nil {
			p.soft(alt)
			return nil
		}
	}
	p.lit(",")
	p.span(&n.At, start)
	return n
}

// Field = Ident ":" Type ( "max" IntLit )? ( "=" Expr )? ( "reduce" Ident )? ","? .
func (p *rdParser) field() *Field {
	start := p.i
	name := p.ident()
	if name == nil || !p.lit(":") {
		return nil
	}
	t := p.typ()
	if t == nil {
		return nil
	}
	n := p.alloc.field()
	n.Name, n.Type = name, t
	opt := p.i
	if p.lit("max") {
		if n.Max = p.intLit(); n.Max == nil {
			p.soft(opt) // "max" starts the next field ("max: int")
		}
	}
	opt = p.i
	if p.lit("=") {
		if n.Default = p.expr(); n.Default == nil && !p.soft(opt) {
			return nil
		}
	}
	var ok bool
	if n.Reduce, ok = p.optKeywordIdent("reduce"); !ok {
		return nil
	}
	p.lit(",")
	p.span(&n.At, start)
	return n
}

// Type = String ( "|" String )* | SingleType .
func (p *rdParser) typ() *Type {
	if !p.enter() {
		return nil
	}
	t := p.typ1()
	p.leave()
	return t
}

func (p *rdParser) typ1() *Type {
	start := p.i
	if t := p.tok().Type; t == tokStrOpen || t == tokTextOpen {
		if s := p.str(); s != nil {
			n := p.alloc.typ()
			var ok bool
			if n.Enum, ok = sepTail(p, append(make([]*String, 0, 2), s), "|", p.str); !ok {
				return nil
			}
			p.span(&n.At, start)
			return n
		}
		if !p.soft(start) {
			return nil
		}
	} else {
		p.want("a string")
	}
	st := p.singleType()
	if st == nil {
		p.soft(start)
		return nil
	}
	n := p.alloc.typ()
	n.Single = st
	p.span(&n.At, start)
	return n
}

// SingleType = ( "list" "<" Type ">" | "map" "<" Type ">" | RecordType | "(" Type ")" | Ident ) "?"? .
func (p *rdParser) singleType() *SingleType {
	start := p.i
	n := p.alloc.singleType()
	done := false
	switch v := p.val(p.tok()); v {
	case "list", "map":
		p.i++
		if p.lit("<") {
			if t := p.typ(); t != nil && p.lit(">") {
				if v == "list" {
					n.List = t
				} else {
					n.Map = t
				}
				done = true
			}
		}
		if !done && !p.soft(start) {
			return nil
		}
	case "{":
		if n.Record = p.recordType(); n.Record != nil {
			done = true
		} else if !p.soft(start) {
			return nil
		}
	case "(":
		p.i++
		if t := p.typ(); t != nil && p.lit(")") {
			n.Paren = t
			done = true
		} else if !p.soft(start) {
			return nil
		}
	}
	if !done {
		if n.Named = p.ident(); n.Named == nil {
			p.soft(start)
			return nil
		}
	}
	if p.lit("?") {
		n.Optional = true
	}
	p.span(&n.At, start)
	return n
}

// RecordType = "{" Field* "}" .
func (p *rdParser) recordType() *RecordType {
	start := p.i
	fields, ok := braced(p, p.field)
	if !ok {
		return nil
	}
	n := p.alloc.recordType()
	n.Fields = fields
	p.span(&n.At, start)
	return n
}

// ---- terminals ----

// Ident = <ident> .
func (p *rdParser) ident() *Ident {
	t := p.tok()
	if t.Type != tokIdent {
		p.want("a name")
		return nil
	}
	n := p.alloc.ident()
	n.Name = p.val(t)
	p.setPos(&n.Pos, t)
	p.i++
	p.setEnd(&n.EndPos, p.i-1)
	return n
}

// IntLit = <int> .
func (p *rdParser) intLit() *IntLit {
	t := p.tok()
	if t.Type != tokInt {
		p.want("an integer")
		return nil
	}
	n := p.alloc.intLit()
	n.Text = p.val(t)
	p.setPos(&n.Pos, t)
	p.i++
	p.setEnd(&n.EndPos, p.i-1)
	return n
}

// DurationLit = <duration> .
func (p *rdParser) durLit() *DurationLit {
	t := p.tok()
	if t.Type != tokDuration {
		p.want("a duration")
		return nil
	}
	n := p.alloc.durLit()
	n.Text = p.val(t)
	p.setPos(&n.Pos, t)
	p.i++
	p.setEnd(&n.EndPos, p.i-1)
	return n
}

// String = ( <stropen> | <textopen> ) StrPart* ( <strclose> | <textclose> ) .
func (p *rdParser) str() *String {
	start := p.i
	t := p.tok()
	if t.Type != tokStrOpen && t.Type != tokTextOpen {
		p.want("a string")
		return nil
	}
	p.i++
	n := p.alloc.str()
	n.Open = p.val(t)
	var ok bool
	if n.Parts, ok = many(p, n.Parts, p.strPart); !ok {
		return nil
	}
	t = p.tok()
	if t.Type != tokStrClose && t.Type != tokTextClose {
		p.want("the end of the string")
		return nil
	}
	n.Close = p.val(t)
	p.i++
	p.span(&n.At, start)
	return n
}

// StrPart = <text> | <interpopen> Expr <interpend> .
func (p *rdParser) strPart() *StrPart {
	start := p.i
	t := p.tok()
	switch t.Type {
	case tokText:
		n := p.alloc.strPart()
		n.Text = p.alloc.text(p.val(t))
		p.i++
		p.span(&n.At, start)
		return n
	case tokInterpOpen:
		p.i++
		e := p.expr()
		if e == nil {
			p.soft(start)
			return nil
		}
		if p.tok().Type != tokInterpEnd {
			p.want(`"}"`)
			return nil
		}
		p.i++
		n := p.alloc.strPart()
		n.Interp = e
		p.span(&n.At, start)
		return n
	}
	return nil
}

// ---- expressions ----

// Expr = OrExpr .
func (p *rdParser) expr() *Expr {
	if !p.enter() {
		return nil
	}
	start := p.i
	or := p.orExpr()
	p.leave()
	if or == nil {
		return nil
	}
	n := p.alloc.expr()
	n.Or = or
	p.span(&n.At, start)
	return n
}

// OrExpr = AndExpr ( "or" AndExpr )* .
func (p *rdParser) orExpr() *OrExpr {
	start := p.i
	head := p.andExpr()
	if head == nil {
		return nil
	}
	n := p.alloc.orExpr()
	n.Head = head
	var ok bool
	if n.Tail, ok = sepTail(p, n.Tail, "or", p.andExpr); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// AndExpr = NotExpr ( "and" NotExpr )* .
func (p *rdParser) andExpr() *AndExpr {
	start := p.i
	head := p.notExpr()
	if head == nil {
		return nil
	}
	n := p.alloc.andExpr()
	n.Head = head
	var ok bool
	if n.Tail, ok = sepTail(p, n.Tail, "and", p.notExpr); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// NotExpr = "not" NotExpr | CmpExpr .
func (p *rdParser) notExpr() *NotExpr {
	start := p.i
	if p.is("not") {
		if !p.enter() {
			return nil
		}
		p.i++
		x := p.notExpr()
		p.leave()
		if x != nil {
			n := p.alloc.notExpr()
			n.Not = x
			p.span(&n.At, start)
			return n
		}
		if !p.soft(start) {
			return nil
		}
	}
	c := p.cmpExpr()
	if c == nil {
		p.soft(start)
		return nil
	}
	n := p.alloc.notExpr()
	n.Cmp = c
	p.span(&n.At, start)
	return n
}

// CmpExpr = AddExpr ( ( "==" | "!=" | "<=" | ">=" | "<" | ">" | "in" | "not" "in" ) AddExpr )? .
func (p *rdParser) cmpExpr() *CmpExpr {
	start := p.i
	left := p.addExpr()
	if left == nil {
		return nil
	}
	n := p.alloc.cmpExpr()
	n.Left = left
	opt := p.i
	op, width := "", 1
	switch v := p.val(p.tok()); v {
	case "==", "!=", "<=", ">=", "<", ">", "in":
		op = v
	case "not":
		if p.val(p.at(p.i+1)) == "in" {
			op, width = "notin", 2 // participle concatenates the captured tokens
		}
	}
	if op == "" {
		p.want("an operator")
	} else {
		p.i += width
		if right := p.addExpr(); right != nil {
			n.Op, n.Right = op, right
		} else if !p.soft(opt) {
			return nil
		}
	}
	p.span(&n.At, start)
	return n
}

// AddExpr = MulExpr AddOp* ; AddOp = ( "+" | "-" ) MulExpr .
func (p *rdParser) addExpr() *AddExpr {
	start := p.i
	head := p.mulExpr()
	if head == nil {
		return nil
	}
	n := p.alloc.addExpr()
	n.Head = head
	var ok bool
	if n.Tail, ok = many(p, n.Tail, p.addOp); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

func (p *rdParser) addOp() *AddOp {
	start := p.i
	op := p.val(p.tok())
	if op != "+" && op != "-" {
		p.want("an operator")
		return nil
	}
	p.i++
	x := p.mulExpr()
	if x == nil {
		return nil
	}
	o := p.alloc.addOp()
	o.Op, o.Operand = op, x
	p.span(&o.At, start)
	return o
}

// MulExpr = Unary MulOp* ; MulOp = ( "*" | "/" | "%" ) Unary .
func (p *rdParser) mulExpr() *MulExpr {
	start := p.i
	head := p.unary()
	if head == nil {
		return nil
	}
	n := p.alloc.mulExpr()
	n.Head = head
	var ok bool
	if n.Tail, ok = many(p, n.Tail, p.mulOp); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

func (p *rdParser) mulOp() *MulOp {
	start := p.i
	op := p.val(p.tok())
	if op != "*" && op != "/" && op != "%" {
		return nil
	}
	p.i++
	x := p.unary()
	if x == nil {
		return nil
	}
	o := p.alloc.mulOp()
	o.Op, o.Operand = op, x
	p.span(&o.At, start)
	return o
}

// Unary = "-" Unary | Postfix .
func (p *rdParser) unary() *Unary {
	start := p.i
	if p.is("-") {
		if !p.enter() {
			return nil
		}
		p.i++
		x := p.unary()
		p.leave()
		if x != nil {
			n := p.alloc.unary()
			n.Neg = x
			p.span(&n.At, start)
			return n
		}
		p.soft(start)
		return nil // Postfix cannot start with "-"
	}
	pf := p.postfix()
	if pf == nil {
		return nil
	}
	n := p.alloc.unary()
	n.Postfix = pf
	p.span(&n.At, start)
	return n
}

// Postfix = Primary Selector* ; Selector = "." Ident | "[" Expr "]" .
func (p *rdParser) postfix() *Postfix {
	start := p.i
	prim := p.primary()
	if prim == nil {
		return nil
	}
	n := p.alloc.postfix()
	n.Primary = prim
	var ok bool
	if n.Sel, ok = many(p, n.Sel, p.selector); !ok {
		return nil
	}
	p.span(&n.At, start)
	return n
}

func (p *rdParser) selector() *Selector {
	start := p.i
	var s *Selector
	switch p.val(p.tok()) {
	case ".":
		p.i++
		if id := p.ident(); id != nil {
			s = p.alloc.selector()
			s.Field = id
		}
	case "[":
		p.i++
		if x := p.expr(); x != nil && p.lit("]") {
			s = p.alloc.selector()
			s.Index = x
		}
	default:
		p.want(`"."`)
		p.want(`"["`)
	}
	if s == nil {
		return nil
	}
	p.span(&s.At, start)
	return s
}

// Primary = Call | Literal | Name | Paren | ListLit | RecordLit | String .
//
// Alternatives are guarded by their first token (an exact test: a member
// whose first token does not match cannot match at all).
func (p *rdParser) primary() Primary {
	start := p.i
	t := p.tok()
	if t.Type == tokIdent {
		// Call: an identifier followed by "(". When the "(" is missing
		// the Call fails softly and Literal or Name takes the identifier.
		if p.val(p.at(start+1)) == "(" {
			if c := p.call(); c != nil {
				return c
			}
			if !p.soft(start) {
				return nil
			}
		}
	}
	switch t.Type {
	case tokFloat, tokDuration, tokInt:
		n := p.alloc.literal()
		s := p.alloc.text(p.val(t))
		switch t.Type {
		case tokFloat:
			n.Float = s
		case tokDuration:
			n.Duration = s
		default:
			n.Int = s
		}
		p.i++
		p.span(&n.At, start)
		return n
	}
	switch p.val(t) {
	case "true", "false":
		n := p.alloc.literal()
		n.Bool = p.alloc.text(p.val(t))
		p.i++
		p.span(&n.At, start)
		return n
	case "null":
		n := p.alloc.literal()
		n.Null = true
		p.i++
		p.span(&n.At, start)
		return n
	}
	if t.Type == tokIdent {
		n := p.alloc.name()
		n.Ident = p.val(t)
		p.i++
		p.span(&n.At, start)
		return n
	}
	switch {
	case p.val(t) == "(":
		if n := p.paren(); n != nil {
			return n
		}
	case p.val(t) == "[":
		if n := p.listLit(); n != nil {
			return n
		}
	case p.val(t) == "{":
		if n := p.recordLit(); n != nil {
			return n
		}
	case t.Type == tokStrOpen || t.Type == tokTextOpen:
		if n := p.str(); n != nil {
			return n
		}
	default:
		p.want("an expression")
		return nil
	}
	p.soft(start)
	return nil
}

// Call = Ident "(" ( Expr ( "," Expr )* ","? )? ")" .
func (p *rdParser) call() *Call {
	start := p.i
	fn := p.ident()
	if fn == nil || !p.lit("(") {
		return nil
	}
	n := p.alloc.call()
	n.Func = fn
	var ok bool
	if n.Args, ok = p.exprList(); !ok || !p.lit(")") {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// exprList parses ( Expr ( "," Expr )* ","? )? ; ok is false on a fatal
// failure.
func (p *rdParser) exprList() ([]*Expr, bool) { return commaList(p, p.expr) }

// Paren = "(" Expr ")" .
func (p *rdParser) paren() *Paren {
	start := p.i
	p.i++
	x := p.expr()
	if x == nil || !p.lit(")") {
		return nil
	}
	n := p.alloc.paren()
	n.X = x
	p.span(&n.At, start)
	return n
}

// ListLit = "[" ( ListElem ( "," ListElem )* ","? )? "]" ; ListElem = Expr ( ":" Ident )? .
func (p *rdParser) listLit() *ListLit {
	start := p.i
	p.i++
	n := p.alloc.listLit()
	var ok bool
	if n.Elems, ok = commaList(p, p.listElem); !ok || !p.lit("]") {
		return nil
	}
	p.span(&n.At, start)
	return n
}

func (p *rdParser) listElem() *ListElem {
	start := p.i
	x := p.expr()
	if x == nil {
		return nil
	}
	n := p.alloc.listElem()
	n.X = x
	opt := p.i
	if p.lit(":") {
		if n.Tag = p.ident(); n.Tag == nil {
			p.soft(opt) // always soft: one token consumed
		}
	}
	p.span(&n.At, start)
	return n
}

// RecordLit = "{" ( RecordEntry ( "," RecordEntry )* ","? )? "}" .
func (p *rdParser) recordLit() *RecordLit {
	start := p.i
	p.i++
	n := p.alloc.recordLit()
	var ok bool
	if n.Entries, ok = commaList(p, p.recordEntry); !ok || !p.lit("}") {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// RecordEntry = ( Ident | String ) ":" Expr .
func (p *rdParser) recordEntry() *RecordEntry {
	start := p.i
	n := p.alloc.recordEntry()
	if p.tok().Type == tokIdent {
		n.Key = p.ident()
	} else {
		p.want("a name")
		if n.StrKey = p.str(); n.StrKey == nil {
			p.soft(start)
			return nil
		}
	}
	if !p.lit(":") {
		return nil
	}
	if n.Value = p.expr(); n.Value == nil {
		return nil
	}
	p.span(&n.At, start)
	return n
}

// ---- allocation ----

// slab hands out zeroed *T from chunks that double in size from 8 up to
// limit bytes, so a file's nodes cost a few allocations per node type
// instead of one each. A chunk stays alive while any node in it is
// referenced; all of them belong to one File.
type slab[T any] struct {
	buf  []T
	size int
}

// Chunk limits (rdAlloc.limit): chunks above 32 KiB would take the slow
// large-object path; below, the limit trades the unused tail of each
// type's last chunk (about half a chunk, for each of some twenty types in
// use) against locality (a node's children sit in fewer, longer runs).
// chunkLimit sizes it by the file: the tails stay a few percent of its
// tree, whose nodes cost some 230 bytes per token.
const (
	minChunk = 8 << 10
	maxChunk = 32 << 10
)

func chunkLimit(tokens int) int { return min(maxChunk, max(minChunk, tokens*2/3)) }

func (s *slab[T]) get(limit int) *T {
	if len(s.buf) == 0 {
		var zero T
		s.size = min(max(2*s.size, 8), max(1, max(limit, minChunk)/int(unsafe.Sizeof(zero))))
		s.buf = make([]T, s.size)
	}
	x := &s.buf[0]
	s.buf = s.buf[1:]
	return x
}

// rdAlloc allocates the nodes of one file. Nodes handed out are zero and
// never reused (a node built by a backtracked alternative is simply dropped).
type rdAlloc struct {
	addExprs       slab[AddExpr]
	addOps         slab[AddOp]
	agents         slab[Agent]
	andExprs       slab[AndExpr]
	answers        slab[Answer]
	attrs          slab[Attr]
	blocks         slab[Block]
	blockDecls     slab[BlockDecl]
	caches         slab[Cache]
	calls          slab[Call]
	callNodes      slab[CallNode]
	clauses        slab[Clause]
	cmpExprs       slab[CmpExpr]
	durLits        slab[DurationLit]
	edges          slab[Edge]
	expects        slab[Expect]
	exprs          slab[Expr]
	fields         slab[Field]
	graphs         slab[Graph]
	graphItems     slab[GraphItem]
	idents         slab[Ident]
	importDecls    slab[Import]
	intLits        slab[IntLit]
	interruptNodes slab[InterruptNode]
	joinNodes      slab[JoinNode]
	waitNodes      slab[WaitNode]
	listElems      slab[ListElem]
	listLits       slab[ListLit]
	literals       slab[Literal]
	mapNodes       slab[MapNode]
	mulExprs       slab[MulExpr]
	mulOps         slab[MulOp]
	names          slab[Name]
	nodeDecls      slab[NodeDecl]
	notExprs       slab[NotExpr]
	orExprs        slab[OrExpr]
	parens         slab[Paren]
	postfixs       slab[Postfix]
	recordEntrys   slab[RecordEntry]
	recordLits     slab[RecordLit]
	recordTypes    slab[RecordType]
	replays        slab[Replay]
	retrys         slab[Retry]
	selectors      slab[Selector]
	serves         slab[Serve]
	setNodes       slab[SetNode]
	singleTypes    slab[SingleType]
	skills         slab[Skill]
	states         slab[State]
	strs           slab[String]
	strParts       slab[StrPart]
	tests          slab[Test]
	testItems      slab[TestItem]
	tools          slab[Tool]
	toolItems      slab[ToolItem]
	toolRuns       slab[ToolRun]
	typs           slab[Type]
	typeDecls      slab[TypeDecl]
	unarys         slab[Unary]
	workflows      slab[Workflow]
	texts          slab[string]
	ptrs           []unsafe.Pointer // one-element lists (appendNode)
	limit          int              // chunk size limit in bytes (chunkLimit; 0: minChunk)
}

func (a *rdAlloc) addExpr() *AddExpr             { return a.addExprs.get(a.limit) }
func (a *rdAlloc) addOp() *AddOp                 { return a.addOps.get(a.limit) }
func (a *rdAlloc) agent() *Agent                 { return a.agents.get(a.limit) }
func (a *rdAlloc) andExpr() *AndExpr             { return a.andExprs.get(a.limit) }
func (a *rdAlloc) answer() *Answer               { return a.answers.get(a.limit) }
func (a *rdAlloc) attr() *Attr                   { return a.attrs.get(a.limit) }
func (a *rdAlloc) block() *Block                 { return a.blocks.get(a.limit) }
func (a *rdAlloc) blockDecl() *BlockDecl         { return a.blockDecls.get(a.limit) }
func (a *rdAlloc) cache() *Cache                 { return a.caches.get(a.limit) }
func (a *rdAlloc) call() *Call                   { return a.calls.get(a.limit) }
func (a *rdAlloc) callNode() *CallNode           { return a.callNodes.get(a.limit) }
func (a *rdAlloc) clause() *Clause               { return a.clauses.get(a.limit) }
func (a *rdAlloc) cmpExpr() *CmpExpr             { return a.cmpExprs.get(a.limit) }
func (a *rdAlloc) durLit() *DurationLit          { return a.durLits.get(a.limit) }
func (a *rdAlloc) edge() *Edge                   { return a.edges.get(a.limit) }
func (a *rdAlloc) expect() *Expect               { return a.expects.get(a.limit) }
func (a *rdAlloc) expr() *Expr                   { return a.exprs.get(a.limit) }
func (a *rdAlloc) field() *Field                 { return a.fields.get(a.limit) }
func (a *rdAlloc) graph() *Graph                 { return a.graphs.get(a.limit) }
func (a *rdAlloc) graphItem() *GraphItem         { return a.graphItems.get(a.limit) }
func (a *rdAlloc) ident() *Ident                 { return a.idents.get(a.limit) }
func (a *rdAlloc) importDecl() *Import           { return a.importDecls.get(a.limit) }
func (a *rdAlloc) intLit() *IntLit               { return a.intLits.get(a.limit) }
func (a *rdAlloc) interruptNode() *InterruptNode { return a.interruptNodes.get(a.limit) }
func (a *rdAlloc) joinNode() *JoinNode           { return a.joinNodes.get(a.limit) }
func (a *rdAlloc) waitNode() *WaitNode           { return a.waitNodes.get(a.limit) }
func (a *rdAlloc) listElem() *ListElem           { return a.listElems.get(a.limit) }
func (a *rdAlloc) listLit() *ListLit             { return a.listLits.get(a.limit) }
func (a *rdAlloc) literal() *Literal             { return a.literals.get(a.limit) }
func (a *rdAlloc) mapNode() *MapNode             { return a.mapNodes.get(a.limit) }
func (a *rdAlloc) mulExpr() *MulExpr             { return a.mulExprs.get(a.limit) }
func (a *rdAlloc) mulOp() *MulOp                 { return a.mulOps.get(a.limit) }
func (a *rdAlloc) name() *Name                   { return a.names.get(a.limit) }
func (a *rdAlloc) nodeDecl() *NodeDecl           { return a.nodeDecls.get(a.limit) }
func (a *rdAlloc) notExpr() *NotExpr             { return a.notExprs.get(a.limit) }
func (a *rdAlloc) orExpr() *OrExpr               { return a.orExprs.get(a.limit) }
func (a *rdAlloc) paren() *Paren                 { return a.parens.get(a.limit) }
func (a *rdAlloc) postfix() *Postfix             { return a.postfixs.get(a.limit) }
func (a *rdAlloc) recordEntry() *RecordEntry     { return a.recordEntrys.get(a.limit) }
func (a *rdAlloc) recordLit() *RecordLit         { return a.recordLits.get(a.limit) }
func (a *rdAlloc) recordType() *RecordType       { return a.recordTypes.get(a.limit) }
func (a *rdAlloc) replay() *Replay               { return a.replays.get(a.limit) }
func (a *rdAlloc) retry() *Retry                 { return a.retrys.get(a.limit) }
func (a *rdAlloc) selector() *Selector           { return a.selectors.get(a.limit) }
func (a *rdAlloc) serve() *Serve                 { return a.serves.get(a.limit) }
func (a *rdAlloc) setNode() *SetNode             { return a.setNodes.get(a.limit) }
func (a *rdAlloc) singleType() *SingleType       { return a.singleTypes.get(a.limit) }
func (a *rdAlloc) skill() *Skill                 { return a.skills.get(a.limit) }
func (a *rdAlloc) state() *State                 { return a.states.get(a.limit) }
func (a *rdAlloc) str() *String                  { return a.strs.get(a.limit) }
func (a *rdAlloc) strPart() *StrPart             { return a.strParts.get(a.limit) }
func (a *rdAlloc) test() *Test                   { return a.tests.get(a.limit) }
func (a *rdAlloc) testItem() *TestItem           { return a.testItems.get(a.limit) }
func (a *rdAlloc) tool() *Tool                   { return a.tools.get(a.limit) }
func (a *rdAlloc) toolItem() *ToolItem           { return a.toolItems.get(a.limit) }
func (a *rdAlloc) toolRun() *ToolRun             { return a.toolRuns.get(a.limit) }
func (a *rdAlloc) typ() *Type                    { return a.typs.get(a.limit) }
func (a *rdAlloc) typeDecl() *TypeDecl           { return a.typeDecls.get(a.limit) }
func (a *rdAlloc) unary() *Unary                 { return a.unarys.get(a.limit) }
func (a *rdAlloc) workflow() *Workflow           { return a.workflows.get(a.limit) }

// text returns a pointer to a copy of s (for the *string captures).
func (a *rdAlloc) text(s string) *string {
	x := a.texts.get(a.limit)
	*x = s
	return x
}

package format

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/agentc/agentc/lang/syntax"
)

const (
	indentWidth = 2   // spaces per indentation level
	maxWidth    = 100 // columns a one-line bracketed construct may reach
)

// line is one output line. Alignment is applied after printing: cells and
// cmt mark where padding may go, so decisions made while printing never
// depend on padding and formatting stays idempotent.
type line struct {
	text   []byte
	indent int   // leading spaces written by the printer
	raw    bool  // starts inside a text block or block comment: copied verbatim
	cells  []int // offsets in text where alignment padding goes
	run    int   // alignment run of the cells (0: none)
	cmt    int   // offset of a trailing // comment (0: none)
}

func (l *line) blank() bool { return !l.raw && len(l.text) == l.indent }

// padded returns how many of l's cells get padding: those followed by more
// than a trailing comment.
func (l *line) padded() int {
	end := len(l.text)
	if l.cmt > 0 {
		end = l.cmt - 1
	}
	n := len(l.cells)
	for n > 0 && l.cells[n-1] >= end {
		n--
	}
	return n
}

// printer writes a syntax tree as lines.
type printer struct {
	*scanner
	ci int // next comment to emit

	lines  []line
	cur    line
	indent int // indentation level of the current item

	space      bool // a space is due before the next token
	brk        bool // a line break is due before the next token (after a // comment)
	allowBlank bool // a blank line may be kept before the next item or comment
	lastEnd    int  // source offset just past the last emitted token or comment (-1: unknown)

	run, runs   int // current alignment run; runs allocated so far
	itemLine    int // index of the line the current item starts on
	oneLine     int // > 0 while printing a construct on one line
	regionStart int // first line of the current declaration's region (-1: record it; < -1: don't)
	blankAt     []int

	err error
}

func newPrinter(src []byte, cmts []syntax.Comment) *printer {
	return &printer{scanner: newScanner(src, cmts), lastEnd: -1, regionStart: -2}
}

// fail records the first problem; printing goes on so it never has to unwind.
func (p *printer) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

// missing records a node the grammar requires but the tree lacks.
func (p *printer) missing(what string) { p.fail("incomplete syntax tree: missing %s", what) }

// absent reports a nil node n as the missing what.
func (p *printer) absent(n syntax.Node, what string) bool {
	if isNil(n) {
		p.missing(what)
		return true
	}
	return false
}

// ---- lines ----

func (p *printer) hasContent() bool { return p.cur.raw || len(p.cur.text) > p.cur.indent }

func (p *printer) push() {
	p.lines = append(p.lines, p.cur)
	p.cur = line{}
}

// startLine ends the current line, if it has content, and starts an empty one
// indented to col; a pending break or space is thereby done.
func (p *printer) startLine(col int) {
	if p.hasContent() {
		p.push()
	}
	p.brk, p.space = false, false
	text := p.cur.text[:0]
	for range col {
		text = append(text, ' ')
	}
	p.cur = line{text: text, indent: col}
}

// blankLine ends the current line and adds one blank line, never two.
func (p *printer) blankLine() {
	if p.hasContent() {
		p.push()
	}
	if n := len(p.lines); n > 0 && !p.lines[n-1].blank() {
		p.lines = append(p.lines, line{})
	}
}

func (p *printer) markRegion() {
	if p.regionStart == -1 {
		p.regionStart = len(p.lines)
	}
}

func (p *printer) contCol() int { return (p.indent + 1) * indentWidth }

// sep applies the pending line break or space before a token.
func (p *printer) sep() {
	switch {
	case p.brk:
		p.startLine(p.contCol())
	case p.space && p.hasContent():
		p.cur.text = append(p.cur.text, ' ')
	}
	p.brk, p.space = false, false
}

// tok writes one token of code. off is its source offset, or -1 when unknown;
// comments that start before a known offset are emitted first.
func (p *printer) tok(off int, text string) {
	if off >= 0 {
		p.flushInline(off)
	}
	p.sep()
	p.cur.text = append(p.cur.text, text...)
	if off >= 0 {
		p.lastEnd = off + len(text)
	}
}

// sp asks for a space before the next token.
func (p *printer) sp() { p.space = true }

// lead writes the keyword node n starts with, then asks for a space.
func (p *printer) lead(n syntax.Node, kw string) {
	p.tok(start(n), kw)
	p.sp()
}

// spacedKw writes kw (see kw) with a space on either side: " = ", " -> ".
func (p *printer) spacedKw(text string) {
	p.sp()
	p.kw(text)
	p.sp()
}

// kw writes a keyword or punctuation token that has no node of its own,
// finding it in the source right after the last emitted token so comments
// before it stay before it.
func (p *printer) kw(text string) {
	if text == "" {
		p.missing("keyword")
		return
	}
	off := -1
	if p.lastEnd >= 0 {
		q := p.skip(p.lastEnd)
		if bytes.HasPrefix(p.src[q:], []byte(text)) {
			r := q + len(text)
			if !isIdentByte(text[0]) || r >= len(p.src) || !isIdentByte(p.src[r]) {
				off = q
			}
		}
	}
	p.tok(off, text)
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// raw appends text with no spacing and no comment handling (string content,
// commas).
func (p *printer) raw(text string) { p.multiline(text) }

// item starts a new item of the current block at source offset off: pending
// comments first, then a fresh line (after one blank line if the author left
// one). It reports whether an alignment run must end here.
func (p *printer) item(off int) (breakRun bool) {
	col := p.indent * indentWidth
	breakRun = p.flush(off, col, true)
	if p.hasContent() {
		p.push()
	}
	if p.allowBlank && p.blankBefore(off) {
		p.blankLine()
		breakRun = true
	}
	p.startLine(col)
	p.markRegion()
	p.brk, p.space = false, false
	p.allowBlank = true
	p.itemLine = len(p.lines)
	return breakRun
}

// cell marks an alignment point on the first line of the current item.
func (p *printer) cell() {
	if p.oneLine > 0 || p.run == 0 || len(p.lines) != p.itemLine {
		return
	}
	p.cur.cells = append(p.cur.cells, len(p.cur.text))
	p.cur.run = p.run
}

// ---- positions of nodes ----

// start returns the source offset where n starts.
func start(n syntax.Node) int { return n.Span().Start.Offset }

// end returns the source offset just past n's last token.
func (p *printer) end(n syntax.Node) int { return p.tokEnd(n.Span().End.Offset) }

// closing returns the offset of the bracket ch that ends n, or -1.
func (p *printer) closing(n syntax.Node, ch byte) int {
	if e := p.end(n); e > 0 && p.src[e-1] == ch {
		return e - 1
	}
	return -1
}

// opening returns the offset of the bracket ch that precedes off, or -1.
func (p *printer) opening(off int, ch byte) int {
	if off < 0 {
		return -1
	}
	if e := p.tokEnd(off); e > 0 && p.src[e-1] == ch {
		return e - 1
	}
	return -1
}

// ---- bracketed sequences ----

// align kinds: items of one kind in a row share their alignment.
const (
	alignNone = iota
	alignAttr
	alignField
	alignTool
	alignNode
	alignEdge
	alignAnswer
)

// seq describes a bracketed list of items.
type seq struct {
	open, close int    // source offsets of the brackets (-1: unknown)
	brackets    string // "{}" or "[]"
	n           int
	pos         func(i int) int            // where item i starts
	end         func(i int) int            // where item i ends
	kind        func(i int) int            // alignment kind of item i
	item        func(i int, expanded bool) // prints item i
	oneLineOK   bool                       // may stay on one line
	commas      bool                       // one-line items are separated by commas
	trailing    bool                       // expanded items end with a comma
}

// seq prints s on one line or expanded (see the package doc).
func (p *printer) seq(s seq) {
	open, closeTok := s.brackets[:1], s.brackets[1:]
	if s.open >= 0 {
		p.flushInline(s.open)
	}
	p.sep()
	if s.n == 0 && (s.open < 0 || s.close < 0 || !p.hasCommentIn(s.open, s.close)) {
		p.tok(s.open, open)
		p.tok(s.close, closeTok)
		return
	}
	if s.oneLineOK && p.sameLine(s.open, s.close) {
		if p.oneLine > 0 {
			p.seqOne(s)
			return
		}
		snap := p.save()
		p.oneLine++
		p.seqOne(s)
		p.oneLine--
		if len(p.lines) == snap.lines && utf8.RuneCount(p.cur.text) <= maxWidth {
			return
		}
		p.restore(snap)
	}
	p.seqExpanded(s)
}

func (p *printer) seqOne(s seq) {
	pad := s.brackets == "{}"
	p.tok(s.open, s.brackets[:1])
	for i := range s.n {
		if i > 0 && s.commas {
			p.raw(",")
		}
		if i > 0 || pad {
			p.sp()
		}
		s.item(i, false)
	}
	if pad {
		p.sp()
	}
	p.tok(s.close, s.brackets[1:])
}

func (p *printer) seqExpanded(s seq) {
	p.tok(s.open, s.brackets[:1])
	savedRun, savedItemLine := p.run, p.itemLine
	p.indent++
	p.allowBlank = false
	p.run = 0
	prevKind := -1
	for i := range s.n {
		breakRun := p.item(s.pos(i))
		switch k := s.kind(i); {
		case k == alignNone:
			p.run = 0
		case breakRun || k != prevKind || p.run == 0:
			p.runs++
			p.run = p.runs
		}
		prevKind = s.kind(i)
		s.item(i, true)
		if s.trailing {
			p.raw(",")
		}
		if e := s.end(i); e >= 0 {
			p.lastEnd = e
		}
	}
	if s.close >= 0 {
		p.flush(s.close, p.indent*indentWidth, true)
	}
	p.indent--
	p.startLine(p.indent * indentWidth)
	p.tok(s.close, s.brackets[1:])
	p.run, p.itemLine = savedRun, savedItemLine
}

// snapshot is what a failed one-line attempt rolls back.
type snapshot struct {
	lines, ci, lastEnd, regionStart int
	cur                             line
	space, brk, allowBlank          bool
	err                             error
}

func (p *printer) save() snapshot {
	cur := p.cur
	cur.text = append([]byte(nil), cur.text...)
	cur.cells = append([]int(nil), cur.cells...)
	return snapshot{len(p.lines), p.ci, p.lastEnd, p.regionStart, cur, p.space, p.brk, p.allowBlank, p.err}
}

func (p *printer) restore(s snapshot) {
	p.lines = p.lines[:s.lines]
	p.ci, p.lastEnd, p.regionStart = s.ci, s.lastEnd, s.regionStart
	p.cur, p.space, p.brk, p.allowBlank, p.err = s.cur, s.space, s.brk, s.allowBlank, s.err
}

// nodeSeq fills the position callbacks of a seq over nodes.
func nodeSeq[N syntax.Node](p *printer, nodes []N) (pos, end func(int) int) {
	return func(i int) int { return start(nodes[i]) }, func(i int) int { return p.end(nodes[i]) }
}

// ---- file and declarations ----

func (p *printer) file(f *syntax.File) {
	type region struct {
		start       int // first line: leading comments or the declaration
		first, last int // lines of the declaration's first and last token
	}
	regions := make([]region, 0, len(f.Decls))
	for _, d := range f.Decls {
		p.regionStart = -1
		breakRun := p.item(start(d))
		r := region{start: p.regionStart, first: len(p.lines)}
		p.regionStart = -2
		switch d.(type) {
		case *syntax.BlockDecl, *syntax.TypeDecl:
			if breakRun || p.run == 0 {
				p.runs++
				p.run = p.runs
			}
		default:
			p.run = 0
		}
		p.decl(d)
		r.last = len(p.lines)
		if r.last > r.first {
			// A multi-line declaration gets blank lines around it and no
			// alignment with its neighbors.
			p.lines[r.first].cells, p.lines[r.first].run = nil, 0
			p.run = 0
		}
		p.lastEnd = p.end(d)
		regions = append(regions, r)
	}
	p.flush(len(p.src), 0, true)
	if p.hasContent() {
		p.push()
	}
	for i := 1; i < len(regions); i++ {
		a, b := regions[i-1], regions[i]
		if (a.last > a.first || b.last > b.first) && b.start > 0 && !p.lines[b.start-1].blank() {
			p.blankAt = append(p.blankAt, b.start)
		}
	}
}

func (p *printer) decl(d syntax.Decl) {
	switch d := d.(type) {
	case *syntax.Workflow:
		p.lead(d, "workflow")
		p.ident(d.Name, "workflow name")
		p.optString(d.Doc)
	case *syntax.Import:
		p.lead(d, "import")
		p.str(d.Path, "import path")
	case *syntax.BlockDecl:
		p.lead(d, d.Kind)
		p.ident(d.Name, d.Kind+" name")
		p.cell()
		p.sp()
		p.block(d.Body)
	case *syntax.TypeDecl:
		p.lead(d, "type")
		p.ident(d.Name, "type name")
		p.cell()
		p.sp()
		switch {
		case d.Record != nil:
			p.recordType(d.Record)
		case d.Alias != nil:
			p.kw("=")
			p.sp()
			p.typ(d.Alias)
		default:
			p.missing("type definition")
		}
	case *syntax.Tool:
		p.lead(d, "tool")
		p.ident(d.Name, "tool name")
		p.optString(d.Doc)
		p.sp()
		body(p, d, d.Items, func(i int) int { return alignTool }, func(i int, _ bool) { p.toolItem(d.Items[i]) })
	case *syntax.Skill:
		p.lead(d, "skill")
		p.ident(d.Name, "skill name")
		p.spacedKw("from")
		p.str(d.From, "skill folder")
		p.optBlock(d.Body)
	case *syntax.State:
		p.lead(d, "state")
		p.ident(d.Name, "state name")
		p.sp()
		body(p, d, d.Fields, func(int) int { return alignField }, func(i int, _ bool) { p.field(d.Fields[i], true) })
	case *syntax.Agent:
		p.lead(d, "agent")
		p.ident(d.Name, "agent name")
		p.sp()
		p.ident(d.Kind, "agent kind")
		p.optString(d.Doc)
		p.sp()
		p.block(d.Body)
	case *syntax.Graph:
		p.graph(d)
	case *syntax.Serve:
		p.lead(d, "serve")
		p.block(d.Body)
	case *syntax.Test:
		p.lead(d, "test")
		p.str(d.Name, "test name")
		p.sp()
		body(p, d, d.Items, func(i int) int { return testKind(d.Items[i]) }, func(i int, _ bool) { p.testItem(d.Items[i]) })
	case *syntax.BadDecl:
		p.fail("%s: the declaration has syntax errors", d.Span())
	default:
		p.fail("unknown declaration %T", d)
	}
}

// body prints the always-expanded { … } of a tool, state, graph or test
// declaration d.
func body[T any, N interface {
	*T
	syntax.Node
}](p *printer, d syntax.Node, items []N, kind func(int) int, item func(int, bool)) {
	if slices.Contains(items, nil) {
		p.missing("item")
		return
	}
	close := p.closing(d, '}')
	first := close
	if len(items) > 0 {
		first = start(items[0])
	}
	pos, end := nodeSeq(p, items)
	p.seq(seq{open: p.opening(first, '{'), close: close, brackets: "{}", n: len(items),
		pos: pos, end: end, kind: kind, item: item})
}

// inlineSeq prints the items of n (a block, record type, list or record
// literal) between brackets: on one line, comma-separated, when they fit and
// the source has them on one, else one per line, with a comma after each
// when trailing. Every item aligns as kind align; what names a missing item.
func inlineSeq[T any, PT interface {
	*T
	syntax.Node
}](p *printer, n syntax.Node, brackets string, items []PT, what string, align int, trailing bool, item func(PT, bool)) {
	if slices.Contains(items, nil) {
		p.missing(what)
		return
	}
	pos, end := nodeSeq(p, items)
	p.seq(seq{open: start(n), close: p.closing(n, brackets[1]), brackets: brackets, n: len(items),
		pos: pos, end: end, kind: func(int) int { return align },
		item:      func(i int, expanded bool) { item(items[i], expanded) },
		oneLineOK: true, commas: true, trailing: trailing})
}

// block prints an attribute block.
func (p *printer) block(b *syntax.Block) {
	if b == nil {
		p.missing("block")
		return
	}
	inlineSeq(p, b, "{}", b.Attrs, "attribute", alignAttr, false, func(a *syntax.Attr, _ bool) { p.attr(a) })
}

// attr prints key = value or key { … }.
func (p *printer) attr(a *syntax.Attr) {
	p.ident(a.Key, "attribute name")
	p.cell()
	p.sp()
	switch {
	case a.Value != nil:
		p.kw("=")
		p.sp()
		p.expr(a.Value)
	case a.Block != nil:
		p.block(a.Block)
	default:
		p.missing("attribute value")
	}
}

// recordType prints an anonymous record type.
func (p *printer) recordType(r *syntax.RecordType) {
	if r == nil {
		p.missing("record type")
		return
	}
	inlineSeq(p, r, "{}", r.Fields, "field", alignField, false, p.field)
}

// field prints name: T max N = default reduce r; expanded fields are written
// name : T so their colons align.
func (p *printer) field(f *syntax.Field, expanded bool) {
	p.ident(f.Name, "field name")
	if expanded {
		p.cell()
		p.sp()
	}
	p.kw(":")
	p.sp()
	p.typ(f.Type)
	if f.Max != nil {
		p.spacedKw("max")
		p.intLit(f.Max)
	}
	if f.Default != nil {
		p.spacedKw("=")
		p.expr(f.Default)
	}
	if f.Reduce != nil {
		p.spacedKw("reduce")
		p.ident(f.Reduce, "reducer")
	}
}

func (p *printer) toolItem(it *syntax.ToolItem) {
	switch {
	case it.Input != nil:
		p.tok(start(it), "input")
		p.cell()
		p.sp()
		p.typ(it.Input)
	case it.Output != nil:
		p.tok(start(it), "output")
		p.cell()
		p.sp()
		p.typ(it.Output)
	case it.Run != nil:
		p.tok(start(it), "run")
		p.cell()
		p.spacedKw("=")
		p.toolRun(it.Run)
	case it.Attr != nil:
		p.attr(it.Attr)
	default:
		p.missing("tool item")
	}
}

func (p *printer) toolRun(r *syntax.ToolRun) {
	switch {
	case r.Builtin != nil:
		p.tok(start(r), "builtin")
		p.kw(".")
		p.ident(r.Builtin, "builtin name")
	case r.HTTP != nil:
		p.lead(r, "http")
		p.block(r.HTTP)
	case r.Exec != nil:
		p.lead(r, "exec")
		p.block(r.Exec)
	case r.MCP != nil:
		p.lead(r, "mcp")
		p.block(r.MCP)
	case r.Agent != nil:
		p.lead(r, "agent")
		p.ident(r.Agent, "agent name")
	default:
		p.missing("tool implementation")
	}
}

func testKind(it *syntax.TestItem) int {
	switch {
	case it.Attr != nil:
		return alignAttr
	case it.Answer != nil:
		return alignAnswer
	}
	return alignNone
}

func (p *printer) testItem(it *syntax.TestItem) {
	switch {
	case it.Replay != nil:
		r := it.Replay
		p.lead(r, r.Kind)
		p.ident(r.Name, "replayed name")
		p.spacedKw("replay")
		p.str(r.Fixture, "fixture path")
	case it.Answer != nil:
		a := it.Answer
		p.lead(a, "answer")
		p.ident(a.Node, "interrupt node")
		p.cell()
		p.spacedKw("=")
		p.expr(a.Value)
	case it.Expect != nil:
		e := it.Expect
		p.lead(e, "expect")
		p.expr(e.Cond)
		if e.Before != nil {
			p.spacedKw("before")
			p.expr(e.Before)
		}
	case it.Attr != nil:
		p.attr(it.Attr)
	default:
		p.missing("test item")
	}
}

// ---- graphs ----

func (p *printer) graph(g *syntax.Graph) {
	p.lead(g, "graph")
	p.ident(g.Name, "graph name")
	p.kw("(")
	p.ident(g.State, "state type")
	p.kw(")")
	if g.Input != nil {
		p.spacedKw("input")
		p.ident(g.Input, "input field")
	}
	if g.Output != nil {
		p.spacedKw("output")
		p.ident(g.Output, "output field")
	}
	p.optString(g.Doc)
	p.sp()
	kind := func(i int) int {
		if g.Items[i].Edge != nil {
			return alignEdge
		}
		return alignNode
	}
	body(p, g, g.Items, kind, func(i int, _ bool) { p.graphItem(g.Items[i]) })
}

func (p *printer) graphItem(it *syntax.GraphItem) {
	switch {
	case it.Node != nil:
		p.nodeDecl(it.Node)
	case it.Budget != nil:
		p.lead(it, "budget")
		p.block(it.Budget)
	case it.Edge != nil:
		p.edge(it.Edge)
	default:
		p.missing("graph item")
	}
}

func (p *printer) nodeDecl(n *syntax.NodeDecl) {
	p.lead(n, "node")
	p.ident(n.Name, "node name")
	p.cell()
	p.spacedKw("=")
	p.nodeBody(n.Body)
	p.clauses(n.Clauses)
}

func (p *printer) clauses(cs []*syntax.Clause) {
	for _, c := range cs {
		p.sp()
		p.clause(c)
	}
}

func (p *printer) nodeBody(b syntax.NodeBody) {
	if p.absent(b, "node body") {
		return
	}
	switch b := b.(type) {
	case *syntax.CallNode:
		p.lead(b, b.Kind)
		p.ident(b.Callee, "callee")
		p.optBlock(b.Args)
	case *syntax.SetNode:
		p.lead(b, "set")
		p.block(b.Body)
	case *syntax.MapNode:
		p.mapNode(b)
	case *syntax.InterruptNode:
		p.lead(b, "interrupt")
		p.str(b.Prompt, "interrupt prompt")
		p.spacedKw("returns")
		p.typ(b.Returns)
	case *syntax.JoinNode:
		p.lead(b, "join")
		p.kw(b.Mode)
	case *syntax.WaitNode:
		p.lead(b, "wait")
		if b.Until {
			p.kw("until")
			p.sp()
		}
		p.expr(b.For)
	default:
		p.fail("unknown node kind %T", b)
	}
}

// mapNode prints map v in list concurrency n { body clauses }; its braces
// hold two items: the body and the line of clauses.
func (p *printer) mapNode(m *syntax.MapNode) {
	p.lead(m, "map")
	p.ident(m.Var, "loop variable")
	p.spacedKw("in")
	p.expr(m.List)
	if m.Concurrency != nil {
		p.spacedKw("concurrency")
		p.tok(start(m.Concurrency), m.Concurrency.Text)
	}
	p.sp()
	if p.absent(m.Body, "map body") {
		return
	}
	if slices.Contains(m.Clauses, nil) {
		p.missing("clause")
		return
	}
	n := 1
	if len(m.Clauses) > 0 {
		n = 2
	}
	p.seq(seq{open: p.opening(start(m.Body), '{'), close: p.closing(m, '}'), brackets: "{}", n: n,
		pos: func(i int) int {
			if i == 0 {
				return start(m.Body)
			}
			return start(m.Clauses[0])
		},
		end: func(i int) int {
			if i == 0 {
				return p.end(m.Body)
			}
			return p.end(m.Clauses[len(m.Clauses)-1])
		},
		kind: func(int) int { return alignNone },
		item: func(i int, _ bool) {
			if i == 0 {
				p.nodeBody(m.Body)
				return
			}
			for j, c := range m.Clauses {
				if j > 0 {
					p.sp()
				}
				p.clause(c)
			}
		},
		oneLineOK: true})
}

// isNil reports whether n is nil or a typed nil pointer: an interface field
// of a tree built by hand (or by a fuzzer) may hold one.
func isNil(n syntax.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (p *printer) clause(c *syntax.Clause) {
	if c == nil {
		p.missing("clause")
		return
	}
	switch {
	case c.Retry != nil:
		r := c.Retry
		p.lead(r, "retry")
		p.intLit(r.Attempts)
		if r.Min != nil || r.Max != nil {
			p.spacedKw("backoff")
			p.duration(r.Min)
			p.kw("..")
			p.duration(r.Max)
		}
		if len(r.On) > 0 {
			p.spacedKw("on")
			p.kw("[")
			for i, id := range r.On {
				if i > 0 {
					p.raw(",")
					p.sp()
				}
				p.ident(id, "error kind")
			}
			p.tok(p.closing(r, ']'), "]")
		}
	case c.Timeout != nil:
		p.lead(c, "timeout")
		p.duration(c.Timeout)
		p.elseArrow(c.Else, "timeout exit")
	case c.Catch != nil:
		p.tok(start(c), "catch")
		p.spacedKw("->")
		p.ident(c.Catch, "catch target")
	case c.Cache != nil:
		p.tok(start(c.Cache), "cache")
		if c.Cache.TTL != nil {
			p.spacedKw("ttl")
			p.duration(c.Cache.TTL)
		}
	case c.Into != nil:
		p.lead(c, "into")
		p.ident(c.Into, "into target")
	default:
		p.missing("clause")
	}
}

func (p *printer) edge(e *syntax.Edge) {
	p.ident(e.From, "edge source")
	p.cell()
	p.spacedKw("->")
	p.ident(e.To, "edge target")
	p.cell()
	switch {
	case e.When != nil:
		p.spacedKw("when")
		p.expr(e.When)
	case e.Otherwise:
		p.sp()
		p.kw("otherwise")
	}
	if e.Max != nil {
		p.spacedKw("max")
		p.intLit(e.Max)
		p.elseArrow(e.Else, "loop exit")
	}
}

// optBlock prints an optional block after a space.
func (p *printer) optBlock(b *syntax.Block) {
	if b != nil {
		p.sp()
		p.block(b)
	}
}

// elseArrow prints the exit `else -> target` of a timeout or a loop bound,
// when there is one.
func (p *printer) elseArrow(target *syntax.Ident, what string) {
	if target == nil {
		return
	}
	p.spacedKw("else")
	p.kw("->")
	p.sp()
	p.ident(target, what)
}

// ---- output ----

// bytes inserts the blank lines owed around multi-line declarations, aligns
// the lines and joins them. Blank lines go in first: they end comment
// alignment groups.
func (p *printer) bytes() []byte {
	if len(p.blankAt) > 0 {
		lines := make([]line, 0, len(p.lines)+len(p.blankAt))
		for i, l := range p.lines {
			if len(p.blankAt) > 0 && p.blankAt[0] == i {
				p.blankAt = p.blankAt[1:]
				lines = append(lines, line{})
			}
			lines = append(lines, l)
		}
		p.lines = lines
	}
	p.alignCells()
	p.alignComments()
	var out bytes.Buffer
	blank := false
	for i := range p.lines {
		l := &p.lines[i]
		if l.blank() {
			blank = out.Len() > 0
			continue
		}
		if blank {
			out.WriteByte('\n')
			blank = false
		}
		out.Write(l.text)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// alignCells pads the cells of every run: column k of a run is as wide as
// its widest cell on the lines where something follows that cell (other than
// a trailing comment); a cell that ends its line is not padded.
func (p *printer) alignCells() {
	widths := map[int][]int{}
	for i := range p.lines {
		l := &p.lines[i]
		if l.run == 0 {
			continue
		}
		w := widths[l.run]
		from := l.indent
		for k, c := range l.cells[:l.padded()] {
			if k >= len(w) {
				w = append(w, 0)
			}
			w[k] = max(w[k], utf8.RuneCount(l.text[from:c]))
			from = c
		}
		widths[l.run] = w
	}
	for i := range p.lines {
		l := &p.lines[i]
		if l.run == 0 || l.padded() == 0 {
			continue
		}
		w := widths[l.run]
		text := make([]byte, 0, len(l.text)+16)
		text = append(text, l.text[:l.indent]...)
		from, added := l.indent, 0
		for k, c := range l.cells[:l.padded()] {
			text = append(text, l.text[from:c]...)
			for range w[k] - utf8.RuneCount(l.text[from:c]) {
				text = append(text, ' ')
				added++
			}
			from = c
		}
		text = append(text, l.text[from:]...)
		if l.cmt > 0 {
			l.cmt += added
		}
		l.text = text
	}
}

// alignComments lines up trailing // comments of consecutive lines that have
// one and share their indentation.
func (p *printer) alignComments() {
	for i := 0; i < len(p.lines); {
		l := &p.lines[i]
		if l.cmt == 0 || l.raw {
			i++
			continue
		}
		j, col := i, 0
		for ; j < len(p.lines); j++ {
			m := &p.lines[j]
			if m.cmt == 0 || m.raw || m.indent != l.indent {
				break
			}
			col = max(col, utf8.RuneCount(m.text[:m.cmt]))
		}
		for k := i; k < j; k++ {
			m := &p.lines[k]
			pad := col - utf8.RuneCount(m.text[:m.cmt])
			if pad > 0 {
				text := make([]byte, 0, len(m.text)+pad)
				text = append(text, m.text[:m.cmt]...)
				text = append(text, bytes.Repeat([]byte{' '}, pad)...)
				m.text = append(text, m.text[m.cmt:]...)
			}
		}
		i = j
	}
}

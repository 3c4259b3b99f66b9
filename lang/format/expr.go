package format

import (
	"slices"
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// Expressions, types, strings and leaf tokens. The tree keeps one struct per
// precedence level and every parenthesis, so printing needs no precedence
// logic: each level prints its operands in order with canonical spacing.

func (p *printer) ident(id *syntax.Ident, what string) {
	if id == nil {
		p.missing(what)
		return
	}
	p.tok(start(id), id.Name)
}

func (p *printer) intLit(n *syntax.IntLit) {
	if n == nil {
		p.missing("integer")
		return
	}
	p.tok(start(n), n.Text)
}

func (p *printer) duration(d *syntax.DurationLit) {
	if d == nil {
		p.missing("duration")
		return
	}
	p.tok(start(d), d.Text)
}

// optString prints " s" when s is present.
func (p *printer) optString(s *syntax.String) {
	if s != nil {
		p.sp()
		p.str(s, "string")
	}
}

// str prints a string or text block. Literal parts are copied byte for byte;
// only interpolated expressions are reformatted.
func (p *printer) str(s *syntax.String, what string) {
	if s == nil {
		p.missing(what)
		return
	}
	if s.Open != `"` && s.Open != `"""` || s.Close != s.Open {
		p.fail("%s: malformed string delimiters %q %q", s.Span(), s.Open, s.Close)
		return
	}
	parts := s.Parts
	if s.IsBlock() {
		parts = withoutCR(s)
	}
	p.tok(start(s), s.Open)
	for _, part := range parts {
		switch {
		case part == nil:
			p.missing("string part")
		case part.Text != nil:
			p.raw(*part.Text)
		case part.Interp != nil:
			p.raw("{")
			p.lastEnd = start(part) + 1
			// "{{" would read as an escaped brace: an expression that
			// starts with a record literal gets a space inside both braces.
			pad := startsWithBrace(part.Interp)
			p.space = pad
			p.expr(part.Interp)
			p.space = pad
			p.tok(p.closing(part, '}'), "}")
		default:
			p.missing("string part")
		}
	}
	p.raw(s.Close)
	if e := p.end(s); e >= len(s.Close) {
		p.lastEnd = e
	}
}

// startsWithBrace reports whether e is printed starting with "{": its
// leftmost operand is a record literal (not, - and parentheses come first).
func startsWithBrace(e *syntax.Expr) bool {
	if e == nil || e.Or == nil || e.Or.Head == nil {
		return false
	}
	n := e.Or.Head.Head
	if n == nil || n.Cmp == nil || n.Cmp.Left == nil || n.Cmp.Left.Head == nil {
		return false
	}
	u := n.Cmp.Left.Head.Head
	if u == nil || u.Postfix == nil {
		return false
	}
	_, ok := u.Postfix.Primary.(*syntax.RecordLit)
	return ok
}

// withoutCR returns the parts of text block s with CRLF line endings turned
// into LF when that leaves the string's value unchanged, else s.Parts.
func withoutCR(s *syntax.String) []*syntax.StrPart {
	var parts []*syntax.StrPart
	for i, part := range s.Parts {
		if part == nil || part.Text == nil || !strings.Contains(*part.Text, "\r\n") {
			continue
		}
		if parts == nil {
			parts = slices.Clone(s.Parts)
		}
		text := strings.ReplaceAll(*part.Text, "\r\n", "\n")
		np := *part
		np.Text = &text
		parts[i] = &np
	}
	if parts == nil {
		return s.Parts
	}
	lf := *s
	lf.Parts = parts
	if !slices.EqualFunc(s.Segments(), lf.Segments(), func(a, b syntax.Segment) bool {
		return a.Text == b.Text && a.Expr == b.Expr
	}) {
		return s.Parts
	}
	return parts
}

// ---- types ----

func (p *printer) typ(t *syntax.Type) {
	switch {
	case t == nil:
		p.missing("type")
	case t.Single != nil:
		p.singleType(t.Single)
	case len(t.Enum) > 0:
		for i, s := range t.Enum {
			if i > 0 {
				p.spacedKw("|")
			}
			p.str(s, "enum value")
		}
	default:
		p.missing("type")
	}
}

func (p *printer) singleType(t *syntax.SingleType) {
	switch {
	case t.List != nil:
		p.generic(t, "list", t.List)
	case t.Map != nil:
		p.generic(t, "map", t.Map)
	case t.Record != nil:
		p.recordType(t.Record)
	case t.Paren != nil:
		p.tok(start(t), "(")
		p.typ(t.Paren)
		p.kw(")")
	case t.Named != nil:
		p.ident(t.Named, "type name")
	default:
		p.missing("type")
	}
	if t.Optional {
		p.kw("?")
	}
}

// generic prints the type name<arg> that t is.
func (p *printer) generic(t *syntax.SingleType, name string, arg *syntax.Type) {
	p.tok(start(t), name)
	p.kw("<")
	p.typ(arg)
	p.kw(">")
}

// ---- expressions ----

func (p *printer) expr(e *syntax.Expr) {
	if e == nil || e.Or == nil {
		p.missing("expression")
		return
	}
	p.or(e.Or)
}

func (p *printer) or(e *syntax.OrExpr) {
	chain(p, e.Head, e.Tail, p.and, func(t *syntax.AndExpr) (int, string, *syntax.AndExpr) { return -1, "or", t })
}

func (p *printer) and(e *syntax.AndExpr) {
	if e == nil {
		p.missing("operand")
		return
	}
	chain(p, e.Head, e.Tail, p.not, func(t *syntax.NotExpr) (int, string, *syntax.NotExpr) { return -1, "and", t })
}

// chain prints a binary level: head op x op y ... split gives a tail's
// operator, the operator's source offset (-1 for a keyword the tree keeps no
// node of: kw finds it) and the operand.
func chain[X, T any](p *printer, head X, tail []*T, operand func(X), split func(*T) (off int, op string, x X)) {
	operand(head)
	for _, t := range tail {
		if t == nil {
			p.missing("operand")
			continue
		}
		off, op, x := split(t)
		p.sp()
		if off < 0 {
			p.kw(op)
		} else {
			p.tok(off, op)
		}
		p.sp()
		operand(x)
	}
}

func (p *printer) not(e *syntax.NotExpr) {
	if e == nil {
		p.missing("operand")
		return
	}
	prefixed(p, e, "not", e.Not, p.not, e.Cmp, p.cmp)
}

// prefixed prints a level that is either a prefix operator applied to the
// level itself or the next level down: "not x" or a comparison, "-x" or a
// postfix expression.
func prefixed[E, N any](p *printer, at syntax.Node, op string, operand *E, self func(*E), next *N, down func(*N)) {
	switch {
	case operand != nil:
		p.tok(start(at), op)
		if isIdentByte(op[len(op)-1]) {
			p.sp() // a word operator needs the space: "not x", but "-x"
		}
		self(operand)
	case next != nil:
		down(next)
	default:
		p.missing("operand")
	}
}

func (p *printer) cmp(e *syntax.CmpExpr) {
	p.add(e.Left)
	if e.Op == "" {
		return
	}
	p.sp()
	switch e.Op {
	case "notin", "not in": // participle joins the two captured tokens
		p.kw("not")
		p.sp()
		p.kw("in")
	default:
		p.kw(e.Op)
	}
	p.sp()
	p.add(e.Right)
}

func (p *printer) add(e *syntax.AddExpr) {
	if e == nil {
		p.missing("operand")
		return
	}
	chain(p, e.Head, e.Tail, p.mul, func(t *syntax.AddOp) (int, string, *syntax.MulExpr) { return start(t), t.Op, t.Operand })
}

func (p *printer) mul(e *syntax.MulExpr) {
	if e == nil {
		p.missing("operand")
		return
	}
	chain(p, e.Head, e.Tail, p.unary, func(t *syntax.MulOp) (int, string, *syntax.Unary) { return start(t), t.Op, t.Operand })
}

func (p *printer) unary(e *syntax.Unary) {
	if e == nil {
		p.missing("operand")
		return
	}
	prefixed(p, e, "-", e.Neg, p.unary, e.Postfix, p.postfix)
}

func (p *printer) postfix(e *syntax.Postfix) {
	p.primary(e.Primary)
	for _, s := range e.Sel {
		switch {
		case s == nil:
			p.missing("selector")
		case s.Field != nil:
			p.tok(start(s), ".")
			p.ident(s.Field, "field name")
		case s.Index != nil:
			p.tok(start(s), "[")
			p.expr(s.Index)
			p.tok(p.closing(s, ']'), "]")
		default:
			p.missing("selector")
		}
	}
}

func (p *printer) primary(e syntax.Primary) {
	if p.absent(e, "operand") {
		return
	}
	switch e := e.(type) {
	case *syntax.Name:
		p.tok(start(e), e.Ident)
	case *syntax.Literal:
		p.literal(e)
	case *syntax.String:
		p.str(e, "string")
	case *syntax.Call:
		p.call(e)
	case *syntax.Paren:
		p.tok(start(e), "(")
		p.expr(e.X)
		p.tok(p.closing(e, ')'), ")")
	case *syntax.ListLit:
		p.listLit(e)
	case *syntax.RecordLit:
		p.recordLit(e)
	default:
		p.missing("operand")
	}
}

func (p *printer) literal(l *syntax.Literal) {
	var text string
	switch {
	case l.Float != nil:
		text = *l.Float
	case l.Duration != nil:
		text = *l.Duration
	case l.Int != nil:
		text = *l.Int
	case l.Bool != nil:
		text = *l.Bool
	case l.Null:
		text = "null"
	default:
		p.missing("literal")
		return
	}
	p.tok(start(l), text)
}

func (p *printer) call(c *syntax.Call) {
	p.ident(c.Func, "function name")
	p.kw("(")
	for i, a := range c.Args {
		if i > 0 {
			p.raw(",")
			p.sp()
		}
		p.expr(a)
	}
	p.tok(p.closing(c, ')'), ")")
}

func (p *printer) listLit(l *syntax.ListLit) {
	inlineSeq(p, l, "[]", l.Elems, "list element", alignNone, true, func(el *syntax.ListElem, _ bool) {
		p.expr(el.X)
		if el.Tag != nil {
			p.kw(":")
			p.sp()
			p.ident(el.Tag, "tag")
		}
	})
}

func (p *printer) recordLit(r *syntax.RecordLit) {
	inlineSeq(p, r, "{}", r.Entries, "record entry", alignNone, true, func(en *syntax.RecordEntry, _ bool) {
		switch {
		case en.Key != nil:
			p.ident(en.Key, "key")
		case en.StrKey != nil:
			p.str(en.StrKey, "key")
		default:
			p.missing("key")
		}
		p.kw(":")
		p.sp()
		p.expr(en.Value)
	})
}

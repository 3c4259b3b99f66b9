package compiler

import (
	"strconv"
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// ExprText renders an expression in canonical form: single spaces around
// binary operators, no redundant spacing, strings re-quoted. Two conditions
// with the same text are the same condition (used to find duplicate `when`
// edges), and messages quote conditions this way.
func ExprText(e *syntax.Expr) string {
	var b exprWriter
	b.writeExpr(e)
	return b.String()
}

// conditionKey is the structure of a condition as text: every binary
// operation is parenthesised and the source's own parentheses are dropped,
// so `(q == "x")`, `((q == "x"))` and `q == "x"` have one key while
// `(a or b) and c` and `a or b and c` do not.
func conditionKey(e *syntax.Expr) string {
	b := exprWriter{canon: true}
	b.writeExpr(e)
	return b.String()
}

// exprWriter renders expressions; canon selects conditionKey's form.
type exprWriter struct {
	strings.Builder
	canon bool
}

// open and close parenthesise a binary operation in canonical form.
func (b *exprWriter) open(binary bool) {
	if b.canon && binary {
		b.WriteByte('(')
	}
}

func (b *exprWriter) close(binary bool) {
	if b.canon && binary {
		b.WriteByte(')')
	}
}

// writeLevel writes one binary precedence level, head (op x)* with tail
// giving the i'th op and x; in canonical form parenthesised when it has a
// tail.
func writeLevel[T any](b *exprWriter, head T, n int, tail func(i int) (op string, x T), write func(T)) {
	b.open(n > 0)
	write(head)
	for i := range n {
		op, x := tail(i)
		b.WriteString(" " + op + " ")
		write(x)
	}
	b.close(n > 0)
}

// prefixed writes op x when x is not nil, and reports whether it did.
func prefixed[T any](b *exprWriter, op string, x *T, write func(*T)) bool {
	if x == nil {
		return false
	}
	b.WriteString(op)
	write(x)
	return true
}

// writeList writes n items separated by commas.
func (b *exprWriter) writeList(n int, item func(i int)) {
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		item(i)
	}
}

func (b *exprWriter) writeExpr(e *syntax.Expr) {
	if e == nil || e.Or == nil {
		return
	}
	o := e.Or
	writeLevel(b, o.Head, len(o.Tail), func(i int) (string, *syntax.AndExpr) { return "or", o.Tail[i] }, b.writeAnd)
}

func (b *exprWriter) writeAnd(a *syntax.AndExpr) {
	if a == nil {
		return
	}
	writeLevel(b, a.Head, len(a.Tail), func(i int) (string, *syntax.NotExpr) { return "and", a.Tail[i] }, b.writeNot)
}

func (b *exprWriter) writeNot(n *syntax.NotExpr) {
	if n == nil || prefixed(b, "not ", n.Not, b.writeNot) || n.Cmp == nil {
		return
	}
	c := n.Cmp
	b.open(c.Op != "")
	defer b.close(c.Op != "")
	b.writeAdd(c.Left)
	if c.Op != "" {
		op := c.Op
		if op == "notin" { // the parser joins the two captured tokens
			op = "not in"
		}
		b.WriteString(" " + op + " ")
		b.writeAdd(c.Right)
	}
}

func (b *exprWriter) writeAdd(a *syntax.AddExpr) {
	if a == nil {
		return
	}
	writeLevel(b, a.Head, len(a.Tail), func(i int) (string, *syntax.MulExpr) { return a.Tail[i].Op, a.Tail[i].Operand }, b.writeMul)
}

func (b *exprWriter) writeMul(m *syntax.MulExpr) {
	if m == nil {
		return
	}
	writeLevel(b, m.Head, len(m.Tail), func(i int) (string, *syntax.Unary) { return m.Tail[i].Op, m.Tail[i].Operand }, b.writeUnary)
}

func (b *exprWriter) writeUnary(u *syntax.Unary) {
	if u == nil || prefixed(b, "-", u.Neg, b.writeUnary) || u.Postfix == nil {
		return
	}
	p := u.Postfix
	b.writePrimary(p.Primary)
	for _, s := range p.Sel {
		if s.Field != nil {
			b.WriteString("." + s.Field.Name)
		} else {
			b.WriteString("[")
			b.writeExpr(s.Index)
			b.WriteString("]")
		}
	}
}

func (b *exprWriter) writePrimary(p syntax.Primary) {
	switch p := p.(type) {
	case *syntax.Literal:
		switch {
		case p.Int != nil:
			b.WriteString(*p.Int)
		case p.Float != nil:
			b.WriteString(*p.Float)
		case p.Duration != nil:
			b.WriteString(*p.Duration)
		case p.Bool != nil:
			b.WriteString(*p.Bool)
		case p.Null:
			b.WriteString("null")
		}
	case *syntax.Name:
		b.WriteString(p.Ident)
	case *syntax.Paren:
		if b.canon {
			b.writeExpr(p.X)
			return
		}
		b.WriteString("(")
		b.writeExpr(p.X)
		b.WriteString(")")
	case *syntax.Call:
		if p.Func != nil {
			b.WriteString(p.Func.Name)
		}
		b.WriteString("(")
		b.writeList(len(p.Args), func(i int) { b.writeExpr(p.Args[i]) })
		b.WriteString(")")
	case *syntax.ListLit:
		b.WriteString("[")
		b.writeList(len(p.Elems), func(i int) {
			el := p.Elems[i]
			b.writeExpr(el.X)
			if el.Tag != nil {
				b.WriteString(": " + el.Tag.Name)
			}
		})
		b.WriteString("]")
	case *syntax.RecordLit:
		b.WriteString("{")
		b.writeList(len(p.Entries), func(i int) {
			en := p.Entries[i]
			if en.Key != nil {
				b.WriteString(en.Key.Name)
			} else if en.StrKey != nil {
				b.writeString(en.StrKey)
			}
			b.WriteString(": ")
			b.writeExpr(en.Value)
		})
		b.WriteString("}")
	case *syntax.String:
		b.writeString(p)
	}
}

func (b *exprWriter) writeString(s *syntax.String) {
	b.WriteByte('"')
	for _, seg := range s.Segments() {
		if seg.Expr != nil {
			b.WriteByte('{')
			b.writeExpr(seg.Expr)
			b.WriteByte('}')
			continue
		}
		q := strconv.Quote(seg.Text)
		q = q[1 : len(q)-1]
		q = strings.ReplaceAll(q, "{", "{{")
		q = strings.ReplaceAll(q, "}", "}}")
		b.WriteString(q)
	}
	b.WriteByte('"')
}

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

func (b *exprWriter) writeExpr(e *syntax.Expr) {
	if e == nil || e.Or == nil {
		return
	}
	o := e.Or
	b.open(len(o.Tail) > 0)
	b.writeAnd(o.Head)
	for _, t := range o.Tail {
		b.WriteString(" or ")
		b.writeAnd(t)
	}
	b.close(len(o.Tail) > 0)
}

func (b *exprWriter) writeAnd(a *syntax.AndExpr) {
	if a == nil {
		return
	}
	b.open(len(a.Tail) > 0)
	b.writeNot(a.Head)
	for _, t := range a.Tail {
		b.WriteString(" and ")
		b.writeNot(t)
	}
	b.close(len(a.Tail) > 0)
}

func (b *exprWriter) writeNot(n *syntax.NotExpr) {
	if n == nil {
		return
	}
	if n.Not != nil {
		b.WriteString("not ")
		b.writeNot(n.Not)
		return
	}
	c := n.Cmp
	if c == nil {
		return
	}
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
	b.open(len(a.Tail) > 0)
	b.writeMul(a.Head)
	for _, t := range a.Tail {
		b.WriteString(" " + t.Op + " ")
		b.writeMul(t.Operand)
	}
	b.close(len(a.Tail) > 0)
}

func (b *exprWriter) writeMul(m *syntax.MulExpr) {
	if m == nil {
		return
	}
	b.open(len(m.Tail) > 0)
	b.writeUnary(m.Head)
	for _, t := range m.Tail {
		b.WriteString(" " + t.Op + " ")
		b.writeUnary(t.Operand)
	}
	b.close(len(m.Tail) > 0)
}

func (b *exprWriter) writeUnary(u *syntax.Unary) {
	if u == nil {
		return
	}
	if u.Neg != nil {
		b.WriteString("-")
		b.writeUnary(u.Neg)
		return
	}
	p := u.Postfix
	if p == nil {
		return
	}
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
		for i, a := range p.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.writeExpr(a)
		}
		b.WriteString(")")
	case *syntax.ListLit:
		b.WriteString("[")
		for i, el := range p.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			b.writeExpr(el.X)
			if el.Tag != nil {
				b.WriteString(": " + el.Tag.Name)
			}
		}
		b.WriteString("]")
	case *syntax.RecordLit:
		b.WriteString("{")
		for i, en := range p.Entries {
			if i > 0 {
				b.WriteString(", ")
			}
			if en.Key != nil {
				b.WriteString(en.Key.Name)
			} else if en.StrKey != nil {
				b.writeString(en.StrKey)
			}
			b.WriteString(": ")
			b.writeExpr(en.Value)
		}
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

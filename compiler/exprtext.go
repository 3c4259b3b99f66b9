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
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e *syntax.Expr) {
	if e == nil || e.Or == nil {
		return
	}
	o := e.Or
	writeAnd(b, o.Head)
	for _, t := range o.Tail {
		b.WriteString(" or ")
		writeAnd(b, t)
	}
}

func writeAnd(b *strings.Builder, a *syntax.AndExpr) {
	if a == nil {
		return
	}
	writeNot(b, a.Head)
	for _, t := range a.Tail {
		b.WriteString(" and ")
		writeNot(b, t)
	}
}

func writeNot(b *strings.Builder, n *syntax.NotExpr) {
	if n == nil {
		return
	}
	if n.Not != nil {
		b.WriteString("not ")
		writeNot(b, n.Not)
		return
	}
	c := n.Cmp
	if c == nil {
		return
	}
	writeAdd(b, c.Left)
	if c.Op != "" {
		op := c.Op
		if op == "notin" { // the parser joins the two captured tokens
			op = "not in"
		}
		b.WriteString(" " + op + " ")
		writeAdd(b, c.Right)
	}
}

func writeAdd(b *strings.Builder, a *syntax.AddExpr) {
	if a == nil {
		return
	}
	writeMul(b, a.Head)
	for _, t := range a.Tail {
		b.WriteString(" " + t.Op + " ")
		writeMul(b, t.Operand)
	}
}

func writeMul(b *strings.Builder, m *syntax.MulExpr) {
	if m == nil {
		return
	}
	writeUnary(b, m.Head)
	for _, t := range m.Tail {
		b.WriteString(" " + t.Op + " ")
		writeUnary(b, t.Operand)
	}
}

func writeUnary(b *strings.Builder, u *syntax.Unary) {
	if u == nil {
		return
	}
	if u.Neg != nil {
		b.WriteString("-")
		writeUnary(b, u.Neg)
		return
	}
	p := u.Postfix
	if p == nil {
		return
	}
	writePrimary(b, p.Primary)
	for _, s := range p.Sel {
		if s.Field != nil {
			b.WriteString("." + s.Field.Name)
		} else {
			b.WriteString("[")
			writeExpr(b, s.Index)
			b.WriteString("]")
		}
	}
}

func writePrimary(b *strings.Builder, p syntax.Primary) {
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
		b.WriteString("(")
		writeExpr(b, p.X)
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
			writeExpr(b, a)
		}
		b.WriteString(")")
	case *syntax.ListLit:
		b.WriteString("[")
		for i, el := range p.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, el.X)
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
				writeString(b, en.StrKey)
			}
			b.WriteString(": ")
			writeExpr(b, en.Value)
		}
		b.WriteString("}")
	case *syntax.String:
		writeString(b, p)
	}
}

func writeString(b *strings.Builder, s *syntax.String) {
	b.WriteByte('"')
	for _, seg := range s.Segments() {
		if seg.Expr != nil {
			b.WriteByte('{')
			writeExpr(b, seg.Expr)
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

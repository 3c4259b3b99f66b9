package compiler

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Expression type checking. Every expression is checked in a scope that says
// where it appears (which functions are allowed), which names it can see
// (state fields, the map variable, implicit variables), and, inside graphs,
// which state fields are definitely assigned at that point (flow.go).
// Literals are typed against the expected type when there is one, so `[]`
// fits any list and "certificate" can be checked against an enum. A nil type
// means "already reported": operations on it stay silent.

// scope is the context of an expression.
type scope struct {
	where Where
	file  string
	// state is the graph's (or test's) state; its fields are names.
	state *State
	// assigned is the set of definitely assigned fields (graph scope); nil
	// disables the check. A missing field is explained by a path from
	// start to witnessNode in witnessGraph (when set).
	assigned     bitset
	witnessGraph *graphBuild
	witnessNode  *Node
	// lenient lets reads select through optional values (tests: a null on
	// the way makes the expectation fail at run time).
	lenient bool
	// loop is the map variable in scope, if any.
	loopName string
	loopType *types.Type
	// vars are implicit variables: input (tool blocks), error (catch
	// routes), input/output/iteration (cycle conditions).
	vars map[string]*types.Type
	// graph provides node names to visited() in tests.
	graph *Graph
	// quiet silences unknown names: the state they would come from did
	// not resolve (already reported).
	quiet bool
}

func (sc *scope) describe() string {
	switch {
	case sc.where&InGraph != 0:
		return "graph nodes and edges"
	case sc.where&InTest != 0:
		return "tests"
	case sc.where&InConfig != 0:
		return "model, serve and tool blocks"
	case sc.where&InTrigger != 0:
		return "summary triggers"
	case sc.where&InCycle != 0:
		return "cycle conditions"
	}
	return "constant attributes"
}

func whereNames(w Where) string {
	var out []string
	for _, x := range []struct {
		w    Where
		name string
	}{{InGraph, "graphs"}, {InTest, "tests"}, {InConfig, "model, serve and tool blocks"}, {InTrigger, "summary triggers"}, {InCycle, "cycle conditions"}} {
		if w&x.w != 0 {
			out = append(out, x.name)
		}
	}
	return quoteList(out)
}

func (c *checker) rec(n syntax.Node, t *types.Type) *types.Type {
	if t != nil {
		c.info.ExprTypes.set(n, t)
	}
	return t
}

// expect checks e against want (nil: anything but a secret is fine) and
// returns e's type, or nil when it does not fit.
func (c *checker) expect(e *syntax.Expr, sc *scope, want *types.Type, what string) *types.Type {
	if e == nil {
		return nil
	}
	t := c.expr(e, sc, want)
	if t == nil || want == nil {
		return t
	}
	if !assignable(t, want) {
		c.errorf(TypeMismatch, e.Span(), "%s: cannot use %s as %s", what, t, want)
		return nil
	}
	return t
}

// assignable extends types.AssignableTo to the types the checker gives
// literals (null).
func assignable(src, dst *types.Type) bool {
	if src == nil || dst == nil {
		return true
	}
	if src.Kind() == types.KindNull {
		return dst.Nullable()
	}
	return types.AssignableTo(src, dst)
}

// expr checks an expression.
func (c *checker) expr(e *syntax.Expr, sc *scope, want *types.Type) *types.Type {
	if e == nil || e.Or == nil {
		return nil
	}
	return c.rec(e, c.orExpr(e.Or, sc, want))
}

func (c *checker) orExpr(x *syntax.OrExpr, sc *scope, want *types.Type) *types.Type {
	return boolLevel(c, x, "or", x.Head, x.Tail, want, func(a *syntax.AndExpr, want *types.Type) *types.Type { return c.andExpr(a, sc, want) })
}

func (c *checker) andExpr(x *syntax.AndExpr, sc *scope, want *types.Type) *types.Type {
	return boolLevel(c, x, "and", x.Head, x.Tail, want, func(n *syntax.NotExpr, want *types.Type) *types.Type { return c.notExpr(n, sc, want) })
}

// boolLevel types x, a level of operands joined by the boolean operator op
// ("or", "and"): a lone operand passes want through; otherwise each operand
// (checked by sub) must be bool, and so is x. (The scope is sub's: an
// argument of a call through a func value escapes.)
func boolLevel[T syntax.Node](c *checker, x syntax.Node, op string, head T, tail []T, want *types.Type, sub func(T, *types.Type) *types.Type) *types.Type {
	if len(tail) == 0 {
		return sub(head, want)
	}
	c.boolOperand(sub(head, nil), head, op)
	for _, t := range tail {
		c.boolOperand(sub(t, nil), t, op)
	}
	return c.rec(x, types.BoolType)
}

func (c *checker) boolOperand(t *types.Type, n syntax.Node, op string) {
	if t != nil && t.Kind() != types.KindBool {
		c.errorf(InvalidOperation, n.Span(), "operand of %s must be bool, not %s", op, t)
	}
}

func (c *checker) notExpr(x *syntax.NotExpr, sc *scope, want *types.Type) *types.Type {
	if x.Not != nil {
		c.boolOperand(c.notExpr(x.Not, sc, nil), x.Not, "not")
		return c.rec(x, types.BoolType)
	}
	if x.Cmp == nil {
		return nil
	}
	return c.cmpExpr(x.Cmp, sc, want)
}

func (c *checker) cmpExpr(x *syntax.CmpExpr, sc *scope, want *types.Type) *types.Type {
	if x.Op == "" || x.Right == nil {
		return c.addExpr(x.Left, sc, want)
	}
	lt := c.addExpr(x.Left, sc, nil)
	var rwant *types.Type
	switch x.Op {
	case "==", "!=":
		rwant = lt
	case "in", "not in", "notin":
		if lt != nil && unopt(lt).Kind() == types.KindEnum {
			rwant = types.ListOf(unopt(lt))
		}
	}
	rt := c.addExpr(x.Right, sc, rwant)
	// "lit" == enumField: check the literal against the enum.
	if (x.Op == "==" || x.Op == "!=") && rt != nil && unopt(rt).Kind() == types.KindEnum {
		if s, ok := stringLiteralOf(x.Left); ok && !unopt(rt).HasLiteral(s.val) {
			c.notMember(s.node, s.val, unopt(rt))
			return c.rec(x, types.BoolType)
		}
	}
	if lt == nil || rt == nil {
		return c.rec(x, types.BoolType)
	}
	switch x.Op {
	case "==", "!=":
		if !comparable(lt, rt) {
			c.errorf(InvalidOperation, x.Span(), "cannot compare %s with %s", lt, rt)
		}
	case "<", "<=", ">", ">=":
		if !ordered(lt, rt) {
			c.errorf(InvalidOperation, x.Span(), "cannot order %s and %s (%s needs two numbers, durations or strings)", lt, rt, x.Op)
		}
	case "in", "not in", "notin":
		if err := membership(lt, rt); err != "" {
			c.errorf(InvalidOperation, x.Span(), "%s", err)
		}
	}
	return c.rec(x, types.BoolType)
}

type strLit struct {
	node syntax.Node
	val  string
}

// stringLiteralOf reports whether an operand is a plain string literal.
func stringLiteralOf(x *syntax.AddExpr) (strLit, bool) {
	if x == nil || len(x.Tail) > 0 || x.Head == nil || len(x.Head.Tail) > 0 || x.Head.Head == nil {
		return strLit{}, false
	}
	u := x.Head.Head
	if u.Postfix == nil || len(u.Postfix.Sel) > 0 {
		return strLit{}, false
	}
	s, ok := u.Postfix.Primary.(*syntax.String)
	if !ok {
		return strLit{}, false
	}
	v, ok := s.Literal()
	return strLit{s, v}, ok
}

func (c *checker) notMember(n syntax.Node, v string, enum *types.Type) {
	c.errorf(NotEnumMember, n.Span(), "%q is not a member of %s", v, enum.Literal()).Detail =
		"members: " + quoteList(quoteAll(enum.Literals()))
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

func unopt(t *types.Type) *types.Type {
	if t != nil && t.Kind() == types.KindOptional {
		return t.Elem()
	}
	return t
}

func isNumeric(t *types.Type) bool {
	k := t.Kind()
	return k == types.KindInt || k == types.KindFloat
}

func isStringy(t *types.Type) bool {
	k := t.Kind()
	return k == types.KindString || k == types.KindEnum || k == types.KindJSON
}

func containsSecret(t *types.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case types.KindSecret:
		return true
	case types.KindOptional, types.KindList, types.KindMap:
		return containsSecret(t.Elem())
	case types.KindRecord:
		for i := 0; i < t.NumFields(); i++ {
			if containsSecret(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// comparable reports whether == may compare values of a and b.
func comparable(a, b *types.Type) bool {
	if a == nil || b == nil {
		return true
	}
	if containsSecret(a) || containsSecret(b) {
		return false
	}
	ka, kb := a.Kind(), b.Kind()
	if ka == types.KindJSON || kb == types.KindJSON {
		return true
	}
	if ka == types.KindNull || kb == types.KindNull {
		return a.Nullable() && b.Nullable()
	}
	a, b = unopt(a), unopt(b)
	switch {
	case isNumeric(a) && isNumeric(b):
		return true
	case isStringy(a) && isStringy(b):
		return true
	}
	return types.AssignableTo(a, b) || types.AssignableTo(b, a)
}

func ordered(a, b *types.Type) bool {
	switch {
	case isNumeric(a) && isNumeric(b):
		return true
	case a.Kind() == types.KindDuration && b.Kind() == types.KindDuration:
		return true
	case a.Kind() == types.KindString && b.Kind() == types.KindString:
		return true
	}
	return false
}

// membership checks `x in c`; it returns "" or a message.
func membership(x, c *types.Type) string {
	switch unopt(c).Kind() {
	case types.KindList, types.KindMessages:
		if !comparable(x, unopt(c).Elem()) {
			return fmt.Sprintf("cannot look for %s in %s", x, c)
		}
		return ""
	case types.KindMap:
		if !isStringy(x) {
			return fmt.Sprintf("map keys are strings; cannot look for %s in %s", x, c)
		}
		return ""
	case types.KindString, types.KindEnum:
		if !isStringy(x) {
			return fmt.Sprintf("cannot look for %s in a string", x)
		}
		return ""
	case types.KindJSON:
		return ""
	}
	return fmt.Sprintf("in needs a list, map or string on the right, not %s", c)
}

func (c *checker) addExpr(x *syntax.AddExpr, sc *scope, want *types.Type) *types.Type {
	if x == nil {
		return nil
	}
	return arithLevel(c, x, x.Head, len(x.Tail), func(i int) (*syntax.MulExpr, string, syntax.Node) {
		return x.Tail[i].Operand, x.Tail[i].Op, x.Tail[i]
	}, want, func(m *syntax.MulExpr, want *types.Type) *types.Type { return c.mulExpr(m, sc, want) })
}

func (c *checker) mulExpr(x *syntax.MulExpr, sc *scope, want *types.Type) *types.Type {
	if x == nil {
		return nil
	}
	return arithLevel(c, x, x.Head, len(x.Tail), func(i int) (*syntax.Unary, string, syntax.Node) {
		return x.Tail[i].Operand, x.Tail[i].Op, x.Tail[i]
	}, want, func(u *syntax.Unary, want *types.Type) *types.Type { return c.unary(u, sc, want) })
}

// arithLevel types x, a left-associative arithmetic level (+ - or * / %)
// of head and n tails: tail(i) is the i-th operand, its operator and the
// tail's node. A lone operand passes want through; otherwise each operand
// (checked by sub) is folded into the type so far by arith.
func arithLevel[T any](c *checker, x syntax.Node, head T, n int, tail func(int) (T, string, syntax.Node), want *types.Type, sub func(T, *types.Type) *types.Type) *types.Type {
	if n == 0 {
		return sub(head, want)
	}
	t := sub(head, nil)
	for i := range n {
		operand, op, at := tail(i)
		t = c.arith(op, t, sub(operand, nil), at)
	}
	return c.rec(x, t)
}

// arith types a binary arithmetic operation.
func (c *checker) arith(op string, a, b *types.Type, at syntax.Node) *types.Type {
	if a == nil || b == nil {
		return nil
	}
	ka, kb := a.Kind(), b.Kind()
	num := func() *types.Type {
		if ka == types.KindFloat || kb == types.KindFloat {
			return types.FloatType
		}
		return types.IntType
	}
	dur, ints := types.KindDuration, types.KindInt
	switch {
	case op != "%" && isNumeric(a) && isNumeric(b):
		return num()
	case op == "%" && ka == ints && kb == ints:
		return types.IntType
	case (op == "+" || op == "-") && ka == dur && kb == dur,
		op == "*" && (ka == dur && kb == ints || ka == ints && kb == dur),
		op == "/" && ka == dur && kb == ints:
		return types.DurationType
	case op == "+" && (ka == types.KindString || ka == types.KindEnum) && (kb == types.KindString || kb == types.KindEnum):
		return types.StringType
	case op == "+" && ka == types.KindList && kb == types.KindList && types.AssignableTo(b, a):
		return a
	}
	c.errorf(InvalidOperation, at.Span(), "invalid operation: %s %s %s", a, op, b)
	return nil
}

func (c *checker) unary(u *syntax.Unary, sc *scope, want *types.Type) *types.Type {
	if u == nil {
		return nil
	}
	if u.Neg != nil {
		t := c.unary(u.Neg, sc, nil)
		if t != nil && !isNumeric(t) && t.Kind() != types.KindDuration {
			c.errorf(InvalidOperation, u.Span(), "cannot negate %s", t)
			return nil
		}
		return c.rec(u, t)
	}
	return c.postfix(u.Postfix, sc, want)
}

// postfix types a primary and its selectors. A state field read is checked
// against definite assignment here, where it is known whether the read
// selects through the field.
func (c *checker) postfix(p *syntax.Postfix, sc *scope, want *types.Type) *types.Type {
	if p == nil || p.Primary == nil {
		return nil
	}
	var t *types.Type
	if name, ok := p.Primary.(*syntax.Name); ok && c.isField(name.Ident, sc) {
		t = c.fieldRead(name, sc, len(p.Sel) > 0)
	} else {
		pw := want
		if len(p.Sel) > 0 {
			pw = nil
		}
		t = c.primary(p.Primary, sc, pw)
	}
	if len(p.Sel) == 0 {
		return t
	}
	for _, s := range p.Sel {
		if t == nil {
			if s.Index != nil {
				c.expr(s.Index, sc, nil)
			}
			return nil
		}
		if t.Kind() == types.KindOptional {
			if sc.lenient {
				t = t.Elem()
			} else {
				c.errorf(OptionalAccess, s.Span(), "cannot select through optional %s; compare it with null first, or make it non-optional", t)
				return nil
			}
		}
		if s.Field != nil {
			t = c.selectField(t, s.Field)
			continue
		}
		it := c.expr(s.Index, sc, nil)
		switch t.Kind() {
		case types.KindList, types.KindMessages:
			if it != nil && it.Kind() != types.KindInt {
				c.errorf(InvalidOperation, s.Span(), "list index must be int, not %s", it)
			}
			t = t.Elem()
		case types.KindMap:
			if it != nil && !isStringy(it) {
				c.errorf(InvalidOperation, s.Span(), "map key must be a string, not %s", it)
			}
			t = types.OptionalOf(t.Elem()) // null when the key is absent
		case types.KindJSON:
			t = types.JSONType
		default:
			c.errorf(InvalidOperation, s.Span(), "cannot index %s", t)
			return nil
		}
	}
	return c.rec(p, t)
}

func (c *checker) selectField(t *types.Type, id *syntax.Ident) *types.Type {
	switch t.Kind() {
	case types.KindRecord:
		i := t.FieldIndex(id.Name)
		if i < 0 {
			var names []string
			for j := 0; j < t.NumFields(); j++ {
				names = append(names, t.Field(j).Name)
			}
			c.errorf(UnknownField, id.Span(), "%s has no field %s", t, id.Name).Detail = suggest(id.Name, names)
			return nil
		}
		return t.Field(i).Type
	case types.KindJSON:
		return types.JSONType
	case types.KindMap:
		c.errorf(InvalidOperation, id.Span(), "select map entries with [\"%s\"], not .%s", id.Name, id.Name)
		return nil
	}
	c.errorf(InvalidOperation, id.Span(), "%s has no fields", t)
	return nil
}

// isField reports whether name refers to a state field in sc (loop and
// implicit variables shadow nothing: they may not reuse field names).
func (c *checker) isField(name string, sc *scope) bool {
	if name == sc.loopName && sc.loopName != "" {
		return false
	}
	if _, ok := sc.vars[name]; ok {
		return false
	}
	return sc.state != nil && sc.state.Field(name) != nil
}

// fieldRead types the read of a state field, narrowing optional fields that
// are definitely assigned.
func (c *checker) fieldRead(n *syntax.Name, sc *scope, selects bool) *types.Type {
	f := sc.state.Field(n.Ident)
	c.info.Refs.set(n, Ref{Kind: RefField, Field: f})
	t := f.Type
	if t == nil {
		return nil
	}
	if sc.assigned != nil {
		set := sc.assigned.has(f.Index)
		switch {
		case t.Kind() == types.KindOptional && set:
			t = t.Elem()
		case t.Kind() == types.KindOptional && selects:
			d := c.errorf(Unassigned, n.Span(), "%s is optional and may be unset here; reading through it needs it written on every path from start", f.Name)
			if sc.witnessGraph != nil {
				d.Detail = c.witness(sc.witnessGraph, sc.witnessNode, f)
			}
			return nil
		case t.Kind() != types.KindOptional && !set && !f.HasDefault:
			d := c.errorf(Unassigned, n.Span(), "%s may be unassigned here: it has no default and is not written on every path from start", f.Name)
			if sc.witnessGraph != nil {
				d.Detail = c.witness(sc.witnessGraph, sc.witnessNode, f)
			}
			return nil
		}
	} else if sc.lenient && t.Kind() == types.KindOptional && selects {
		t = t.Elem()
	}
	c.rec(n, t)
	return t
}

func (c *checker) primary(p syntax.Primary, sc *scope, want *types.Type) *types.Type {
	switch p := p.(type) {
	case *syntax.Literal:
		return c.rec(p, c.literal(p))
	case *syntax.String:
		return c.rec(p, c.stringExpr(p, sc, want))
	case *syntax.Name:
		return c.rec(p, c.name(p, sc))
	case *syntax.Paren:
		return c.rec(p, c.expr(p.X, sc, want))
	case *syntax.ListLit:
		return c.rec(p, c.listLit(p, sc, want))
	case *syntax.RecordLit:
		return c.rec(p, c.recordLit(p, sc, want))
	case *syntax.Call:
		return c.rec(p, c.call(p, sc))
	}
	return nil
}

func (c *checker) literal(l *syntax.Literal) *types.Type {
	switch {
	case l.Int != nil:
		if _, err := strconv.ParseInt(*l.Int, 10, 64); err != nil {
			c.errorf(diag.InvalidNumber, l.Span(), "integer %s is out of range", *l.Int)
			return nil
		}
		return types.IntType
	case l.Float != nil:
		return types.FloatType
	case l.Duration != nil:
		if _, err := parseDuration(*l.Duration); err != nil {
			c.errorf(diag.InvalidNumber, l.Span(), "%v", err)
			return nil
		}
		return types.DurationType
	case l.Bool != nil:
		return types.BoolType
	case l.Null:
		return types.NullType
	}
	return nil
}

// stringExpr types a string and its interpolations.
func (c *checker) stringExpr(s *syntax.String, sc *scope, want *types.Type) *types.Type {
	interp := false
	for _, part := range s.Parts {
		if part.Interp == nil {
			continue
		}
		interp = true
		t := c.expr(part.Interp, sc, nil)
		if containsSecret(t) {
			c.errorf(SecretEscapes, part.Interp.Span(), "a secret cannot be interpolated")
		}
	}
	if w := unopt(want); w != nil && w.Kind() == types.KindEnum && !interp {
		v, _ := s.Literal()
		if !w.HasLiteral(v) {
			c.notMember(s, v, w)
			return nil
		}
		return w
	}
	return types.StringType
}

// name types a bare name that is not a state field.
func (c *checker) name(n *syntax.Name, sc *scope) *types.Type {
	if n.Ident == sc.loopName && sc.loopName != "" {
		c.info.Refs.set(n, Ref{Kind: RefLoopVar, Var: n.Ident})
		return sc.loopType
	}
	if t, ok := sc.vars[n.Ident]; ok {
		c.info.Refs.set(n, Ref{Kind: RefVar, Var: n.Ident})
		return t
	}
	if d := c.info.byName[n.Ident]; d != nil {
		c.errorf(diag.WrongKind, n.Span(), "%s is %s, not a value", n.Ident, withArticle(describeDecl(d)))
		d.base().used = true
		return nil
	}
	if c.uni.Tool(n.Ident) != nil {
		c.errorf(diag.WrongKind, n.Span(), "%s is a builtin tool, not a value", n.Ident)
		return nil
	}
	if c.uni.Func(n.Ident) != nil {
		c.errorf(diag.WrongKind, n.Span(), "%s is a function; call it: %s(...)", n.Ident, n.Ident)
		return nil
	}
	if sc.quiet {
		return nil
	}
	var cands []string
	if sc.state != nil {
		for _, f := range sc.state.Fields {
			cands = append(cands, f.Name)
		}
	}
	for v := range sc.vars {
		cands = append(cands, v)
	}
	if sc.loopName != "" {
		cands = append(cands, sc.loopName)
	}
	sort.Strings(cands)
	what := "name"
	if sc.state != nil {
		what = "state field or variable"
	}
	d := c.errorf(diag.UnknownName, n.Span(), "unknown %s %s", what, n.Ident)
	d.Detail = suggest(n.Ident, cands)
	if n.Ident == "error" {
		d.Detail = "error is bound only in nodes reached only through catch routes"
	}
	return nil
}

func (c *checker) listLit(l *syntax.ListLit, sc *scope, want *types.Type) *types.Type {
	for _, el := range l.Elems {
		if el.Tag != nil {
			c.errorf(InvalidOperation, el.Tag.Span(), "a \": %s\" tag is only allowed in skill grants", el.Tag.Name)
		}
	}
	switch w := unopt(want); w.Kind() {
	case types.KindList, types.KindMessages, types.KindJSON:
		return c.elemsAs(w, len(l.Elems), func(i int) *syntax.Expr { return l.Elems[i].X }, sc, "list element", types.ListOf)
	}
	if len(l.Elems) == 0 {
		return types.ListOf(types.JSONType)
	}
	var elem *types.Type
	ok := true
	for i, el := range l.Elems {
		t := c.expr(el.X, sc, elem)
		if t == nil {
			ok = false
			continue
		}
		switch {
		case i == 0 || elem == nil:
			elem = t
		case assignable(t, elem):
		case assignable(elem, t):
			elem = t
		case isNumeric(elem) && isNumeric(t):
			elem = types.FloatType
		case isStringy(elem) && isStringy(t):
			elem = types.StringType
		default:
			c.errorf(TypeMismatch, el.X.Span(), "list element: cannot use %s in a list of %s", t, elem)
			ok = false
		}
	}
	if !ok || elem == nil {
		return nil
	}
	if elem.Kind() == types.KindNull {
		elem = types.JSONType
	}
	return types.ListOf(elem)
}

// elemsAs checks the n elements elem(i) of a list or map literal wanted as
// w, a collection of the literal's kind or json, and returns the literal's
// type. Each element must fit w's element type (what names one in a
// diagnostic); wanted as json, the literal is a collection (made by of) of
// json, and no element may hold a secret.
func (c *checker) elemsAs(w *types.Type, n int, elem func(int) *syntax.Expr, sc *scope, what string, of func(*types.Type) *types.Type) *types.Type {
	json := w.Kind() == types.KindJSON
	for i := range n {
		if x := elem(i); json {
			c.noSecret(c.expr(x, sc, nil), x)
		} else {
			c.expect(x, sc, w.Elem(), what)
		}
	}
	if json {
		return of(types.JSONType)
	}
	return w
}

func (c *checker) noSecret(t *types.Type, n syntax.Node) {
	if containsSecret(t) {
		c.errorf(SecretEscapes, n.Span(), "a secret cannot be stored or passed on")
	}
}

func (c *checker) recordLit(r *syntax.RecordLit, sc *scope, want *types.Type) *types.Type {
	seen := map[string]diag.Span{}
	keys := make([]string, len(r.Entries))
	for i, en := range r.Entries {
		k, ok := entryKey(en)
		if !ok {
			c.errorf(NotConstant, en.StrKey.Span(), "record keys cannot interpolate")
			continue
		}
		keys[i] = k
		at := en.Span()
		if en.Key != nil {
			at = en.Key.Span()
		} else if en.StrKey != nil {
			at = en.StrKey.Span()
		}
		if prev, dup := seen[k]; dup {
			related(c.errorf(diag.DuplicateName, at, "key %s is repeated", k), "first here", prev)
		}
		seen[k] = at
	}
	w := unopt(want)
	switch w.Kind() {
	case types.KindRecord:
		ok := true
		for i, en := range r.Entries {
			j := w.FieldIndex(keys[i])
			if j < 0 {
				var names []string
				for f := 0; f < w.NumFields(); f++ {
					names = append(names, w.Field(f).Name)
				}
				at := en.Span()
				if en.Key != nil {
					at = en.Key.Span()
				}
				c.errorf(UnknownField, at, "%s has no field %s", w, keys[i]).Detail = suggest(keys[i], names)
				c.expr(en.Value, sc, nil)
				ok = false
				continue
			}
			if c.expect(en.Value, sc, w.Field(j).Type, "field "+keys[i]) == nil {
				ok = false
			}
		}
		for f := 0; f < w.NumFields(); f++ {
			fd := w.Field(f)
			if _, has := seen[fd.Name]; !has && !fd.HasDefault && !fd.Type.Nullable() {
				c.errorf(TypeMismatch, r.Span(), "missing field %s of %s", fd.Name, w)
				ok = false
			}
		}
		if !ok {
			return nil
		}
		return w
	case types.KindMap, types.KindJSON:
		return c.elemsAs(w, len(r.Entries), func(i int) *syntax.Expr { return r.Entries[i].Value }, sc, "map value", types.MapOf)
	}
	var fields []types.Field
	ok := true
	done := map[string]bool{}
	for i, en := range r.Entries {
		t := c.expr(en.Value, sc, nil)
		if t == nil || keys[i] == "" || done[keys[i]] {
			ok = false
			continue
		}
		done[keys[i]] = true
		if t.Kind() == types.KindNull {
			t = types.OptionalOf(types.JSONType)
		}
		fields = append(fields, types.Field{Name: keys[i], Type: t})
	}
	if !ok {
		return nil
	}
	t, err := types.NewRecord("", fields)
	if err != nil {
		return nil
	}
	return t
}

// call types a call of an expression function.
func (c *checker) call(call *syntax.Call, sc *scope) *types.Type {
	if call.Func == nil {
		return nil
	}
	f := c.uni.Func(call.Func.Name)
	if f == nil {
		var names []string
		for n := range c.uni.Funcs {
			names = append(names, n)
		}
		sort.Strings(names)
		d := c.errorf(diag.UnknownName, call.Func.Span(), "unknown function %s", call.Func.Name)
		d.Detail = suggest(call.Func.Name, names)
		if c.info.byName[call.Func.Name] != nil || c.uni.Tool(call.Func.Name) != nil {
			d.Detail = "tools are called by tool nodes, not in expressions"
		}
		for _, a := range call.Args {
			c.expr(a, sc, nil)
		}
		return nil
	}
	c.info.Refs.set(call, Ref{Kind: RefFunc, Func: f})
	if f.Where&sc.where == 0 {
		c.errorf(FuncNotAllowed, call.Func.Span(), "%s() is only allowed in %s, not in %s", f.Name, whereNames(f.Where), sc.describe())
		return nil
	}
	n := len(call.Args)
	minA, maxA := len(f.Params), len(f.Params)
	if f.MinArgs > 0 || f.Variadic {
		minA = f.MinArgs
	}
	if f.Variadic {
		maxA = -1
	}
	if n < minA || (maxA >= 0 && n > maxA) {
		want := strconv.Itoa(minA)
		switch {
		case maxA < 0:
			want = "at least " + want
		case maxA != minA:
			want = fmt.Sprintf("%d to %d", minA, maxA)
		}
		c.errorf(WrongArgCount, call.Span(), "%s takes %s argument(s), not %d", f.Name, want, n)
		return nil
	}
	if f.NodeArgs {
		for _, a := range call.Args {
			c.nodeArg(a, sc)
		}
		return f.Result
	}
	args := make([]*types.Type, n)
	ok := true
	for i, a := range call.Args {
		var p *types.Type
		if i < len(f.Params) {
			p = f.Params[i]
		} else if f.Variadic && len(f.Params) > 0 {
			p = f.Params[len(f.Params)-1]
		}
		if f.LiteralArgs {
			if _, lit := literalString(a); !lit {
				c.errorf(NotConstant, a.Span(), "arguments of %s must be string literals", f.Name)
				ok = false
				continue
			}
		}
		if p != nil {
			args[i] = c.expect(a, sc, p, fmt.Sprintf("argument %d of %s", i+1, f.Name))
		} else {
			args[i] = c.expr(a, sc, nil)
			if containsSecret(args[i]) {
				c.errorf(SecretEscapes, a.Span(), "a secret cannot be passed to %s", f.Name)
				args[i] = nil
			}
		}
		if args[i] == nil {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	if f.Typer != nil {
		t, err := f.Typer(typeRules{}, args)
		if err != nil {
			c.errorf(InvalidOperation, call.Span(), "%v", err)
			return nil
		}
		return t
	}
	return f.Result
}

// nodeArg resolves a visited() argument: a node of the test's graph.
func (c *checker) nodeArg(a *syntax.Expr, sc *scope) {
	n, ok := bareName(a)
	if !ok {
		c.errorf(TypeMismatch, a.Span(), "visited() takes a node name")
		return
	}
	if sc.graph == nil {
		return
	}
	node := sc.graph.Node(n.Ident)
	if node == nil || node.Kind == NodeStart || node.Kind == NodeEnd {
		var names []string
		for _, x := range sc.graph.Nodes[2:] {
			names = append(names, x.Name)
		}
		c.errorf(diag.UnknownName, n.Span(), "graph %s has no node %s", sc.graph.name, n.Ident).Detail = suggest(n.Ident, names)
		return
	}
	c.info.Refs.set(n, Ref{Kind: RefNode, Node: node})
}

// addType returns the recorded type of an additive operand, looking through
// levels without operators (which are not recorded).
func (c *checker) addType(x *syntax.AddExpr) *types.Type {
	if x == nil {
		return nil
	}
	if len(x.Tail) > 0 {
		return c.info.ExprTypes.Of(x)
	}
	m := x.Head
	if m == nil {
		return nil
	}
	if len(m.Tail) > 0 {
		return c.info.ExprTypes.Of(m)
	}
	u := m.Head
	if u == nil {
		return nil
	}
	if u.Neg != nil {
		return c.info.ExprTypes.Of(u)
	}
	p := u.Postfix
	if p == nil {
		return nil
	}
	if len(p.Sel) > 0 {
		return c.info.ExprTypes.Of(p)
	}
	return c.info.ExprTypes.Of(p.Primary)
}

// peel returns the unary operand of an expression that has no binary or
// logical operators, or nil.
func peel(e *syntax.Expr) *syntax.Unary {
	if e == nil || e.Or == nil || len(e.Or.Tail) > 0 {
		return nil
	}
	a := e.Or.Head
	if a == nil || len(a.Tail) > 0 || a.Head == nil || a.Head.Not != nil {
		return nil
	}
	cmp := a.Head.Cmp
	if cmp == nil || cmp.Op != "" {
		return nil
	}
	return addUnary(cmp.Left)
}

// addUnary returns the unary operand of an additive operand that has no
// binary operators, or nil.
func addUnary(x *syntax.AddExpr) *syntax.Unary {
	if x == nil || len(x.Tail) > 0 || x.Head == nil || len(x.Head.Tail) > 0 {
		return nil
	}
	return x.Head.Head
}

// primaryOf returns the primary of an expression that is a single primary
// without selectors or operators.
func primaryOf(e *syntax.Expr) syntax.Primary { return unaryPrimary(peel(e)) }

// addPrimary returns the primary of an additive operand that is a single
// primary without selectors or operators.
func addPrimary(x *syntax.AddExpr) syntax.Primary { return unaryPrimary(addUnary(x)) }

// unaryPrimary returns u's primary when u is one without selectors or
// negation, or nil.
func unaryPrimary(u *syntax.Unary) syntax.Primary {
	if u == nil || u.Postfix == nil || len(u.Postfix.Sel) > 0 {
		return nil
	}
	return u.Postfix.Primary
}

// bareName returns e as a plain name.
func bareName(e *syntax.Expr) (*syntax.Name, bool) {
	n, ok := primaryOf(e).(*syntax.Name)
	return n, ok
}

// literalString returns e as a string literal without interpolation.
func literalString(e *syntax.Expr) (string, bool) {
	s, ok := primaryOf(e).(*syntax.String)
	if !ok {
		return "", false
	}
	return s.Literal()
}

package compiler

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// The expression compiler: one function per precedence level of the AST
// (syntax/expr.go), emitting into a ChunkBuilder. The checked types
// (Info.ExprTypes) and resolutions (Info.Refs) drive it:
//
//   - `a and b` is `a DUP JMPIFFALSE L POP b L:` and `or` the same with
//     JMPIFTRUE; a chain `a and b and c` nests to the left (each jump lands
//     on the next operator's DUP), the shape bytecode.ExprSource reads back;
//     jumps go forward only;
//   - a value that flows into a typed slot (a state field, a tool input, a
//     list element, a record field, a function parameter) gets CONV when its
//     checked type is assignable but not identical (int → float, record
//     reshaping, enum → string); null needs none;
//   - a string with interpolations is INTERP over its parts, the literal
//     parts as string constants; without interpolation it is one constant;
//   - a record literal is MAKERECORD of its checked record type (fields in
//     the type's order, absent ones from their default or null), a map
//     literal MAKEMAP, a list literal MAKELIST;
//   - names: a state field is LOAD of its index, the map variable and a
//     tool template's `input` LOADLOCAL 0, a catch target's `error` LOAD of
//     the hidden $error field, a cycle condition's input/output/iteration
//     LOADs of the fields of the graph the cycle is lowered to;
//   - calls are CALL through the program's function table; `visited(n)`
//     passes the node name as a string, env(NAME[, default]) its literal
//     arguments (the embedder resolves them when the program is loaded).
//
// Every instruction carries the span of the syntax it comes from.

// exprScope is what a chunk's expressions can read.
type exprScope struct {
	state  int32  // the States index LOAD reads, or None
	locals uint32 // local slots the context provides (map body, tool template)
	input  bool   // `input` is local 0 (tool templates)
	loop   bool   // the map variable is local 0
	vars   map[string]varSlot
}

// varSlot is where an implicit variable lives.
type varSlot struct {
	field uint32
	text  bool // render as text (INTERP 1): a cycle's output seen as a string
}

type exprCompiler struct {
	l    *lowerer
	c    *bytecode.ChunkBuilder
	sc   *exprScope
	what string // the chunk's name, for errors

	pending     syntax.Node // the syntax of the next instructions (see at)
	pendingSpan diag.Span
	// partial is a record literal built with only the fields it names (a
	// write into a merge field: see mergeLiteral).
	partial *syntax.RecordLit
}

// chunk compiles e (checked against want) into a new chunk and returns its
// index.
func (l *lowerer) chunk(name string, sc *exprScope, e *syntax.Expr, want *types.Type) uint32 {
	return l.chunkFunc(name, sc, func(x *exprCompiler) { x.expr(e, want) })
}

// chunkFunc builds a chunk with emit, which must leave one value. (One
// exprCompiler serves every chunk: chunks are never built inside another.)
func (l *lowerer) chunkFunc(name string, sc *exprScope, emit func(x *exprCompiler)) uint32 {
	x := &l.x
	l.pb.StartChunk(&l.cb, name, sc.state, sc.locals)
	*x = exprCompiler{l: l, c: &l.cb, sc: sc, what: name}
	emit(x)
	x.emit(bytecode.RETURN, 0)
	i, err := x.c.Finish()
	if err != nil {
		l.internal("%v", err)
	}
	return i
}

// partialRecord builds record literal r of record type t with only the
// fields r names, in t's order, as a record of those fields.
func (x *exprCompiler) partialRecord(r *syntax.RecordLit, t *types.Type) {
	var fs []types.Field
	var vals []*syntax.Expr
	for i := 0; i < t.NumFields(); i++ {
		f := t.Field(i)
		for _, en := range r.Entries {
			if k, _ := entryKey(en); k == f.Name {
				fs = append(fs, types.Field{Name: f.Name, Type: f.Type})
				vals = append(vals, en.Value)
				break
			}
		}
	}
	p, err := types.NewRecord("", fs)
	if err != nil {
		x.l.internal("chunk %s: %v", x.what, err)
		x.emit(bytecode.NULL, 0)
		return
	}
	for i, v := range vals {
		x.expr(v, fs[i].Type)
	}
	x.emitAt(r, bytecode.MAKERECORD, x.l.typ(p))
}

// emitConst emits CONST of v through the lowerer's constant cache.
func (x *exprCompiler) emitConst(v types.Value) { x.emit(bytecode.CONST, x.l.constant(v)) }

// at names the syntax the next instructions come from. The span table
// records it at the first instruction of a chunk and at every instruction
// that can fail at run time (the ones an error must point at): converting
// spans for loads and constants would cost a third of lowering and tell no
// one anything.
func (x *exprCompiler) at(n syntax.Node) { x.pending, x.pendingSpan = n, diag.Span{} }

func (x *exprCompiler) atSpan(s diag.Span) { x.pending, x.pendingSpan = nil, s }

// emitAt emits an instruction at node n.
func (x *exprCompiler) emitAt(n syntax.Node, op bytecode.Opcode, arg uint32) {
	x.at(n)
	x.emit(op, arg)
}

// emit emits an instruction, recording the pending span first if the
// instruction needs one.
func (x *exprCompiler) emit(op bytecode.Opcode, arg uint32) {
	if (x.pending != nil || x.pendingSpan.IsValid()) && (fallible[op] || x.c.PC() == 0) {
		s := x.pendingSpan
		if x.pending != nil {
			s = x.pending.Span()
		}
		x.c.SetSpan(x.l.span(s))
		x.pending, x.pendingSpan = nil, diag.Span{}
	}
	x.c.Emit(op, arg)
}

// fallible marks the opcodes that can fail at run time on checked code.
var fallible = [bytecode.OpcodeMax + 1]bool{
	bytecode.NOT: true, bytecode.NEG: true, bytecode.ADD: true, bytecode.SUB: true, bytecode.MUL: true,
	bytecode.DIV: true, bytecode.MOD: true, bytecode.INDEX: true, bytecode.LT: true, bytecode.LE: true,
	bytecode.GT: true, bytecode.GE: true, bytecode.IN: true, bytecode.FIELD: true, bytecode.CALL: true,
	bytecode.MAKEMAP: true, bytecode.MAKERECORD: true, bytecode.INTERP: true, bytecode.CONV: true,
}

func (x *exprCompiler) typeOf(n syntax.Node) *types.Type { return x.l.typeOf(n) }

// typeOf is the checked type of n (Info.ExprTypes, looked up near the last
// hit: lowering visits the tree in the checker's order).
func (l *lowerer) typeOf(n syntax.Node) *types.Type {
	t, _ := l.info.ExprTypes.getNear(n, &l.typeHint)
	return t
}

// expr compiles an expression whose value goes where want is expected (nil:
// anywhere).
func (x *exprCompiler) expr(e *syntax.Expr, want *types.Type) {
	if e == nil || e.Or == nil {
		x.l.internal("chunk %s: missing expression", x.what)
		x.emit(bytecode.NULL, 0)
		return
	}
	x.or(e.Or)
	x.conv(e, want)
}

// conv emits CONV to want when the value of e, of its checked type, needs
// converting.
func (x *exprCompiler) conv(e *syntax.Expr, want *types.Type) {
	if want == nil {
		return
	}
	switch want.Kind() {
	case types.KindBool, types.KindInt, types.KindDuration:
		return // only the identical type is assignable to these
	}
	have := x.typeOf(e)
	if have == nil || have.Kind() == types.KindNull || types.Identical(have, want) || !types.AssignableTo(have, want) {
		return
	}
	x.emitAt(e, bytecode.CONV, x.l.typ(want))
}

func (x *exprCompiler) or(o *syntax.OrExpr) {
	x.and(o.Head)
	for _, t := range o.Tail {
		x.shortCircuit(o, bytecode.JMPIFTRUE, func() { x.and(t) })
	}
}

func (x *exprCompiler) and(a *syntax.AndExpr) {
	x.not(a.Head)
	for _, t := range a.Tail {
		x.shortCircuit(a, bytecode.JMPIFFALSE, func() { x.not(t) })
	}
}

// shortCircuit emits `DUP JMPIF* L POP right L:` after a left operand.
func (x *exprCompiler) shortCircuit(n syntax.Node, jump bytecode.Opcode, right func()) {
	done := x.c.NewLabel()
	x.emitAt(n, bytecode.DUP, 0)
	x.c.Jump(jump, done)
	x.emit(bytecode.POP, 0)
	right()
	x.c.Bind(done)
}

func (x *exprCompiler) not(n *syntax.NotExpr) {
	if n.Not != nil {
		x.not(n.Not)
		x.emitAt(n, bytecode.NOT, 0)
		return
	}
	x.cmp(n.Cmp)
}

var cmpOpcodes = map[string]bytecode.Opcode{
	"==": bytecode.EQ, "!=": bytecode.NE, "<": bytecode.LT, "<=": bytecode.LE,
	">": bytecode.GT, ">=": bytecode.GE, "in": bytecode.IN,
	"notin": bytecode.IN, "not in": bytecode.IN, // x not in y: IN NOT (the parser spells it "notin")
}

func (x *exprCompiler) cmp(c *syntax.CmpExpr) {
	x.add(c.Left)
	if c.Op == "" || c.Right == nil {
		return
	}
	x.add(c.Right)
	x.at(c)
	op, ok := cmpOpcodes[c.Op]
	if !ok {
		x.l.internal("chunk %s: unknown operator %s", x.what, c.Op)
	}
	x.emit(op, 0)
	if c.Op == "notin" || c.Op == "not in" {
		x.emit(bytecode.NOT, 0)
	}
}

var arithOpcodes = map[string]bytecode.Opcode{
	"+": bytecode.ADD, "-": bytecode.SUB, "*": bytecode.MUL, "/": bytecode.DIV, "%": bytecode.MOD,
}

func (x *exprCompiler) arith(op string, at diag.Span) {
	x.atSpan(at)
	code, ok := arithOpcodes[op]
	if !ok {
		x.l.internal("chunk %s: unknown operator %s", x.what, op)
	}
	x.emit(code, 0)
}

func (x *exprCompiler) add(a *syntax.AddExpr) {
	x.mul(a.Head)
	for _, t := range a.Tail {
		x.mul(t.Operand)
		x.arith(t.Op, a.Head.Span().Join(t.Span()))
	}
}

func (x *exprCompiler) mul(m *syntax.MulExpr) {
	x.unary(m.Head)
	for _, t := range m.Tail {
		x.unary(t.Operand)
		x.arith(t.Op, m.Head.Span().Join(t.Span()))
	}
}

func (x *exprCompiler) unary(u *syntax.Unary) {
	if u.Neg != nil {
		x.unary(u.Neg)
		x.emitAt(u, bytecode.NEG, 0)
		return
	}
	p := u.Postfix
	x.primary(p.Primary)
	for _, s := range p.Sel {
		if s.Field != nil {
			x.emitAt(s, bytecode.FIELD, x.l.constant(types.MakeString(s.Field.Name)))
			continue
		}
		x.expr(s.Index, nil)
		x.emitAt(s, bytecode.INDEX, 0)
	}
}

func (x *exprCompiler) primary(p syntax.Primary) {
	switch p := p.(type) {
	case *syntax.Literal:
		x.literal(p)
	case *syntax.String:
		x.str(p)
	case *syntax.Name:
		x.name(p)
	case *syntax.Paren:
		x.expr(p.X, nil)
	case *syntax.ListLit:
		x.list(p)
	case *syntax.RecordLit:
		x.record(p)
	case *syntax.Call:
		x.call(p)
	default:
		x.l.internal("chunk %s: unknown operand %T", x.what, p)
		x.emit(bytecode.NULL, 0)
	}
}

func (x *exprCompiler) literal(lit *syntax.Literal) {
	x.at(lit)
	v, ok := literalValue(lit)
	switch {
	case !ok:
		x.l.internal("chunk %s: bad literal", x.what)
		x.emit(bytecode.NULL, 0)
	case v.IsNull():
		x.emit(bytecode.NULL, 0)
	case v.Kind() == types.ValBool && v.Bool():
		x.emit(bytecode.TRUE, 0)
	case v.Kind() == types.ValBool:
		x.emit(bytecode.FALSE, 0)
	default:
		x.emitConst(v)
	}
}

// str compiles a string: one constant, or INTERP over its parts.
func (x *exprCompiler) str(s *syntax.String) {
	segs := s.Segments()
	interp := false
	for _, seg := range segs {
		if seg.Expr != nil {
			interp = true
			break
		}
	}
	if !interp {
		text := ""
		if len(segs) == 1 {
			text = segs[0].Text
		}
		x.at(s)
		x.emitConst(types.MakeString(text))
		return
	}
	n := 0
	for _, seg := range segs {
		switch {
		case seg.Expr != nil:
			x.expr(seg.Expr, nil)
		case seg.Text != "":
			x.at(s)
			x.emitConst(types.MakeString(seg.Text))
		default:
			continue
		}
		n++
	}
	x.emitAt(s, bytecode.INTERP, uint32(n))
}

func (x *exprCompiler) name(n *syntax.Name) {
	ref, ok := x.l.info.Refs.getNear(n, &x.l.refHint)
	x.at(n)
	switch {
	case !ok:
	case ref.Kind == RefField && ref.Field != nil:
		x.emit(bytecode.LOAD, uint32(ref.Field.Index))
		return
	case ref.Kind == RefLoopVar && x.sc.loop:
		x.emit(bytecode.LOADLOCAL, 0)
		return
	case ref.Kind == RefVar && ref.Var == "input" && x.sc.input:
		x.emit(bytecode.LOADLOCAL, 0)
		return
	case ref.Kind == RefVar:
		if v, ok := x.sc.vars[ref.Var]; ok {
			x.emit(bytecode.LOAD, v.field)
			if v.text {
				x.emit(bytecode.INTERP, 1)
			}
			return
		}
	}
	x.l.internal("chunk %s: name %s does not resolve here", x.what, n.Ident)
	x.emit(bytecode.NULL, 0)
}

func (x *exprCompiler) list(l *syntax.ListLit) {
	var elem *types.Type
	if t := unopt(x.typeOf(l)); t != nil && (t.Kind() == types.KindList || t.Kind() == types.KindMessages) {
		elem = t.Elem()
	}
	for _, el := range l.Elems {
		x.expr(el.X, elem)
	}
	x.emitAt(l, bytecode.MAKELIST, uint32(len(l.Elems)))
}

func (x *exprCompiler) record(r *syntax.RecordLit) {
	t := unopt(x.typeOf(r))
	if t == nil {
		x.l.internal("chunk %s: record literal without a type", x.what)
		x.emit(bytecode.NULL, 0)
		return
	}
	if t.Kind() != types.KindRecord {
		var elem *types.Type
		if t.Kind() == types.KindMap {
			elem = t.Elem()
		}
		for _, en := range r.Entries {
			k, _ := entryKey(en)
			x.at(en)
			x.emitConst(types.MakeString(k))
			x.expr(en.Value, elem)
		}
		x.emitAt(r, bytecode.MAKEMAP, uint32(len(r.Entries)))
		return
	}
	if r == x.partial {
		x.partialRecord(r, t)
		return
	}
	for i := 0; i < t.NumFields(); i++ {
		f := t.Field(i)
		var value *syntax.Expr
		for _, en := range r.Entries {
			if k, _ := entryKey(en); k == f.Name {
				value = en.Value
				break
			}
		}
		switch {
		case value != nil:
			x.expr(value, f.Type)
		case f.HasDefault:
			x.at(r)
			x.emitConst(f.Default)
		default:
			x.emitAt(r, bytecode.NULL, 0)
		}
	}
	x.emitAt(r, bytecode.MAKERECORD, x.l.typ(t))
}

// maxCallArgs is the most arguments CALL can pass.
const maxCallArgs = 255

func (x *exprCompiler) call(call *syntax.Call) {
	ref, _ := x.l.info.Refs.getNear(call, &x.l.refHint)
	f := ref.Func
	if ref.Kind != RefFunc || f == nil {
		x.l.internal("chunk %s: call does not resolve", x.what)
		x.emit(bytecode.NULL, 0)
		return
	}
	if len(call.Args) > maxCallArgs {
		x.l.errorf(WrongArgCount, call.Span(), "%s takes at most %d arguments, not %d", f.Name, maxCallArgs, len(call.Args))
		x.emit(bytecode.NULL, 0)
		return
	}
	for i, a := range call.Args {
		switch {
		case f.NodeArgs: // visited(node): the node's name
			n, _ := bareName(a)
			x.at(a)
			if n == nil {
				x.l.internal("chunk %s: %s argument is not a name", x.what, f.Name)
				x.emit(bytecode.NULL, 0)
				continue
			}
			x.emitConst(types.MakeString(n.Ident))
		case f.LiteralArgs: // env("NAME", "default")
			s, _ := literalString(a)
			x.at(a)
			x.emitConst(types.MakeString(s))
		default:
			var p *types.Type
			if i < len(f.Params) {
				p = f.Params[i]
			} else if f.Variadic && len(f.Params) > 0 {
				p = f.Params[len(f.Params)-1]
			}
			x.expr(a, p)
		}
	}
	x.emitAt(call, bytecode.CALL, bytecode.CallArg(x.l.pb.Func(f.Name), uint8(len(call.Args))))
}

// ---- helpers for literal maps in tool blocks ----

// mapEntry is one `key: value` entry of a literal map.
type mapEntry struct {
	key   string
	value *syntax.Expr
	span  diag.Span
}

// mapEntries returns the entries of a map literal written as the whole
// value of e.
func mapEntries(e *syntax.Expr) ([]mapEntry, bool) {
	r, ok := primaryOf(e).(*syntax.RecordLit)
	if !ok {
		return nil, false
	}
	out := make([]mapEntry, 0, len(r.Entries))
	for _, en := range r.Entries {
		k, ok := entryKey(en)
		if !ok || en.Value == nil {
			return nil, false
		}
		out = append(out, mapEntry{key: k, value: en.Value, span: en.Span()})
	}
	return out, true
}

package vm

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

type evalCase struct {
	name string
	emit func(c *bytecode.ChunkBuilder, b *gbuild)
	want string // Value.String() of the result
	err  string // substring of the error; errors must point at line errLine
}

// errLine is the span line the failing instruction of an error case gets.
const errLine = 42

func k(c *bytecode.ChunkBuilder, v types.Value) { c.Const(v) }
func op(c *bytecode.ChunkBuilder, o bytecode.Opcode) {
	c.Emit(o, 0)
}

// fail emits o at errLine.
func failAt(c *bytecode.ChunkBuilder, o bytecode.Opcode, arg uint32) {
	c.SetSpan(bytecode.Span{File: 0, StartLine: errLine, StartCol: 9, EndLine: errLine, EndCol: 12})
	c.Emit(o, arg)
	c.SetSpan(bytecode.Span{File: 0, StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 2})
}

func binop(x, y types.Value, o bytecode.Opcode) func(c *bytecode.ChunkBuilder, b *gbuild) {
	return func(c *bytecode.ChunkBuilder, b *gbuild) { k(c, x); k(c, y); failAt(c, o, 0) }
}

func unop(x types.Value, o bytecode.Opcode) func(c *bytecode.ChunkBuilder, b *gbuild) {
	return func(c *bytecode.ChunkBuilder, b *gbuild) { k(c, x); failAt(c, o, 0) }
}

func vf(f float64) types.Value       { return types.MakeFloat(f) }
func vd(d time.Duration) types.Value { return types.MakeDuration(d) }

var recT = func() *types.Type {
	t, _ := types.NewRecord("R", []types.Field{{Name: "x", Type: types.IntType}, {Name: "y", Type: types.StringType}})
	return t
}()

func evalFixture(t testing.TB) *gbuild {
	rec, _ := types.MakeRecord(recT.Shape(), []types.Value{vi(1), vs("why")})
	m, _ := types.MakeMap([]string{"a"}, []types.Value{vi(1)})
	b := newGraph(t,
		fld("i", intT, ptr(vi(7)), 0),
		fld("s", strT, ptr(vs("héllo")), 0),
		fld("l", listInt, ptr(vl(vi(1), vi(2), vi(3))), 0),
		fld("m", types.MapOf(intT), ptr(m), 0),
		fld("r", recT, ptr(rec), 0),
	)
	b.edge("start", "end")
	return b
}

func evalCases() []evalCase {
	minInt := vi(math.MinInt64)
	maxInt := vi(math.MaxInt64)
	return []evalCase{
		{name: "nop", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { op(c, bytecode.NOP); k(c, vi(1)) }, want: "1"},
		{name: "pop", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { k(c, vi(1)); k(c, vi(2)); op(c, bytecode.POP) }, want: "1"},
		{name: "dup", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { k(c, vi(2)); op(c, bytecode.DUP); op(c, bytecode.ADD) }, want: "4"},
		{name: "null", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { op(c, bytecode.NULL) }, want: "null"},
		{name: "true", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { op(c, bytecode.TRUE) }, want: "true"},
		{name: "false", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { op(c, bytecode.FALSE) }, want: "false"},

		{name: "eq mixed", emit: binop(vi(1), vf(1), bytecode.EQ), want: "true"},
		{name: "eq lists", emit: binop(vl(vi(1)), vl(vi(1)), bytecode.EQ), want: "true"},
		{name: "ne", emit: binop(vs("a"), vs("b"), bytecode.NE), want: "true"},
		{name: "lt int", emit: binop(vi(1), vi(2), bytecode.LT), want: "true"},
		{name: "lt mixed", emit: binop(vf(2.5), vi(2), bytecode.LT), want: "false"},
		{name: "le", emit: binop(vs("a"), vs("a"), bytecode.LE), want: "true"},
		{name: "gt dur", emit: binop(vd(time.Second), vd(time.Millisecond), bytecode.GT), want: "true"},
		{name: "ge", emit: binop(vi(1), vi(2), bytecode.GE), want: "false"},
		{name: "lt error", emit: binop(vl(), vi(2), bytecode.LT), err: "cannot order list and int"},
		{name: "lt nan", emit: binop(vf(math.NaN()), vf(1), bytecode.LT), err: "cannot order float and float"},

		{name: "in substring", emit: binop(vs("ll"), vs("hello"), bytecode.IN), want: "true"},
		{name: "in list", emit: binop(vi(2), vl(vi(1), vi(2)), bytecode.IN), want: "true"},
		{name: "in map", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vs("a"))
			c.Emit(bytecode.LOAD, b.field("m"))
			op(c, bytecode.IN)
		}, want: "true"},
		{name: "in error", emit: binop(vi(1), vi(5), bytecode.IN), err: "cannot test int in int"},

		{name: "not", emit: unop(vb(true), bytecode.NOT), want: "false"},
		{name: "not error", emit: unop(vi(1), bytecode.NOT), err: "not of int, want bool"},
		{name: "neg int", emit: unop(vi(7), bytecode.NEG), want: "-7"},
		{name: "neg float", emit: unop(vf(2.5), bytecode.NEG), want: "-2.5"},
		{name: "neg dur", emit: unop(vd(time.Second), bytecode.NEG), want: "-1s"},
		{name: "neg overflow", emit: unop(minInt, bytecode.NEG), err: "integer overflow"},
		{name: "neg error", emit: unop(vs("x"), bytecode.NEG), err: "invalid operand -string"},

		{name: "add int", emit: binop(vi(2), vi(3), bytecode.ADD), want: "5"},
		{name: "add overflow", emit: binop(maxInt, vi(1), bytecode.ADD), err: "integer overflow"},
		{name: "add mixed", emit: binop(vi(1), vf(0.5), bytecode.ADD), want: "1.5"},
		{name: "add dur", emit: binop(vd(time.Second), vd(time.Second), bytecode.ADD), want: "2s"},
		{name: "add string", emit: binop(vs("a"), vs("b"), bytecode.ADD), want: `"ab"`},
		{name: "add list", emit: binop(vl(vi(1)), vl(vi(2)), bytecode.ADD), want: "[1, 2]"},
		{name: "add inf", emit: binop(vf(math.MaxFloat64), vf(math.MaxFloat64), bytecode.ADD), err: "not finite"},
		{name: "add error", emit: binop(vs("a"), vi(1), bytecode.ADD), err: "invalid operands string + int"},
		{name: "sub int", emit: binop(vi(2), vi(3), bytecode.SUB), want: "-1"},
		{name: "sub overflow", emit: binop(minInt, vi(1), bytecode.SUB), err: "integer overflow"},
		{name: "sub dur", emit: binop(vd(time.Second), vd(time.Millisecond), bytecode.SUB), want: "999ms"},
		{name: "mul int", emit: binop(vi(6), vi(7), bytecode.MUL), want: "42"},
		{name: "mul overflow", emit: binop(maxInt, vi(2), bytecode.MUL), err: "integer overflow"},
		{name: "mul overflow min", emit: binop(minInt, vi(-1), bytecode.MUL), err: "integer overflow"},
		{name: "mul dur int", emit: binop(vd(time.Second), vi(3), bytecode.MUL), want: "3s"},
		{name: "mul int dur", emit: binop(vi(2), vd(time.Minute), bytecode.MUL), want: "2m0s"},
		{name: "div int", emit: binop(vi(7), vi(2), bytecode.DIV), want: "3"},
		{name: "div neg", emit: binop(vi(-7), vi(2), bytecode.DIV), want: "-3"},
		{name: "div float", emit: binop(vf(7), vi(2), bytecode.DIV), want: "3.5"},
		{name: "div zero", emit: binop(vi(1), vi(0), bytecode.DIV), err: "division by zero"},
		{name: "div zero float", emit: binop(vf(1), vf(0), bytecode.DIV), err: "division by zero"},
		{name: "div overflow", emit: binop(minInt, vi(-1), bytecode.DIV), err: "integer overflow"},
		{name: "div dur", emit: binop(vd(time.Second), vi(4), bytecode.DIV), want: "250ms"},
		{name: "mod", emit: binop(vi(7), vi(3), bytecode.MOD), want: "1"},
		{name: "mod min", emit: binop(minInt, vi(-1), bytecode.MOD), want: "0"},
		{name: "mod zero", emit: binop(vi(7), vi(0), bytecode.MOD), err: "remainder by zero"},
		{name: "mod float", emit: binop(vf(7), vi(2), bytecode.MOD), err: "invalid operands float % int"},

		{name: "index list", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("l"))
			k(c, vi(1))
			op(c, bytecode.INDEX)
		}, want: "2"},
		{name: "index range", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("l"))
			k(c, vi(5))
			failAt(c, bytecode.INDEX, 0)
		}, err: "list index 5 out of range [0, 3)"},
		{name: "index map", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("m"))
			k(c, vs("z"))
			op(c, bytecode.INDEX)
		}, want: "null"},
		{name: "index error", emit: binop(vi(1), vi(0), bytecode.INDEX), err: "cannot index int"},

		{name: "jmp", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			l := c.NewLabel()
			k(c, vi(1))
			c.Jump(bytecode.JMP, l)
			op(c, bytecode.POP)
			k(c, vi(2))
			c.Bind(l)
		}, want: "1"},
		{name: "and short circuit", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { // false and (1/0 == 1)
			l := c.NewLabel()
			op(c, bytecode.FALSE)
			op(c, bytecode.DUP)
			c.Jump(bytecode.JMPIFFALSE, l)
			op(c, bytecode.POP)
			k(c, vi(1))
			k(c, vi(0))
			op(c, bytecode.DIV)
			k(c, vi(1))
			op(c, bytecode.EQ)
			c.Bind(l)
		}, want: "false"},
		{name: "or", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { // false or true
			l := c.NewLabel()
			op(c, bytecode.FALSE)
			op(c, bytecode.DUP)
			c.Jump(bytecode.JMPIFTRUE, l)
			op(c, bytecode.POP)
			op(c, bytecode.TRUE)
			c.Bind(l)
		}, want: "true"},
		{name: "jmpif error", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			l := c.NewLabel()
			k(c, vi(1))
			c.SetSpan(bytecode.Span{StartLine: errLine, StartCol: 1, EndLine: errLine, EndCol: 2})
			c.Jump(bytecode.JMPIFTRUE, l)
			c.Bind(l)
			k(c, vi(2))
		}, err: "condition is int, want bool"},

		{name: "load", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { c.Emit(bytecode.LOAD, b.field("s")) }, want: `"héllo"`},
		{name: "loadlocal", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { c.Emit(bytecode.LOADLOCAL, 0) }, want: `"local"`},
		{name: "field record", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("r"))
			i, _ := b.pb.Const(vs("y"))
			c.Emit(bytecode.FIELD, i)
		}, want: `"why"`},
		{name: "field map absent", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("m"))
			i, _ := b.pb.Const(vs("nope"))
			c.Emit(bytecode.FIELD, i)
		}, want: "null"},
		{name: "field error", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vi(3))
			i, _ := b.pb.Const(vs("x"))
			failAt(c, bytecode.FIELD, i)
		}, err: "cannot select .x of int"},
		{name: "field missing", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("r"))
			i, _ := b.pb.Const(vs("zz"))
			failAt(c, bytecode.FIELD, i)
		}, err: "record has no field zz"},

		{name: "call", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			c.Emit(bytecode.LOAD, b.field("l"))
			c.Call("len", 1)
		}, want: "3"},
		{name: "call error", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vi(5))
			c.SetSpan(bytecode.Span{StartLine: errLine, StartCol: 1, EndLine: errLine, EndCol: 2})
			c.Call("len", 1)
		}, err: "len: len of int"},

		{name: "makelist", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { k(c, vi(1)); k(c, vs("a")); c.Emit(bytecode.MAKELIST, 2) }, want: `[1, "a"]`},
		{name: "makelist empty", emit: func(c *bytecode.ChunkBuilder, b *gbuild) { c.Emit(bytecode.MAKELIST, 0) }, want: `[]`},
		{name: "makemap", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vs("b"))
			k(c, vi(2))
			k(c, vs("a"))
			k(c, vi(1))
			c.Emit(bytecode.MAKEMAP, 2)
		}, want: `{"a": 1, "b": 2}`},
		{name: "makemap repeated", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vs("a"))
			k(c, vi(2))
			k(c, vs("a"))
			k(c, vi(1))
			failAt(c, bytecode.MAKEMAP, 2)
		}, err: `key "a" repeated`},
		{name: "makemap key", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vi(1))
			k(c, vi(2))
			failAt(c, bytecode.MAKEMAP, 1)
		}, err: "map key is int, want string"},
		{name: "makerecord", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vi(5))
			k(c, vs("z"))
			c.Emit(bytecode.MAKERECORD, b.pb.Type(recT))
		}, want: `{x: 5, y: "z"}`},

		{name: "interp", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vs("n="))
			k(c, vi(5))
			k(c, vs(" r="))
			c.Emit(bytecode.LOAD, b.field("r"))
			c.Emit(bytecode.INTERP, 4)
		}, want: `"n=5 r={\"x\":1,\"y\":\"why\"}"`},
		{name: "interp nan", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vf(math.NaN()))
			failAt(c, bytecode.INTERP, 1)
		}, err: "no JSON form"},

		{name: "conv", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vi(2))
			c.Emit(bytecode.CONV, b.pb.Type(types.FloatType))
		}, want: "2.0"},
		{name: "conv error", emit: func(c *bytecode.ChunkBuilder, b *gbuild) {
			k(c, vs("maybe"))
			e, _ := types.NewEnum("", []string{"yes", "no"})
			failAt(c, bytecode.CONV, b.pb.Type(e))
		}, err: `want "yes" | "no", got "maybe"`},
	}
}

func TestEvalOpcodes(t *testing.T) {
	b := evalFixture(t)
	cases := evalCases()
	chunks := make([]uint32, len(cases))
	used := map[bytecode.Opcode]bool{}
	for i, tc := range cases {
		c := b.pb.NewChunk(tc.name, 0, 1)
		c.SetSpan(bytecode.Span{File: 0, StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 2})
		tc.emit(c, b)
		c.SetSpan(bytecode.Span{File: 0, StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 2})
		c.Emit(bytecode.RETURN, 0)
		ci, err := c.Finish()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		chunks[i] = ci
		for _, in := range b.p.Chunks[ci].Code {
			used[in.Op] = true
		}
	}
	m := b.machine()
	state := m.graphs[0].defaults
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := m.Eval(context.Background(), int(chunks[i]), state, vs("local"))
			if tc.err != "" {
				var ee *EvalError
				if !errors.As(err, &ee) {
					t.Fatalf("got %v, %v; want EvalError %q", v, err, tc.err)
				}
				if !strings.Contains(ee.Msg, tc.err) {
					t.Errorf("error %q, want %q", ee.Msg, tc.err)
				}
				if ee.Span.StartLine != errLine || !strings.HasPrefix(ee.Error(), "test.agent:42:") {
					t.Errorf("error %q at span %+v, want line %d", ee.Error(), ee.Span, errLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	for o := bytecode.Opcode(0); o <= bytecode.OpcodeMax; o++ {
		if !used[o] {
			t.Errorf("no test case uses %s", o)
		}
	}
}

func TestEvalChecksArguments(t *testing.T) {
	b := evalFixture(t)
	ci := b.loadChunk("i")
	m := b.machine()
	if _, err := m.Eval(context.Background(), int(ci), nil); err == nil {
		t.Error("Eval with a short state succeeded")
	}
	if _, err := m.Eval(context.Background(), 999, nil); err == nil {
		t.Error("Eval of a missing chunk succeeded")
	}
}

// TestEvalComparisonAllocs: simple comparisons allocate nothing.
func TestEvalComparisonAllocs(t *testing.T) {
	b := evalFixture(t)
	ci := b.cmpChunk("i", bytecode.LT, vi(10))
	cj := b.chunk("and", 0, 1, func(c *bytecode.ChunkBuilder) { // i > 3 and s == "héllo"
		l := c.NewLabel()
		c.Emit(bytecode.LOAD, b.field("i"))
		c.Const(vi(3))
		c.Emit(bytecode.GT, 0)
		c.Emit(bytecode.DUP, 0)
		c.Jump(bytecode.JMPIFFALSE, l)
		c.Emit(bytecode.POP, 0)
		c.Emit(bytecode.LOAD, b.field("s"))
		c.Const(vs("héllo"))
		c.Emit(bytecode.EQ, 0)
		c.Bind(l)
		c.Emit(bytecode.RETURN, 0)
	})
	m := b.machine()
	ev := newEvaluator(m, 0)
	state := m.graphs[0].defaults
	for _, c := range []uint32{ci, cj} {
		allocs := testing.AllocsPerRun(1000, func() {
			v, err := ev.eval(c, state, nil)
			if err != nil || !v.Bool() {
				t.Fatal(v, err)
			}
		})
		if allocs != 0 {
			t.Errorf("chunk %d: %v allocs per evaluation, want 0", c, allocs)
		}
	}
}

func TestEvalBudget(t *testing.T) {
	b := evalFixture(t)
	ci := b.chunk("long", 0, 1, func(c *bytecode.ChunkBuilder) {
		for i := 0; i < 1000; i++ {
			c.Emit(bytecode.NOP, 0)
		}
		c.Const(vi(1))
		c.Emit(bytecode.RETURN, 0)
	})
	m := b.machine()
	ev := newEvaluator(m, 300)
	if _, err := ev.eval(ci, m.graphs[0].defaults, nil); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("got %v, want a budget error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Eval(ctx, int(ci), m.graphs[0].defaults); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("got %v, want a cancellation error", err)
	}
}

package vm

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// fuzzProgram turns fuzz bytes into a program with one chunk over a state
// of assorted fields. Operands are folded into their tables' ranges and
// jumps forward, so that a good share of inputs passes Verify.
func fuzzProgram(data []byte) *bytecode.Program {
	pb := bytecode.NewProgramBuilder()
	p := pb.Program()
	pb.File("fuzz.agent")
	rec, _ := types.NewRecord("R", []types.Field{{Name: "x", Type: types.IntType}, {Name: "y", Type: types.StringType}})
	enum, _ := types.NewEnum("", []string{"a", "b"})
	recv, _ := types.MakeRecord(rec.Shape(), []types.Value{vi(1), vs("y")})
	mp, _ := types.MakeMap([]string{"x", "y"}, []types.Value{vi(2), vl(vi(1))})
	typs := []*types.Type{rec, enum, types.FloatType, types.ListOf(types.IntType), types.JSONType, types.OptionalOf(types.StringType), types.DurationType}
	for _, t := range typs {
		pb.Type(t)
	}
	consts := []types.Value{{}, vi(0), vi(1), vi(-1), vi(math.MaxInt64), vi(math.MinInt64), vf(0.5), vf(math.NaN()), vf(math.Inf(1)),
		vs(""), vs("x"), vs("y"), vs("a"), vb(true), vd(time.Second), vl(), vl(vi(1), vs("z")), mp, recv}
	for _, c := range consts {
		pb.Const(c)
	}
	for _, f := range []string{"len", "contains", "lower", "upper", "join", "keys", "json", "any", "all"} {
		pb.Func(f)
	}
	p.States = []bytecode.State{{Name: "S", Fields: []bytecode.StateField{
		{Name: "i", Type: pb.Type(types.IntType), Reducer: bytecode.ReduceReplace},
		{Name: "r", Type: pb.Type(rec), Reducer: bytecode.ReduceReplace},
		{Name: "m", Type: pb.Type(types.JSONType), Reducer: bytecode.ReduceReplace},
	}}}
	var code []bytecode.Insn
	for i := 0; i+1 < len(data) && len(code) < 64; i += 2 {
		o := bytecode.Opcode(data[i] % byte(bytecode.OpcodeMax+1))
		a := uint32(data[i+1])
		switch o {
		case bytecode.JMP, bytecode.JMPIFFALSE, bytecode.JMPIFTRUE:
			a = uint32(len(code)) + 1 + a%8
		case bytecode.CONST, bytecode.FIELD:
			a %= uint32(len(p.Consts))
		case bytecode.LOAD:
			a %= 3
		case bytecode.LOADLOCAL:
			a %= 1
		case bytecode.CALL:
			a = bytecode.CallArg(a%uint32(len(p.Funcs)), uint8(a>>4%4))
		case bytecode.MAKELIST, bytecode.INTERP:
			a %= 4
		case bytecode.MAKEMAP:
			a %= 3
		case bytecode.MAKERECORD:
			a = 0
		case bytecode.CONV:
			a %= uint32(len(p.Types))
		default:
			if !o.HasArg() {
				a = 0
			}
		}
		code = append(code, bytecode.Insn{Op: o, Arg: a})
	}
	code = append(code, bytecode.Insn{Op: bytecode.RETURN})
	p.Chunks = []bytecode.Chunk{{Name: "fuzz", State: 0, NumLocals: 1, MaxStack: uint32(len(code)), Code: code,
		Spans: []bytecode.PCSpan{{PC: 0, Span: bytecode.Span{StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 2}}}}}
	p.Hash = [32]byte{1} // skip hashing: nothing is checkpointed
	return p
}

// FuzzEval: bytecode that passes Verify never panics the machine.
func FuzzEval(f *testing.F) {
	f.Add([]byte{byte(bytecode.CONST), 2, byte(bytecode.CONST), 1, byte(bytecode.DIV), 0})
	f.Add([]byte{byte(bytecode.LOAD), 1, byte(bytecode.FIELD), 10})
	f.Add([]byte{byte(bytecode.CONST), 16, byte(bytecode.CALL), 0x10, byte(bytecode.CONST), 13, byte(bytecode.JMPIFFALSE), 1, byte(bytecode.NOT), 0})
	f.Add([]byte{byte(bytecode.CONST), 10, byte(bytecode.CONST), 2, byte(bytecode.MAKEMAP), 1, byte(bytecode.CONV), 4})
	f.Add([]byte{byte(bytecode.CONST), 7, byte(bytecode.LOADLOCAL), 0, byte(bytecode.INTERP), 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := fuzzProgram(data)
		if bytecode.Verify(p) != nil {
			return
		}
		m, err := New(p, nil)
		if err != nil {
			t.Fatalf("verified program does not load: %v", err)
		}
		rec, _ := types.MakeRecord(p.Types[0].Shape(), []types.Value{vi(3), vs("q")})
		state := []types.Value{vi(7), rec, vl(vs("j"))}
		v, err := m.Eval(context.Background(), 0, state, vs("local"))
		if err != nil {
			if _, ok := err.(*EvalError); !ok {
				t.Fatalf("error %T %v is not an *EvalError", err, err)
			}
			return
		}
		_ = v.String()
	})
}

package vm

import (
	"context"
	"fmt"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Func is a builtin function that CALL dispatches to. args aliases the
// machine's operand stack: a Func must neither retain nor modify it. A Func
// reports bad arguments with an error; the machine turns it into an
// EvalError at the CALL's source span.
type Func func(args []types.Value) (types.Value, error)

// DefaultEvalBudget bounds the instructions one evaluation may execute.
// Jumps go forward only, so a chunk never runs more instructions than it
// has; the budget guards against huge chunks and slow builtins in loops of
// CALLs.
const DefaultEvalBudget = 1 << 20

// cancelEvery is how many instructions run between cancellation checks.
const cancelEvery = 256

// evaluator runs chunks. It owns a reusable operand stack, so one evaluator
// serves one goroutine at a time; the scheduler keeps one per worker.
type evaluator struct {
	m      *Machine
	stack  []types.Value
	buf    []byte // INTERP scratch
	budget int
	done   <-chan struct{}
}

func newEvaluator(m *Machine, budget int) *evaluator {
	if budget <= 0 {
		budget = DefaultEvalBudget
	}
	return &evaluator{m: m, budget: budget}
}

// Eval evaluates chunk ci on state (the chunk's state schema's fields, in
// order) and locals, for tools and tests. It checks its arguments against
// the chunk, so it never panics on a verified program.
func (m *Machine) Eval(ctx context.Context, ci int, state []types.Value, locals ...types.Value) (types.Value, error) {
	p := m.prog
	if ci < 0 || ci >= len(p.Chunks) {
		return types.Value{}, fmt.Errorf("vm: chunk %d out of range", ci)
	}
	c := &p.Chunks[ci]
	if c.State != bytecode.None && len(state) != len(p.States[c.State].Fields) {
		return types.Value{}, fmt.Errorf("vm: chunk %s reads %d state fields, got %d", c.Name, len(p.States[c.State].Fields), len(state))
	}
	if uint32(len(locals)) < c.NumLocals {
		return types.Value{}, fmt.Errorf("vm: chunk %s needs %d locals, got %d", c.Name, c.NumLocals, len(locals))
	}
	e := newEvaluator(m, 0)
	e.done = ctx.Done()
	return e.eval(uint32(ci), state, locals)
}

// eval runs chunk ci: the expression machine's one dispatch loop. The
// program passed Verify, so operands are in range, jumps go forward, the
// stack never underflows and never exceeds MaxStack; the loop relies on it.
// Conditions must be bool (no truthiness): anything else is an EvalError.
func (e *evaluator) eval(ci uint32, state, locals []types.Value) (types.Value, error) {
	c := &e.m.prog.Chunks[ci]
	need := int(c.MaxStack)
	if cap(e.stack) < need {
		e.stack = make([]types.Value, need, max(need, 16))
	}
	stack := e.stack[:need]
	consts := e.m.prog.Consts
	code := c.Code
	sp, pc := 0, 0
	steps, budget := 0, e.budget
	var msg string
	var cause error
	for {
		in := code[pc]
		pc++
		steps++
		if steps%cancelEvery == 0 {
			if steps > budget {
				msg = fmt.Sprintf("evaluation budget of %d instructions exhausted", budget)
				break
			}
			if e.done != nil {
				select {
				case <-e.done:
					msg = "evaluation canceled"
				default:
				}
				if msg != "" {
					break
				}
			}
		}
		switch in.Op {
		case bytecode.NOP:
		case bytecode.POP:
			sp--
		case bytecode.DUP:
			stack[sp] = stack[sp-1]
			sp++
		case bytecode.NULL:
			stack[sp] = types.Value{}
			sp++
		case bytecode.TRUE:
			stack[sp] = types.MakeBool(true)
			sp++
		case bytecode.FALSE:
			stack[sp] = types.MakeBool(false)
			sp++
		case bytecode.EQ:
			stack[sp-2] = types.MakeBool(types.Equal(stack[sp-2], stack[sp-1]))
			sp--
		case bytecode.NE:
			stack[sp-2] = types.MakeBool(!types.Equal(stack[sp-2], stack[sp-1]))
			sp--
		case bytecode.LT, bytecode.LE, bytecode.GT, bytecode.GE:
			stack[sp-2], msg = compare(in.Op, stack[sp-2], stack[sp-1])
			sp--
		case bytecode.IN:
			found, ok := types.Contains(stack[sp-1], stack[sp-2])
			if !ok {
				msg = "cannot test " + stack[sp-2].Kind().String() + " in " + stack[sp-1].Kind().String()
				break
			}
			stack[sp-2] = types.MakeBool(found)
			sp--
		case bytecode.NOT:
			if x := stack[sp-1]; x.Kind() != types.ValBool {
				msg = "not of " + x.Kind().String() + ", want bool"
			} else {
				stack[sp-1] = types.MakeBool(!x.Bool())
			}
		case bytecode.NEG:
			stack[sp-1], msg = neg(stack[sp-1])
		case bytecode.ADD, bytecode.SUB, bytecode.MUL, bytecode.DIV, bytecode.MOD:
			stack[sp-2], msg = arith(in.Op, stack[sp-2], stack[sp-1])
			sp--
		case bytecode.INDEX:
			stack[sp-2], cause = types.Index(stack[sp-2], stack[sp-1])
			sp--
		case bytecode.RETURN:
			v := stack[sp-1]
			clear(stack[:sp]) // drop references for the collector
			return v, nil
		case bytecode.JMP:
			pc = int(in.Arg)
		case bytecode.JMPIFFALSE, bytecode.JMPIFTRUE:
			x := stack[sp-1]
			sp--
			if x.Kind() != types.ValBool {
				msg = "condition is " + x.Kind().String() + ", want bool"
				break
			}
			if x.Bool() == (in.Op == bytecode.JMPIFTRUE) {
				pc = int(in.Arg)
			}
		case bytecode.CONST:
			stack[sp] = consts[in.Arg]
			sp++
		case bytecode.LOAD:
			stack[sp] = state[in.Arg]
			sp++
		case bytecode.LOADLOCAL:
			stack[sp] = locals[in.Arg]
			sp++
		case bytecode.FIELD:
			stack[sp-1], msg = field(stack[sp-1], consts[in.Arg].Str())
		case bytecode.CALL:
			fn, argc := bytecode.SplitCallArg(in.Arg)
			var v types.Value
			v, cause = e.m.funcs[fn](stack[sp-argc : sp])
			if cause != nil {
				cause = fmt.Errorf("%s: %w", e.m.prog.Funcs[fn], cause)
				break
			}
			clear(stack[sp-argc : sp])
			sp -= argc
			stack[sp] = v
			sp++
		case bytecode.MAKELIST:
			n := int(in.Arg)
			elems := make([]types.Value, n)
			copy(elems, stack[sp-n:sp])
			sp -= n
			stack[sp] = types.MakeList(elems)
			sp++
		case bytecode.MAKEMAP:
			n := int(in.Arg)
			var v types.Value
			v, msg = makeMap(stack[sp-2*n : sp])
			sp -= 2 * n
			stack[sp] = v
			sp++
		case bytecode.MAKERECORD:
			t := e.m.prog.Types[in.Arg]
			n := t.NumFields()
			var v types.Value
			v, cause = types.MakeRecord(t.Shape(), stack[sp-n:sp])
			sp -= n
			stack[sp] = v
			sp++
		case bytecode.INTERP:
			n := int(in.Arg)
			buf := e.buf[:0]
			for _, x := range stack[sp-n : sp] {
				if buf, cause = types.AppendText(buf, x); cause != nil {
					cause = fmt.Errorf("interpolate %s: %w", x.Kind(), cause)
					break
				}
			}
			e.buf = buf
			if cause != nil {
				break
			}
			sp -= n
			stack[sp] = types.MakeString(string(buf))
			sp++
		case bytecode.CONV:
			stack[sp-1], cause = types.Convert(stack[sp-1], e.m.prog.Types[in.Arg])
		default:
			msg = "illegal opcode " + in.Op.String()
		}
		if msg != "" || cause != nil {
			break
		}
	}
	clear(stack)
	if cause != nil {
		msg = cause.Error()
	}
	return types.Value{}, e.m.evalError(c, pc-1, msg)
}

// evalError builds the EvalError of the instruction at pc of chunk c.
func (m *Machine) evalError(c *bytecode.Chunk, pc int, msg string) *EvalError {
	sp := c.SpanAt(pc)
	return &EvalError{Span: sp, File: m.prog.SpanFile(sp), Chunk: c.Name, PC: pc, Msg: msg}
}

// makeMap builds MAKEMAP's map from k1 v1 ... kn vn; keys must be strings
// and unique.
func makeMap(kv []types.Value) (types.Value, string) {
	n := len(kv) / 2
	keys := make([]string, n)
	vals := make([]types.Value, n)
	for i := 0; i < n; i++ {
		k := kv[2*i]
		if k.Kind() != types.ValString {
			return types.Value{}, "map key is " + k.Kind().String() + ", want string"
		}
		keys[i], vals[i] = k.Str(), kv[2*i+1]
	}
	v, err := types.MakeMap(keys, vals)
	if err != nil {
		return types.Value{}, err.Error()
	}
	return v, ""
}

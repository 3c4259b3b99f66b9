package vm

import (
	"math"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// The semantics of the expression machine's operators (spec/vm.md,
// "Expressions"). Each returns the result, or a message for an EvalError;
// none allocates except string and list concatenation.
//
//   - int op int is int; overflow is an error (never wraps).
//   - any float operand makes a float; a NaN or infinite result is an error.
//   - duration ± duration, -duration, duration × int, int × duration and
//     duration / int are durations (overflow is an error).
//   - string + string concatenates; list + list concatenates.
//   - division or remainder by zero is an error; % takes ints only.

// arith applies ADD, SUB, MUL, DIV or MOD to x and y.
func arith(op bytecode.Opcode, x, y types.Value) (types.Value, string) {
	xk, yk := x.Kind(), y.Kind()
	switch {
	case xk == types.ValInt && yk == types.ValInt:
		return intArith(op, x.Int(), y.Int())
	case isNumber(xk) && isNumber(yk) && op != bytecode.MOD:
		return floatArith(op, toFloat(x), toFloat(y))
	case xk == types.ValDuration && yk == types.ValDuration && (op == bytecode.ADD || op == bytecode.SUB):
		r, msg := intArith(op, int64(x.Duration()), int64(y.Duration()))
		if msg != "" {
			return r, "duration " + msg
		}
		return types.MakeDuration(time.Duration(r.Int())), ""
	case op == bytecode.MUL && xk == types.ValDuration && yk == types.ValInt:
		return durMul(int64(x.Duration()), y.Int())
	case op == bytecode.MUL && xk == types.ValInt && yk == types.ValDuration:
		return durMul(int64(y.Duration()), x.Int())
	case op == bytecode.DIV && xk == types.ValDuration && yk == types.ValInt:
		r, msg := intArith(op, int64(x.Duration()), y.Int())
		if msg != "" {
			return r, "duration " + msg
		}
		return types.MakeDuration(time.Duration(r.Int())), ""
	case op == bytecode.ADD && xk == types.ValString && yk == types.ValString:
		return types.MakeString(x.Str() + y.Str()), ""
	case op == bytecode.ADD && isListish(xk) && isListish(yk):
		if y.Len() <= 0 {
			return x, ""
		}
		if x.Len() <= 0 {
			return y, ""
		}
		return types.ListAppend(x, y.Elems()...), ""
	}
	return types.Value{}, "invalid operands " + xk.String() + " " + opSymbol(op) + " " + yk.String()
}

func isNumber(k types.ValueKind) bool { return k == types.ValInt || k == types.ValFloat }

// isListish: a list (null is not: the checker never types null as a list).
func isListish(k types.ValueKind) bool { return k == types.ValList }

func toFloat(v types.Value) float64 {
	if v.Kind() == types.ValInt {
		return float64(v.Int())
	}
	return v.Float()
}

func opSymbol(op bytecode.Opcode) string {
	switch op {
	case bytecode.ADD:
		return "+"
	case bytecode.SUB:
		return "-"
	case bytecode.MUL:
		return "*"
	case bytecode.DIV:
		return "/"
	case bytecode.MOD:
		return "%"
	}
	return op.String()
}

func intArith(op bytecode.Opcode, a, b int64) (types.Value, string) {
	var r int64
	switch op {
	case bytecode.ADD:
		r = a + b
		if (a^r)&(b^r) < 0 {
			return types.Value{}, "integer overflow"
		}
	case bytecode.SUB:
		r = a - b
		if (a^b)&(a^r) < 0 {
			return types.Value{}, "integer overflow"
		}
	case bytecode.MUL:
		var ok bool
		if r, ok = mulInt(a, b); !ok {
			return types.Value{}, "integer overflow"
		}
	case bytecode.DIV:
		if b == 0 {
			return types.Value{}, "division by zero"
		}
		if a == math.MinInt64 && b == -1 {
			return types.Value{}, "integer overflow"
		}
		r = a / b
	case bytecode.MOD:
		if b == 0 {
			return types.Value{}, "remainder by zero"
		}
		if b == -1 {
			r = 0
		} else {
			r = a % b
		}
	}
	return types.MakeInt(r), ""
}

// mulInt multiplies exactly, reporting overflow.
func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if (c < 0) != ((a < 0) != (b < 0)) || c/b != a {
		return 0, false
	}
	return c, true
}

func durMul(d, n int64) (types.Value, string) {
	r, ok := mulInt(d, n)
	if !ok {
		return types.Value{}, "duration overflow"
	}
	return types.MakeDuration(time.Duration(r)), ""
}

func floatArith(op bytecode.Opcode, a, b float64) (types.Value, string) {
	var r float64
	switch op {
	case bytecode.ADD:
		r = a + b
	case bytecode.SUB:
		r = a - b
	case bytecode.MUL:
		r = a * b
	case bytecode.DIV:
		if b == 0 {
			return types.Value{}, "division by zero"
		}
		r = a / b
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return types.Value{}, "float result is not finite"
	}
	return types.MakeFloat(r), ""
}

// neg applies NEG.
func neg(x types.Value) (types.Value, string) {
	switch x.Kind() {
	case types.ValInt:
		if x.Int() == math.MinInt64 {
			return types.Value{}, "integer overflow"
		}
		return types.MakeInt(-x.Int()), ""
	case types.ValFloat:
		return types.MakeFloat(-x.Float()), ""
	case types.ValDuration:
		if x.Duration() == math.MinInt64 {
			return types.Value{}, "duration overflow"
		}
		return types.MakeDuration(-x.Duration()), ""
	}
	return types.Value{}, "invalid operand -" + x.Kind().String()
}

// compare applies LT, LE, GT or GE.
func compare(op bytecode.Opcode, x, y types.Value) (types.Value, string) {
	c, ok := types.Compare(x, y)
	if !ok {
		return types.Value{}, "cannot order " + x.Kind().String() + " and " + y.Kind().String()
	}
	var r bool
	switch op {
	case bytecode.LT:
		r = c < 0
	case bytecode.LE:
		r = c <= 0
	case bytecode.GT:
		r = c > 0
	case bytecode.GE:
		r = c >= 0
	}
	return types.MakeBool(r), ""
}

// field applies FIELD: a record's field, or a map's entry (null when absent,
// as a json member).
func field(x types.Value, name string) (types.Value, string) {
	switch x.Kind() {
	case types.ValRecord:
		if v, ok := x.Field(name); ok {
			return v, ""
		}
		return types.Value{}, "record has no field " + name
	case types.ValMap:
		v, _ := x.MapGet(name)
		return v, ""
	}
	return types.Value{}, "cannot select ." + name + " of " + x.Kind().String()
}

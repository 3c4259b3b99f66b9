package bytecode

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// Expression precedence, loosest first (spec/language.md §4).
const (
	precOr = iota + 1
	precAnd
	precNot
	precCmp
	precAdd
	precMul
	precUnary
	precPostfix
	precPrimary
)

type exprText struct {
	text string
	prec int
	lit  *string // set when the value is a string constant (INTERP literal text)
}

// ExprSource renders chunk ci back into agentc expression syntax by
// symbolic execution of its code: what the graph picture and disassembly
// show is derived from what runs, not from the source text. Locals are
// named by locals (e.g. the map variable); missing names render as $N.
// It returns an error for code the compiler does not emit (the result is
// then unreliable and must not be shown as exact).
func ExprSource(p *Program, ci int, locals ...string) (string, error) {
	if ci < 0 || ci >= len(p.Chunks) {
		return "", fmt.Errorf("chunk %d out of range", ci)
	}
	c := &p.Chunks[ci]
	type pending struct {
		target int
		op     string // "and" | "or"
		left   exprText
	}
	var (
		stack []exprText
		waits []pending
	)
	pop := func() (exprText, error) {
		if len(stack) == 0 {
			return exprText{}, fmt.Errorf("chunk %s: stack underflow", c.Name)
		}
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return x, nil
	}
	popN := func(n int) ([]exprText, error) {
		if n > len(stack) {
			return nil, fmt.Errorf("chunk %s: stack underflow", c.Name)
		}
		out := slices.Clone(stack[len(stack)-n:])
		stack = stack[:len(stack)-n]
		return out, nil
	}
	for pc := 0; pc <= len(c.Code); pc++ {
		// Close the short-circuit operators that jump here, innermost first.
		for i := len(waits) - 1; i >= 0; i-- {
			w := waits[i]
			if w.target != pc {
				continue
			}
			right, err := pop()
			if err != nil {
				return "", err
			}
			prec := precAnd
			if w.op == "or" {
				prec = precOr
			}
			stack = append(stack, exprText{text: wrap(w.left, prec) + " " + w.op + " " + wrap(right, prec+1), prec: prec})
			waits = slices.Delete(waits, i, i+1)
		}
		if pc == len(c.Code) {
			break
		}
		in := c.Code[pc]
		switch in.Op {
		case NOP, CONV:
		case DUP:
			// Only as the head of "x DUP JMPIF* L POP y L:".
			if pc+2 >= len(c.Code) || (c.Code[pc+1].Op != JMPIFFALSE && c.Code[pc+1].Op != JMPIFTRUE) || c.Code[pc+2].Op != POP {
				return "", fmt.Errorf("chunk %s pc %d: DUP outside a short-circuit", c.Name, pc)
			}
			left, err := pop()
			if err != nil {
				return "", err
			}
			op := "and"
			if c.Code[pc+1].Op == JMPIFTRUE {
				op = "or"
			}
			waits = append(waits, pending{target: int(c.Code[pc+1].Arg), op: op, left: left})
			pc += 2
		case NULL:
			stack = append(stack, exprText{text: "null", prec: precPrimary})
		case TRUE:
			stack = append(stack, exprText{text: "true", prec: precPrimary})
		case FALSE:
			stack = append(stack, exprText{text: "false", prec: precPrimary})
		case EQ, NE, LT, LE, GT, GE, IN:
			xs, err := popN(2)
			if err != nil {
				return "", err
			}
			stack = append(stack, exprText{text: wrap(xs[0], precCmp+1) + " " + cmpOps[in.Op] + " " + wrap(xs[1], precCmp+1), prec: precCmp})
		case NOT:
			x, err := pop()
			if err != nil {
				return "", err
			}
			stack = append(stack, exprText{text: "not " + wrap(x, precNot), prec: precNot})
		case NEG:
			x, err := pop()
			if err != nil {
				return "", err
			}
			stack = append(stack, exprText{text: "-" + wrap(x, precUnary), prec: precUnary})
		case ADD, SUB, MUL, DIV, MOD:
			xs, err := popN(2)
			if err != nil {
				return "", err
			}
			prec := precMul
			if in.Op == ADD || in.Op == SUB {
				prec = precAdd
			}
			stack = append(stack, exprText{text: wrap(xs[0], prec) + " " + arithOps[in.Op] + " " + wrap(xs[1], prec+1), prec: prec})
		case INDEX:
			xs, err := popN(2)
			if err != nil {
				return "", err
			}
			stack = append(stack, exprText{text: wrap(xs[0], precPostfix) + "[" + xs[1].text + "]", prec: precPostfix})
		case RETURN:
			x, err := pop()
			if err != nil {
				return "", err
			}
			if len(stack) != 0 || len(waits) != 0 {
				return "", fmt.Errorf("chunk %s: RETURN with a non-empty stack", c.Name)
			}
			return x.text, nil
		case CONST:
			if int(in.Arg) >= len(p.Consts) {
				return "", fmt.Errorf("chunk %s: const %d out of range", c.Name, in.Arg)
			}
			x := exprText{text: constSource(p.Consts[in.Arg]), prec: precPrimary}
			if v := p.Consts[in.Arg]; v.Kind() == types.ValString {
				str := v.Str()
				x.lit = &str
			}
			stack = append(stack, x)
		case LOAD:
			name := fmt.Sprintf("$field%d", in.Arg)
			if c.State >= 0 && int(c.State) < len(p.States) && int(in.Arg) < len(p.States[c.State].Fields) {
				name = p.States[c.State].Fields[in.Arg].Name
			}
			stack = append(stack, exprText{text: name, prec: precPrimary})
		case LOADLOCAL:
			name := "$" + strconv.Itoa(int(in.Arg))
			if int(in.Arg) < len(locals) && locals[in.Arg] != "" {
				name = locals[in.Arg]
			}
			stack = append(stack, exprText{text: name, prec: precPrimary})
		case FIELD:
			x, err := pop()
			if err != nil {
				return "", err
			}
			name := "?"
			if int(in.Arg) < len(p.Consts) && p.Consts[in.Arg].Kind() == types.ValString {
				name = p.Consts[in.Arg].Str()
			}
			stack = append(stack, exprText{text: wrap(x, precPostfix) + "." + name, prec: precPostfix})
		case CALL:
			fn, argc := SplitCallArg(in.Arg)
			args, err := popN(argc)
			if err != nil {
				return "", err
			}
			name := "?"
			if int(fn) < len(p.Funcs) {
				name = p.Funcs[fn]
			}
			stack = append(stack, exprText{text: name + "(" + joinText(args) + ")", prec: precPrimary})
		case MAKELIST:
			xs, err := popN(int(in.Arg))
			if err != nil {
				return "", err
			}
			stack = append(stack, exprText{text: "[" + joinText(xs) + "]", prec: precPrimary})
		case MAKEMAP:
			xs, err := popN(2 * int(in.Arg))
			if err != nil {
				return "", err
			}
			parts := make([]string, 0, in.Arg)
			for i := 0; i+1 < len(xs); i += 2 {
				parts = append(parts, xs[i].text+": "+xs[i+1].text)
			}
			stack = append(stack, exprText{text: "{ " + strings.Join(parts, ", ") + " }", prec: precPrimary})
		case MAKERECORD:
			if int(in.Arg) >= len(p.Types) {
				return "", fmt.Errorf("chunk %s: type %d out of range", c.Name, in.Arg)
			}
			t := p.Types[in.Arg]
			xs, err := popN(t.NumFields())
			if err != nil {
				return "", err
			}
			parts := make([]string, len(xs))
			for i, x := range xs {
				parts[i] = t.Field(i).Name + ": " + x.text
			}
			stack = append(stack, exprText{text: "{ " + strings.Join(parts, ", ") + " }", prec: precPrimary})
		case INTERP:
			xs, err := popN(int(in.Arg))
			if err != nil {
				return "", err
			}
			var b strings.Builder
			b.WriteByte('"')
			for _, x := range xs {
				// A string constant part is literal text; anything else was {expr}.
				if x.lit != nil {
					b.WriteString(escapeText(*x.lit))
					continue
				}
				b.WriteString("{" + x.text + "}")
			}
			b.WriteByte('"')
			stack = append(stack, exprText{text: b.String(), prec: precPrimary})
		case JMP, JMPIFFALSE, JMPIFTRUE, POP:
			return "", fmt.Errorf("chunk %s pc %d: %s outside a short-circuit", c.Name, pc, in.Op)
		default:
			return "", fmt.Errorf("chunk %s pc %d: unknown opcode %s", c.Name, pc, in.Op)
		}
	}
	return "", fmt.Errorf("chunk %s: no RETURN", c.Name)
}

var cmpOps = map[Opcode]string{EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">=", IN: "in"}
var arithOps = map[Opcode]string{ADD: "+", SUB: "-", MUL: "*", DIV: "/", MOD: "%"}

func wrap(x exprText, min int) string {
	if x.prec < min {
		return "(" + x.text + ")"
	}
	return x.text
}

func joinText(xs []exprText) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.text
	}
	return strings.Join(parts, ", ")
}

// constSource renders a constant as agentc source.
func constSource(v types.Value) string {
	switch v.Kind() {
	case types.ValString:
		return `"` + escapeText(v.Str()) + `"`
	case types.ValDuration:
		return v.Duration().String()
	}
	b, err := types.AppendText(nil, v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// escapeText escapes a string's text for a "..." literal.
func escapeText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`, "{", "{{", "}", "}}")
	return r.Replace(s)
}

// Package bytecode defines agentc's program format: the opcode table of the
// expression machine, the Program (constants, types, state schemas, graphs
// with their node, route and join tables, expression chunks, tools, models,
// agents, skills, policies, serve and test blocks), its deterministic binary
// encoding (encode.go, decode.go), the Verify pass that must accept a program
// before the VM runs it, a stable disassembler, and a builder the compiler
// uses. spec/bytecode.md records the decisions.
package bytecode

import "strconv"

// Opcode is one instruction of the expression stack machine.
//
// Each comment below is a stack picture: the operands the instruction pops
// (top of stack rightmost), the opcode, and what it pushes. <x> names the
// uvarint operand and the table it indexes.
//
// An expression chunk is evaluated against a read-only state snapshot
// (LOAD), the chunk's locals (LOADLOCAL: the map loop variable, or `input` in
// a tool's http/exec templates), the program's constants and the VM's
// function table (CALL). It ends with RETURN, leaving exactly one value.
// Conditions (JMPIFFALSE, JMPIFTRUE, NOT, edge and expect chunks) require
// bool operands: there is no truthiness.
type Opcode uint8

const (
	NOP Opcode = iota // - NOP -

	// stack operations
	POP   //   x POP -
	DUP   //   x DUP x x
	NULL  //   - NULL null
	TRUE  //   - TRUE true
	FALSE //   - FALSE false

	// comparisons (types.Equal / types.Compare)
	EQ //   x y EQ bool
	NE //   x y NE bool
	LT //   x y LT bool
	LE //   x y LE bool
	GT //   x y GT bool
	GE //   x y GE bool
	IN //   x y IN bool      x in y: list element, map key or substring (types.Contains)

	// operators
	NOT   //   bool NOT bool
	NEG   //      x NEG y     int, float, duration
	ADD   //    x y ADD z     numbers, durations; string and list concatenation
	SUB   //    x y SUB z
	MUL   //    x y MUL z
	DIV   //    x y DIV z     division by zero is a run-time error
	MOD   //    x y MOD z
	INDEX //    x i INDEX y   list[int] (bounds-checked) or map[string] (null if absent)

	// control flow
	RETURN //   x RETURN -    ends the chunk; x is its value

	// --- opcodes with an argument must go below this line ---

	JMP        //        - JMP<addr> -            addr: instruction index in this chunk
	JMPIFFALSE //     bool JMPIFFALSE<addr> -
	JMPIFTRUE  //     bool JMPIFTRUE<addr> -
	CONST      //        - CONST<const> x
	LOAD       //        - LOAD<field> x          field of the chunk's state schema
	LOADLOCAL  //        - LOADLOCAL<slot> x      slot < the chunk's NumLocals
	FIELD      //   record FIELD<const> y         const: the field name (a string); maps too
	CALL       //  x1...xn CALL<func<<8|n> y      func: index into Program.Funcs; n < 256
	MAKELIST   //  x1...xn MAKELIST<n> list
	MAKEMAP    // k1 v1...kn vn MAKEMAP<n> map    keys are strings; a repeated key is an error
	MAKERECORD //  x1...xn MAKERECORD<type> rec   type: a record type; n = its field count
	INTERP     //  x1...xn INTERP<n> string       concatenation; non-strings as canonical JSON
	CONV       //        x CONV<type> y           types.Convert: int→float, record reshaping

	OpcodeArgMin = JMP
	OpcodeMax    = CONV
)

var opcodeNames = [...]string{
	NOP:        "NOP",
	POP:        "POP",
	DUP:        "DUP",
	NULL:       "NULL",
	TRUE:       "TRUE",
	FALSE:      "FALSE",
	EQ:         "EQ",
	NE:         "NE",
	LT:         "LT",
	LE:         "LE",
	GT:         "GT",
	GE:         "GE",
	IN:         "IN",
	NOT:        "NOT",
	NEG:        "NEG",
	ADD:        "ADD",
	SUB:        "SUB",
	MUL:        "MUL",
	DIV:        "DIV",
	MOD:        "MOD",
	INDEX:      "INDEX",
	RETURN:     "RETURN",
	JMP:        "JMP",
	JMPIFFALSE: "JMPIFFALSE",
	JMPIFTRUE:  "JMPIFTRUE",
	CONST:      "CONST",
	LOAD:       "LOAD",
	LOADLOCAL:  "LOADLOCAL",
	FIELD:      "FIELD",
	CALL:       "CALL",
	MAKELIST:   "MAKELIST",
	MAKEMAP:    "MAKEMAP",
	MAKERECORD: "MAKERECORD",
	INTERP:     "INTERP",
	CONV:       "CONV",
}

// variableStackEffect marks opcodes whose effect depends on the operand.
const variableStackEffect = 0x7f

// stackEffect is the net change in stack depth of each opcode.
var stackEffect = [...]int8{
	NOP:        0,
	POP:        -1,
	DUP:        +1,
	NULL:       +1,
	TRUE:       +1,
	FALSE:      +1,
	EQ:         -1,
	NE:         -1,
	LT:         -1,
	LE:         -1,
	GT:         -1,
	GE:         -1,
	IN:         -1,
	NOT:        0,
	NEG:        0,
	ADD:        -1,
	SUB:        -1,
	MUL:        -1,
	DIV:        -1,
	MOD:        -1,
	INDEX:      -1,
	RETURN:     -1,
	JMP:        0,
	JMPIFFALSE: -1,
	JMPIFTRUE:  -1,
	CONST:      +1,
	LOAD:       +1,
	LOADLOCAL:  +1,
	FIELD:      0,
	CALL:       variableStackEffect,
	MAKELIST:   variableStackEffect,
	MAKEMAP:    variableStackEffect,
	MAKERECORD: variableStackEffect,
	INTERP:     variableStackEffect,
	CONV:       0,
}

// stackPops is how many values each opcode pops before it pushes (fixed
// effects only; the verifier uses it to detect underflow precisely).
var stackPops = [...]int8{
	POP: 1, DUP: 1,
	EQ: 2, NE: 2, LT: 2, LE: 2, GT: 2, GE: 2, IN: 2,
	NOT: 1, NEG: 1, ADD: 2, SUB: 2, MUL: 2, DIV: 2, MOD: 2, INDEX: 2,
	RETURN: 1, JMPIFFALSE: 1, JMPIFTRUE: 1, FIELD: 1, CONV: 1,
}

func (op Opcode) String() string {
	if op <= OpcodeMax {
		return opcodeNames[op]
	}
	return "illegal op (" + strconv.Itoa(int(op)) + ")"
}

// HasArg reports whether op takes a uvarint operand.
func (op Opcode) HasArg() bool { return op >= OpcodeArgMin }

// IsJump reports whether op's operand is a jump target.
func (op Opcode) IsJump() bool { return op == JMP || op == JMPIFFALSE || op == JMPIFTRUE }

// Insn is one decoded instruction. Arg is zero for opcodes without operand.
type Insn struct {
	Op  Opcode
	Arg uint32
}

// CallArg packs CALL's operand from a function index and an argument count
// (argc < 256).
func CallArg(fn uint32, argc uint8) uint32 { return fn<<8 | uint32(argc) }

// SplitCallArg unpacks CALL's operand.
func SplitCallArg(arg uint32) (fn uint32, argc int) { return arg >> 8, int(arg & 0xff) }

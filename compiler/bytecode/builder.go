package bytecode

import (
	"fmt"

	"github.com/agentc/agentc/compiler/types"
)

// ProgramBuilder assembles a Program. It interns constants, types, function
// names and files (so equal entries share one index, in first-use order,
// which keeps the output deterministic) and builds expression chunks. The
// compiler fills the other tables (graphs, tools, ...) directly on Program().
type ProgramBuilder struct {
	p      *Program
	consts map[string]uint32
	types  map[[32]byte]uint32
	funcs  map[string]uint32
	files  map[string]uint32

	// code and spans are blocks that finished chunks take their
	// instructions and spans from, exactly as many as they have (most
	// chunks are a few instructions: one allocation per block instead of
	// a few per chunk). A chunk is built in its builder's scratch slices.
	code  []Insn
	spans []PCSpan
}

// Block sizes.
const (
	blockCode  = 512
	blockSpans = 256
)

// carve returns n elements of *block, exactly (capped), making a new block
// of size (or n, if larger) when the current one is short.
func carve[T any](block *[]T, n, size int) []T {
	if len(*block) < n {
		*block = make([]T, max(size, n))
	}
	out := (*block)[:n:n]
	*block = (*block)[n:]
	return out
}

// NewProgramBuilder returns a builder for an empty Program.
func NewProgramBuilder() *ProgramBuilder {
	return &ProgramBuilder{
		p:      &Program{},
		consts: make(map[string]uint32),
		types:  make(map[[32]byte]uint32),
		funcs:  make(map[string]uint32),
		files:  make(map[string]uint32),
	}
}

// Program returns the program being built.
func (b *ProgramBuilder) Program() *Program { return b.p }

// Const returns the index of v in the constant pool, adding it if needed.
// Constants are equal when their canonical encodings are (so 1 and 1.0 are
// distinct). A secret cannot be a constant.
func (b *ProgramBuilder) Const(v types.Value) (uint32, error) {
	enc, err := types.AppendValue(nil, v)
	if err != nil {
		return 0, fmt.Errorf("constant %v: %w", v, err)
	}
	return intern(b.consts, &b.p.Consts, string(enc), v), nil
}

// Type returns the index of t in the type table, adding it if needed;
// identical types share an index.
func (b *ProgramBuilder) Type(t *types.Type) uint32 {
	return intern(b.types, &b.p.Types, types.Hash(t), t)
}

// Func returns the index of the named builtin function in Program.Funcs.
func (b *ProgramBuilder) Func(name string) uint32 {
	return intern(b.funcs, &b.p.Funcs, name, name)
}

// File returns the index of a source file (a relative, slash-separated path).
func (b *ProgramBuilder) File(path string) uint32 {
	return intern(b.files, &b.p.Files, path, path)
}

// intern returns the index in table of the entry keyed k, appending v (and
// indexing it under k) when there is none.
func intern[K comparable, V any](index map[K]uint32, table *[]V, k K, v V) uint32 {
	if i, ok := index[k]; ok {
		return i
	}
	i := uint32(len(*table))
	*table = append(*table, v)
	index[k] = i
	return i
}

// NewChunk starts a chunk named name that reads state schema `state` (or
// None) and numLocals local slots.
func (b *ProgramBuilder) NewChunk(name string, state int32, numLocals uint32) *ChunkBuilder {
	c := new(ChunkBuilder)
	b.StartChunk(c, name, state, numLocals)
	return c
}

// StartChunk is NewChunk reusing c, a builder that is new or finished (a
// compiler that builds one chunk at a time keeps one builder, and its label
// and fixup tables, for all of them).
func (b *ProgramBuilder) StartChunk(c *ChunkBuilder, name string, state int32, numLocals uint32) {
	code, spans := c.code[:0], c.spans[:0]
	if code == nil {
		code, spans = make([]Insn, 0, 8), make([]PCSpan, 0, 4)
	}
	*c = ChunkBuilder{pb: b, c: Chunk{Name: name, State: state, NumLocals: numLocals, Code: code, Spans: spans},
		labels: c.labels[:0], fixups: c.fixups[:0], code: code, spans: spans}
}

// Label is a forward jump target inside one ChunkBuilder.
type Label struct{ id int }

// ChunkBuilder emits one chunk's instructions. Misuse (an operand for an
// opcode without one, an unbound label, ...) is remembered and reported by
// Finish; the builder never panics.
type ChunkBuilder struct {
	pb     *ProgramBuilder
	c      Chunk
	span   Span
	labels []int // pc per label; -1 while unbound
	fixups []fixup
	err    error
	// code and spans are the scratch c.c is built in, kept for the next
	// chunk (Finish copies the chunk's out).
	code  []Insn
	spans []PCSpan
}

type fixup struct{ pc, label int }

func (c *ChunkBuilder) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("chunk %s: pc %d: %s", c.c.Name, len(c.c.Code), fmt.Sprintf(format, args...))
	}
}

// SetSpan sets the source span of the instructions emitted from now on.
func (c *ChunkBuilder) SetSpan(s Span) { c.span = s }

// PC returns the index the next instruction will have.
func (c *ChunkBuilder) PC() int { return len(c.c.Code) }

// Emit appends an instruction. arg must be 0 for opcodes below OpcodeArgMin;
// jumps are emitted with Jump.
func (c *ChunkBuilder) Emit(op Opcode, arg uint32) {
	switch {
	case op > OpcodeMax:
		c.fail("%s", op)
	case op.IsJump():
		c.fail("%s must be emitted with Jump", op)
	case !op.HasArg() && arg != 0:
		c.fail("%s takes no operand", op)
	}
	c.emit(op, arg)
}

func (c *ChunkBuilder) emit(op Opcode, arg uint32) {
	pc := uint32(len(c.c.Code))
	last := Span{}
	if n := len(c.c.Spans); n > 0 {
		last = c.c.Spans[n-1].Span
	}
	if c.span != last {
		c.c.Spans = append(c.c.Spans, PCSpan{PC: pc, Span: c.span})
	}
	c.c.Code = append(c.c.Code, Insn{Op: op, Arg: arg})
}

// Const emits CONST for v, interning it.
func (c *ChunkBuilder) Const(v types.Value) {
	i, err := c.pb.Const(v)
	if err != nil {
		c.fail("%v", err)
	}
	c.emit(CONST, i)
}

// Call emits CALL of the named builtin function with argc arguments.
func (c *ChunkBuilder) Call(name string, argc int) {
	if argc < 0 || argc > 255 {
		c.fail("CALL %s with %d arguments (at most 255)", name, argc)
	}
	c.emit(CALL, CallArg(c.pb.Func(name), uint8(argc)))
}

// NewLabel returns an unbound label.
func (c *ChunkBuilder) NewLabel() Label {
	c.labels = append(c.labels, -1)
	return Label{id: len(c.labels) - 1}
}

// Jump emits a jump (JMP, JMPIFFALSE, JMPIFTRUE) to l, which must be bound
// later: jumps go forward only.
func (c *ChunkBuilder) Jump(op Opcode, l Label) {
	if !op.IsJump() {
		c.fail("%s is not a jump", op)
	}
	if l.id < 0 || l.id >= len(c.labels) {
		c.fail("unknown label")
		return
	}
	c.fixups = append(c.fixups, fixup{pc: len(c.c.Code), label: l.id})
	c.emit(op, 0)
}

// Bind places l at the next instruction.
func (c *ChunkBuilder) Bind(l Label) {
	if l.id < 0 || l.id >= len(c.labels) || c.labels[l.id] >= 0 {
		c.fail("label bound twice or unknown")
		return
	}
	c.labels[l.id] = len(c.c.Code)
}

// Finish patches the jumps, proves the stack discipline, records MaxStack,
// appends the chunk to the program and returns its index. The builder must
// not be used afterwards, except to start another chunk (StartChunk).
func (c *ChunkBuilder) Finish() (uint32, error) {
	for _, f := range c.fixups {
		pc := c.labels[f.label]
		if pc < 0 {
			c.fail("jump at pc %d to an unbound label", f.pc)
			break
		}
		c.c.Code[f.pc].Arg = uint32(pc)
	}
	if c.err != nil {
		return 0, c.err
	}
	max, err := c.pb.p.checkChunk(&c.c)
	if err != nil {
		return 0, fmt.Errorf("chunk %s: %w", c.c.Name, err)
	}
	c.c.MaxStack = uint32(max)
	// Keep the scratch (grown, perhaps) and move the chunk to the blocks;
	// an empty table stays nil.
	c.code, c.spans = c.c.Code[:0], c.c.Spans[:0]
	if n := len(c.c.Code); n > 0 {
		c.c.Code = carve(&c.pb.code, n, blockCode)
		copy(c.c.Code, c.code[:n])
	} else {
		c.c.Code = nil
	}
	if n := len(c.c.Spans); n > 0 {
		c.c.Spans = carve(&c.pb.spans, n, blockSpans)
		copy(c.c.Spans, c.spans[:n])
	} else {
		c.c.Spans = nil
	}
	i := uint32(len(c.pb.p.Chunks))
	c.pb.p.Chunks = append(c.pb.p.Chunks, c.c)
	return i, nil
}

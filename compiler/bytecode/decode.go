package bytecode

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// Decode parses an encoded program (the grammar in encode.go). It checks the
// magic, the format version, the content hash and every bound and count
// itself, and rejects any non-canonical encoding; it does not check
// cross-references: run Verify before executing the result. Errors read
// `not agentc bytecode`, `format version 2, want 1`, `content hash mismatch`,
// `section graphs truncated at byte 812`, `section chunks: illegal opcode
// 0x7f at byte 93`.
//
// Decoded strings share one copy of b, so the Program does not alias b.
func Decode(b []byte) (*Program, error) { return decode(b, true) }

// decode is Decode with the hash check optional (the fuzzer cannot forge
// SHA-256, so it decodes with checkHash false to reach the sections).
func decode(b []byte, checkHash bool) (*Program, error) {
	if len(b) < headerLen || string(b[:len(Magic)]) != Magic {
		return nil, errors.New("not agentc bytecode")
	}
	if v := binary.LittleEndian.Uint16(b[len(Magic):]); v != FormatVersion {
		return nil, fmt.Errorf("format version %d, want %d", v, FormatVersion)
	}
	if len(b) < headerLen+sha256.Size {
		return nil, fmt.Errorf("content hash truncated at byte %d", len(b))
	}
	end := len(b) - sha256.Size
	p := &Program{Hash: sha256.Sum256(b[:end])}
	if checkHash && string(p.Hash[:]) != string(b[end:]) {
		return nil, errors.New("content hash mismatch")
	}
	s := string(b[:end])
	// One reader for the whole file (it lives on the heap: the sections'
	// decoders take it through the table).
	r := reader{s: s}
	off, last := headerLen, 0
	for off < end {
		id := int(s[off])
		sec := sectionOf(id)
		if sec == nil {
			return nil, fmt.Errorf("unknown section id %d at byte %d", id, off)
		}
		name := sec.name
		if id <= last {
			return nil, fmt.Errorf("section %s out of order at byte %d", name, off)
		}
		r.off, r.end, r.sec = off+1, end, name
		size := r.uvarint()
		if r.err != nil {
			return nil, r.err
		}
		if size > uint64(end-r.off) {
			return nil, fmt.Errorf("section %s truncated at byte %d", name, end)
		}
		r.end = r.off + int(size)
		sec.decode(&r, p)
		if r.err == nil && r.off != r.end {
			r.fail("%d bytes left over", r.end-r.off)
		}
		if r.err == nil && sec.empty(p) {
			r.off = off
			r.fail("empty section")
		}
		if r.err != nil {
			return nil, r.err
		}
		off, last = r.end, id
	}
	for i := range p.States {
		// Hash only what resolves; Verify reports bad references.
		if h, err := StateHash(p, i); err == nil {
			p.States[i].Hash = h
		}
	}
	return p, nil
}

// reader decodes s[off:end], the section sec (Decode moves it from one
// section to the next). Errors are sticky; every method returns a zero
// value once an error is set.
type reader struct {
	s        string
	off, end int
	sec      string
	err      error

	// Slabs for the small slices a large program has thousands of.
	insns arena[Insn]
	spans arena[PCSpan]
	edges arena[Edge]
	args  arena[Arg]
}

// arena hands out slices carved from larger allocations. Each slice is
// capacity-limited, so appending to one never writes into its neighbour.
type arena[T any] struct{ buf []T }

func (a *arena[T]) alloc(n int) []T {
	if n > len(a.buf) {
		a.buf = make([]T, max(n, 256))
	}
	s := a.buf[:n:n]
	a.buf = a.buf[n:]
	return s
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("section %s: %s at byte %d", r.sec, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *reader) truncated() {
	if r.err == nil {
		r.err = fmt.Errorf("section %s truncated at byte %d", r.sec, r.end)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= r.end {
		r.truncated()
		return 0
	}
	c := r.s[r.off]
	r.off++
	return c
}

// uvarint reads a minimal-length unsigned LEB128.
func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	if r.off < r.end && r.s[r.off] < 0x80 { // fast path: one byte
		r.off++
		return uint64(r.s[r.off-1])
	}
	start := r.off
	var x uint64
	for shift := uint(0); ; shift += 7 {
		if r.off >= r.end {
			r.truncated()
			return 0
		}
		c := r.s[r.off]
		r.off++
		if shift == 63 && c > 1 {
			r.off = start
			r.fail("varint overflows 64 bits")
			return 0
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && r.off-start > 1 {
				r.off = start
				r.fail("non-canonical varint")
				return 0
			}
			return x
		}
	}
}

func (r *reader) u32() uint32 {
	if r.err == nil && r.off < r.end && r.s[r.off] < 0x80 {
		r.off++
		return uint32(r.s[r.off-1])
	}
	start := r.off
	x := r.uvarint()
	if x > math.MaxUint32 {
		r.off = start
		r.fail("number %d out of range", x)
		return 0
	}
	return uint32(x)
}

func (r *reader) opt() int32 {
	start := r.off
	x := r.uvarint()
	if x > math.MaxInt32+1 {
		r.off = start
		r.fail("index %d out of range", x-1)
		return 0
	}
	return int32(int64(x) - 1)
}

func (r *reader) bool() bool {
	switch c := r.byte(); c {
	case 0:
		return false
	case 1:
		return true
	default:
		r.off--
		r.fail("invalid bool 0x%02x", c)
		return false
	}
}

func (r *reader) dur() time.Duration {
	u := r.uvarint()
	return time.Duration(int64(u>>1) ^ -int64(u&1))
}

// count reads a list length and checks that at least min bytes per element
// remain, bounding allocations by the input size.
func (r *reader) count(min int) int {
	start := r.off
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n > uint64(r.end-r.off)/uint64(min) {
		r.off = start
		r.fail("count %d exceeds the section", n)
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(r.end-r.off) {
		r.truncated()
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) strs() []string { return list(r, 1, func(r *reader, s *string) { *s = r.str() }) }

func (r *reader) u32s() []uint32 { return list(r, 1, func(r *reader, x *uint32) { *x = r.u32() }) }

const spanMin = 7 // bytes of the smallest span

func (r *reader) span() Span {
	return Span{
		File: r.u32(), StartLine: r.u32(), StartCol: r.u32(), EndLine: r.u32(), EndCol: r.u32(),
		StartOff: r.u32(), EndOff: r.u32(),
	}
}

func (r *reader) ref() Ref { return Ref{Kind: RefKind(r.byte()), Index: r.u32()} }

const attrMin = 3 + spanMin

func (r *reader) attrs() []Attr {
	n := r.count(attrMin)
	if n == 0 {
		return nil
	}
	as := make([]Attr, n)
	for i := range as {
		a := &as[i]
		a.Name = r.str()
		a.Kind = AttrKind(r.byte())
		switch a.Kind {
		case AttrConst:
			a.Const = r.u32()
		case AttrEnv:
			a.Env.Var = r.str()
			if a.Env.HasDefault = r.bool(); a.Env.HasDefault {
				a.Env.Default = r.str()
			}
			a.Env.Type = r.u32()
		case AttrCode:
			a.Code = r.u32()
		case AttrRef:
			a.Refs = []Ref{r.ref()}
		case AttrRefs:
			a.Refs = list(r, 2, func(r *reader, x *Ref) { *x = r.ref() })
		default:
			r.off--
			r.fail("invalid attribute kind %d", a.Kind)
			return nil
		}
		a.Span = r.span()
		if r.err != nil {
			return nil
		}
	}
	return as
}

// list decodes n elements of at least min bytes each with f, allocating
// from slab if it is not nil.
func list[T any](r *reader, min int, f func(*reader, *T)) []T { return listIn(r, nil, min, f) }

func listIn[T any](r *reader, slab *arena[T], min int, f func(*reader, *T)) []T {
	n := r.count(min)
	if n == 0 {
		return nil
	}
	var xs []T
	if slab != nil {
		xs = slab.alloc(n)
	} else {
		xs = make([]T, n)
	}
	for i := range xs {
		if f(r, &xs[i]); r.err != nil {
			return nil
		}
	}
	return xs
}

// encoded decodes a counted list of values in the types package's own
// encoding (constants, types); a bad one is reported as "what i".
func encoded[T any](r *reader, what string, decode func(string) (T, int, error)) []T {
	xs := make([]T, r.count(1))
	for i := range xs {
		x, m, err := decode(r.s[r.off:r.end])
		if err != nil {
			r.nested(fmt.Sprintf("%s %d", what, i), err)
			return xs
		}
		xs[i], r.off = x, r.off+m
	}
	return xs
}

func (r *reader) meta(p *Program) {
	p.Workflow = r.str()
	p.Doc = r.str()
	p.Files = r.strs()
}

func (r *reader) model(m *Model) {
	m.Name, m.Provider, m.Attrs, m.Span = r.str(), r.str(), r.attrs(), r.span()
}

func (r *reader) skill(s *Skill) {
	s.Name, s.Path, s.Attrs, s.Span = r.str(), r.str(), r.attrs(), r.span()
}

func (r *reader) policy(pl *Policy) {
	pl.Kind, pl.Name, pl.Attrs, pl.Span = PolicyKind(r.byte()), r.str(), r.attrs(), r.span()
}

// nested reports an error from the types codec at its absolute offset.
func (r *reader) nested(what string, err error) {
	var de *types.DecodeError
	if !errors.As(err, &de) {
		r.fail("%s: %v", what, err)
		return
	}
	if strings.HasSuffix(de.Msg, "truncated") {
		r.truncated()
		return
	}
	r.off += de.Offset
	r.fail("%s: %s", what, de.Msg)
}

func (r *reader) state(s *State) {
	s.Name = r.str()
	s.Span = r.span()
	s.Fields = list(r, 4+spanMin, func(r *reader, f *StateField) {
		f.Name = r.str()
		f.Type = r.u32()
		if f.HasDefault = r.bool(); f.HasDefault {
			f.Default = r.u32()
		}
		f.Reducer = Reducer(r.byte())
		f.Span = r.span()
	})
}

func (r *reader) chunk(c *Chunk) {
	c.Name = r.str()
	c.State = r.opt()
	c.NumLocals = r.u32()
	c.MaxStack = r.u32()
	n := r.count(1)
	if n > 0 {
		c.Code = r.insns.alloc(n)
		for pc := range c.Code {
			op := Opcode(r.byte())
			if r.err != nil {
				return
			}
			if op > OpcodeMax {
				r.off--
				r.fail("chunk %s: illegal opcode 0x%02x", c.Name, byte(op))
				return
			}
			c.Code[pc].Op = op
			if op.HasArg() {
				c.Code[pc].Arg = r.u32()
			}
		}
	}
	prev, first := uint64(0), true
	c.Spans = listIn(r, &r.spans, 1+spanMin, func(r *reader, s *PCSpan) {
		start := r.off
		d := r.uvarint()
		if !first && d == 0 {
			r.off = start
			r.fail("chunk %s: span table pc not increasing", c.Name)
		}
		first = false
		pc := prev + d
		if pc > math.MaxUint32 {
			r.off = start
			r.fail("chunk %s: span pc out of range", c.Name)
		}
		prev = pc
		s.PC = uint32(pc)
		s.Span = r.span()
	})
}

func (r *reader) call(c *Call) {
	c.Kind = CallKind(r.byte())
	c.Callee = r.u32()
	c.Args = listIn(r, &r.args, 2, func(r *reader, a *Arg) { a.Name, a.Code = r.str(), r.u32() })
}

func (r *reader) graph(g *Graph) {
	g.Name = r.str()
	g.Doc = r.str()
	g.State = r.u32()
	g.Input = r.opt()
	g.Output = r.opt()
	g.Span = r.span()
	g.Nodes = list(r, 14+spanMin, (*reader).node)
}

func (r *reader) node(n *Node) {
	n.Name = r.str()
	kindOff := r.off
	n.Kind = NodeKind(r.byte())
	n.Span = r.span()
	n.Into = r.opt()
	n.Retry.MaxAttempts = r.u32()
	n.Retry.BackoffMin = r.dur()
	n.Retry.BackoffMax = r.dur()
	n.Retry.Jitter = r.bool()
	n.Retry.On = r.strs()
	n.Timeout = r.dur()
	n.Catch = r.opt()
	n.Cache = r.bool()
	n.CacheTTL = r.dur()
	n.Effect = Effect(r.byte())
	switch n.Kind {
	case NodeLLM, NodeTool, NodeAgent, NodeGraph:
		r.call(&n.Call)
	case NodeMap:
		r.call(&n.Call)
		n.Map.Var = r.str()
		n.Map.List = r.u32()
		n.Map.Concurrency = r.u32()
	case NodeInterrupt:
		n.Interrupt.Prompt = r.u32()
		n.Interrupt.Resume = r.u32()
	case NodeSet:
		n.Set = list(r, 2, func(r *reader, a *Assign) { a.Field, a.Code = r.u32(), r.u32() })
	case NodeJoin:
		n.Join.Mode = JoinMode(r.byte())
		n.Join.Preds = r.u32s()
	case NodeWait:
		n.Wait.Code = r.u32()
		n.Wait.Until = r.bool()
	case NodeStart, NodeEnd:
	default:
		if r.err == nil {
			r.off = kindOff
			r.fail("node %s: invalid node kind %d", n.Name, n.Kind)
		}
		return
	}
	n.Edges = listIn(r, &r.edges, 5+spanMin, func(r *reader, e *Edge) {
		e.Kind = EdgeKind(r.byte())
		e.Cond = r.opt()
		e.Target = r.u32()
		e.Max = r.u32()
		e.Else = r.opt()
		e.Span = r.span()
	})
}

func (r *reader) tool(t *Tool) {
	t.Name = r.str()
	t.Doc = r.str()
	t.Input = r.u32()
	t.Output = r.u32()
	t.Effect = Effect(r.byte())
	im := &t.Impl
	kindOff := r.off
	im.Kind = ImplKind(r.byte())
	switch im.Kind {
	case ImplBuiltin:
		im.Builtin = r.str()
	case ImplHTTP:
		im.Method = r.str()
		im.URL = r.u32()
		im.Headers = r.attrs()
	case ImplExec:
		im.Argv = r.u32s()
		im.Timeout = r.dur()
	case ImplAgent:
		im.Agent = r.u32()
	case ImplMCP:
	default:
		if r.err == nil {
			r.off = kindOff
			r.fail("tool %s: invalid implementation kind %d", t.Name, im.Kind)
		}
		return
	}
	im.Options = r.attrs()
	t.Attrs = r.attrs()
	t.Span = r.span()
}

func (r *reader) agent(a *Agent) {
	a.Name = r.str()
	a.Doc = r.str()
	a.Kind = AgentKind(r.byte())
	a.Model = r.opt()
	a.Instruction = r.opt()
	a.Tools = r.u32s()
	a.Skills = list(r, 2, func(r *reader, g *SkillGrant) { g.Skill, g.Grant = r.u32(), Grant(r.byte()) })
	a.Policies = r.u32s()
	a.MaxTurns = r.u32()
	a.SubAgents = r.u32s()
	a.Until = r.opt()
	a.Max = r.u32()
	a.Graph = r.opt()
	a.Attrs = r.attrs()
	a.Span = r.span()
}

func (r *reader) serve() *Serve {
	s := &Serve{Run: r.ref()}
	s.Protocols = list(r, 3+spanMin, func(r *reader, pr *Protocol) {
		pr.Kind, pr.Path, pr.Attrs, pr.Span = ProtocolKind(r.byte()), r.str(), r.attrs(), r.span()
	})
	s.Attrs = r.attrs()
	s.Span = r.span()
	return s
}

func (r *reader) test(t *Test) {
	t.Name = r.str()
	t.Run = r.ref()
	t.Input = r.opt()
	t.Fixtures = list(r, 3, func(r *reader, f *Fixture) { f.Target, f.Path = r.ref(), r.str() })
	t.Answers = list(r, 2+spanMin, func(r *reader, a *Answer) { a.Node, a.Value, a.Span = r.u32(), r.u32(), r.span() })
	t.Expects = list(r, 4+spanMin, func(r *reader, e *Expect) {
		e.Kind, e.Code, e.First, e.Then, e.Span = ExpectKind(r.byte()), r.opt(), r.u32(), r.u32(), r.span()
	})
	t.Attrs = r.attrs()
	t.Span = r.span()
}

package bytecode

// The file format (.agb). Integers are unsigned LEB128 varints (uvarint) of
// minimal length unless stated; the decoder rejects anything else, so one
// Program has exactly one encoding and Encode(Decode(b)) == b.
//
//	file      = magic version section* hash .
//	magic     = "AGNTC" .
//	version   = uint16 little-endian .              FormatVersion
//	section   = id:byte size:uvarint payload .      ids strictly ascending; empty sections omitted
//	hash      = byte[32] .                          SHA-256 of every preceding byte (Program.Hash)
//
//	str       = uvarint(len) byte*len .
//	opt       = uvarint(index + 1) .                0 encodes None
//	bool      = 0x00 | 0x01 .
//	dur       = zigzag(nanoseconds) .
//	list(X)   = uvarint(n) X*n .
//	span      = uvarint(file) uvarint(startLine) uvarint(startCol) uvarint(endLine)
//	            uvarint(endCol) uvarint(startOff) uvarint(endOff) .
//	ref       = byte(kind) uvarint(index) .
//	attr      = str(name) byte(kind) attrval span .
//	attrval   = const: uvarint(const) | env: str(var) bool(hasDefault) [str(default)] uvarint(type)
//	          | code: uvarint(chunk) | ref: ref | refs: list(ref) .
//
//	 1 meta     = str(workflow) str(doc) list(str(file)) .
//	 2 consts   = list(value) .                     types.AppendValue
//	 3 types    = list(type) .                      types.AppendType
//	 4 funcs    = list(str) .
//	 5 states   = list(state) .
//	   state    = str(name) span list(field) .
//	   field    = str(name) uvarint(type) bool(hasDefault) [uvarint(const)] byte(reducer) span .
//	 6 chunks   = list(chunk) .
//	   chunk    = str(name) opt(state) uvarint(numLocals) uvarint(maxStack) list(insn) list(pcspan) .
//	   insn     = byte(op) [uvarint(arg)] .         arg present iff op >= OpcodeArgMin
//	   pcspan   = uvarint(pc - previous pc) span .  the first delta is from 0; later deltas are ≥ 1
//	 7 graphs   = list(graph) .
//	   graph    = str(name) str(doc) uvarint(state) opt(input) opt(output) span list(node) .
//	   node     = str(name) byte(kind) span opt(into) retry dur(timeout) opt(catch) bool(cache)
//	              dur(cacheTTL) byte(effect) body list(edge) .
//	   retry    = uvarint(maxAttempts) dur(min) dur(max) bool(jitter) list(str(kind)) .
//	   body     = llm|tool|agent|graph: call | map: call str(var) uvarint(list) uvarint(concurrency)
//	            | interrupt: uvarint(prompt) uvarint(resume) | set: list(uvarint(field) uvarint(code))
//	            | join: byte(mode) list(uvarint(pred)) | start, end: (nothing) .
//	   call     = byte(kind) uvarint(callee) list(str(name) uvarint(code)) .
//	   edge     = byte(kind) opt(cond) uvarint(target) uvarint(max) opt(else) span .
//	 8 tools    = list(tool) .
//	   tool     = str(name) str(doc) uvarint(input) uvarint(output) byte(effect) impl list(attr) span .
//	   impl     = byte(kind) ( builtin: str(name) | http: str(method) uvarint(url) list(attr)
//	            | exec: list(uvarint(argv)) dur(timeout) | agent: uvarint(agent) ) list(attr(option)) .
//	 9 models   = list(str(name) str(provider) list(attr) span) .
//	10 agents   = list(agent) .
//	   agent    = str(name) str(doc) byte(kind) opt(model) opt(instruction) list(uvarint(tool))
//	              list(uvarint(skill) byte(grant)) list(uvarint(policy)) uvarint(maxTurns)
//	              list(uvarint(sub)) opt(until) uvarint(max) opt(graph) list(attr) span .
//	11 skills   = list(str(name) str(path) list(attr) span) .
//	12 policies = list(byte(kind) str(name) list(attr) span) .
//	13 serve    = byte(runKind) uvarint(runIndex) list(protocol) list(attr) span .   runKind 0: no run
//	   protocol = byte(kind) str(path) list(attr) span .
//	14 tests    = list(test) .
//	   test     = str(name) ref(run) opt(input) list(ref str(path)) list(uvarint(node) uvarint(const) span)
//	              list(expect) list(attr) span .
//	   expect   = byte(kind) opt(code) uvarint(first) uvarint(then) span .
//	15 budgets  = limits(serve) list(budget) .       budget.go
//	16 sizes    = list(uvarint(state) uvarint(field) uvarint(max)) .   sizes.go
//
// The sections, with each one's rule for being omitted, encoder, decoder
// and check, are the one table sections (section.go).
//
// Within a node only the body of its kind is encoded; Encode rejects a Node
// (or ToolImpl, or Attr) whose other parts are not zero, so that nothing is
// silently dropped and the round trip is exact.

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

const headerLen = len(Magic) + 2

// Encode returns the canonical encoding of p, which ends with p's content
// hash (HashOf). It does not modify p; Seal also records the hashes in p.
// The same Program always gives the same bytes. Encode checks only what the
// format needs (encodable values, consistent node parts, resolvable state
// schemas); run Verify for the rest.
func Encode(p *Program) ([]byte, error) {
	b, _, err := encode(p)
	return b, err
}

// Seal encodes p and records the hashes a decoded program carries: the
// content hash in p.Hash and each state schema's hash in p.States[i].Hash.
// The compiler seals the program it lowers; a program built in memory is
// sealed before anything compares its hashes.
func Seal(p *Program) ([]byte, error) {
	b, states, err := encode(p)
	if err != nil {
		return nil, err
	}
	for i := range p.States {
		p.States[i].Hash = states[i]
	}
	p.Hash = HashOf(b)
	return b, nil
}

// HashOf returns the content hash an encoding ends with (zero when b is too
// short to hold one).
func HashOf(b []byte) (h [32]byte) {
	if len(b) >= len(h) {
		copy(h[:], b[len(b)-len(h):])
	}
	return h
}

// encode returns the encoding of p and the hash of each of its state
// schemas.
func encode(p *Program) ([]byte, [][32]byte, error) {
	w := writer{buf: make([]byte, 0, sizeHint(p))}
	w.buf = append(w.buf, Magic...)
	w.buf = binary.LittleEndian.AppendUint16(w.buf, FormatVersion)
	for id := range sections {
		s := sectionOf(id)
		if s == nil || s.empty(p) {
			continue
		}
		// The section is encoded in place, then moved up past its id and
		// length (a memmove, instead of a second buffer and a copy).
		start := len(w.buf)
		if err := s.encode(&w, p); err != nil {
			return nil, nil, fmt.Errorf("encode section %s: %w", s.name, err)
		}
		var hdr [1 + binary.MaxVarintLen64]byte
		hdr[0] = byte(id)
		k := 1 + binary.PutUvarint(hdr[1:], uint64(len(w.buf)-start))
		w.room(k)
		w.buf = w.buf[:len(w.buf)+k]
		copy(w.buf[start+k:], w.buf[start:len(w.buf)-k])
		copy(w.buf[start:], hdr[:k])
	}
	states := make([][32]byte, len(p.States))
	for i := range p.States {
		h, err := StateHash(p, i)
		if err != nil {
			return nil, nil, fmt.Errorf("encode: %w", err)
		}
		states[i] = h
	}
	h := sha256.Sum256(w.buf)
	return append(w.buf, h[:]...), states, nil
}

// sizeHint estimates the encoded size of p from its chunks and graphs (the
// bulk of a large program), erring high: a buffer grown by doubling would
// allocate about twice the size.
func sizeHint(p *Program) int {
	n := 256 + 32*(len(p.Consts)+len(p.Types)+len(p.Funcs)+len(p.Tools)+len(p.Agents))
	for i := range p.Chunks {
		c := &p.Chunks[i]
		n += 6 + len(c.Name) + 2*len(c.Code) + 14*len(c.Spans)
	}
	for i := range p.Graphs {
		for j := range p.Graphs[i].Nodes {
			nd := &p.Graphs[i].Nodes[j]
			n += 40 + len(nd.Name) + 16*len(nd.Edges)
		}
	}
	return n + n/8
}

// StateHash returns the hash of state schema i: SHA-256 over its fields'
// names, canonical types, defaults and reducers, in order, then the list
// sizes if any field has one. Names of the
// schema itself and source spans do not count, so that renaming the schema
// or editing unrelated lines keeps checkpoints compatible.
func StateHash(p *Program, i int) ([32]byte, error) {
	if i < 0 || i >= len(p.States) {
		return [32]byte{}, fmt.Errorf("state %d out of range", i)
	}
	s := &p.States[i]
	var w writer
	w.str("agentc state schema v1")
	w.u(len(s.Fields))
	for _, f := range s.Fields {
		w.str(f.Name)
		if int(f.Type) >= len(p.Types) {
			return [32]byte{}, fmt.Errorf("state %s: field %s: type %d out of range", s.Name, f.Name, f.Type)
		}
		var err error
		if w.buf, err = types.AppendType(w.buf, p.Types[f.Type]); err != nil {
			return [32]byte{}, fmt.Errorf("state %s: field %s: %w", s.Name, f.Name, err)
		}
		w.bool(f.HasDefault)
		if f.HasDefault {
			if int(f.Default) >= len(p.Consts) {
				return [32]byte{}, fmt.Errorf("state %s: field %s: const %d out of range", s.Name, f.Name, f.Default)
			}
			if w.buf, err = types.AppendValue(w.buf, p.Consts[f.Default]); err != nil {
				return [32]byte{}, fmt.Errorf("state %s: field %s: %w", s.Name, f.Name, err)
			}
		}
		w.buf = append(w.buf, byte(f.Reducer))
	}
	// Sizes follow the fields, only when some field has one: the hash of a
	// schema without sizes is what it was before sizes existed.
	n := 0
	for _, f := range s.Fields {
		if f.MaxLen != 0 {
			n++
		}
	}
	if n > 0 {
		w.str("sizes")
		w.u(n)
		for j, f := range s.Fields {
			if f.MaxLen != 0 {
				w.u(j)
				w.u32(f.MaxLen)
			}
		}
	}
	return sha256.Sum256(w.buf), nil
}

func eachOf[T any](w *writer, xs []T, f func(*writer, *T) error) error {
	w.u(len(xs))
	for i := range xs {
		if err := f(w, &xs[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendEach writes list(X) with one of package types' encoders of X; what
// names an element in an error.
func appendEach[T any](w *writer, what string, xs []T, enc func([]byte, T) ([]byte, error)) error {
	w.u(len(xs))
	for i, x := range xs {
		var err error
		if w.buf, err = enc(w.buf, x); err != nil {
			return fmt.Errorf("%s %d: %w", what, i, err)
		}
	}
	return nil
}

// writer appends the encoding to buf. The writers live on the heap (the
// sections' bodies take them through a table), so a plain append would
// store buf's pointer on every value, and a store of a pointer into the
// heap pays a write barrier while the collector marks. uv, b and str
// reslice buf in place (w.buf = w.buf[:n] writes only the length) and
// store the pointer only when it grows.
type writer struct{ buf []byte }

// room makes room for n more bytes.
func (w *writer) room(n int) {
	if cap(w.buf)-len(w.buf) < n {
		w.buf = slices.Grow(w.buf, max(n, 2*cap(w.buf)))
	}
}

// uv appends x as an unsigned varint (binary.AppendUvarint's encoding).
func (w *writer) uv(x uint64) {
	w.room(binary.MaxVarintLen64)
	n := len(w.buf)
	w.buf = w.buf[:n+binary.MaxVarintLen64]
	k := binary.PutUvarint(w.buf[n:], x)
	w.buf = w.buf[:n+k]
}

func (w *writer) u(n int)      { w.uv(uint64(n)) }
func (w *writer) u32(n uint32) { w.uv(uint64(n)) }

func (w *writer) b(x byte) {
	w.room(1)
	n := len(w.buf)
	w.buf = w.buf[:n+1]
	w.buf[n] = x
}

func (w *writer) str(s string) {
	w.u(len(s))
	w.room(len(s))
	n := len(w.buf)
	w.buf = w.buf[:n+len(s)]
	copy(w.buf[n:], s)
}

func (w *writer) dur(d time.Duration) { w.uv(uint64(d<<1) ^ uint64(d>>63)) }

func (w *writer) bool(x bool) {
	if x {
		w.b(1)
	} else {
		w.b(0)
	}
}

func (w *writer) opt(i int32) error {
	if i < None {
		return fmt.Errorf("index %d is neither an index nor None", i)
	}
	w.uv(uint64(int64(i) + 1))
	return nil
}

func (w *writer) strs(ss []string) {
	w.u(len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *writer) u32s(xs []uint32) {
	w.u(len(xs))
	for _, x := range xs {
		w.u32(x)
	}
}

func (w *writer) span(s Span) {
	w.u32(s.File)
	w.u32(s.StartLine)
	w.u32(s.StartCol)
	w.u32(s.EndLine)
	w.u32(s.EndCol)
	w.u32(s.StartOff)
	w.u32(s.EndOff)
}

func (w *writer) ref(r Ref) {
	w.b(byte(r.Kind))
	w.u32(r.Index)
}

func (w *writer) opts(what string, xs ...int32) error {
	for _, x := range xs {
		if err := w.opt(x); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

func (w *writer) attrs(as []Attr) error {
	w.u(len(as))
	for i := range as {
		a := &as[i]
		w.str(a.Name)
		w.b(byte(a.Kind))
		rest := *a // the kind's fields are cleared as they are written; the others must be zero
		switch a.Kind {
		case AttrConst:
			w.u32(a.Const)
			rest.Const = 0
		case AttrEnv:
			w.str(a.Env.Var)
			w.bool(a.Env.HasDefault)
			if a.Env.HasDefault {
				w.str(a.Env.Default)
				rest.Env.Default = ""
			}
			w.u32(a.Env.Type)
			rest.Env.Var, rest.Env.HasDefault, rest.Env.Type = "", false, 0
		case AttrCode:
			w.u32(a.Code)
			rest.Code = 0
		case AttrRef:
			if len(a.Refs) != 1 {
				return fmt.Errorf("attribute %s: a single reference holds %d refs", a.Name, len(a.Refs))
			}
			w.ref(a.Refs[0])
			rest.Refs = nil
		case AttrRefs:
			w.u(len(a.Refs))
			for _, r := range a.Refs {
				w.ref(r)
			}
			rest.Refs = nil
		default:
			return fmt.Errorf("attribute %s: invalid kind %d", a.Name, a.Kind)
		}
		if rest.Const != 0 || rest.Env != (EnvRef{}) || rest.Code != 0 || len(rest.Refs) > 0 {
			return fmt.Errorf("attribute %s: fields set that its kind does not use", a.Name)
		}
		w.span(a.Span)
	}
	return nil
}

// trailer writes the list(attr) span a table entry ends with; kind and
// name (which may be empty) name the entry in an error.
func (w *writer) trailer(kind, name string, as []Attr, s Span) error {
	if err := w.attrs(as); err != nil {
		if name == "" {
			return fmt.Errorf("%s: %w", kind, err)
		}
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	w.span(s)
	return nil
}

func (w *writer) state(s *State) error {
	w.str(s.Name)
	w.span(s.Span)
	w.u(len(s.Fields))
	for _, f := range s.Fields {
		w.str(f.Name)
		w.u32(f.Type)
		w.bool(f.HasDefault)
		if f.HasDefault {
			w.u32(f.Default)
		} else if f.Default != 0 {
			return fmt.Errorf("state %s: field %s: Default set without HasDefault", s.Name, f.Name)
		}
		w.b(byte(f.Reducer))
		w.span(f.Span)
	}
	return nil
}

func (w *writer) chunk(c *Chunk) error {
	w.str(c.Name)
	if err := w.opt(c.State); err != nil {
		return fmt.Errorf("chunk %s: state: %w", c.Name, err)
	}
	w.u32(c.NumLocals)
	w.u32(c.MaxStack)
	w.u(len(c.Code))
	for pc, in := range c.Code {
		if in.Op > OpcodeMax {
			return fmt.Errorf("chunk %s: pc %d: %s", c.Name, pc, in.Op)
		}
		w.b(byte(in.Op))
		if in.Op.HasArg() {
			w.u32(in.Arg)
		} else if in.Arg != 0 {
			return fmt.Errorf("chunk %s: pc %d: %s takes no operand", c.Name, pc, in.Op)
		}
	}
	w.u(len(c.Spans))
	prev := uint32(0)
	for i, s := range c.Spans {
		if i > 0 && s.PC <= prev {
			return fmt.Errorf("chunk %s: span table not in increasing pc order", c.Name)
		}
		w.u32(s.PC - prev)
		prev = s.PC
		w.span(s.Span)
	}
	return nil
}

func (w *writer) call(c *Call) {
	w.b(byte(c.Kind))
	w.u32(c.Callee)
	w.u(len(c.Args))
	for _, a := range c.Args {
		w.str(a.Name)
		w.u32(a.Code)
	}
}

func (c *Call) isZero() bool { return c.Kind == 0 && c.Callee == 0 && len(c.Args) == 0 }

func (w *writer) graph(g *Graph) error {
	w.str(g.Name)
	w.str(g.Doc)
	w.u32(g.State)
	if err := w.opts("graph "+g.Name, g.Input, g.Output); err != nil {
		return err
	}
	w.span(g.Span)
	w.u(len(g.Nodes))
	for i := range g.Nodes {
		if err := w.node(&g.Nodes[i]); err != nil {
			return fmt.Errorf("graph %s: node %s: %w", g.Name, g.Nodes[i].Name, err)
		}
	}
	return nil
}

func (w *writer) node(n *Node) error {
	w.str(n.Name)
	w.b(byte(n.Kind))
	w.span(n.Span)
	if err := w.opts("into", n.Into); err != nil {
		return err
	}
	w.u32(n.Retry.MaxAttempts)
	w.dur(n.Retry.BackoffMin)
	w.dur(n.Retry.BackoffMax)
	w.bool(n.Retry.Jitter)
	w.strs(n.Retry.On)
	w.dur(n.Timeout)
	if err := w.opts("catch", n.Catch); err != nil {
		return err
	}
	w.bool(n.Cache)
	w.dur(n.CacheTTL)
	w.b(byte(n.Effect))
	usesCall, usesMap, usesInterrupt, usesSet, usesJoin, usesWait := false, false, false, false, false, false
	switch n.Kind {
	case NodeLLM, NodeTool, NodeAgent, NodeGraph:
		usesCall = true
		w.call(&n.Call)
	case NodeMap:
		usesCall, usesMap = true, true
		w.call(&n.Call)
		w.str(n.Map.Var)
		w.u32(n.Map.List)
		w.u32(n.Map.Concurrency)
	case NodeInterrupt:
		usesInterrupt = true
		w.u32(n.Interrupt.Prompt)
		w.u32(n.Interrupt.Resume)
	case NodeSet:
		usesSet = true
		w.u(len(n.Set))
		for _, a := range n.Set {
			w.u32(a.Field)
			w.u32(a.Code)
		}
	case NodeJoin:
		usesJoin = true
		w.b(byte(n.Join.Mode))
		w.u32s(n.Join.Preds)
	case NodeWait:
		usesWait = true
		w.u32(n.Wait.Code)
		w.bool(n.Wait.Until)
	case NodeStart, NodeEnd:
	default:
		return fmt.Errorf("invalid node kind %d", n.Kind)
	}
	switch {
	case !usesCall && !n.Call.isZero():
		return errors.New("Call set on a node kind without a call")
	case !usesMap && (n.Map != MapSpec{}):
		return errors.New("Map set on a non-map node")
	case !usesInterrupt && (n.Interrupt != InterruptSpec{}):
		return errors.New("Interrupt set on a non-interrupt node")
	case !usesSet && len(n.Set) > 0:
		return errors.New("Set given on a non-set node")
	case !usesJoin && (n.Join.Mode != 0 || len(n.Join.Preds) > 0):
		return errors.New("Join set on a non-join node")
	case !usesWait && (n.Wait != WaitSpec{}):
		return errors.New("Wait set on a non-wait node")
	}
	w.u(len(n.Edges))
	for i, e := range n.Edges {
		w.b(byte(e.Kind))
		if err := w.opt(e.Cond); err != nil {
			return fmt.Errorf("edge %d: %w", i, err)
		}
		w.u32(e.Target)
		w.u32(e.Max)
		if err := w.opt(e.Else); err != nil {
			return fmt.Errorf("edge %d: %w", i, err)
		}
		w.span(e.Span)
	}
	return nil
}

func (w *writer) tool(t *Tool) error {
	w.str(t.Name)
	w.str(t.Doc)
	w.u32(t.Input)
	w.u32(t.Output)
	w.b(byte(t.Effect))
	im := &t.Impl
	w.b(byte(im.Kind))
	rest := *im // the kind's fields are cleared as they are written; the others must be zero
	switch im.Kind {
	case ImplBuiltin:
		w.str(im.Builtin)
		rest.Builtin = ""
	case ImplHTTP:
		w.str(im.Method)
		w.u32(im.URL)
		if err := w.attrs(im.Headers); err != nil {
			return fmt.Errorf("tool %s: header: %w", t.Name, err)
		}
		rest.Method, rest.URL, rest.Headers = "", 0, nil
	case ImplExec:
		w.u32s(im.Argv)
		w.dur(im.Timeout)
		rest.Argv, rest.Timeout = nil, 0
	case ImplMCP:
	case ImplAgent:
		w.u32(im.Agent)
		rest.Agent = 0
	default:
		return fmt.Errorf("tool %s: invalid implementation kind %d", t.Name, im.Kind)
	}
	if rest.Builtin != "" || rest.Method != "" || rest.URL != 0 || len(rest.Headers) > 0 || len(rest.Argv) > 0 || rest.Timeout != 0 || rest.Agent != 0 {
		return fmt.Errorf("tool %s: implementation fields set that its kind does not use", t.Name)
	}
	if err := w.attrs(im.Options); err != nil {
		return fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return w.trailer("tool", t.Name, t.Attrs, t.Span)
}

func (w *writer) meta(p *Program) error {
	w.str(p.Workflow)
	w.str(p.Doc)
	w.strs(p.Files)
	return nil
}

func (w *writer) model(m *Model) error {
	w.str(m.Name)
	w.str(m.Provider)
	return w.trailer("model", m.Name, m.Attrs, m.Span)
}

func (w *writer) agent(a *Agent) error {
	w.str(a.Name)
	w.str(a.Doc)
	w.b(byte(a.Kind))
	if err := w.opts("agent "+a.Name, a.Model, a.Instruction); err != nil {
		return err
	}
	w.u32s(a.Tools)
	w.u(len(a.Skills))
	for _, g := range a.Skills {
		w.u32(g.Skill)
		w.b(byte(g.Grant))
	}
	w.u32s(a.Policies)
	w.u32(a.MaxTurns)
	w.u32s(a.SubAgents)
	if err := w.opts("agent "+a.Name, a.Until); err != nil {
		return err
	}
	w.u32(a.Max)
	if err := w.opts("agent "+a.Name, a.Graph); err != nil {
		return err
	}
	return w.trailer("agent", a.Name, a.Attrs, a.Span)
}

func (w *writer) skill(s *Skill) error {
	w.str(s.Name)
	w.str(s.Path)
	return w.trailer("skill", s.Name, s.Attrs, s.Span)
}

func (w *writer) policy(p *Policy) error {
	w.b(byte(p.Kind))
	w.str(p.Name)
	return w.trailer("policy", p.Name, p.Attrs, p.Span)
}

func (w *writer) serve(s *Serve) error {
	w.ref(s.Run)
	w.u(len(s.Protocols))
	for _, pr := range s.Protocols {
		w.b(byte(pr.Kind))
		w.str(pr.Path)
		if err := w.trailer("serve protocol", pr.Path, pr.Attrs, pr.Span); err != nil {
			return err
		}
	}
	return w.trailer("serve", "", s.Attrs, s.Span)
}

func (w *writer) test(t *Test) error {
	w.str(t.Name)
	w.ref(t.Run)
	if err := w.opts("test "+t.Name, t.Input); err != nil {
		return err
	}
	w.u(len(t.Fixtures))
	for _, f := range t.Fixtures {
		w.ref(f.Target)
		w.str(f.Path)
	}
	w.u(len(t.Answers))
	for _, a := range t.Answers {
		w.u32(a.Node)
		w.u32(a.Value)
		w.span(a.Span)
	}
	w.u(len(t.Expects))
	for _, e := range t.Expects {
		w.b(byte(e.Kind))
		if err := w.opts("test "+t.Name+": expect", e.Code); err != nil {
			return err
		}
		w.u32(e.First)
		w.u32(e.Then)
		w.span(e.Span)
	}
	return w.trailer("test", t.Name, t.Attrs, t.Span)
}

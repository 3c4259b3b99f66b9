package bytecode

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestOpcodes(t *testing.T) {
	seen := map[string]bool{}
	for op := Opcode(0); op <= OpcodeMax; op++ {
		name := op.String()
		if name == "" || strings.HasPrefix(name, "illegal") || seen[name] {
			t.Errorf("opcode %d: bad or repeated name %q", op, name)
		}
		seen[name] = true
		if int(op) >= len(stackEffect) || int(op) >= len(stackPops) {
			t.Errorf("%s: no stack effect", op)
		}
		if op.HasArg() != (op >= OpcodeArgMin) {
			t.Errorf("%s: HasArg disagrees with OpcodeArgMin", op)
		}
		if op.IsJump() && !op.HasArg() {
			t.Errorf("%s: a jump without an operand", op)
		}
		eff := stackEffect[op]
		if eff == variableStackEffect {
			switch op {
			case CALL, MAKELIST, MAKEMAP, MAKERECORD, INTERP:
			default:
				t.Errorf("%s: unexpected variable stack effect", op)
			}
			if !op.HasArg() {
				t.Errorf("%s: a variable effect needs an operand", op)
			}
		} else if int(stackPops[op])+int(eff) < 0 {
			t.Errorf("%s: pushes a negative number of values", op)
		}
	}
	if got := (OpcodeMax + 1).String(); got != "illegal op (35)" {
		t.Errorf("OpcodeMax+1 = %q", got)
	}
	if len(opcodeNames) != int(OpcodeMax)+1 || len(stackEffect) != int(OpcodeMax)+1 {
		t.Error("opcode tables do not end at OpcodeMax")
	}
	if fn, argc := SplitCallArg(CallArg(1234, 7)); fn != 1234 || argc != 7 {
		t.Error("CallArg round trip")
	}
}

// mustEncode seals p (its hashes are set) and returns its encoding.
func mustEncode(t testing.TB, p *Program) []byte {
	t.Helper()
	b, err := Seal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeIsPure: Encode leaves the program as it was; Seal records the
// hashes the encoding ends with.
func TestEncodeIsPure(t *testing.T) {
	p := supportProgram(t)
	b, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash != ([32]byte{}) || p.States[0].Hash != ([32]byte{}) {
		t.Fatal("Encode modified the program's hashes")
	}
	sealed, err := Seal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, sealed) || p.Hash != HashOf(b) || p.Hash != sha256.Sum256(b[:len(b)-32]) {
		t.Fatal("Seal's encoding or hash differs from Encode's")
	}
	if h, _ := StateHash(p, 0); p.States[0].Hash != h || h == ([32]byte{}) {
		t.Fatal("Seal did not record the state schema hash")
	}
}

func TestRoundTrip(t *testing.T) {
	p := supportProgram(t)
	if err := Verify(p); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	b := mustEncode(t, p)
	if b2 := mustEncode(t, supportProgram(t)); !bytes.Equal(b, b2) {
		t.Fatal("the same program encodes to different bytes")
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if err := Verify(q); err != nil {
		t.Fatalf("Verify(decoded): %v", err)
	}
	if q.Hash != p.Hash || q.States[0].Hash != p.States[0].Hash || p.States[0].Hash == ([32]byte{}) {
		t.Error("hashes differ after decoding")
	}
	if b2 := mustEncode(t, q); !bytes.Equal(b, b2) {
		t.Fatal("encode(decode(b)) != b")
	}
	if Disasm(p) != Disasm(q) {
		t.Error("disassembly differs after decoding")
	}
	if g := &q.Graphs[0]; g.Start() != 0 || g.End() != 1 {
		t.Error("Start/End")
	}
	// An empty program round-trips too.
	e := mustEncode(t, &Program{})
	if _, err := Decode(e); err != nil || len(e) != headerLen+32 {
		t.Errorf("empty program: %v, %d bytes", err, len(e))
	}
}

func TestGolden(t *testing.T) {
	p := supportProgram(t)
	mustEncode(t, p) // seals: sets the hashes
	got := Disasm(p)
	file := filepath.Join("testdata", "support.disasm")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("disassembly differs from %s (go test -update rewrites it):\n%s", file, got)
	}
}

// rehash replaces b's trailing hash with the hash of the rest, so that tests
// can reach the section decoder with damaged content.
func rehash(b []byte) []byte {
	end := len(b) - sha256.Size
	h := sha256.Sum256(b[:end])
	return append(b[:end:end], h[:]...)
}

// sectionAt returns the offset of section id's payload and its size.
func sectionAt(t *testing.T, b []byte, id byte) (int, int) {
	off := headerLen
	for off < len(b)-32 {
		sid := b[off]
		size, n := binary.Uvarint(b[off+1:])
		if sid == id {
			return off + 1 + n, int(size)
		}
		off += 1 + n + int(size)
	}
	t.Fatalf("no section %d", id)
	return 0, 0
}

func TestDecodeErrors(t *testing.T) {
	good := mustEncode(t, supportProgram(t))
	clone := func() []byte { return append([]byte(nil), good...) }
	chunksOff, chunksSize := sectionAt(t, good, secID("chunks"))
	graphsOff, _ := sectionAt(t, good, secID("graphs"))
	for _, tc := range []struct {
		name string
		in   func() []byte
		want string
	}{
		{"empty", func() []byte { return nil }, "not agentc bytecode"},
		{"wrong magic", func() []byte { b := clone(); b[0] = 'X'; return b }, "not agentc bytecode"},
		{"version", func() []byte { b := clone(); b[5] = 2; return b }, "format version 2, want 1"},
		{"no hash", func() []byte { return good[:headerLen+10] }, "content hash truncated at byte 17"},
		{"flipped byte", func() []byte { b := clone(); b[100] ^= 1; return b }, "content hash mismatch"},
		{"truncated", func() []byte { return rehash(append(clone()[:graphsOff+20], make([]byte, 32)...)) },
			"section graphs truncated at byte " + itoa(graphsOff+20)},
		{"unknown section", func() []byte {
			b := clone()
			end := len(b) - 32
			return rehash(append(append(b[:end:end], 99, 0), b[end:]...))
		}, "unknown section id 99 at byte " + itoa(len(good)-32)},
		{"out of order", func() []byte {
			b := clone()
			end := len(b) - 32
			return rehash(append(append(b[:end:end], secID("meta"), 0), b[end:]...))
		}, "section meta out of order at byte " + itoa(len(good)-32)},
		{"illegal opcode", func() []byte {
			b := clone()
			i := bytes.Index(b[chunksOff:chunksOff+chunksSize], []byte("tool.log_dump.url"))
			// name, opt(state)=0, locals, maxstack, ninsns, then the first opcode.
			op := chunksOff + i + len("tool.log_dump.url") + 4
			b[op] = 0x7f
			return rehash(b)
		}, "section chunks: chunk tool.log_dump.url: illegal opcode 0x7f at byte"},
		{"bad bool", func() []byte {
			b := clone()
			off, _ := sectionAt(t, b, secID("states"))
			i := off + bytes.Index(b[off:], []byte("question"))
			// field = str(name) uvarint(type) bool(hasDefault) ...
			b[i+len("question")+1] = 7
			return rehash(b)
		}, "section states: invalid bool 0x07 at byte"},
		{"non-canonical varint", func() []byte {
			b := mustEncode(t, &Program{Workflow: "w"})
			end := len(b) - 32
			// A tests section whose size is an overlong varint.
			return rehash(append(append(b[:end:end], secID("tests"), 0x80, 0x00), b[end:]...))
		}, "section tests: non-canonical varint at byte 14"},
		{"empty section", func() []byte {
			b := mustEncode(t, &Program{Workflow: "w"})
			end := len(b) - 32
			return rehash(append(append(b[:end:end], secID("funcs"), 1, 0), b[end:]...))
		}, "section funcs: empty section at byte 13"},
		{"left over", func() []byte {
			b := mustEncode(t, &Program{Workflow: "w"})
			end := len(b) - 32
			return rehash(append(append(b[:end:end], secID("funcs"), 4, 1, 1, 'f', 0), b[end:]...))
		}, "section funcs: 1 bytes left over at byte 18"},
	} {
		_, err := Decode(tc.in())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestBuilder(t *testing.T) {
	pb := NewProgramBuilder()
	if a, b := pb.Type(types.ListOf(types.IntType)), pb.Type(types.ListOf(types.IntType)); a != b {
		t.Error("identical types not interned")
	}
	i1, _ := pb.Const(types.MakeInt(1))
	i2, _ := pb.Const(types.MakeFloat(1))
	i3, _ := pb.Const(types.MakeInt(1))
	if i1 == i2 || i1 != i3 {
		t.Error("constant interning")
	}
	if _, err := pb.Const(types.MakeSecret("k")); err == nil {
		t.Error("secret constant accepted")
	}
	for _, tc := range []struct {
		name string
		emit func(c *ChunkBuilder)
		want string
	}{
		{"arg on NOP", func(c *ChunkBuilder) { c.Emit(NOP, 3) }, "NOP takes no operand"},
		{"jump via Emit", func(c *ChunkBuilder) { c.Emit(JMP, 0) }, "JMP must be emitted with Jump"},
		{"unbound", func(c *ChunkBuilder) { c.Jump(JMP, c.NewLabel()); c.Emit(TRUE, 0); c.Emit(RETURN, 0) }, "unbound label"},
		{"bound twice", func(c *ChunkBuilder) { l := c.NewLabel(); c.Bind(l); c.Bind(l) }, "label bound twice"},
		{"not a jump", func(c *ChunkBuilder) { c.Jump(ADD, c.NewLabel()) }, "ADD is not a jump"},
		{"backward", func(c *ChunkBuilder) {
			l := c.NewLabel()
			c.Bind(l)
			c.Emit(TRUE, 0)
			c.Jump(JMPIFTRUE, l)
			c.Emit(TRUE, 0)
			c.Emit(RETURN, 0)
		}, "jump is not forward"},
		{"underflow", func(c *ChunkBuilder) { c.Emit(ADD, 0); c.Emit(RETURN, 0) }, "ADD needs 2 operands, stack holds 0"},
		{"empty", func(c *ChunkBuilder) {}, "empty code"},
		{"too many args", func(c *ChunkBuilder) { c.Call("f", 300) }, "at most 255"},
	} {
		c := pb.NewChunk(tc.name, None, 0)
		tc.emit(c)
		if _, err := c.Finish(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	c := pb.NewChunk("ok", None, 0)
	c.Emit(TRUE, 0)
	c.Emit(FALSE, 0)
	c.Emit(NULL, 0)
	c.Emit(MAKELIST, 3)
	c.Emit(RETURN, 0)
	i, err := c.Finish()
	if err != nil || pb.Program().Chunks[i].MaxStack != 3 {
		t.Errorf("Finish = %d, %v; MaxStack %d", i, err, pb.Program().Chunks[i].MaxStack)
	}
}

func TestSpanAt(t *testing.T) {
	c := &Chunk{Code: make([]Insn, 6), Spans: []PCSpan{{PC: 1, Span: sp(1, 1)}, {PC: 4, Span: sp(2, 1)}}}
	for pc, want := range []uint32{0, 1, 1, 1, 2, 2} {
		if got := c.SpanAt(pc).StartLine; got != want {
			t.Errorf("SpanAt(%d) line %d, want %d", pc, got, want)
		}
	}
}

func TestResolveEnvAndBind(t *testing.T) {
	p := supportProgram(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	base, err := p.ResolveEnv(p.Models[0].Attrs[1].Env, lookup)
	if err != nil || base.Kind() != types.ValString || base.Str() != "" {
		t.Errorf("base_url = %v, %v", base, err)
	}
	key, err := p.ResolveEnv(p.Models[0].Attrs[2].Env, lookup)
	if err != nil || key.Kind() != types.ValSecret || key.SecretText() != "sk-1" {
		t.Errorf("api_key = %v, %v", key, err)
	}
	delete(env, "OPENAI_API_KEY")
	if _, err := p.ResolveEnv(p.Models[0].Attrs[2].Env, lookup); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
		t.Errorf("unset: %v", err)
	}
	pb := NewProgramBuilder()
	pb.Type(types.IntType)
	q := pb.Program()
	env["N"] = "x"
	if _, err := q.ResolveEnv(EnvRef{Var: "N", Type: 0}, lookup); err == nil || !strings.Contains(err.Error(), "want int") {
		t.Errorf("bad int: %v", err)
	}

	impls, err := BindFuncs(p, map[string]int{"len": 1, "context_ratio": 2})
	if err != nil || len(impls) != len(p.Funcs) {
		t.Errorf("BindFuncs = %v, %v", impls, err)
	}
	if _, err := BindFuncs(p, map[string]int{"len": 1}); err == nil || !strings.Contains(err.Error(), `unknown builtin function "context_ratio"`) {
		t.Errorf("BindFuncs missing: %v", err)
	}
}

// TestDecodeMinimalElements checks that the per-element minimum sizes the
// decoder assumes for its count checks are not larger than the smallest
// encodings: tables of the smallest possible elements must decode.
func TestDecodeMinimalElements(t *testing.T) {
	const n = 3
	p := &Program{
		Files:    make([]string, n),
		Consts:   make([]types.Value, n),
		Types:    []*types.Type{types.IntType, types.IntType, types.IntType},
		Funcs:    make([]string, n),
		States:   []State{{Fields: make([]StateField, n)}, {}, {}},
		Chunks:   []Chunk{{Code: []Insn{{}}, Spans: make([]PCSpan, 1)}, {}, {}},
		Graphs:   []Graph{{Nodes: []Node{{Kind: NodeStart, Edges: make([]Edge, n)}, {Kind: NodeEnd}, {Kind: NodeSet, Set: make([]Assign, n)}}}, {}, {}},
		Tools:    []Tool{{Impl: ToolImpl{Kind: ImplAgent}}, {Impl: ToolImpl{Kind: ImplAgent}}, {Impl: ToolImpl{Kind: ImplBuiltin}}},
		Models:   []Model{{Attrs: []Attr{{Kind: AttrConst}, {Kind: AttrCode}, {Kind: AttrRefs}}}, {}, {}},
		Agents:   []Agent{{Skills: make([]SkillGrant, n)}, {}, {}},
		Skills:   make([]Skill, n),
		Policies: make([]Policy, n),
		Serve:    &Serve{Protocols: make([]Protocol, n)},
		Tests:    []Test{{Fixtures: make([]Fixture, n), Answers: make([]Answer, n), Expects: make([]Expect, n)}, {}, {}},
	}
	b := mustEncode(t, p)
	q, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if b2 := mustEncode(t, q); !bytes.Equal(b, b2) {
		t.Error("round trip differs")
	}
}

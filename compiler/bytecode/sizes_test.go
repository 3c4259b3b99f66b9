package bytecode

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

// sizedProgram is the support program with a size on its evidence list
// (field 2): one section 16 entry.
func sizedProgram(t testing.TB) *Program {
	p := supportProgram(t)
	p.States[0].Fields[2].MaxLen = 3
	return p
}

// A list size is encoded in section 16, round-trips, shows in the
// disassembly and enters the schema hash; a program without sizes encodes
// and hashes as before (no section 16).
func TestSizesRoundTrip(t *testing.T) {
	plain := supportProgram(t)
	if q, err := Decode(mustEncode(t, plain)); err != nil || !sizesEmpty(q) {
		t.Fatalf("a program without sizes: %v", err)
	}
	p := sizedProgram(t)
	b := mustEncode(t, p)
	if off, n := sectionAt(t, b, secID("sizes")); n != 4 || !bytes.Equal(b[off:off+n], []byte{1, 0, 2, 3}) {
		t.Fatalf("section 16 = %x", b[off:off+n])
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(q); err != nil {
		t.Fatal(err)
	}
	if got := q.States[0].Fields[2].MaxLen; got != 3 {
		t.Errorf("decoded MaxLen %d", got)
	}
	if again := mustEncode(t, q); !bytes.Equal(again, b) {
		t.Error("encode(decode(b)) != b")
	}
	if q.States[0].Hash != p.States[0].Hash || p.States[0].Hash == plain.States[0].Hash {
		t.Error("the size does not enter the schema hash")
	}
	if dis := Disasm(q); !strings.Contains(dis, " evidence list<string> max 3 reduce append\n") {
		t.Errorf("disasm lacks the size:\n%s", dis)
	}
}

func TestSizesDecodeErrors(t *testing.T) {
	good := mustEncode(t, sizedProgram(t))
	off, n := sectionAt(t, good, secID("sizes"))
	with := func(payload ...byte) []byte {
		b := append([]byte(nil), good[:off-2]...) // section id and size byte
		b = append(b, secID("sizes"), byte(len(payload)))
		b = append(b, payload...)
		b = append(b, good[off+n:]...)
		return rehash(b)
	}
	if _, err := Decode(with(1, 0, 2, 3)); err != nil {
		t.Fatalf("the helper does not rebuild the good file: %v", err)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"no state", []byte{1, 1, 0, 3}, "size of field 0 of state 1, which does not exist"},
		{"no field", []byte{1, 0, 9, 3}, "size of field 9 of state 0, which does not exist"},
		{"zero", []byte{1, 0, 2, 0}, "size 0 out of range"},
		{"too large", []byte{1, 0, 2, 0x80, 0x80, 0x80, 0x80, 0x08}, "size 2147483648 out of range"},
		{"repeated", []byte{2, 0, 2, 3, 0, 2, 4}, "sizes out of order"},
		{"descending", []byte{2, 0, 3, 3, 0, 2, 4}, "sizes out of order"},
		{"empty", []byte{0}, "empty section"},
		{"truncated", []byte{2, 0, 2, 3}, "exceeds the section"},
	} {
		_, err := Decode(with(tc.payload...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSizesVerifyAndEncode(t *testing.T) {
	p := supportProgram(t)
	p.States[0].Fields[0].MaxLen = 2 // question: a string
	if err := Verify(p); err == nil || !strings.Contains(err.Error(), "field question has a size but is string, not a list") {
		t.Errorf("Verify: %v", err)
	}
	p = supportProgram(t)
	p.States[0].Fields[2].MaxLen = MaxListSize + 1
	if _, err := Encode(p); err == nil || !strings.Contains(err.Error(), "above") {
		t.Errorf("Encode: %v", err)
	}
}

func TestCheckSize(t *testing.T) {
	f := &StateField{Name: "xs", MaxLen: 2}
	list := func(n int) types.Value { return types.MakeList(make([]types.Value, n)) }
	for _, tc := range []struct {
		v  types.Value
		ok bool
	}{{list(0), true}, {list(2), true}, {types.Value{}, true}, {types.MakeString("abc"), true}, {list(3), false}} {
		err := f.CheckSize(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSize(%v) = %v", tc.v, err)
		}
	}
	var se *SizeError
	if err := f.CheckLen(5); !errors.As(err, &se) || se.Len != 5 || se.Max != 2 || err.Error() != "field xs: a list of 5 elements, past its max of 2" {
		t.Errorf("CheckLen(5) = %v", err)
	}
	if err := (&StateField{Name: "ys"}).CheckLen(1 << 30); err != nil {
		t.Errorf("an unsized field: %v", err)
	}
}

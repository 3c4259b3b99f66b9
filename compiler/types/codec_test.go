package types

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func enc(t testing.TB, v Value) []byte {
	t.Helper()
	b, err := AppendValue(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func message(t testing.TB, role, content string) Value {
	return rec(t, MessageType, str(role), str(content), Value{}, Value{})
}

func TestCodecBytes(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string // hex
	}{
		{Value{}, "01"},
		{MakeBool(false), "02"},
		{MakeBool(true), "03"},
		{MakeInt(0), "0400"},
		{MakeInt(-1), "0401"},
		{MakeInt(300), "04d804"},
		{MakeFloat(1), "05000000000000f03f"},
		{str("hi"), "06026869"},
		{MakeDuration(time.Second), "0780a8d6b907"},
		{list(MakeInt(1), Value{}), "0802040201"},
		{mapOf(t, "b", MakeInt(1), "a", Value{}), "090201610101620402"},
		// Two records of one shape: a definition, then a reference.
		{list(message(t, "user", "a"), message(t, "user", "b")),
			"0802" + "0a04" + "04726f6c65" + "07636f6e74656e74" + "046e616d65" + "0c746f6f6c5f63616c6c5f6964" +
				"060475736572" + "060161" + "01" + "01" +
				"0b00" + "060475736572" + "060162" + "01" + "01"},
	} {
		if got := hex.EncodeToString(enc(t, tc.v)); got != tc.want {
			t.Errorf("encode %v = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	tr := triage(t)
	other, _ := NewShape("role", "content", "name", "tool_call_id") // equal names, different pointer
	m2, _ := MakeRecord(other, []Value{str("assistant"), str("ok"), str("bot"), Value{}})
	for _, v := range []Value{
		Value{}, MakeInt(math.MinInt64), MakeInt(math.MaxInt64), MakeFloat(-1.5), MakeFloat(math.NaN()),
		MakeFloat(math.Inf(1)), str(""), str("\xff\x00"), MakeDuration(-time.Hour),
		list(), mapOf(t), rec(t, mustRec(t, "")),
		list(rec(t, tr, str("network"), list(str("a"), str("b"))), rec(t, tr, str("other"), list())),
		list(message(t, "user", "x"), m2, message(t, "tool", "y")),
		mapOf(t, "x", list(mapOf(t, "y", MakeBool(true)))),
	} {
		b := enc(t, v)
		for _, decode := range []func([]byte) (Value, int, error){
			func(b []byte) (Value, int, error) { return DecodeValue(b) },
			func(b []byte) (Value, int, error) { return DecodeValue(string(b)) },
		} {
			got, n, err := decode(b)
			if err != nil || n != len(b) {
				t.Fatalf("decode %v: %v, %d/%d", v, err, n, len(b))
			}
			if !Equal(got, v) && !(v.Kind() == ValFloat && math.IsNaN(v.Float())) {
				t.Errorf("round trip %v = %v", v, got)
			}
			if b2 := enc(t, got); !bytes.Equal(b, b2) {
				t.Errorf("re-encode %v: %x != %x", v, b2, b)
			}
		}
	}
	if _, err := AppendValue(nil, list(MakeSecret("k"))); err != ErrSecret {
		t.Errorf("secret encoded: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	deep := []byte{}
	for i := 0; i <= MaxDepth; i++ {
		deep = append(deep, tagList, 1)
	}
	deep = append(deep, tagNull)
	for _, tc := range []struct {
		name string
		in   string // hex
		want string
	}{
		{"empty", "", "value truncated at byte 0"},
		{"unknown tag", "ff", "unknown value tag 0xff at byte 0"},
		{"zero tag", "00", "unknown value tag 0x00 at byte 0"},
		{"truncated int", "04", "int truncated at byte 1"},
		{"truncated float", "050000", "float truncated at byte 3"},
		{"negative zero", "050000000000000080", "non-canonical float at byte 0"},
		{"other NaN", "05000000000000f87f", "non-canonical float at byte 0"},
		{"overlong varint", "048000", "non-canonical varint at byte 1"},
		{"varint overflow", "04ffffffffffffffffff7f", "varint overflows 64 bits at byte 1"},
		{"truncated string", "060561", "string truncated at byte 3"},
		{"huge list", "08ffffffff0f", "list count 4294967295 exceeds the remaining input at byte 1"},
		{"truncated list", "08020601", "string truncated at byte 4"},
		{"keys out of order", "09020162010161 01", "map keys out of order at byte 5"},
		{"duplicate key", "090201610101610 1", "map keys out of order at byte 5"},
		{"undefined shape", "0b00", "record shape 0 not defined at byte 0"},
		{"shape twice", "08020a01017801" + "0a01017801", "record shape defined twice at byte 7"},
		{"repeated field", "0a02017801780101", `field "x" repeated at byte 4`},
		{"too deep", hex.EncodeToString(deep), fmt.Sprintf("value nested deeper than %d at byte %d", MaxDepth, 2*MaxDepth)},
	} {
		in, err := hex.DecodeString(strings.ReplaceAll(tc.in, " ", ""))
		if err != nil {
			t.Fatalf("%s: bad hex: %v", tc.name, err)
		}
		_, _, err = DecodeValue(in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func FuzzDecodeValue(f *testing.F) {
	tr := triage(f)
	for _, v := range []Value{
		Value{}, MakeInt(-7), MakeFloat(2.5), str("x"), MakeDuration(time.Minute),
		list(message(f, "user", "hi"), message(f, "assistant", "yo")),
		mapOf(f, "a", list(rec(f, tr, str("network"), list(str("h")))), "b", MakeBool(true)),
	} {
		f.Add(enc(f, v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := DecodeValue(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		out, err := AppendValue(nil, v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(out, b[:n]) {
			t.Fatalf("not canonical:\n in  %x\n out %x", b[:n], out)
		}
		vs, ns, err := DecodeValue(string(b))
		if err != nil || ns != n || !bytes.Equal(enc(t, vs), out) {
			t.Fatalf("string decode differs: %v", err)
		}
		_, _ = ToJSON(v) // must not panic
		_ = v.String()
	})
}

// stateValue is the benchmark state: a record with a 10 KiB string and a
// 200-message transcript.
func stateValue(b testing.TB) (Value, *Type) {
	typ := mustRec(b, "State", Field{Name: "report", Type: StringType}, Field{Name: "history", Type: MessagesType})
	msgs := make([]Value, 200)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = message(b, role, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 8)))
	}
	return rec(b, typ, str(strings.Repeat("r", 10<<10)), MakeList(msgs)), typ
}

func BenchmarkCompareInt(b *testing.B) {
	x, y := MakeInt(1), MakeInt(2)
	b.ReportAllocs()
	s := 0
	for b.Loop() {
		c, _ := Compare(x, y)
		s += c
	}
	_ = s
}

func BenchmarkEncodeState(b *testing.B) {
	v, _ := stateValue(b)
	buf := enc(b, v)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendValue(buf[:0], v)
	}
}

func BenchmarkDecodeState(b *testing.B) {
	v, _ := stateValue(b)
	buf := enc(b, v)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeValue(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStateString(b *testing.B) {
	v, _ := stateValue(b)
	s := string(enc(b, v))
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeValue(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvertState(b *testing.B) {
	v, typ := stateValue(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Convert(v, typ); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodeType(f *testing.F) {
	for _, typ := range []*Type{StringType, MessagesType, ErrorType, triage(f), OptionalOf(MapOf(DurationType)),
		mustRec(f, "", Field{Name: "port", Type: IntType, HasDefault: true, Default: MakeInt(443)})} {
		b, err := AppendType(nil, typ)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, n, err := DecodeType(b)
		if err != nil {
			return
		}
		out, err := AppendType(nil, typ)
		if err != nil || !bytes.Equal(out, b[:n]) {
			t.Fatalf("type %s not canonical: %v\n in  %x\n out %x", typ.Literal(), err, b[:n], out)
		}
		_ = JSONSchema(typ)
		_ = typ.String()
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x\u00e9",true,null]}`, `"\ud83d\ude00"`, `-0.0e+1`, `[]`, `{"b":{},"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJSON(b)
		if err != nil {
			return
		}
		out, err := ToJSON(v)
		if err != nil {
			t.Fatalf("ToJSON: %v", err)
		}
		w, err := ParseJSON(out)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v\n%s", err, out)
		}
		out2, _ := ToJSON(w)
		if !bytes.Equal(out, out2) {
			t.Fatalf("canonical JSON not stable:\n%s\n%s", out, out2)
		}
	})
}

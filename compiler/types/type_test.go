package types

import (
	"strings"
	"testing"
)

func mustEnum(t testing.TB, name string, lits ...string) *Type {
	t.Helper()
	e, err := NewEnum(name, lits)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustRec(t testing.TB, name string, fields ...Field) *Type {
	t.Helper()
	r, err := NewRecord(name, fields)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// triage is the worked example's `type Triage { verdict: ..., hosts: list<string> }`.
func triage(t testing.TB) *Type {
	return mustRec(t, "Triage",
		Field{Name: "verdict", Type: mustEnum(t, "", "certificate", "network", "other")},
		Field{Name: "hosts", Type: ListOf(StringType)},
	)
}

func TestTypeString(t *testing.T) {
	tr := triage(t)
	for _, tc := range []struct {
		typ  *Type
		want string
	}{
		{StringType, "string"},
		{DurationType, "duration"},
		{ListOf(StringType), "list<string>"},
		{MapOf(ListOf(IntType)), "map<list<int>>"},
		{OptionalOf(tr), "Triage?"},
		{OptionalOf(OptionalOf(IntType)), "int?"},
		{mustEnum(t, "", "a", "b"), `"a" | "b"`},
		{OptionalOf(mustEnum(t, "", "a", "b")), `("a" | "b")?`},
		{mustEnum(t, "Verdict", "a"), "Verdict"},
		{MessagesType, "messages"},
		{ErrorType, "error"},
		{SecretType, "secret"},
		{JSONType, "json"},
		{mustRec(t, "", Field{Name: "host", Type: StringType},
			Field{Name: "port", Type: IntType, HasDefault: true, Default: MakeInt(443)}),
			"{ host: string, port: int = 443 }"},
		{mustRec(t, ""), "{}"},
		{nil, "invalid"},
	} {
		if got := tc.typ.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	if got, want := tr.Literal(), `{ verdict: "certificate" | "network" | "other", hosts: list<string> }`; got != want {
		t.Errorf("Literal() = %q, want %q", got, want)
	}
}

func TestConstructorErrors(t *testing.T) {
	if _, err := NewEnum("", nil); err == nil {
		t.Error("empty enum accepted")
	}
	if _, err := NewEnum("", []string{"a", "a"}); err == nil || !strings.Contains(err.Error(), `"a" repeated`) {
		t.Errorf("duplicate literal: %v", err)
	}
	if _, err := NewRecord("", []Field{{Name: "a", Type: IntType}, {Name: "a", Type: IntType}}); err == nil {
		t.Error("duplicate field accepted")
	}
	if _, err := NewRecord("", []Field{{Name: "", Type: IntType}}); err == nil {
		t.Error("empty field name accepted")
	}
	if _, err := NewRecord("", []Field{{Name: "a"}}); err == nil {
		t.Error("nil field type accepted")
	}
	if _, err := NewRecord("", []Field{{Name: "a", Type: IntType, HasDefault: true, Default: MakeString("x")}}); err == nil {
		t.Error("ill-typed default accepted")
	}
	r := mustRec(t, "", Field{Name: "x", Type: FloatType, HasDefault: true, Default: MakeInt(1)})
	if d := r.Field(0).Default; d.Kind() != ValFloat {
		t.Errorf("default not converted to float: %v", d.Kind())
	}
}

func TestIdenticalAndAssignable(t *testing.T) {
	tr := triage(t)
	tr2 := triage(t)
	ab := mustEnum(t, "", "a", "b")
	abc := mustEnum(t, "", "a", "b", "c")
	ba := mustEnum(t, "", "b", "a")
	named := mustRec(t, "Other", Field{Name: "verdict", Type: mustEnum(t, "", "other", "network", "certificate", "x")}, Field{Name: "hosts", Type: ListOf(StringType)})
	withExtra := mustRec(t, "", Field{Name: "hosts", Type: ListOf(StringType)},
		Field{Name: "verdict", Type: ab}, Field{Name: "note", Type: OptionalOf(StringType)})
	withReq := mustRec(t, "", Field{Name: "verdict", Type: ab}, Field{Name: "n", Type: IntType})
	small := mustRec(t, "", Field{Name: "verdict", Type: ab})

	if !Identical(tr, tr2) || Identical(tr, named) || Identical(ab, ba) || !Identical(ListOf(tr), ListOf(tr2)) {
		t.Error("Identical wrong")
	}
	for _, tc := range []struct {
		src, dst *Type
		want     bool
	}{
		{IntType, IntType, true},
		{IntType, FloatType, true},
		{FloatType, IntType, false},
		{ab, StringType, true},
		{StringType, ab, false},
		{ab, abc, true},
		{abc, ab, false},
		{ab, ba, true},
		{IntType, OptionalOf(IntType), true},
		{OptionalOf(IntType), IntType, false},
		{NullType, OptionalOf(tr), true},
		{NullType, IntType, false},
		{OptionalOf(IntType), OptionalOf(FloatType), true},
		{tr, JSONType, true},
		{SecretType, JSONType, false},
		{ListOf(SecretType), JSONType, false},
		{SecretType, StringType, false},
		{StringType, SecretType, false},
		{SecretType, SecretType, true},
		{ListOf(IntType), ListOf(FloatType), true},
		{MapOf(ab), MapOf(StringType), true},
		{MessagesType, ListOf(MessageType), true},
		{ListOf(MessageType), MessagesType, true},
		{DurationType, IntType, false},
		{small, withExtra, false}, // hosts is required in withExtra
		{tr, withExtra, false},    // verdict: 3 literals into 2
		{mustRec(t, "", Field{Name: "hosts", Type: ListOf(StringType)}, Field{Name: "verdict", Type: ab}), withExtra, true},
		{withExtra, tr, false}, // note unknown in Triage
		{small, withReq, false},
		{tr, named, true}, // structural: names ignored
	} {
		if got := AssignableTo(tc.src, tc.dst); got != tc.want {
			t.Errorf("AssignableTo(%s, %s) = %v, want %v", tc.src, tc.dst, got, tc.want)
		}
	}
}

func TestHash(t *testing.T) {
	a, b := Hash(triage(t)), Hash(triage(t))
	if a != b {
		t.Error("hash of identical types differs")
	}
	types := []*Type{StringType, IntType, FloatType, ListOf(IntType), MapOf(IntType), OptionalOf(IntType),
		mustEnum(t, "", "a", "b"), mustEnum(t, "", "b", "a"), mustEnum(t, "E", "a", "b"), triage(t),
		mustRec(t, "", Field{Name: "x", Type: IntType, HasDefault: true, Default: MakeInt(1)}),
		mustRec(t, "", Field{Name: "x", Type: IntType, HasDefault: true, Default: MakeInt(2)}),
		mustRec(t, "", Field{Name: "x", Type: IntType}), MessagesType, ListOf(MessageType), ErrorType, JSONType, SecretType, NullType, BoolType, DurationType}
	seen := map[[32]byte]string{}
	for _, typ := range types {
		h := Hash(typ)
		if prev, dup := seen[h]; dup {
			t.Errorf("hash collision: %s and %s", prev, typ)
		}
		seen[h] = typ.Literal()
	}
}

func TestTypeCodecRoundTrip(t *testing.T) {
	for _, typ := range []*Type{StringType, MessagesType, ErrorType, triage(t), OptionalOf(triage(t)),
		MapOf(ListOf(OptionalOf(DurationType))),
		mustRec(t, "Cfg", Field{Name: "port", Type: IntType, HasDefault: true, Default: MakeInt(443)},
			Field{Name: "w", Type: FloatType, HasDefault: true, Default: MakeFloat(0.5)},
			Field{Name: "tags", Type: ListOf(StringType), HasDefault: true, Default: MakeList([]Value{MakeString("x")})}),
	} {
		b, err := AppendType(nil, typ)
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := DecodeType(b)
		if err != nil || n != len(b) {
			t.Fatalf("DecodeType(%s) = %v, %d, %v", typ, got, n, err)
		}
		if !Identical(got, typ) {
			t.Errorf("round trip: got %s, want %s", got.Literal(), typ.Literal())
		}
		b2, _ := AppendType(nil, got)
		if string(b2) != string(b) {
			t.Errorf("re-encoding %s differs", typ)
		}
		if got2, _, err := DecodeType(string(b)); err != nil || !Identical(got2, typ) {
			t.Errorf("DecodeType(string) = %v, %v", got2, err)
		}
	}
}

func TestTypeCodecErrors(t *testing.T) {
	enc := func(typ *Type) []byte { b, _ := AppendType(nil, typ); return b }
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "type truncated at byte 0"},
		{"unknown kind", []byte{0x7f}, "unknown type kind 0x7f at byte 0"},
		{"zero kind", []byte{0}, "unknown type kind 0x00 at byte 0"},
		{"optional of optional", []byte{byte(KindOptional), byte(KindOptional), byte(KindInt)}, "optional of optional type at byte 0"},
		{"truncated list", []byte{byte(KindList)}, "type truncated at byte 1"},
		{"dup enum", []byte{byte(KindEnum), 0, 2, 1, 'a', 1, 'a'}, `enum literal "a" repeated at byte 0`},
		{"bad flags", append([]byte{byte(KindRecord), 0, 1, 1, 'x', 7}, byte(KindInt)), "invalid field flags 0x07 at byte 5"},
		{"non-canonical default", []byte{byte(KindRecord), 0, 1, 1, 'x', 1, byte(KindFloat), tagInt, 2}, `default of field "x" not in canonical form at byte 7`},
		{"bad default", []byte{byte(KindRecord), 0, 1, 1, 'x', 1, byte(KindInt), tagString, 0}, `default of field "x"`},
		{"truncated record", enc(triage(t))[:10], "record type count 2 exceeds the remaining input at byte 8"},
		{"truncated field", enc(triage(t))[:20], "truncated at byte 20"},
	} {
		_, _, err := DecodeType(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	deep := IntType
	for i := 0; i < MaxDepth+1; i++ {
		deep = ListOf(deep)
	}
	if _, err := AppendType(nil, deep); err == nil {
		t.Error("too-deep type encoded")
	}
}

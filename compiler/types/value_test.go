package types

import (
	"math"
	"strings"
	"testing"
	"time"
)

func str(s string) Value { return MakeString(s) }

func list(xs ...Value) Value { return MakeList(xs) }

func mapOf(t testing.TB, kv ...any) Value {
	t.Helper()
	var keys []string
	var vals []Value
	for i := 0; i < len(kv); i += 2 {
		keys = append(keys, kv[i].(string))
		vals = append(vals, kv[i+1].(Value))
	}
	m, err := MakeMap(keys, vals)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func rec(t testing.TB, typ *Type, vals ...Value) Value {
	t.Helper()
	r, err := MakeRecord(typ.Shape(), vals)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEqualCompare(t *testing.T) {
	tr := triage(t)
	nan := MakeFloat(math.NaN())
	for _, tc := range []struct {
		a, b  Value
		equal bool
		cmp   int
		ok    bool
	}{
		{MakeInt(1), MakeInt(2), false, -1, true},
		{MakeInt(2), MakeInt(2), true, 0, true},
		{MakeInt(1), MakeFloat(1), true, 0, true},
		{MakeFloat(1.5), MakeInt(1), false, 1, true},
		{MakeInt(math.MaxInt64), MakeFloat(9223372036854775808.0), false, -1, true},
		{MakeInt(-3), MakeFloat(-2.5), false, -1, true},
		{MakeFloat(-0.0), MakeFloat(0), true, 0, true},
		{nan, nan, false, 0, false},
		{nan, MakeInt(0), false, 0, false},
		{str("a"), str("b"), false, -1, true},
		{str("é"), str("é"), true, 0, true},
		{MakeBool(false), MakeBool(true), false, -1, true},
		{MakeDuration(time.Second), MakeDuration(time.Millisecond), false, 1, true},
		{MakeDuration(time.Second), MakeInt(int64(time.Second)), false, 0, false},
		{Value{}, Value{}, true, 0, false},
		{list(MakeInt(1), str("x")), list(MakeFloat(1), str("x")), true, 0, false},
		{list(MakeInt(1)), list(MakeInt(1), MakeInt(2)), false, 0, false},
		{mapOf(t, "a", MakeInt(1)), mapOf(t, "a", MakeInt(1)), true, 0, false},
		{mapOf(t, "a", MakeInt(1)), mapOf(t, "b", MakeInt(1)), false, 0, false},
		{rec(t, tr, str("network"), list()), rec(t, triage(t), str("network"), list()), true, 0, false},
		{rec(t, tr, str("network"), list()), mapOf(t, "hosts", list(), "verdict", str("network")), false, 0, false},
		{MakeSecret("k"), str("k"), false, 0, false},
	} {
		if got := Equal(tc.a, tc.b); got != tc.equal {
			t.Errorf("Equal(%v, %v) = %v", tc.a, tc.b, got)
		}
		if got := Equal(tc.b, tc.a); got != tc.equal {
			t.Errorf("Equal(%v, %v) = %v (reversed)", tc.b, tc.a, got)
		}
		c, ok := Compare(tc.a, tc.b)
		if ok != tc.ok || c != tc.cmp {
			t.Errorf("Compare(%v, %v) = %d, %v; want %d, %v", tc.a, tc.b, c, ok, tc.cmp, tc.ok)
		}
		if c2, ok2 := Compare(tc.b, tc.a); ok2 != tc.ok || c2 != -tc.cmp {
			t.Errorf("Compare(%v, %v) = %d, %v (reversed)", tc.b, tc.a, c2, ok2)
		}
	}
}

func TestComparisonsDoNotAllocate(t *testing.T) {
	a, b := MakeInt(3), MakeInt(4)
	s1, s2 := str(strings.Repeat("x", 100)), str(strings.Repeat("x", 99)+"y")
	l1, l2 := list(a, b, s1), list(a, b, s1)
	var sink int
	allocs := testing.AllocsPerRun(1000, func() {
		c, _ := Compare(a, b)
		d, _ := Compare(s1, s2)
		e, _ := Compare(a, MakeFloat(2.5))
		if Equal(l1, l2) {
			sink++
		}
		sink += c + d + e
	})
	if allocs != 0 {
		t.Errorf("comparisons allocate %v times per run", allocs)
	}
	_ = sink
}

func TestPersistentUpdates(t *testing.T) {
	l := list(MakeInt(1))
	l2 := ListAppend(l, MakeInt(2))
	if l.Len() != 1 || l2.Len() != 2 || l2.Elem(1).Int() != 2 {
		t.Errorf("ListAppend: %v, %v", l, l2)
	}
	if got := ListAppend(Value{}, str("a")); got.String() != `["a"]` {
		t.Errorf("append to null = %v", got)
	}
	m := mapOf(t, "b", MakeInt(2), "a", MakeInt(1))
	if m.String() != `{"a": 1, "b": 2}` {
		t.Errorf("MakeMap order: %v", m)
	}
	m2 := MapSet(m, "c", MakeInt(3))
	m3 := MapSet(m2, "a", MakeInt(9))
	if m.String() != `{"a": 1, "b": 2}` || m2.String() != `{"a": 1, "b": 2, "c": 3}` || m3.String() != `{"a": 9, "b": 2, "c": 3}` {
		t.Errorf("MapSet: %v %v %v", m, m2, m3)
	}
	mm := MapMerge(mapOf(t, "a", MakeInt(1), "c", MakeInt(3)), mapOf(t, "b", MakeInt(2), "c", MakeInt(4)))
	if mm.String() != `{"a": 1, "b": 2, "c": 4}` {
		t.Errorf("MapMerge = %v", mm)
	}
	if _, err := MakeMap([]string{"a", "a"}, []Value{{}, {}}); err == nil {
		t.Error("duplicate keys accepted")
	}
	r := rec(t, triage(t), str("other"), list())
	r2 := WithField(r, 0, str("network"))
	if v, _ := r.Field("verdict"); v.Str() != "other" {
		t.Error("WithField modified its argument")
	}
	if v, _ := r2.Field("verdict"); v.Str() != "network" {
		t.Error("WithField did not set")
	}
	if _, err := MakeRecord(triage(t).Shape(), nil); err == nil {
		t.Error("short record accepted")
	}
	if _, err := NewShape("a", "a"); err == nil {
		t.Error("duplicate shape names accepted")
	}
}

func TestAccessors(t *testing.T) {
	l := list(str("a"), str("b"))
	m := mapOf(t, "k", MakeInt(1))
	for _, tc := range []struct {
		c, k Value
		want string
		err  string
	}{
		{l, MakeInt(1), `"b"`, ""},
		{l, MakeInt(2), "", "list index 2 out of range [0, 2)"},
		{l, MakeInt(-1), "", "out of range"},
		{l, str("x"), "", "list index must be int, not string"},
		{m, str("k"), "1", ""},
		{m, str("z"), "null", ""},
		{m, MakeInt(0), "", "map key must be string"},
		{str("s"), MakeInt(0), "", "cannot index string"},
	} {
		got, err := Index(tc.c, tc.k)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Index(%v, %v) err = %v, want %q", tc.c, tc.k, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("Index(%v, %v) = %v, %v; want %s", tc.c, tc.k, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c, x      Value
		found, ok bool
	}{
		{l, str("a"), true, true},
		{l, str("z"), false, true},
		{m, str("k"), true, true},
		{m, MakeInt(1), false, false},
		{str("hello"), str("ell"), true, true},
		{MakeInt(1), MakeInt(1), false, false},
	} {
		if f, ok := Contains(tc.c, tc.x); f != tc.found || ok != tc.ok {
			t.Errorf("Contains(%v, %v) = %v, %v", tc.c, tc.x, f, ok)
		}
	}
	if n := str("héllo").Len(); n != 5 {
		t.Errorf("Len(héllo) = %d", n)
	}
	if MakeInt(1).Len() != -1 || m.Len() != 1 || l.Len() != 2 {
		t.Error("Len wrong")
	}
	if MakeSecret("tok").Str() != "" || MakeSecret("tok").SecretText() != "tok" || MakeSecret("tok").String() != "<secret>" {
		t.Error("secret leaks through Str or String")
	}
	if v, ok := m.Field("k"); !ok || v.Int() != 1 {
		t.Error("Field on map")
	}
	if l.Elem(5).Kind() != ValNull || MakeInt(3).Float() != 0 || str("x").Int() != 0 {
		t.Error("accessors on wrong kinds must return zero")
	}
}

func TestValueString(t *testing.T) {
	r := rec(t, triage(t), str("network"), list(str("a.example")))
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Value{}, "null"},
		{MakeFloat(2), "2.0"},
		{MakeFloat(1e21), "1e+21"},
		{MakeFloat(math.Inf(-1)), "-Inf"},
		{MakeDuration(1500 * time.Millisecond), "1.5s"},
		{str("a\"b\n"), `"a\"b\n"`},
		{r, `{verdict: "network", hosts: ["a.example"]}`},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}

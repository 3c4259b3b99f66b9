package types

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestToJSON(t *testing.T) {
	r := rec(t, triage(t), str("network"), list(str("a"), str("b")))
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Value{}, "null"},
		{MakeBool(true), "true"},
		{MakeInt(-42), "-42"},
		{MakeFloat(3), "3"},
		{MakeFloat(0.1), "0.1"},
		{MakeFloat(1e21), "1e+21"},
		{MakeFloat(1e-7), "1e-7"},
		{MakeFloat(123456789.5), "123456789.5"},
		{str("a\"\\\n\t\x01<>&é"), `"a\"\\\n\t\u0001<>&é"`},
		{str("bad\xffutf8"), "\"bad\ufffdutf8\""},
		{MakeDuration(90 * time.Second), `"1m30s"`},
		{list(), "[]"},
		{mapOf(t), "{}"},
		{mapOf(t, "z", MakeInt(1), "a", list(Value{})), `{"a":[null],"z":1}`},
		{r, `{"verdict":"network","hosts":["a","b"]}`}, // schema order
	} {
		got, err := ToJSON(tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("ToJSON(%v) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
	for _, v := range []Value{MakeFloat(math.NaN()), MakeFloat(math.Inf(1)), list(MakeSecret("x"))} {
		if _, err := ToJSON(v); err == nil {
			t.Errorf("ToJSON(%v) succeeded", v)
		}
	}
	got, _ := AppendText([]byte("x="), str("raw \"s\""))
	got, _ = AppendText(append(got, ' '), list(str("a")))
	if string(got) != `x=raw "s" ["a"]` {
		t.Errorf("AppendText = %s", got)
	}
}

func TestFromJSON(t *testing.T) {
	tr := triage(t)
	tool := mustRec(t, "", Field{Name: "host", Type: StringType},
		Field{Name: "port", Type: IntType, HasDefault: true, Default: MakeInt(443)},
		Field{Name: "note", Type: OptionalOf(StringType)},
		Field{Name: "every", Type: OptionalOf(DurationType)},
		Field{Name: "w", Type: FloatType, HasDefault: true, Default: MakeFloat(1)})
	for _, tc := range []struct {
		typ  *Type
		in   string
		want string // Value.String(), or an error substring prefixed with "!"
	}{
		{tr, `{"verdict":"network","hosts":["a"]}`, `{verdict: "network", hosts: ["a"]}`},
		{tr, ` { "hosts" : [ ] , "verdict" : "other" } `, `{verdict: "other", hosts: []}`},
		{tr, `{"verdict":"network","hosts":["a",2]}`, "!$.hosts[1]: want string, got number"},
		{tr, `{"verdict":"nope","hosts":[]}`, `!$.verdict: want "certificate" | "network" | "other", got "nope"`},
		{tr, `{"verdict":"network"}`, "!$.hosts: missing required field"},
		{tr, `{"verdict":"network","hosts":[],"x":1}`, `!$: unknown field "x" for Triage`},
		{tr, `[]`, "!$: want object, got array"},
		{OptionalOf(tr), `null`, "null"},
		{tool, `{"host":"h"}`, `{host: "h", port: 443, note: null, every: null, w: 1.0}`},
		{tool, `{"host":"h","port":null,"w":null}`, `{host: "h", port: 443, note: null, every: null, w: 1.0}`},
		{tool, `{"host":"h","port":8443.0,"w":2,"every":"1m30s"}`, `{host: "h", port: 8443, note: null, every: 1m30s, w: 2.0}`},
		{tool, `{"host":"h","port":1.5}`, "!$.port: want integer, got 1.5"},
		{tool, `{"host":"h","every":"soon"}`, `!$.every: want duration string, got "soon"`},
		{MapOf(IntType), `{"b":1,"a":2}`, `{"a": 2, "b": 1}`},
		{MapOf(IntType), `{"a b":"x"}`, `!$["a b"]: want integer, got string`},
		{MessagesType, `[{"role":"user","content":"hi"}]`, `[{role: "user", content: "hi", name: null, tool_call_id: null}]`},
		{JSONType, `{"a":[1,2.5,"x",true,null,{}]}`, `{"a": [1, 2.5, "x", true, null, {}]}`},
		{JSONType, `12345678901234567890`, "12345678901234567000.0"},
		{SecretType, `"k"`, "!$: want secret, got string"},
		{StringType, `"\u00e9\ud83d\ude00\ud800x"`, "\"é😀\ufffdx\""},
		{StringType, `"a`, "!invalid JSON at byte 2: unterminated string"},
		{JSONType, `{"a":1,"a":2}`, `!object key "a" repeated`},
		{JSONType, `[1,]`, "!invalid JSON at byte 3: unexpected character ']'"},
		{JSONType, `1 2`, "!invalid JSON at byte 2: unexpected data after the value"},
		{JSONType, `01`, "!unexpected data after the value"},
		{JSONType, `1e999`, "!invalid JSON at byte 0: number 1e999 out of range"},
		{JSONType, "\"\x01\"", "!control character in string"},
		{JSONType, `"\x"`, "!invalid JSON at byte 1: invalid escape \\x"},
		{JSONType, `tru`, "!invalid literal"},
		{JSONType, strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "!nested deeper than 64"},
	} {
		v, err := FromJSON(tc.typ, []byte(tc.in))
		if strings.HasPrefix(tc.want, "!") {
			if err == nil || !strings.Contains(err.Error(), tc.want[1:]) {
				t.Errorf("FromJSON(%s, %s) err = %v, want %q", tc.typ, tc.in, err, tc.want[1:])
			}
			continue
		}
		if err != nil || v.String() != tc.want {
			t.Errorf("FromJSON(%s, %s) = %v, %v; want %s", tc.typ, tc.in, v, err, tc.want)
		}
	}
}

func TestConvert(t *testing.T) {
	tr := triage(t)
	wide := mustRec(t, "", Field{Name: "hosts", Type: ListOf(StringType)},
		Field{Name: "verdict", Type: StringType}, Field{Name: "n", Type: FloatType, HasDefault: true, Default: MakeInt(2)})
	r := rec(t, tr, str("network"), list(str("a")))
	got, err := Convert(r, wide)
	if err != nil || got.String() != `{hosts: ["a"], verdict: "network", n: 2.0}` {
		t.Errorf("reshape = %v, %v", got, err)
	}
	got, err = Convert(list(MakeInt(1), MakeFloat(2)), ListOf(FloatType))
	if err != nil || got.Elem(0).Kind() != ValFloat {
		t.Errorf("widen = %v, %v", got, err)
	}
	if _, err := Convert(mapOf(t, "verdict", str("network"), "hosts", list()), tr); err == nil || err.Error() != "$: want Triage, got map" {
		t.Errorf("map to record outside JSON: %v", err)
	}
	if _, err := Convert(MakeFloat(1), IntType); err == nil {
		t.Error("float narrowed to int")
	}
	// A conforming value comes back unchanged, without allocating.
	in := list(r, r)
	allocs := testing.AllocsPerRun(100, func() {
		out, err := Convert(in, ListOf(tr))
		if err != nil || out != in {
			t.Fatal("conforming value changed")
		}
	})
	if allocs > 1 {
		t.Errorf("Convert of a conforming value allocates %v times", allocs)
	}
}

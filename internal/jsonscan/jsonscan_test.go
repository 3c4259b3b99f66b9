package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// literals are JSON values String must agree with encoding/json on: plain
// strings, every kind of escape, raw and invalid UTF-8, and values that are
// not strings.
var literals = []string{
	`""`, `"hello"`, `"café"`, `"😀"`, `"\u00e9"`, `"a\nb"`, `"tab\t"`, `"q\"q"`, `"back\\slash"`, `"\/"`,
	`"<b>"`, "\"\u2028\"", "\"\xff\"", "\"\xed\xa0\x80\"", "\"a\xe2\x80\"", `"\ud83d"`, "\"\x01\"", "\"\x7f\"",
	`null`, `true`, `12`, `[]`, `{}`, `["a"]`, ` "spaced" `, `"a`,
}

func TestString(t *testing.T) {
	for _, lit := range literals {
		checkString(t, []byte(lit))
	}
	for lit, want := range map[string]bool{`"hello"`: true, `"café"`: true, `"<b>"`: true, `"a\nb"`: false,
		"\"\xff\"": false, `null`: false, ` "x"`: false, "\"\x01\"": false} {
		if _, ok := String([]byte(lit)); ok != want {
			t.Errorf("String(%s) ok = %v, want %v", lit, ok, want)
		}
	}
}

// checkString: a string String reads is encoding/json's value of it.
func checkString(t *testing.T, lit []byte) {
	t.Helper()
	s, ok := String(lit)
	if !ok {
		return
	}
	var want string
	if err := json.Unmarshal(lit, &want); err != nil || s != want {
		t.Fatalf("String(%q) = %q; encoding/json: %q, %v", lit, s, want, err)
	}
}

func FuzzString(f *testing.F) {
	for _, lit := range literals {
		f.Add([]byte(lit))
	}
	f.Fuzz(func(t *testing.T, lit []byte) { checkString(t, lit) })
}

// members reads an object's members with the scanner, keys decoded, the
// last of repeated keys kept (as encoding/json keeps it); nil when the
// text is not an object.
func members(t *testing.T, b []byte) map[string]json.RawMessage {
	s := New(b)
	if !s.Object() {
		return nil
	}
	out := map[string]json.RawMessage{}
	for {
		k, v, ok := s.Member()
		if !ok {
			return out
		}
		var key string
		if err := json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key); err != nil {
			t.Fatalf("key %q of %s: %v", k, b, err)
		}
		out[key] = v
	}
}

// FuzzScanner: over any valid JSON text, the members of an object and the
// elements of an array are the spans encoding/json splits it into, and
// CountElems counts them.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, ` { "a" : 1 , "b":[1, {"c":"]}"}], "d":"x\"y" } `, `[1,"two",{"3":[4]},null,true]`,
		`{"a":{"b":{"c":[[],{}]}}}`, `"s"`, `12`, `[ ]`, "{\"k\\u0041\":\"\\\\\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) == nil && obj != nil {
			got := members(t, b)
			if len(got) != len(obj) {
				t.Fatalf("%s: %d members read, encoding/json %d", b, len(got), len(obj))
			}
			for k, want := range obj {
				if v := got[k]; !bytes.Equal(v, want) {
					t.Fatalf("member %q of %s = %s, encoding/json %s", k, b, v, want)
				}
			}
		}
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) == nil && arr != nil {
			s := New(b)
			if !s.Array() {
				t.Fatalf("%s: not an array to the scanner", b)
			}
			for i := 0; ; i++ {
				v, ok := s.Elem()
				if !ok {
					if i != len(arr) {
						t.Fatalf("%s: %d elements read, encoding/json %d", b, i, len(arr))
					}
					break
				}
				if i >= len(arr) || !bytes.Equal(v, arr[i]) {
					t.Fatalf("%s: element %d = %s", b, i, v)
				}
			}
			if n := CountElems(b); n != len(arr) {
				t.Fatalf("CountElems(%s) = %d, want %d", b, n, len(arr))
			}
		}
	})
}

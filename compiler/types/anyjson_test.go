package types

import (
	"encoding/json"
	"testing"
)

func TestDecodeAny(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the value re-encoded, or "" for an error
	}{
		{`{"n": 12345678901234567890, "a": [1.50, true, null]}`, `{"a":[1.50,true,null],"n":12345678901234567890}`},
		{` "x" `, `"x"`},
		{`{"a":1} {"b":2}`, ""},
		{`{"a":1} x`, ""},
		{`{"a":`, ""},
		{``, ""},
	} {
		v, err := DecodeAny([]byte(tc.in))
		if tc.want == "" {
			if err == nil {
				t.Errorf("DecodeAny(%q) = %v, want an error", tc.in, v)
			}
			continue
		}
		if err != nil {
			t.Errorf("DecodeAny(%q): %v", tc.in, err)
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != tc.want {
			t.Errorf("DecodeAny(%q) re-encodes as %s, want %s", tc.in, got, tc.want)
		}
	}
}

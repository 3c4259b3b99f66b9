package agui

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendJSON: splicing elements into the client's list gives the list
// decoding and encoding it again would (the STATE_SNAPSHOT bytes are the
// same), and refuses what is not an array.
func TestAppendJSON(t *testing.T) {
	tests := []struct {
		list  string
		elems []string
		ok    bool
	}{
		{`[]`, []string{`1`}, true},
		{`[1]`, []string{`2`, `{"a":[3]}`}, true},
		{` [ 1 , "x" ] `, []string{`"<y>"`}, true},
		{`[[]]`, nil, true},
		{`null`, []string{`1`}, false},
		{`{"a":1}`, []string{`1`}, false},
		{`"[1]"`, []string{`1`}, false},
		{``, []string{`1`}, false},
	}
	for _, tt := range tests {
		elems := make([]json.RawMessage, len(tt.elems))
		for i, e := range tt.elems {
			elems[i] = json.RawMessage(e)
		}
		got, ok := appendJSON(json.RawMessage(tt.list), elems)
		if ok != tt.ok {
			t.Errorf("appendJSON(%s): ok %v", tt.list, ok)
			continue
		}
		if !ok {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal([]byte(tt.list), &list); err != nil {
			t.Fatal(err)
		}
		want := mustJSON(append(list, elems...))
		g, err1 := json.Marshal(map[string]json.RawMessage{"f": got})
		w, err2 := json.Marshal(map[string]json.RawMessage{"f": want})
		if err1 != nil || err2 != nil || !bytes.Equal(g, w) {
			t.Errorf("appendJSON(%s, %s) = %s, want %s (%v %v)", tt.list, tt.elems, g, w, err1, err2)
		}
	}
}

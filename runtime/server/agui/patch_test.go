package agui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
)

// TestPatch: each change maps onto JSON Patch operations by what the
// client's document holds (add or replace; elements or keys added to a
// list or map member, else the whole value), and the patch, applied to the
// client's document by an RFC 6902 reading of it, gives the state the
// changes mean.
func TestPatch(t *testing.T) {
	doc := `{"list":[1],"obj":{"a":1},"s":"x","nul":null,"str":"y"}`
	var start map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &start); err != nil {
		t.Fatal(err)
	}
	members := membersOf(start)
	p := patch(t, members, []runtime.StateChange{
		{Field: "s", Op: "set", Value: json.RawMessage(`"y"`)},
		{Field: "new", Op: "set", Value: json.RawMessage(`null`)},
		{Field: "list", Op: "append", Value: json.RawMessage(`[2,3]`)},
		{Field: "fresh", Op: "append", Value: json.RawMessage(`["a"]`)},
		{Field: "obj", Op: "merge", Value: json.RawMessage(`{"b/c":2,"a~":3}`)},
		{Field: "a/b", Op: "set", Value: json.RawMessage(`1`)},
		{Field: "bad", Op: "set", Value: json.RawMessage(`{`)},
		{Field: "nul", Op: "append", Value: json.RawMessage(`[4]`)},
		{Field: "str", Op: "merge", Value: json.RawMessage(`{"k":"<v>"}`)},
		{Field: "notlist", Op: "append", Value: json.RawMessage(`{"a":1}`)},
		{Field: "notmap", Op: "merge", Value: json.RawMessage(`null`)},
		{Field: "k<&>é\"", Op: "set", Value: json.RawMessage(`2`)},
	})
	got, err := json.Marshal(json.RawMessage(p)) // as the SSE writer encodes it
	if err != nil {
		t.Fatalf("patch %s: %v", p, err)
	}
	want := `[{"op":"replace","path":"/s","value":"y"},{"op":"add","path":"/new","value":null},` +
		`{"op":"add","path":"/list/-","value":2},{"op":"add","path":"/list/-","value":3},` +
		`{"op":"add","path":"/fresh","value":["a"]},` +
		`{"op":"add","path":"/obj/a~0","value":3},{"op":"add","path":"/obj/b~1c","value":2},` +
		`{"op":"add","path":"/a~1b","value":1},` +
		`{"op":"add","path":"/nul","value":[4]},` +
		`{"op":"add","path":"/str","value":{"k":"\u003cv\u003e"}},` +
		`{"op":"add","path":"/k\u003c\u0026\u003eé\"","value":2}]`
	if string(got) != want {
		t.Fatalf("ops\n got %s\nwant %s", got, want)
	}
	state := map[string]any{}
	if err := json.Unmarshal([]byte(doc), &state); err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(got, &ops); err != nil {
		t.Fatal(err)
	}
	applyOps(t, state, ops)
	final, _ := json.Marshal(state)
	if wantState := `{"a/b":1,"fresh":["a"],"k\u003c\u0026\u003eé\"":2,"list":[1,2,3],"new":null,"nul":[4],"obj":{"a":1,"a~":3,"b/c":2},"s":"y","str":{"k":"\u003cv\u003e"}}`; string(final) != wantState {
		t.Fatalf("state\n got %s\nwant %s", final, wantState)
	}
	for f, k := range map[string]byte{"list": '[', "nul": '[', "obj": '{', "str": '{', "s": '"', "new": 'n', "a/b": '1'} {
		if members[f] != k {
			t.Errorf("member %s: kind %q, want %q", f, members[f], k)
		}
	}
	if _, ok := members["bad"]; ok {
		t.Error("a skipped change made a member")
	}
	if p := patch(t, members, []runtime.StateChange{{Field: "bad", Op: "set", Value: json.RawMessage(`{`)}}); p != nil {
		t.Errorf("nothing to patch: %s", p)
	}
}

// membersOf returns the member kinds of a state snapshot, as the
// translator keeps them.
func membersOf(state map[string]json.RawMessage) map[string]byte {
	m := make(map[string]byte, len(state))
	for k, v := range state {
		m[k] = kindOf(v)
	}
	return m
}

// patch is appendPatch's patch after a prefix it must keep; nil for none.
func patch(t *testing.T, members map[string]byte, changes []runtime.StateChange) json.RawMessage {
	t.Helper()
	b := appendPatch([]byte("prefix"), members, changes)
	if string(b[:6]) != "prefix" {
		t.Fatalf("the prefix was overwritten: %s", b)
	}
	if len(b) == 6 {
		return nil
	}
	return b[6:]
}

// applyOps applies add and replace operations (RFC 6902, pointers per RFC
// 6901) to a document, refusing a replace of a missing member and an add
// into a member that is not a list or an object.
func applyOps(t *testing.T, doc map[string]any, ops []map[string]any) {
	t.Helper()
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	for _, op := range ops {
		path, _ := op["path"].(string)
		parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
		for i := range parts {
			parts[i] = unescape.Replace(parts[i])
		}
		switch {
		case len(parts) == 1 && (op["op"] == "add" || op["op"] == "replace"):
			if _, ok := doc[parts[0]]; op["op"] == "replace" && !ok {
				t.Fatalf("replace of a missing member %s", parts[0])
			}
			doc[parts[0]] = op["value"]
		case len(parts) == 2 && op["op"] == "add":
			switch m := doc[parts[0]].(type) {
			case []any:
				if parts[1] != "-" {
					t.Fatalf("add inside a list: %v", op)
				}
				doc[parts[0]] = append(m, op["value"])
			case map[string]any:
				m[parts[1]] = op["value"]
			default:
				t.Fatalf("add into %s, which is %T", parts[0], m)
			}
		default:
			t.Fatalf("unexpected op %v", op)
		}
	}
}

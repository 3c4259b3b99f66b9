package agui

import (
	"bytes"
	"encoding/json"
	"testing"
)

// eventCases cover every member, empty and not, escapes in strings and raw
// members, and raw members that are not compact.
var eventCases = []Event{
	{},
	{Type: RunStarted, Timestamp: 1700000000000, ThreadID: "t1", RunID: "r1"},
	{Type: TextMessageContent, MessageID: "m<1>", Delta: jsonString("a & b <c> \u2028 \"q\" \\ \x01 \xff é")},
	{Type: ToolCallStart, ToolCallID: "c1", ToolCallName: "lookup", ParentMessageID: "m1", Role: "assistant"},
	{Type: StateDelta, Delta: json.RawMessage(`[ {"op": "replace", "path": "/a", "value": "<b>"} ]`)},
	{Type: StateSnapshot, Snapshot: json.RawMessage(`{"a":1,"b":[true,null,"x\u2029y"]}`)},
	{Type: StateSnapshot, Snapshot: json.RawMessage("{\"s\":\"\u2028\"}")},
	{Type: Custom, Name: "n", Value: json.RawMessage(`{"k":"v"}`), Result: json.RawMessage(`"r"`), Content: "c\n"},
	{Type: RunFinished, Timestamp: -5, Outcome: &Outcome{Type: "interrupt", Interrupts: []Interrupt{{ID: "i#1", Reason: "input", Message: "ok?", Metadata: map[string]any{"z": 1, "a": "<"}}}}},
	{Type: RunFinished, ThreadID: "t", RunID: "r", Result: json.RawMessage(`"ok"`), Outcome: &Outcome{Type: "success"}},
	{Type: RunFinished, Outcome: &Outcome{Type: "<&>", Interrupts: []Interrupt{}}},
	{Type: RunFinished, Outcome: &Outcome{}},
	{Type: RunError, Message: "boom & bust", Code: "internal", StepName: "s"},
	{Type: Custom, Value: json.RawMessage(`{"bad":`)},
	{Type: Custom, Result: json.RawMessage(`nul`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a\u00e9\n\"\\\/"`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a\u00e"`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a\u00"`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a\"`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a\x"`)},
	{Type: TextMessageContent, Delta: json.RawMessage(`"a"b"`)},
	{Type: TextMessageContent, Delta: json.RawMessage("\"a\tb\"")},
	{Type: TextMessageContent, Delta: json.RawMessage("\"\xff\"")},
	{Type: TextMessageContent, Delta: json.RawMessage(`"`)},
	{Type: StateDelta, Delta: json.RawMessage(`["a b",{"c":"\"}"}]`)},
}

// appendJSON writes what json.Marshal writes, and fails where it fails.
func TestEventAppendJSONMatchesMarshal(t *testing.T) {
	for i := range eventCases {
		checkEventJSON(t, &eventCases[i])
	}
}

func checkEventJSON(t *testing.T, e *Event) {
	t.Helper()
	want, werr := json.Marshal(e)
	got, gerr := e.appendJSON([]byte("prefix"))
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%+v: error %v, json.Marshal's %v", e, gerr, werr)
	}
	if werr != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("%+v:\n got %s\nwant %s", e, got, want)
	}
}

func FuzzEventAppendJSON(f *testing.F) {
	f.Add("TEXT_MESSAGE_CONTENT", int64(1), "m1", "a<b>&\u2028", []byte(`"x"`), []byte(`[{"op":"add"}]`))
	f.Add("", int64(0), "", "", []byte(" { } "), []byte(`{"a":"\u2029"}`))
	f.Add("X", int64(-1), "\xff", "\x00", []byte(`{"a":`), []byte("\xe2\x80\xa8"))
	f.Add("Y", int64(2), "m", "t", []byte(`"a\u00e9\"b"`), []byte(`"a\u0"`))
	f.Fuzz(func(t *testing.T, typ string, ts int64, id, text string, raw1, raw2 []byte) {
		checkEventJSON(t, &Event{Type: typ, Timestamp: ts, MessageID: id, ThreadID: text, Content: text,
			Delta: raw1, Snapshot: raw2, Value: raw1, Result: raw2, Message: id})
	})
}

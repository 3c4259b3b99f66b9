package runtime

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEventCodec(t *testing.T) {
	idx := 2
	e := &Event{
		ID: "01KD6Y4H8G0000000000000001", Kind: EventModelResponse, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		App: "a", User: "u", Session: "s", Run: "run_x", Invocation: "inv_y", Author: "writer", Node: "write",
		MapIndex: &idx, Step: 3, FilterKey: "write", Persisted: true, Text: "hi", Turn: 1,
		ToolCalls: []ToolCall{{ID: "c", Name: "t", Args: json.RawMessage(`{"a":1}`)}},
		Usage:     &Usage{PromptTokens: 1, CompletionTokens: 2}, Model: "fake:fast", FinishReason: "stop",
	}
	b, err := EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"v":1,"id":"01KD6Y4H8G0000000000000001","kind":"model_response",`) {
		t.Fatalf("encoding starts %s", b)
	}
	got, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, e)
	}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`{"v":2,"id":"x","kind":"input"}`, "version 2"},
		{`{"id":"x","kind":"input"}`, "version 0"},
		{`{"v":1,"id":"x","kind":"telepathy"}`, `unknown kind "telepathy"`},
		{`{"v":1,"kind":"input"}`, "no id"},
		{`{"v":1,`, "decode event"},
	} {
		_, err := DecodeEvent([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeEvent(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := DecodeEvent([]byte(`{"v":2,"id":"x","kind":"input"}`)); !errors.Is(err, ErrEventVersion) {
		t.Errorf("newer version: %v", err)
	}
	// Unknown members are ignored: optional fields may be added within v1.
	if _, err := DecodeEvent([]byte(`{"v":1,"id":"x","kind":"input","novel":[1]}`)); err != nil {
		t.Errorf("unknown member: %v", err)
	}
	if _, err := EncodeEvent(&Event{ID: "x", Kind: "nope"}); err == nil {
		t.Error("encoded an unknown kind")
	}
}

func TestKindsClosed(t *testing.T) {
	streamed := map[EventKind]bool{EventNodeStarted: true, EventModelDelta: true, EventToolCall: true, EventToolProgress: true}
	for k := range kindPersisted {
		if k.Persisted() == streamed[k] {
			t.Errorf("%s: persisted=%v", k, k.Persisted())
		}
	}
	if len(kindPersisted) != 15 {
		t.Errorf("%d kinds; update spec/events.md with the set", len(kindPersisted))
	}
}

func TestULID(t *testing.T) {
	g := newULIDGen(&testClock{}, &testEntropy{})
	prev := ""
	for range 1000 {
		id := g.next()
		if len(id) != 26 || strings.Trim(id, crockford) != "" || id[0] > '7' {
			t.Fatalf("malformed ULID %q", id)
		}
		if id <= prev {
			t.Fatalf("%q after %q: not increasing", id, prev)
		}
		prev = id
	}
	// The time prefix decodes to the clock's milliseconds.
	var b [26]byte
	encodeULID(&b, 1<<48-1, 0xFFFF, 1<<64-1)
	if string(b[:]) != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("max ULID %s", b[:])
	}
	encodeULID(&b, 1, 0, 0)
	if string(b[:]) != "00000000010000000000000000" {
		t.Errorf("ms=1: %s", b[:])
	}
	// Within one millisecond the random part increments (a frozen clock).
	fz := newULIDGen(frozenClock{}, &testEntropy{})
	a, c := fz.next(), fz.next()
	if a[:10] != c[:10] || c <= a {
		t.Errorf("frozen clock: %s then %s", a, c)
	}
}

type frozenClock struct{}

func (frozenClock) Now() time.Time                              { return clockBase }
func (frozenClock) AfterFunc(time.Duration, func()) func() bool { return func() bool { return true } }

// TestEncodeMatchesEncodingJSON holds the hand-written encoder to the bytes
// encoding/json writes for the same struct.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	zero, seven := 0, 7
	odd := "a\"b\\c\n\t\r\b\f\x01<>&\u2028\u2029é\xff😀"
	events := []*Event{
		{ID: "1", Kind: EventInput, Text: odd, App: odd, User: "u", Session: "s"},
		{ID: "2", Kind: EventToolResult, Time: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), MapIndex: &zero,
			ToolCall: &ToolCall{ID: "c", Name: "t", Args: json.RawMessage("{ \"a\" : [1, 2],\n \"b\": \" x y \" }")},
			Result:   json.RawMessage(`{"k":"v"}`), Error: &ErrorInfo{Kind: "tool_error", Message: odd}, Turn: 3},
		{ID: "3", Kind: EventModelResponse, MapIndex: &seven, Step: 1 << 40, Seq: 9, Persisted: true,
			ToolCalls: []ToolCall{{ID: "a", Name: "x", Args: json.RawMessage(`{}`)}, {ID: "b", Name: "y"}},
			Usage:     &Usage{}, Model: "m", FinishReason: "stop"},
		{ID: "4", Kind: EventStateDelta, Changes: []StateChange{{Field: "f", Op: "append", Value: json.RawMessage(`[1]`)}, {Field: "g", Op: "set", Value: json.RawMessage(`"x"`)}}},
		{ID: "5", Kind: EventRunFinished, Status: StatusInterrupted, Output: json.RawMessage(`null`),
			Interrupts: []InterruptInfo{{ID: "g/a", Node: "a", Prompt: "p<", Schema: map[string]any{"type": "boolean", "enum": []any{true}}}},
			Decisions:  []DecisionInfo{{ID: "g/x", Node: "x", MapIndex: -1, Attempt: 2, Key: "k"}}},
		{ID: "6", Kind: EventInput, Resume: &ResumeRequest{Run: "r", Values: map[string]json.RawMessage{"b": json.RawMessage(`1`), "a": json.RawMessage(`true`)},
			Decisions: map[string]DecisionRequest{"x": {Action: "fail"}}}, Error: &ErrorInfo{Kind: "k"}},
		{ID: "8", Kind: EventModelResponse, Usage: &Usage{PromptTokens: 3}, Cost: new(0.007)},
		{ID: "8c", Kind: EventModelResponse, Usage: &Usage{PromptTokens: 30, CompletionTokens: 2, CachedTokens: 20}},
		{ID: "9", Kind: EventModelResponse, Cost: new(0.0)},
		{ID: "10", Kind: EventRunFinished, Cost: new(1.5e-7), Usage: &Usage{CompletionTokens: 1}},
		{ID: "11", Kind: EventRunFinished, Cost: new(123456789.125)},
		{ID: "12", Kind: EventRunFinished, Cost: new(2.5e21)},
		{ID: "13", Kind: EventRunFinished, Cost: new(1e-10)},
		{ID: "14", Kind: EventToolProgress, ToolCall: &ToolCall{ID: "c", Name: "t"}, Progress: &ToolProgress{Progress: 2, Total: 5, Message: odd}},
		{ID: "15", Kind: EventToolProgress, Progress: &ToolProgress{}},
		{ID: "7", Kind: EventInput, Text: "hi", Sampling: &Sampling{Temperature: new(0.0), TopP: new(0.5), MaxTokens: 7, Stop: []string{"\n", "<"}, Seed: new(int64(-3))}},
	}
	for _, e := range events {
		got, err := EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(versionedEvent{V: 1, Event: e})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("event %s:\n got %s\nwant %s", e.ID, got, want)
		}
	}
	if _, err := EncodeEvent(&Event{ID: "x", Kind: EventToolCall, ToolCall: &ToolCall{Args: json.RawMessage(`{"a":`)}}); err == nil {
		t.Error("encoded invalid args")
	}
	if _, err := EncodeEvent(&Event{ID: "x", Kind: EventModelResponse, Cost: new(math.NaN())}); err == nil {
		t.Error("encoded a NaN cost")
	}
}

// The events a step commits are encoded into a buffer allocated once:
// encodedSize covers what appendEvent writes for ids, times and payloads of
// the usual sizes and each kind's members, so the buffer never grows.
func TestEncodedSizeCoversTheEncoding(t *testing.T) {
	at := time.Date(2026, 12, 6, 2, 15, 47, 123456789, time.UTC)
	base := Event{ID: "01KBSJ8XQ4M0Z3V7Y2W6T5R9NP", Time: at, App: "support", User: "alice@example.com",
		Session: "t19aed2c8d4f3b7e21a", Run: "run_01KBSJ8XQ4M0Z3V7Y2W6T5R9NQ", Invocation: "inv_01KBSJ8XQ4M0Z3V7Y2W6T5R9NR", Step: 3, Persisted: true, Seq: 12}
	with := func(f func(e *Event)) *Event { e := base; f(&e); return &e }
	seven := 7
	events := map[string]*Event{
		"node_started": with(func(e *Event) { e.Kind, e.Node, e.MapIndex = EventNodeStarted, "triage/classify", &seven }),
		"state_delta": with(func(e *Event) {
			e.Kind = EventStateDelta
			e.Changes = []StateChange{{Field: "answer", Op: "set", Value: json.RawMessage(`"` + strings.Repeat("word ", 200) + `"`)}, {Field: "n", Op: "set", Value: json.RawMessage(`4`)}}
		}),
		"model_response": with(func(e *Event) {
			e.Kind, e.Node, e.Author, e.Model, e.FinishReason, e.Turn = EventModelResponse, "answer", "answer", "gpt-4o-mini", "stop", 1
			e.Text, e.Usage, e.Cost = strings.Repeat("The certificate chain is incomplete. ", 40), &Usage{PromptTokens: 1200, CompletionTokens: 300, CachedTokens: 1024}, new(0.00123)
			e.ToolCalls = []ToolCall{{ID: "call_8f3b", Name: "lookup", Args: json.RawMessage(`{"q":"tls handshake"}`)}}
		}),
		"tool_result": with(func(e *Event) {
			e.Kind, e.Node = EventToolResult, "lookup"
			e.ToolCall = &ToolCall{ID: "call_8f3b", Name: "lookup", Args: json.RawMessage(`{"q":"tls"}`)}
			e.Result = json.RawMessage(`{"hits":[` + strings.Repeat(`{"id":"KB-1234","title":"Intermediate certificates"},`, 30) + `{}]}`)
		}),
		"node_failed": with(func(e *Event) {
			e.Kind, e.Node, e.Error = EventNodeFailed, "lookup", &ErrorInfo{Kind: "tool_error", Message: "connection refused", Node: "lookup"}
		}),
		"run_finished": with(func(e *Event) {
			e.Kind, e.Status, e.Output = EventRunFinished, StatusCompleted, json.RawMessage(`{"answer":"install the intermediate certificate"}`)
		}),
	}
	for name, e := range events {
		b, err := EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if n := encodedSize(e); len(b) > n {
			t.Errorf("%s: encoded in %d bytes, estimated %d: the buffer grew", name, len(b), n)
		}
	}
}

// TestSpecExample decodes the example event of spec/events.md and encodes
// it back to the same bytes.
func TestSpecExample(t *testing.T) {
	doc, err := os.ReadFile("../spec/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	line, _, _ := strings.Cut(rest, "\n")
	if !ok {
		t.Fatal("spec/events.md has no json example")
	}
	e, err := DecodeEvent([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeEvent(e)
	if err != nil || string(out) != line {
		t.Fatalf("re-encoded %s (%v)\nthe spec says %s", out, err, line)
	}
}

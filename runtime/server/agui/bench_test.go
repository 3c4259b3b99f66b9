package agui

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

// benchRun is a run as bench/serve's agui scenario streams it: a graph of
// one chat node whose model replies in 8 deltas, then the output set.
func benchRun() []*runtime.Event {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	ev := func(e runtime.Event) *runtime.Event {
		n++
		e.ID, e.Time, e.Run = "E"+strconv.Itoa(n), at.Add(time.Duration(n)*time.Millisecond), "run_R"
		return &e
	}
	evs := []*runtime.Event{
		ev(runtime.Event{Kind: runtime.EventInput, Text: "What is the answer?"}),
		ev(runtime.Event{Kind: runtime.EventRunStarted}),
		ev(runtime.Event{Kind: runtime.EventNodeStarted, Node: "chat"}),
	}
	reply := ""
	for i := range 8 {
		d := "word" + strconv.Itoa(i) + " "
		reply += d
		evs = append(evs, ev(runtime.Event{Kind: runtime.EventModelDelta, Node: "chat", Turn: 1, Text: d}))
	}
	out, _ := json.Marshal(reply)
	evs = append(evs,
		ev(runtime.Event{Kind: runtime.EventModelResponse, Node: "chat", Turn: 1, Text: reply}),
		ev(runtime.Event{Kind: runtime.EventNodeFinished, Node: "chat"}),
		ev(runtime.Event{Kind: runtime.EventStateDelta, Changes: []runtime.StateChange{{Field: "answer", Op: runtime.ChangeSet, Value: out}}}),
		ev(runtime.Event{Kind: runtime.EventRunFinished, Status: runtime.StatusCompleted, Output: out}))
	return evs
}

// BenchmarkTranslateRun translates and encodes one request's run (benchRun)
// as follow does: with a cached translator, the opening events, then
// each runtime event's, every AG-UI event encoded into one reused buffer.
func BenchmarkTranslateRun(b *testing.B) {
	evs := benchRun()
	at := evs[0].Time
	newID := func(p string) string { return p + "1" }
	var buf []byte
	frame := func(out []Event) {
		for i := range out {
			var err error
			if buf, err = out[i].appendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
	cache := make(translatorCache, 1)
	b.ReportAllocs()
	for b.Loop() {
		state := map[string]json.RawMessage{"question": json.RawMessage(`"What is the answer?"`)}
		tr := cache.get("thread-1", "run-1", newID, nil)
		frame(tr.start(at, state))
		for _, e := range evs {
			frame(tr.translate(e))
		}
		if !tr.done {
			b.Fatal("the run did not finish")
		}
		cache.put(tr)
	}
}

// BenchmarkParseInput parses bench/serve's agui request body.
func BenchmarkParseInput(b *testing.B) {
	body := []byte(`{"threadId":"t0123456789","runId":"rt0123456789","messages":[{"id":"m1","role":"user","content":"What is the answer?"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseInput(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestClientToolsPauseAndResume: a reply that calls a client tool (next to
// one of the agent's own) runs the agent's call, pauses the llm call with
// the client call in the interrupt, and the answer continues the same call:
// the next turn sees the assistant reply and both results, byte for byte.
func TestClientToolsPauseAndResume(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			model := &fakeModel{name: "fast", rec: true}
			model.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
				if req.Site.Turn == 1 {
					return &ModelResponse{FinishReason: "tool_calls", ToolCalls: []ToolCall{
						{ID: "m1", Name: "lookup", Args: json.RawMessage(`{"host":"x"}`)},
						{ID: "m2", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
					}}, nil
				}
				return textReply("It is sunny.", 1)(ctx, req, onDelta)
			}
			p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
			f := newFixture(t, b.open(t), p, model, nil, nil)
			weather := ToolSpec{Name: "get_weather", Description: "weather", InputSchema: map[string]any{"type": "object"}}
			evs := f.collect(context.Background(), Invocation{User: "u", Session: "s", Input: "q", ClientTools: []ToolSpec{weather}})
			fin := last(evs)
			if fin.Status != StatusInterrupted || len(fin.Interrupts) != 1 {
				t.Fatalf("ended %s %+v; %v", fin.Status, fin.Interrupts, kinds(evs))
			}
			it := fin.Interrupts[0]
			if it.ID != "g/write" || len(it.ToolCalls) != 1 || it.ToolCalls[0].Name != "get_weather" ||
				!strings.HasPrefix(it.ToolCalls[0].ID, "call_") || string(it.ToolCalls[0].Args) != `{"city":"Paris"}` {
				t.Fatalf("interrupt %+v", it)
			}
			callID := it.ToolCalls[0].ID
			if req, _ := it.Schema["required"].([]any); len(req) != 1 || req[0] != callID {
				t.Errorf("schema %v", it.Schema)
			}
			if f.tool.calls.Load() != 1 {
				t.Errorf("own tool ran %d times", f.tool.calls.Load())
			}
			reqs := model.requests()
			if len(reqs) != 1 || len(reqs[0].Tools) != 2 || reqs[0].Tools[1].Name != "get_weather" {
				t.Fatalf("first request tools %+v", reqs[0].Tools)
			}
			run := runIDOf(t, evs)

			// An answer that is not a map of results is refused; the run keeps waiting.
			if _, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s",
				Resume: &ResumeRequest{Run: run, Values: map[string]json.RawMessage{"g/write": json.RawMessage(`"sunny"`)}}}); !errors.Is(err, ErrInvalidResume) {
				t.Fatalf("a string answer: %v", err)
			}

			ans, _ := json.Marshal(map[string]string{callID: "Sunny, 21 C"})
			evs = f.collect(context.Background(), Invocation{User: "u", Session: "s", ClientTools: []ToolSpec{weather},
				Resume: &ResumeRequest{Run: run, Values: map[string]json.RawMessage{"g/write": ans}}})
			if fin := last(evs); fin.Status != StatusCompleted || string(fin.Output) != `"It is sunny."` {
				t.Fatalf("resumed %s %s; %v", fin.Status, fin.Output, kinds(evs))
			}
			reqs = model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			msgs := reqs[1].Messages
			n := len(msgs)
			if n < 4 || msgs[n-3].Role != RoleAssistant || len(msgs[n-3].ToolCalls) != 2 || msgs[n-3].ToolCalls[1].ID != callID ||
				msgs[n-2].Role != RoleTool || msgs[n-2].ToolCallID != "m1" ||
				msgs[n-1].Role != RoleTool || msgs[n-1].ToolCallID != callID || msgs[n-1].Content != "Sunny, 21 C" {
				t.Fatalf("second turn messages %+v", msgs)
			}
			if reqs[1].Site.Turn != 2 {
				t.Errorf("turn %d", reqs[1].Site.Turn)
			}
			led := f.ledger("u", "s")
			var results []string
			for _, e := range led {
				if e.Kind == EventToolResult {
					results = append(results, e.ToolCall.ID+"="+string(e.Result))
				}
			}
			if len(results) != 2 || results[1] != callID+`="Sunny, 21 C"` {
				t.Errorf("tool results %v", results)
			}
			if f.tool.calls.Load() != 1 {
				t.Errorf("own tool ran %d times", f.tool.calls.Load())
			}
			sr, err := f.st.GetRun(context.Background(), run)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ReplayRun(context.Background(), f.st, p, nil, sr)
			if err != nil || !rep.Identical {
				t.Errorf("replay: %+v %v", rep, err)
			}
		})
	}
}

// TestClientToolNames: names are checked, and may not be the program's.
func TestClientToolNames(t *testing.T) {
	p := buildProgram(t, progOpts{noPrep: true, noLookup: true, noInterrupt: true})
	for _, tc := range []struct {
		tools []ToolSpec
		want  string
	}{
		{[]ToolSpec{{Name: "lookup"}}, "declares"},
		{[]ToolSpec{{Name: "a"}, {Name: "a"}}, "twice"},
		{[]ToolSpec{{Name: "a b"}}, "letters"},
		{[]ToolSpec{{Name: strings.Repeat("x", 65)}}, "letters"},
	} {
		if err := CheckClientTools(p, tc.tools); !errors.Is(err, ErrInvalidInvocation) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v", tc.tools, err)
		}
	}
	if err := CheckClientTools(p, []ToolSpec{{Name: "get_weather-2"}}); err != nil {
		t.Error(err)
	}
}

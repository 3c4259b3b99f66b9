package inspect

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

// TestProgress: a line per finished or failed node with its step and how
// long it ran (a map item by its index), one per run error, none else.
func TestProgress(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
	p := NewProgress(now)
	two := 2
	for _, tc := range []struct {
		e    runtime.Event
		want string
	}{
		{runtime.Event{Kind: runtime.EventNodeStarted, Node: "draft", Step: 1}, ""},
		{runtime.Event{Kind: runtime.EventNodeFinished, Node: "draft", Step: 1}, "  draft            step 1   done 250ms"},
		{runtime.Event{Kind: runtime.EventNodeFailed, Node: "each", MapIndex: &two, Step: 2}, "  each[2]          step 2   failed 750ms"},
		{runtime.Event{Kind: runtime.EventRunError, Error: &runtime.ErrorInfo{Kind: "tool_error", Message: "boom", Node: "each"}}, "error in each: tool_error: boom"},
		{runtime.Event{Kind: runtime.EventStateDelta}, ""},
	} {
		if got := p.Line(&tc.e); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.e.Kind, tc.e.Node, got, tc.want)
		}
	}
	for in, want := range map[string]string{`"Four."`: "Four.", `{"a":1}`: `{"a":1}`, ``: ``} {
		got, ok := OutputText(json.RawMessage(in))
		if got != want || ok != (in != "") {
			t.Errorf("OutputText(%s) = %q, %v", in, got, ok)
		}
	}
}

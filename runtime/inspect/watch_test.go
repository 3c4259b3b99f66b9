package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

// events is a channel holding es, closed.
func events(es ...*runtime.Event) <-chan *runtime.Event {
	ch := make(chan *runtime.Event, len(es))
	for _, e := range es {
		ch <- e
	}
	close(ch)
	return ch
}

// TestWatchFollow: progress lines on Err (a run error's prefixed), or
// every event as a JSON line on Out; the run_finished event is returned.
func TestWatchFollow(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	es := []*runtime.Event{
		{Kind: runtime.EventNodeStarted, Node: "a", Step: 1},
		{Kind: runtime.EventNodeFinished, Node: "a", Step: 1},
		{Kind: runtime.EventRunError, Error: &runtime.ErrorInfo{Kind: "tool_error", Message: "boom"}},
		{Kind: runtime.EventRunFinished, Run: "run_1", Status: runtime.StatusFailed},
	}
	for _, asJSON := range []bool{false, true} {
		var out, errw bytes.Buffer
		w := Watch{Out: &out, Err: &errw, JSON: asJSON, Prefix: "x: "}
		fin := w.Follow(events(es...), now)
		if fin != es[3] {
			t.Fatalf("json=%v: fin %v", asJSON, fin)
		}
		if !asJSON {
			want := "  a                step 1   done 1s\nx: error: tool_error: boom\n"
			if errw.String() != want || out.Len() != 0 {
				t.Errorf("progress: err %q out %q", errw.String(), out.String())
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != len(es) || errw.Len() != 0 {
			t.Fatalf("json: %d lines, err %q", len(lines), errw.String())
		}
		var e runtime.Event
		if err := json.Unmarshal([]byte(lines[3]), &e); err != nil || e.Kind != runtime.EventRunFinished || e.Run != "run_1" {
			t.Errorf("json line %s: %v", lines[3], err)
		}
	}
	if fin := (Watch{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}).Follow(events(es[:2]...), now); fin != nil {
		t.Errorf("no run_finished: %v", fin)
	}
}

// TestEnd: how each final status (or none) ends the watch, with its error.
func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		fin      *runtime.Event
		canceled bool
		want     Ending
		err      string
	}{
		{nil, true, Canceled, "canceled"},
		{nil, false, Failed, "the run ended without run_finished"},
		{&runtime.Event{Run: "r", Status: runtime.StatusCompleted}, true, Completed, ""},
		{&runtime.Event{Run: "r", Status: runtime.StatusInterrupted}, false, Waiting, ""},
		{&runtime.Event{Run: "r", Status: runtime.StatusNeedsDecision}, false, Waiting, ""},
		{&runtime.Event{Run: "r", Status: runtime.StatusCanceled}, false, Canceled, "run r canceled"},
		{&runtime.Event{Run: "r", Status: runtime.StatusFailed, Error: &runtime.ErrorInfo{Kind: "timeout", Message: "slow"}}, false, Failed, "run r failed: timeout: slow"},
		{&runtime.Event{Run: "r", Status: runtime.StatusFailed}, false, Failed, "run r failed"},
	} {
		got, err := End(tc.fin, tc.canceled)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tc.want || msg != tc.err {
			t.Errorf("End(%v, %v) = %v, %q; want %v, %q", tc.fin, tc.canceled, got, msg, tc.want, tc.err)
		}
	}
}

package inspect

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentc/agentc/runtime"
)

// Progress turns the events of a run being watched into the lines a
// person follows: one per node that finished or failed (its step and how
// long it ran) and one per run error. Make it with NewProgress.
type Progress struct {
	now     func() time.Time
	start   time.Time
	started map[string]time.Time
}

// NewProgress starts watching a run on clock now.
func NewProgress(now func() time.Time) *Progress {
	return &Progress{now: now, start: now(), started: map[string]time.Time{}}
}

// Line is e's line, "" when it has none; a run error's line starts with
// "error".
func (p *Progress) Line(e *runtime.Event) string {
	key := e.Node
	if e.MapIndex != nil {
		key = fmt.Sprintf("%s[%d]", e.Node, *e.MapIndex)
	}
	switch e.Kind {
	case runtime.EventNodeStarted:
		p.started[key] = p.now()
	case runtime.EventNodeFinished, runtime.EventNodeFailed:
		t0, ok := p.started[key]
		if !ok {
			t0 = p.start
		}
		verb := "done"
		if e.Kind == runtime.EventNodeFailed {
			verb = "failed"
		}
		return fmt.Sprintf("  %-16s step %-3d %s %s", key, e.Step, verb, p.now().Sub(t0).Round(time.Millisecond))
	case runtime.EventRunError:
		if e.Error != nil {
			where := ""
			if e.Error.Node != "" {
				where = " in " + e.Error.Node
			}
			return fmt.Sprintf("error%s: %s: %s", where, e.Error.Kind, e.Error.Message)
		}
	}
	return ""
}

// OutputText is a run's output as a person reads it: a string as is,
// anything else as its JSON; ok is false when there is none.
func OutputText(out json.RawMessage) (text string, ok bool) {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s, true
	}
	return string(out), len(out) > 0
}

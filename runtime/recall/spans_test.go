package recall

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentc/agentc/runtime"
)

// spanLog is a runtime.Observer that records each span's start and end.
type spanLog struct{ spans []*loggedSpan }

type loggedSpan struct {
	start runtime.SpanStart
	end   *runtime.SpanEnd
}

func (o *spanLog) Start(ctx context.Context, s *runtime.SpanStart) (context.Context, runtime.Span) {
	sp := &loggedSpan{start: *s}
	o.spans = append(o.spans, sp)
	return ctx, sp
}

func (sp *loggedSpan) Stop()                  {}
func (sp *loggedSpan) End(e *runtime.SpanEnd) { sp.end = e }

// TestSearchAndLoadSpans: session_search and session_load each open one
// span with the session, user, run and filter key of the call, ended with
// the cards found or events loaded (and the load's anchor event).
func TestSearchAndLoadSpans(t *testing.T) {
	f := newFixture(t)
	obs := &spanLog{}
	f.x.Observe(obs)
	res := search(t, f, `{"query": "certificate serial number", "scope": "current_session"}`)
	out, err := call(t, NewLoadTool(f.x, nil), f.cur, `{"event_id": "`+f.ids["expired"]+`", "before": 1, "after": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	var w Window
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatal(err)
	}
	if len(obs.spans) != 2 {
		t.Fatalf("%d spans, want a search and a load", len(obs.spans))
	}
	s, l := obs.spans[0], obs.spans[1]
	for _, sp := range obs.spans {
		if sp.start.App != f.cur.App || sp.start.User != f.cur.User || sp.start.Session != f.cur.Session || sp.start.Run != "run_x" || sp.end == nil || sp.end.Err != nil {
			t.Errorf("%s span %+v ended %+v", sp.start.Kind, sp.start, sp.end)
		}
	}
	if s.start.Kind != runtime.SpanRecallSearch || s.start.FilterKey != "n" || s.end.Count != len(res.Hits) || len(res.Hits) == 0 {
		t.Errorf("search span %+v %+v, %d hits", s.start, s.end, len(res.Hits))
	}
	if l.start.Kind != runtime.SpanRecallLoad || l.end.Count != len(w.Events) || l.end.EventID != f.ids["expired"] {
		t.Errorf("load span %+v %+v, window %d events anchored at %s", l.start, l.end, len(w.Events), w.Anchor)
	}
}

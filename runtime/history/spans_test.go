package history_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
)

// spans is a runtime.Observer that records every span with its parent.
type spans struct {
	mu   sync.Mutex
	list []*span
}

type span struct {
	start  runtime.SpanStart
	parent *span
	end    *runtime.SpanEnd
}

type spanKey struct{}

func (o *spans) Start(ctx context.Context, s *runtime.SpanStart) (context.Context, runtime.Span) {
	sp := &span{start: *s}
	sp.parent, _ = ctx.Value(spanKey{}).(*span)
	o.mu.Lock()
	o.list = append(o.list, sp)
	o.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, sp), sp
}

func (sp *span) Stop()                  {}
func (sp *span) End(e *runtime.SpanEnd) { sp.end = e }

// TestReliefSpans: a pressure relief is a span with the session, run and
// node of the call, with the summary update it made under it (its new
// boundary as an attribute) and the compactions of the request before and
// after it.
func TestReliefSpans(t *testing.T) {
	obs := &spans{}
	v, _, _, _ := reliefSetup(t, "", "SHORT SUMMARY", func(c *history.Config) { c.Observer = obs })
	turn := runtime.ContextTurn{Turn: 1, Head: []runtime.Message{{Role: runtime.RoleSystem, Content: "instruction"}},
		Tail: []runtime.Message{{Role: runtime.RoleUser, Content: "current question"}}}
	b := v.Build(context.Background(), turn)
	if b.Relief == nil || !b.Relief.Rebuilt {
		t.Fatalf("relief %+v", b.Relief)
	}
	counts := map[runtime.SpanKind]int{}
	var relief, summary *span
	for _, sp := range obs.list {
		counts[sp.start.Kind]++
		if sp.end == nil {
			t.Errorf("%s span not ended", sp.start.Kind)
		}
		s := sp.start
		if s.App != key.App || s.Session != key.Session || s.User != key.User || s.Run != "run_cur" || s.FilterKey != "bot" {
			t.Errorf("%s span ids %+v", s.Kind, s)
		}
		switch s.Kind {
		case runtime.SpanRelief:
			relief = sp
			if s.Node != "bot" || s.Turn != 1 || sp.parent != nil {
				t.Errorf("relief span %+v under %v", s, sp.parent)
			}
		case runtime.SpanSummary:
			// The first summary of a key is the call's (at Open), the
			// relief's under its span.
			if sp.parent != nil {
				summary = sp
			}
		case runtime.SpanCompaction:
			if s.Node != "bot" || s.Turn != 1 {
				t.Errorf("compaction span %+v", s)
			}
		default:
			t.Errorf("unexpected %s span", s.Kind)
		}
	}
	if counts[runtime.SpanRelief] != 1 || counts[runtime.SpanSummary] != 2 || summary == nil || counts[runtime.SpanCompaction] != 2 {
		t.Fatalf("span counts %v", counts)
	}
	if summary.parent != relief {
		t.Errorf("the summary span is not under the relief span")
	}
	if summary.end.Boundary == 0 || relief.end.Boundary != summary.end.Boundary || v.Projection().Summary.Boundary != summary.end.Boundary {
		t.Errorf("boundaries: summary %d, relief %d, projection %d", summary.end.Boundary, relief.end.Boundary, v.Projection().Summary.Boundary)
	}
}

package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The scheduler's events are held for a burst hand-off (spec/events.md,
// "When the stream delivers"), but never past a host call's start: the
// model of the write node answers only once the caller has seen write's
// node_started (nothing else of the run is sent before the model's reply),
// and the stream stays in production order (ids increase).
func TestHandOffBeforeHostCall(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			seen := make(chan struct{})
			reply := textReply("The report.", 3)
			model := &fakeModel{name: "fast", reply: func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
				select {
				case <-seen:
					return reply(ctx, req, onDelta)
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Second):
					return nil, errors.New("node_started of write held while its model call runs")
				}
			}}
			f := newFixture(t, b.open(t), buildProgram(t, progOpts{noInterrupt: true}), model, nil, nil)
			ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var last string
			var fin *Event
			for e := range ch {
				if e.Kind == EventNodeStarted && e.Node == "write" {
					close(seen)
				}
				if e.ID <= last {
					t.Errorf("event %s %s (%s) after %s: out of production order", e.Kind, e.Node, e.ID, last)
				}
				last = e.ID
				kinds = append(kinds, string(e.Kind)+" "+e.Node)
				if e.Kind == EventRunFinished {
					fin = e
				}
			}
			if fin == nil || fin.Status != StatusCompleted {
				t.Fatalf("run did not complete: %+v; stream %q", fin, kinds)
			}
		})
	}
}

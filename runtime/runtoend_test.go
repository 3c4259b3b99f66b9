package runtime

import (
	"context"
	"testing"
)

// TestRunToEndCancels: the caller's ctx ending cancels the run, and the
// stream still ends with run_finished, canceled.
func TestRunToEndCancels(t *testing.T) {
	model, entered, _ := blockingModel()
	f := newFixture(t, backends[0].open(t), buildProgram(t, progOpts{}), model, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := f.r.RunToEnd(ctx, Invocation{User: "u", Session: "s", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	evs := drain(t, ch)
	if fin := last(evs); fin.Kind != EventRunFinished || fin.Status != StatusCanceled {
		t.Fatalf("last event %s %s; %v", fin.Kind, fin.Status, kinds(evs))
	}
}

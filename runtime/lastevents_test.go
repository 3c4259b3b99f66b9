package runtime_test

import (
	"context"
	"testing"

	"github.com/agentc/agentc/runtime"
)

// lastOfKind runs inv to its end and returns the last event of each kind.
func lastOfKind(t *testing.T, r *runtime.Runner, inv runtime.Invocation) map[runtime.EventKind]*runtime.Event {
	t.Helper()
	ch, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	out := map[runtime.EventKind]*runtime.Event{}
	for e := range ch {
		out[e.Kind] = e
	}
	return out
}

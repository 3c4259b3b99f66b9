package agui

import (
	"context"
	"testing"

	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store"
)

// TestRecordRun reads the runId record a request wrote: retention finds
// the run it started through it.
func TestRecordRun(t *testing.T) {
	h := newHarness(t, "chatter", server.Limits{})
	h.run("ana", input("t1", "r1", userMsg("m1", "hi")))
	v, err := h.st.GetDoc(context.Background(), CollRuns, store.DocPath(h.b.App(), "ana", "t1", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := RecordRun(v)
	if err != nil || run == "" {
		t.Fatalf("RecordRun(%s) = %q, %v", v, run, err)
	}
	if _, err := h.st.GetRun(context.Background(), run); err != nil {
		t.Errorf("the record's run: %v", err)
	}
	if run, err := RecordRun([]byte(`{}`)); err != nil || run != "" {
		t.Errorf("a reservation: %q, %v", run, err)
	}
	if _, err := RecordRun([]byte(`{`)); err == nil {
		t.Error("a damaged record read")
	}
}

package a2a_test

import (
	"testing"

	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// TestTaskRecord reads the record a task wrote: retention finds its run
// and its list entry through it.
func TestTaskRecord(t *testing.T) {
	st := memory.New()
	e := newEnv(t, st)
	id := str(t, e.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", nil)), "task", "id")
	v, err := st.GetDoc(t.Context(), a2a.CollTask, store.DocPath(e.backend.App(), "ana", id))
	if err != nil {
		t.Fatal(err)
	}
	run, index, err := a2a.TaskRecord(v)
	if err != nil || run == "" || index == "" {
		t.Fatalf("TaskRecord = %q, %q, %v", run, index, err)
	}
	if got, err := st.LookupTask(t.Context(), "ana", id); err != nil || got != run {
		t.Errorf("the task index says %q, %v; the record %q", got, err, run)
	}
	if _, err := st.GetDoc(t.Context(), a2a.CollRecent, index); err != nil {
		t.Errorf("the record's list entry: %v", err)
	}
	if _, _, err := a2a.TaskRecord([]byte(`{`)); err == nil {
		t.Error("a damaged record read")
	}
}

package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
)

// TestTasksSurviveRestart closes and reopens a Pebble store: GetTask and
// ListTasks answer from the records, an input-required task resumes in
// the new process, and a record left "working" by a process that stopped
// after its run ended is settled from the run and its ledger.
func TestTasksSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	st1, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e1 := newEnv(t, st1)
	done := get(t, e1.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", map[string]any{"contextId": "r1"})), "task")
	waiting := get(t, e1.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", map[string]any{"contextId": "r2"})), "task")
	cut := get(t, e1.ok("ana", "", "message/send", msg03("What is the capital of France?", map[string]any{"contextId": "r3"})), "id")
	if str(t, waiting, "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("waiting: %v", waiting)
	}
	// The process "stopped" after cut's run ended but before its record
	// was saved: the record still says working, without the artifact.
	key := store.DocPath(e1.backend.App(), "ana", cut.(string))
	raw, err := st1.GetDoc(t.Context(), a2a.CollTask, key)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	rec["status"].(map[string]any)["state"] = "working"
	delete(rec, "artifacts")
	raw, _ = json.Marshal(rec)
	if err := st1.ApplyDocs(t.Context(), store.DocOp{Coll: a2a.CollTask, Key: key, Value: raw}); err != nil {
		t.Fatal(err)
	}
	e1.close()
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	e2 := newEnv(t, st2)
	got := e2.ok("ana", "1.0", "GetTask", map[string]any{"id": str(t, done, "id")})
	if str(t, got, "status", "state") != "TASK_STATE_COMPLETED" || str(t, got, "artifacts", 0, "parts", 0, "text") != "Paris." ||
		str(t, got, "contextId") != "r1" || len(get(t, got, "history").([]any)) != 1 {
		t.Fatalf("after restart: %v", got)
	}
	list := e2.ok("ana", "1.0", "ListTasks", map[string]any{"includeArtifacts": true})
	if get(t, list, "totalSize") != 3.0 {
		t.Fatalf("list after restart: %v", list)
	}
	settled := e2.ok("ana", "", "tasks/get", map[string]any{"id": cut})
	if str(t, settled, "status", "state") != "completed" || str(t, settled, "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("settled from the ledger: %v", settled)
	}
	// The waiting task resumes in the new process.
	resumed := get(t, e2.ok("ana", "1.0", "SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": str(t, waiting, "id")})), "task")
	if str(t, resumed, "status", "state") != "TASK_STATE_COMPLETED" ||
		str(t, resumed, "artifacts", 0, "parts", 0, "text") != "Release 2.1 fixes the login bug." {
		t.Fatalf("resumed after restart: %v", resumed)
	}
	// Tenancy survives too.
	e2.fail("bob", "1.0", "GetTask", map[string]any{"id": str(t, done, "id")}, -32001)
}

// TestCloseCancelsTasksInFlight: closing the handler with a deadline that
// ends cancels the runs still in flight, and their tasks are recorded as
// canceled.
func TestCloseCancelsTasksInFlight(t *testing.T) {
	dir := t.TempDir()
	st, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, st)
	res := e.ok("ana", "1.0", "SendMessage", map[string]any{"message": get(t, msg1("slow work", nil), "message"),
		"configuration": map[string]any{"returnImmediately": true}})
	id := str(t, res, "task", "id")
	<-e.gate.started
	ctx, cancel := contextWithCancel(t)
	cancel()
	if err := e.h.Close(ctx); err == nil {
		t.Fatal("Close with an ended context returned nil while a task was in flight")
	}
	if st := recordState(t, e, "ana", id); st != "canceled" {
		t.Fatalf("record after close: %s", st)
	}
	// A closed handler starts nothing.
	r := e.call("ana", "1.0", "SendMessage", msg1("What is the capital of France?", nil))
	if r.Error == nil || r.Error.Code != -32603 {
		t.Fatalf("send after close: %+v", r.Error)
	}
}

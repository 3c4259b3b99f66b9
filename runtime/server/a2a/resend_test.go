package a2a_test

import (
	"fmt"
	"testing"

	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// runsOf counts user's runs in the store.
func runsOf(e *env, user string) int {
	e.t.Helper()
	runs, _, err := e.st.ListRuns(e.t.Context(), store.RunFilter{App: e.backend.App(), User: user})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(runs)
}

// TestResentMessageRejoinsItsTask: a message sent again with the same
// messageId answers with the task its first sending started — finished,
// waiting for input, or still working (streamed live) — and starts no
// second run; the same messageId from another user is another message.
func TestResentMessageRejoinsItsTask(t *testing.T) {
	e := newEnv(t, memory.New())

	done := msg1("What is the capital of France?", nil)
	first := get(t, e.ok("ana", "1.0", "SendMessage", done), "task")
	again := get(t, e.ok("ana", "1.0", "SendMessage", done), "task")
	if str(t, again, "id") != str(t, first, "id") || str(t, again, "status", "state") != "TASK_STATE_COMPLETED" ||
		str(t, again, "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("re-sent: %v\nfirst: %v", again, first)
	}
	frames := e.stream("ana", "1.0", "SendStreamingMessage", done)
	if len(frames) != 1 || str(t, decode(t, frames[0].resp.Result), "task", "id") != str(t, first, "id") {
		t.Fatalf("re-sent as a stream: %+v", frames)
	}
	if n := runsOf(e, "ana"); n != 1 {
		t.Fatalf("%d runs after sending one message three times", n)
	}

	waiting := msg1("publish the release notes", nil)
	w1 := get(t, e.ok("ana", "1.0", "SendMessage", waiting), "task")
	w2 := get(t, e.ok("ana", "1.0", "SendMessage", waiting), "task")
	if str(t, w2, "id") != str(t, w1, "id") || str(t, w2, "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("re-sent interrupted: %v", w2)
	}

	// Another user's message with the same id is theirs.
	bob := get(t, e.ok("bob", "1.0", "SendMessage", done), "task")
	if str(t, bob, "id") == str(t, first, "id") || runsOf(e, "bob") != 1 {
		t.Fatalf("bob joined ana's task: %v", bob)
	}

	// A working task: the re-sent stream follows it live to its end.
	slow := msg1("slow question", nil)
	live := e.open("ana", "1.0", "SendStreamingMessage", slow)
	f, ok := live.next()
	if !ok {
		t.Fatal("no first frame")
	}
	id := str(t, decode(t, f.resp.Result), "task", "id")
	<-e.gate.started
	rejoined := e.open("ana", "1.0", "SendStreamingMessage", slow)
	g, ok := rejoined.next()
	if !ok || str(t, decode(t, g.resp.Result), "task", "id") != id {
		t.Fatalf("rejoined stream's first frame: %+v", g)
	}
	close(e.gate.open)
	var last frame
	for f, ok := rejoined.next(); ok; f, ok = rejoined.next() {
		last = f
	}
	if st := str(t, decode(t, last.resp.Result), "statusUpdate", "status", "state"); st != "TASK_STATE_COMPLETED" {
		t.Fatalf("rejoined stream ended with %v", decode(t, last.resp.Result))
	}
	for _, ok := live.next(); ok; _, ok = live.next() {
	}
	if n := runsOf(e, "ana"); n != 3 {
		t.Fatalf("%d runs of ana, want 3 (one per distinct message)", n)
	}
}

// TestOrphanedMessageTakenOver: a messageId reserved by a process that
// died before recording its task (its claim names another instance of a
// store this process alone opens) does not answer task-not-found: the
// re-sent message takes it over, its task runs once, and a later re-send
// rejoins that task.
func TestOrphanedMessageTakenOver(t *testing.T) {
	e := newEnv(t, memory.New())
	m := msg1("What is the capital of France?", nil)
	id := m["message"].(map[string]any)["messageId"].(string)
	orphan := fmt.Sprintf(`{"task":"task_dead","claim":{"owner":"proc_dead","since":%d,"session":"ctx_dead","inv":"inv_dead"}}`,
		e.backend.Clock.Now().UnixMilli())
	if err := e.st.ApplyDocs(t.Context(), store.DocOp{Coll: a2a.CollMessage, Key: store.DocPath(e.backend.App(), "ana", id), Value: []byte(orphan)}); err != nil {
		t.Fatal(err)
	}
	first := get(t, e.ok("ana", "1.0", "SendMessage", m), "task")
	if str(t, first, "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("re-sent after its process died: %v", first)
	}
	again := get(t, e.ok("ana", "1.0", "SendMessage", m), "task")
	if str(t, again, "id") != str(t, first, "id") || runsOf(e, "ana") != 1 {
		t.Fatalf("re-sent again: %v (first %v), %d runs", again, first, runsOf(e, "ana"))
	}
}

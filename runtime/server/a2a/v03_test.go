package a2a_test

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store/memory"
)

// Requests without an A2A-Version header speak 0.3: slash methods, kind
// discriminators, lowercase states and roles, final on the last status.

func TestSend03(t *testing.T) {
	e := newEnv(t, memory.New())
	task := e.ok("ana", "", "message/send", msg03("What is the capital of France?", nil))
	if str(t, task, "kind") != "task" || str(t, task, "status", "state") != "completed" {
		t.Fatalf("0.3 task: %v", task)
	}
	if str(t, task, "artifacts", 0, "parts", 0, "kind") != "text" || str(t, task, "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("artifacts: %v", task["artifacts"])
	}
	if str(t, task, "history", 0, "kind") != "message" || str(t, task, "history", 0, "role") != "user" ||
		str(t, task, "history", 0, "parts", 0, "kind") != "text" {
		t.Fatalf("history: %v", task["history"])
	}
	id := str(t, task, "id")
	got := e.ok("ana", "", "tasks/get", map[string]any{"id": id})
	if str(t, got, "kind") != "task" || str(t, got, "id") != id {
		t.Fatalf("tasks/get: %v", got)
	}
	// The same task reads in 1.0 too: one record, two renderings.
	if s := str(t, e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}), "status", "state"); s != "TASK_STATE_COMPLETED" {
		t.Fatalf("1.0 view: %s", s)
	}
	e.fail("ana", "", "tasks/cancel", map[string]any{"id": id}, -32002)
	e.fail("ana", "", "tasks/resubscribe", map[string]any{"id": id}, -32004)
	// 1.0 method names are not 0.3 methods, and the reverse.
	e.fail("ana", "", "SendMessage", msg1("hi", nil), -32601)
	e.fail("ana", "", "tasks/list", map[string]any{}, -32601)
	e.fail("ana", "1.0", "message/send", msg03("hi", nil), -32601)
	// An explicit 0.3 header is 0.3.
	if k := str(t, e.ok("ana", "0.3", "tasks/get", map[string]any{"id": id}), "kind"); k != "task" {
		t.Fatalf("A2A-Version 0.3: kind %q", k)
	}
}

func TestStream03(t *testing.T) {
	e := newEnv(t, memory.New())
	frames := e.stream("ana", "", "message/stream", msg03("What is the capital of France?", nil))
	var kinds []string
	for i, f := range frames {
		r := decode(t, f.resp.Result)
		kinds = append(kinds, str(t, r, "kind"))
		if k := str(t, r, "kind"); k == "status-update" {
			final := get(t, r, "final")
			if final != (i == len(frames)-1) {
				t.Fatalf("frame %d final=%v: %v", i, final, r)
			}
		}
	}
	if strings.Join(kinds, ",") != "task,status-update,artifact-update,status-update" {
		t.Fatalf("kinds %v", kinds)
	}
	last := decode(t, frames[len(frames)-1].resp.Result)
	if str(t, last, "status", "state") != "completed" || get(t, last, "final") != true {
		t.Fatalf("last: %v", last)
	}
}

func TestInterruptResume03(t *testing.T) {
	e := newEnv(t, memory.New())
	frames := e.stream("ana", "", "message/stream", msg03("publish the release notes", map[string]any{"contextId": "c03"}))
	last := decode(t, frames[len(frames)-1].resp.Result)
	if str(t, last, "status", "state") != "input-required" || get(t, last, "final") != true ||
		str(t, last, "status", "message", "role") != "agent" || str(t, last, "status", "message", "parts", 1, "kind") != "data" {
		t.Fatalf("input-required: %v", last)
	}
	id := str(t, last, "taskId")
	// Resubscribing to a task waiting for input: the task, then its final
	// status.
	sub := e.stream("ana", "", "tasks/resubscribe", map[string]any{"id": id})
	if len(sub) != 2 || str(t, decode(t, sub[0].resp.Result), "kind") != "task" || get(t, decode(t, sub[1].resp.Result), "final") != true {
		t.Fatalf("resubscribe: %+v", sub)
	}
	answer := map[string]any{"message": map[string]any{"kind": "message", "messageId": "a03", "role": "user", "taskId": id,
		"contextId": "c03", "parts": []any{map[string]any{"kind": "data", "data": map[string]any{"approved": true}}}}}
	done := e.ok("ana", "", "message/send", answer)
	if str(t, done, "status", "state") != "completed" || str(t, done, "id") != id {
		t.Fatalf("resumed: %v", done)
	}
}

func TestNonBlocking03(t *testing.T) {
	e := newEnv(t, memory.New())
	res := e.ok("ana", "", "message/send", map[string]any{"message": get(t, msg03("slow, please", nil), "message"),
		"configuration": map[string]any{"blocking": false}})
	if s := str(t, res, "status", "state"); s != "submitted" && s != "working" {
		t.Fatalf("non-blocking: %v", res)
	}
	<-e.gate.started
	canceled := e.ok("ana", "", "tasks/cancel", map[string]any{"id": str(t, res, "id")})
	if str(t, canceled, "kind") != "task" || str(t, canceled, "status", "state") != "canceled" {
		t.Fatalf("cancel: %v", canceled)
	}
}

func TestDataPartInput03(t *testing.T) {
	e := newEnv(t, memory.New())
	// A message that is one data part is its JSON (a string input field
	// takes the JSON text as is).
	m := map[string]any{"message": map[string]any{"kind": "message", "messageId": "d1", "role": "user",
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"q": "capital of France"}}}}}
	if s := str(t, e.ok("ana", "", "message/send", m), "artifacts", 0, "parts", 0, "text"); s != "Paris." {
		t.Fatalf("data part: %q", s)
	}
	// A file part by a URL that is not http(s) is refused.
	m = map[string]any{"message": map[string]any{"kind": "message", "messageId": "d0", "role": "user",
		"parts": []any{map[string]any{"kind": "file", "file": map[string]any{"uri": "file:///etc/passwd"}}}}}
	e.fail("ana", "", "message/send", m, -32005)
	// Text plus data becomes lines of text.
	m = map[string]any{"message": map[string]any{"kind": "message", "messageId": "d2", "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": "What is"}, map[string]any{"kind": "data", "data": map[string]any{"q": "the capital of France"}}}}}
	if s := str(t, e.ok("ana", "", "message/send", m), "artifacts", 0, "parts", 0, "text"); s != "Paris." {
		t.Fatalf("text and data: %q", s)
	}
}

package a2a_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store/memory"
)

func TestAgentCard(t *testing.T) {
	e := newEnv(t, memory.New())
	fetch := func(ver string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/.well-known/agent-card.json", nil)
		if ver != "" {
			req.Header.Set("A2A-Version", ver)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Vary") != "A2A-Version" {
			t.Fatalf("card: %d %v %s", resp.StatusCode, resp.Header, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	c := fetch("1.0")
	endpoint := e.srv.URL + "/a2a"
	if str(t, c, "name") != "helpdesk" || str(t, c, "version") != "2.1.0" ||
		str(t, c, "description") != "Answers questions; asks before publishing" {
		t.Fatalf("1.0 card: %v", c)
	}
	if str(t, c, "supportedInterfaces", 0, "url") != endpoint || str(t, c, "supportedInterfaces", 0, "protocolBinding") != "JSONRPC" ||
		str(t, c, "supportedInterfaces", 0, "protocolVersion") != "1.0" || str(t, c, "supportedInterfaces", 1, "protocolVersion") != "0.3" {
		t.Fatalf("1.0 interfaces: %v", c["supportedInterfaces"])
	}
	if get(t, c, "capabilities", "streaming") != true || get(t, c, "capabilities", "pushNotifications") != false {
		t.Fatalf("capabilities: %v", c["capabilities"])
	}
	if str(t, c, "defaultInputModes", 0) != "text/plain" || str(t, c, "defaultOutputModes", 1) != "application/json" {
		t.Fatalf("modes: %v", c)
	}
	if str(t, c, "skills", 0, "tags", 0) != "questions" || str(t, c, "skills", 0, "tags", 1) != "release-notes" ||
		str(t, c, "skills", 0, "id") == "" || str(t, c, "skills", 0, "description") == "" {
		t.Fatalf("skills: %v", c["skills"])
	}
	if _, ok := c["protocolVersion"]; ok {
		t.Fatalf("1.0 card has a 0.3 member: %v", c)
	}

	old := fetch("")
	if str(t, old, "protocolVersion") != "0.3.0" || str(t, old, "url") != endpoint || str(t, old, "preferredTransport") != "JSONRPC" ||
		get(t, old, "capabilities", "streaming") != true || str(t, old, "supportedInterfaces", 0, "protocolVersion") != "1.0" {
		t.Fatalf("0.3 card: %v", old)
	}

	// Public: no credentials needed; only GET and HEAD.
	resp, err := e.srv.Client().Post(e.srv.URL+"/.well-known/agent-card.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST card: %d", resp.StatusCode)
	}
}

func TestCardURLFromOptions(t *testing.T) {
	// Forwarded headers count from a configured proxy only (card_test.go).
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	req := httptestRequest(t, e.srv.URL+"/.well-known/agent-card.json")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", "agents.example.com")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if got := str(t, c, "supportedInterfaces", 0, "url"); got != "https://agents.example.com/a2a" {
		t.Fatalf("derived url %q", got)
	}
}

func httptestRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestSendMessageCompletes(t *testing.T) {
	e := newEnv(t, memory.New())
	res := e.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", nil))
	task := get(t, res, "task")
	if task == nil || len(res) != 1 {
		t.Fatalf("result is not {task}: %v", res)
	}
	if str(t, task, "status", "state") != "TASK_STATE_COMPLETED" || str(t, task, "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("task: %v", task)
	}
	id, ctxID := str(t, task, "id"), str(t, task, "contextId")
	if !strings.HasPrefix(id, "task_") || !strings.HasPrefix(ctxID, "ctx_") {
		t.Fatalf("ids %q %q", id, ctxID)
	}
	if _, ok := task.(map[string]any)["kind"]; ok {
		t.Fatalf("1.0 task has kind: %v", task)
	}
	if str(t, task, "history", 0, "role") != "ROLE_USER" || str(t, task, "history", 0, "taskId") != id ||
		str(t, task, "history", 0, "parts", 0, "text") != "What is the capital of France?" {
		t.Fatalf("history: %v", get(t, task, "history"))
	}
	if ts := str(t, task, "status", "timestamp"); !strings.HasSuffix(ts, "Z") || len(ts) != len("2026-03-04T05:06:07.000Z") {
		t.Fatalf("timestamp %q", ts)
	}

	got := e.ok("ana", "1.0", "GetTask", map[string]any{"id": id, "historyLength": 0})
	if str(t, got, "id") != id || str(t, got, "status", "state") != "TASK_STATE_COMPLETED" || got["history"] != nil {
		t.Fatalf("GetTask: %v", got)
	}
	if str(t, got, "artifacts", 0, "artifactId") != "output" {
		t.Fatalf("GetTask artifacts: %v", got)
	}
	// A terminal task takes no more messages and cannot be canceled.
	e.fail("ana", "1.0", "SendMessage", msg1("more", map[string]any{"taskId": id}), -32004)
	e.fail("ana", "1.0", "CancelTask", map[string]any{"id": id}, -32002)
	e.fail("ana", "1.0", "SubscribeToTask", map[string]any{"id": id}, -32004)
}

func TestMultiTurnOnOneContext(t *testing.T) {
	e := newEnv(t, memory.New())
	first := get(t, e.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", map[string]any{"contextId": "conv-1"})), "task")
	second := get(t, e.ok("ana", "1.0", "SendMessage", msg1("Anything else?", map[string]any{"contextId": "conv-1"})), "task")
	if str(t, first, "contextId") != "conv-1" || str(t, second, "contextId") != "conv-1" || str(t, first, "id") == str(t, second, "id") {
		t.Fatalf("tasks %v / %v", first, second)
	}
	if str(t, second, "artifacts", 0, "parts", 0, "text") != "I have nothing scripted for this." {
		t.Fatalf("second: %v", second)
	}
	// Both runs are in one session: the context.
	info, err := e.backend.Sessions.Get(t.Context(), sessionKey(e, "ana", "conv-1"))
	if err != nil || len(info.Runs) != 2 {
		t.Fatalf("session: %+v %v", info, err)
	}
	// A task id with another context id is refused.
	e.fail("ana", "1.0", "SendMessage", msg1("x", map[string]any{"taskId": str(t, first, "id"), "contextId": "conv-2"}), -32602)
}

func TestInterruptInputRequiredResume(t *testing.T) {
	e := newEnv(t, memory.New())
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", nil)), "task")
	id := str(t, task, "id")
	if str(t, task, "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("task: %v", task)
	}
	if str(t, task, "status", "message", "role") != "ROLE_AGENT" || str(t, task, "status", "message", "parts", 0, "text") != "Publish this answer?" {
		t.Fatalf("status message: %v", get(t, task, "status"))
	}
	its := get(t, task, "status", "message", "parts", 1, "data", "interrupts").([]any)
	if len(its) != 1 || str(t, its[0], "id") == "" || get(t, its[0], "schema") == nil {
		t.Fatalf("interrupts: %v", its)
	}
	// An answer that does not fit the interrupt's type is refused; the task
	// still waits.
	e.fail("ana", "1.0", "SendMessage", msg1(`{"approved": "perhaps"}`, map[string]any{"taskId": id}), -32602)
	if s := str(t, e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}), "status", "state"); s != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("after a bad answer: %s", s)
	}
	// A data part answers; the same run resumes and completes.
	answer := map[string]any{"message": map[string]any{"messageId": "ans-1", "role": "ROLE_USER", "taskId": id,
		"parts": []any{map[string]any{"data": map[string]any{"approved": true, "note": "ship it"}}}}}
	done := get(t, e.ok("ana", "1.0", "SendMessage", answer), "task")
	if str(t, done, "id") != id || str(t, done, "status", "state") != "TASK_STATE_COMPLETED" ||
		str(t, done, "artifacts", 0, "parts", 0, "text") != "Release 2.1 fixes the login bug." {
		t.Fatalf("resumed: %v", done)
	}
	hist := get(t, done, "history").([]any)
	if len(hist) != 3 || str(t, hist[1], "role") != "ROLE_AGENT" || str(t, hist[2], "messageId") != "ans-1" {
		t.Fatalf("history: %v", hist)
	}
	runs, err := e.backend.Sessions.Runs(t.Context(), sessionKey(e, "ana", str(t, done, "contextId")))
	if err != nil || len(runs) != 1 || runs[0].Status != "completed" {
		t.Fatalf("one run, resumed: %+v %v", runs, err)
	}
}

func TestInterruptAnsweredWithText(t *testing.T) {
	e := newEnv(t, memory.New())
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", map[string]any{"contextId": "c-text"})), "task")
	done := get(t, e.ok("ana", "1.0", "SendMessage", msg1(`{"approved": false}`, map[string]any{"taskId": str(t, task, "id"), "contextId": "c-text"})), "task")
	if str(t, done, "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("resumed: %v", done)
	}
}

func TestStreaming10(t *testing.T) {
	e := newEnv(t, memory.New())
	frames := e.stream("ana", "1.0", "SendStreamingMessage", msg1("What is the capital of France?", nil))
	if len(frames) < 3 {
		t.Fatalf("frames: %+v", frames)
	}
	var kinds []string
	for _, f := range frames {
		if f.resp.Error != nil || f.event != "" {
			t.Fatalf("error frame %+v", f)
		}
		r := decode(t, f.resp.Result)
		if len(r) != 1 {
			t.Fatalf("stream response with %d members: %v", len(r), r)
		}
		for k := range r {
			kinds = append(kinds, k)
		}
	}
	first := decode(t, frames[0].resp.Result)
	if str(t, first, "task", "status", "state") != "TASK_STATE_SUBMITTED" {
		t.Fatalf("first frame: %v", first)
	}
	want := []string{"task", "statusUpdate", "artifactUpdate", "statusUpdate"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("frames %v, want %v", kinds, want)
	}
	working := decode(t, frames[1].resp.Result)
	art := decode(t, frames[2].resp.Result)
	last := decode(t, frames[3].resp.Result)
	if str(t, working, "statusUpdate", "status", "state") != "TASK_STATE_WORKING" ||
		str(t, art, "artifactUpdate", "artifact", "parts", 0, "text") != "Paris." ||
		str(t, last, "statusUpdate", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("updates: %v %v %v", working, art, last)
	}
	if _, ok := last["statusUpdate"].(map[string]any)["final"]; ok {
		t.Fatalf("1.0 status update has final: %v", last)
	}
	if str(t, last, "statusUpdate", "taskId") != str(t, first, "task", "id") {
		t.Fatalf("task ids differ")
	}
}

func TestStreamingInterruptThenResume(t *testing.T) {
	e := newEnv(t, memory.New())
	frames := e.stream("ana", "1.0", "SendStreamingMessage", msg1("publish the release notes", nil))
	last := decode(t, frames[len(frames)-1].resp.Result)
	if str(t, last, "statusUpdate", "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("last frame: %v", last)
	}
	id := str(t, last, "statusUpdate", "taskId")
	// Subscribing to a task that waits for input gives the task and ends.
	sub := e.stream("ana", "1.0", "SubscribeToTask", map[string]any{"id": id})
	if len(sub) != 1 || str(t, decode(t, sub[0].resp.Result), "task", "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("subscribe: %+v", sub)
	}
	frames = e.stream("ana", "1.0", "SendStreamingMessage", msg1(`{"approved": true}`, map[string]any{"taskId": id}))
	first, end := decode(t, frames[0].resp.Result), decode(t, frames[len(frames)-1].resp.Result)
	if str(t, first, "task", "id") != id || str(t, end, "statusUpdate", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("resume stream: %v ... %v", first, end)
	}
}

func TestCancelWorkingTask(t *testing.T) {
	e := newEnv(t, memory.New())
	res := e.ok("ana", "1.0", "SendMessage", map[string]any{"message": get(t, msg1("a slow question", nil), "message"),
		"configuration": map[string]any{"returnImmediately": true}})
	id := str(t, res, "task", "id")
	if s := str(t, res, "task", "status", "state"); s != "TASK_STATE_SUBMITTED" && s != "TASK_STATE_WORKING" {
		t.Fatalf("non-blocking send: %v", res)
	}
	<-e.gate.started // the model is waiting
	if s := e.waitState(t, id, "TASK_STATE_WORKING"); s != "TASK_STATE_WORKING" {
		t.Fatalf("while running: %s", s)
	}
	// Another user cannot see or cancel it.
	e.fail("bob", "1.0", "CancelTask", map[string]any{"id": id}, -32001)
	// A message to a working task is refused.
	e.fail("ana", "1.0", "SendMessage", msg1("hurry", map[string]any{"taskId": id}), -32004)
	canceled := e.ok("ana", "1.0", "CancelTask", map[string]any{"id": id})
	if str(t, canceled, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("cancel: %v", canceled)
	}
	e.fail("ana", "1.0", "CancelTask", map[string]any{"id": id}, -32002)
	run, err := e.backend.GetRun(t.Context(), "ana", e.taskRun(id))
	if err != nil || run.Status != "canceled" {
		t.Fatalf("run: %+v %v", run, err)
	}
}

func TestCancelInputRequiredTask(t *testing.T) {
	e := newEnv(t, memory.New())
	id := str(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", nil)), "task", "id")
	canceled := e.ok("ana", "1.0", "CancelTask", map[string]any{"id": id})
	if str(t, canceled, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("cancel: %v", canceled)
	}
	e.fail("ana", "1.0", "SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": id}), -32004)
}

func TestSubscribeToWorkingTask(t *testing.T) {
	e := newEnv(t, memory.New())
	res := e.ok("ana", "1.0", "SendMessage", map[string]any{"message": get(t, msg1("another slow one", nil), "message"),
		"configuration": map[string]any{"returnImmediately": true}})
	id := str(t, res, "task", "id")
	<-e.gate.started
	e.waitState(t, id, "TASK_STATE_WORKING")
	r := e.open("ana", "1.0", "SubscribeToTask", map[string]any{"id": id})
	f, ok := r.next() // the subscriber is attached: let the model answer
	if !ok {
		t.Fatal("empty stream")
	}
	close(e.gate.open)
	frames := []frame{f}
	for f, ok := r.next(); ok; f, ok = r.next() {
		frames = append(frames, f)
	}
	first, last := decode(t, frames[0].resp.Result), decode(t, frames[len(frames)-1].resp.Result)
	if str(t, first, "task", "status", "state") != "TASK_STATE_WORKING" ||
		str(t, last, "statusUpdate", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("subscribe frames: %v ... %v", first, last)
	}
}

func TestListTasks(t *testing.T) {
	e := newEnv(t, memory.New())
	var ids []string
	for i, q := range []string{"What is the capital of France?", "publish the release notes", "Anything?", "broken"} {
		ctxID := "list-a"
		if i%2 == 1 {
			ctxID = "list-b"
		}
		ids = append(ids, str(t, e.ok("ana", "1.0", "SendMessage", msg1(q, map[string]any{"contextId": ctxID})), "task", "id"))
	}
	e.ok("bob", "1.0", "SendMessage", msg1("bob's question", nil))

	all := e.ok("ana", "1.0", "ListTasks", map[string]any{})
	tasks := get(t, all, "tasks").([]any)
	if len(tasks) != 4 || get(t, all, "totalSize") != 4.0 || str(t, all, "nextPageToken") != "" || get(t, all, "pageSize") != 50.0 {
		t.Fatalf("list: %v", all)
	}
	// Newest update first; no artifacts unless asked.
	if str(t, tasks[0], "id") != ids[3] || str(t, tasks[3], "id") != ids[0] {
		t.Fatalf("order: %v", tasks)
	}
	if _, ok := tasks[3].(map[string]any)["artifacts"]; ok {
		t.Fatalf("artifacts without includeArtifacts: %v", tasks[3])
	}
	if str(t, tasks[0], "status", "state") != "TASK_STATE_FAILED" || !strings.Contains(str(t, tasks[0], "status", "message", "parts", 0, "text"), "scripted failure") {
		t.Fatalf("failed task: %v", tasks[0])
	}

	// Pages of 3 then 1.
	p1 := e.ok("ana", "1.0", "ListTasks", map[string]any{"pageSize": 3, "includeArtifacts": true, "historyLength": 1})
	tok := str(t, p1, "nextPageToken")
	if len(get(t, p1, "tasks").([]any)) != 3 || tok == "" || get(t, p1, "totalSize") != 4.0 {
		t.Fatalf("page 1: %v", p1)
	}
	if h := get(t, p1, "tasks", 1, "history").([]any); len(h) != 1 {
		t.Fatalf("historyLength 1: %v", h)
	}
	p2 := e.ok("ana", "1.0", "ListTasks", map[string]any{"pageSize": 3, "pageToken": tok, "includeArtifacts": true})
	if got := get(t, p2, "tasks").([]any); len(got) != 1 || str(t, got[0], "id") != ids[0] || str(t, p2, "nextPageToken") != "" ||
		str(t, got[0], "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("page 2: %v", p2)
	}
	// Filters.
	byCtx := get(t, e.ok("ana", "1.0", "ListTasks", map[string]any{"contextId": "list-b"}), "tasks").([]any)
	if len(byCtx) != 2 || str(t, byCtx[0], "id") != ids[3] || str(t, byCtx[1], "id") != ids[1] {
		t.Fatalf("by context: %v", byCtx)
	}
	byState := get(t, e.ok("ana", "1.0", "ListTasks", map[string]any{"status": "TASK_STATE_INPUT_REQUIRED"}), "tasks").([]any)
	if len(byState) != 1 || str(t, byState[0], "id") != ids[1] {
		t.Fatalf("by state: %v", byState)
	}
	after := str(t, tasks[1], "status", "timestamp")
	recent := e.ok("ana", "1.0", "ListTasks", map[string]any{"statusTimestampAfter": after})
	if get(t, recent, "totalSize") != 2.0 {
		t.Fatalf("after %s: %v", after, recent)
	}
	// Bob sees only his own.
	if b := get(t, e.ok("bob", "1.0", "ListTasks", nil), "tasks").([]any); len(b) != 1 {
		t.Fatalf("bob: %v", b)
	}
	// A page token of another user's list is refused.
	e.fail("bob", "1.0", "ListTasks", map[string]any{"pageToken": tok}, -32602)
	for _, bad := range []map[string]any{{"pageSize": 0}, {"pageSize": 101}, {"status": "TASK_STATE_RUNNING"},
		{"historyLength": -1}, {"statusTimestampAfter": "yesterday"}, {"pageToken": "!!"}, {"pageSize": "ten"}} {
		e.fail("ana", "1.0", "ListTasks", bad, -32602)
	}
}

func TestTenantIsolation(t *testing.T) {
	e := newEnv(t, memory.New())
	id := str(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", map[string]any{"contextId": "shared-name"})), "task", "id")
	for _, m := range []struct {
		method string
		params any
	}{
		{"GetTask", map[string]any{"id": id}},
		{"CancelTask", map[string]any{"id": id}},
		{"SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": id})},
	} {
		r := e.fail("bob", "1.0", m.method, m.params, -32001)
		if !strings.Contains(string(r.Error.Data[0]), "TASK_NOT_FOUND") {
			t.Fatalf("%s: details %s", m.method, r.Error.Data)
		}
	}
	if r := e.post("bob", "1.0", request("SubscribeToTask", map[string]any{"id": id})); r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("subscribe of another user's task answered %s", r.Header.Get("Content-Type"))
	} else {
		var resp rpcResp
		_ = json.NewDecoder(r.Body).Decode(&resp)
		r.Body.Close()
		if resp.Error == nil || resp.Error.Code != -32001 {
			t.Fatalf("subscribe: %+v", resp.Error)
		}
	}
	// The same context id names a different session for bob.
	bob := get(t, e.ok("bob", "1.0", "SendMessage", msg1("What is the capital of France?", map[string]any{"contextId": "shared-name"})), "task")
	if str(t, bob, "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("bob's task: %v", bob)
	}
	if s := str(t, e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}), "status", "state"); s != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("ana's task after bob: %s", s)
	}
}

func TestSeveralInterruptsAnsweredByID(t *testing.T) {
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.Runnable = "pair" })
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("two approvals please", nil)), "task")
	id := str(t, task, "id")
	its := get(t, task, "status", "message", "parts", 1, "data", "interrupts").([]any)
	if str(t, task, "status", "state") != "TASK_STATE_INPUT_REQUIRED" || len(its) != 2 ||
		str(t, task, "status", "message", "parts", 0, "text") != "First approver?\nSecond approver?" {
		t.Fatalf("two interrupts: %v", task)
	}
	// A bare answer is ambiguous with two interrupts waiting.
	r := e.fail("ana", "1.0", "SendMessage", msg1("true", map[string]any{"taskId": id}), -32602)
	if !strings.Contains(r.Error.Message, "keyed by interrupt id") {
		t.Fatalf("message %q", r.Error.Message)
	}
	answer := map[string]any{"message": map[string]any{"messageId": "both-1", "role": "ROLE_USER", "taskId": id,
		"parts": []any{map[string]any{"data": map[string]any{str(t, its[0], "id"): true, "second": false}}}}}
	done := get(t, e.ok("ana", "1.0", "SendMessage", answer), "task")
	if str(t, done, "status", "state") != "TASK_STATE_COMPLETED" || str(t, done, "artifacts", 0, "parts", 0, "text") != "both answered" {
		t.Fatalf("after both answers: %v", done)
	}
}

// TestSubRunInterruptsAnsweredOneAtATime: interrupts inside a sub-graph
// run by each item of a map are input-required with their path ids, and
// are answered one at a time (issue 16 item 2).
func TestSubRunInterruptsAnsweredOneAtATime(t *testing.T) {
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.Runnable = "batch" })
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("check both", nil)), "task")
	id := str(t, task, "id")
	its := get(t, task, "status", "message", "parts", 1, "data", "interrupts").([]any)
	if str(t, task, "status", "state") != "TASK_STATE_INPUT_REQUIRED" || len(its) != 2 ||
		str(t, its[0], "id") != "batch/each/0/gate/check" || str(t, its[1], "id") != "batch/each/1/gate/check" ||
		str(t, its[1], "prompt") != "Approve y?" || str(t, its[1], "schema", "type") != "boolean" {
		t.Fatalf("two nested interrupts: %v", task)
	}
	one := func(key string, v any, n string) map[string]any {
		return map[string]any{"message": map[string]any{"messageId": n, "role": "ROLE_USER", "taskId": id,
			"parts": []any{map[string]any{"data": map[string]any{key: v}}}}}
	}
	task = get(t, e.ok("ana", "1.0", "SendMessage", one("batch/each/1/gate/check", true, "n-1")), "task")
	its = get(t, task, "status", "message", "parts", 1, "data", "interrupts").([]any)
	if str(t, task, "status", "state") != "TASK_STATE_INPUT_REQUIRED" || len(its) != 1 || str(t, its[0], "id") != "batch/each/0/gate/check" {
		t.Fatalf("after one answer: %v", task)
	}
	done := get(t, e.ok("ana", "1.0", "SendMessage", msg1("false", map[string]any{"taskId": id})), "task")
	if str(t, done, "status", "state") != "TASK_STATE_COMPLETED" || str(t, done, "artifacts", 0, "parts", 0, "text") != "x checked, y checked" {
		t.Fatalf("after both answers: %v", done)
	}
}

// TestTimerResumesTask: a task whose run waits on a timer completes when
// the server fires it — the task's pump follows the run the timer resumed
// (issue 16 item 3).
func TestTimerResumesTask(t *testing.T) {
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.Runnable = "nap" })
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("rest a while", nil)), "task")
	id := str(t, task, "id")
	if s := str(t, task, "status", "state"); s != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("waiting task: %v", task)
	}
	for i := 0; i < 500; i++ {
		if _, err := e.backend.FireTimers(context.Background()); err != nil { // the test clock moves a millisecond a reading
			t.Fatal(err)
		}
		if s := str(t, e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}), "status", "state"); s == "TASK_STATE_COMPLETED" {
			done := e.ok("ana", "1.0", "GetTask", map[string]any{"id": id})
			if str(t, done, "artifacts", 0, "parts", 0, "text") != "rested" {
				t.Fatalf("completed task: %v", done)
			}
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the task did not complete: %v", e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}))
}

// waitState polls GetTask until the task is in state (the task's pump
// records run_started a moment after the model is called), for at most
// 5 s, and returns the last state seen.
func (e *env) waitState(t *testing.T, id, state string) string {
	t.Helper()
	var s string
	for i := 0; i < 500; i++ {
		if s = str(t, e.ok("ana", "1.0", "GetTask", map[string]any{"id": id}), "status", "state"); s == state {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// A finished task's metadata carries what its run's model calls used
// (agentc.usage), its run record's total over its invocations, next to the client's own
// metadata.
func TestTaskUsageMetadata(t *testing.T) {
	e := newEnv(t, memory.New())
	res := e.ok("ana", "1.0", "SendMessage", map[string]any{"message": get(t, msg1("What is the capital of France?", nil), "message"),
		"metadata": map[string]any{"ticket": "T-1"}})
	task := get(t, res, "task")
	if str(t, task, "metadata", "ticket") != "T-1" {
		t.Fatalf("client metadata lost: %v", get(t, task, "metadata"))
	}
	u, ok := get(t, task, "metadata", "agentc.usage").(map[string]any)
	if !ok || u["prompt_tokens"].(float64) <= 0 || u["completion_tokens"].(float64) <= 0 {
		t.Fatalf("usage metadata: %v", get(t, task, "metadata"))
	}
	// An input-required task adds the resumption's calls to the first's.
	first := get(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", nil)), "task")
	u1, _ := get(t, first, "metadata", "agentc.usage").(map[string]any)
	done := get(t, e.ok("ana", "1.0", "SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": str(t, first, "id")})), "task")
	u2, _ := get(t, done, "metadata", "agentc.usage").(map[string]any)
	if u1 == nil || u2 == nil || u2["prompt_tokens"].(float64) < u1["prompt_tokens"].(float64) {
		t.Errorf("usage before %v, after the resumption %v", u1, u2)
	}
	// The totals are the run record's: its model calls over both turns
	// (the second makes none).
	c1, _ := u1["model_calls"].(float64)
	c2, _ := u2["model_calls"].(float64)
	if c1 < 1 || c2 < c1 {
		t.Errorf("model calls before %v, after the resumption %v", u1["model_calls"], u2["model_calls"])
	}
}

package a2a_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/telemetry"
)

// hook is a webhook receiver: it records each request and answers the
// first failFirst of them 503.
type hook struct {
	srv       *httptest.Server
	mu        sync.Mutex
	got       []hookReq
	failFirst int
	seen      int
}

type hookReq struct {
	header http.Header
	body   map[string]any
}

func newHook(t *testing.T, failFirst int) *hook {
	h := &hook{failFirst: failFirst}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.seen++
		if h.seen <= h.failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		h.got = append(h.got, hookReq{header: r.Header.Clone(), body: m})
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// wait returns the received notifications once one satisfies done (5 s at
// most).
func (h *hook) wait(t *testing.T, done func(hookReq) bool) []hookReq {
	t.Helper()
	for range 500 {
		h.mu.Lock()
		got := append([]hookReq(nil), h.got...)
		h.mu.Unlock()
		for _, r := range got {
			if done(r) {
				return got
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Fatalf("webhook: the awaited notification never came; got %d: %+v", len(h.got), h.got)
	return nil
}

func states1(rs []hookReq) []string {
	var out []string
	for _, r := range rs {
		if su, ok := r.body["statusUpdate"].(map[string]any); ok {
			out = append(out, su["status"].(map[string]any)["state"].(string))
		}
	}
	return out
}

// pushEnv allows webhooks on 127.0.0.1 only, with quick retries.
func pushEnv(t *testing.T) *env {
	return newEnvWith(t, memory.New(), func(o *a2a.Options) { o.Push = localPush() })
}

func localPush() *a2a.PushOptions {
	return &a2a.PushOptions{Backoff: 5 * time.Millisecond, Allow: func(u *neturl.URL) error {
		if u.Hostname() != "127.0.0.1" {
			return fmt.Errorf("host %q is not allowed", u.Hostname())
		}
		return nil
	}}
}

func statusIs(state string) func(hookReq) bool {
	return func(r hookReq) bool {
		su, ok := r.body["statusUpdate"].(map[string]any)
		return ok && su["status"].(map[string]any)["state"] == state
	}
}

func TestPushNotifications10(t *testing.T) {
	e := pushEnv(t)
	card := e.card(t)
	if get(t, card, "capabilities", "pushNotifications") != true {
		t.Fatalf("card capabilities: %v", get(t, card, "capabilities"))
	}
	first := newHook(t, 0)
	send := msg1("publish the release notes", nil)
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{
		"url": first.srv.URL + "/a2a-hook", "token": "tok-1", "authentication": map[string]any{"scheme": "Bearer", "credentials": "s3cret"}}}
	task := get(t, e.ok("ana", "1.0", "SendMessage", send), "task")
	id := str(t, task, "id")
	got := first.wait(t, statusIs("TASK_STATE_INPUT_REQUIRED"))
	if s := states1(got); strings.Join(s, ",") != "TASK_STATE_WORKING,TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("notified states %v", s)
	}
	h := got[0].header
	if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-A2A-Notification-Token") != "tok-1" || h.Get("Content-Type") != "application/a2a+json" {
		t.Fatalf("webhook headers %v", h)
	}
	if str(t, got[0].body, "statusUpdate", "taskId") != id {
		t.Fatalf("notification names another task: %v", got[0].body)
	}

	// A second webhook, configured on the waiting task, fails twice first:
	// its notifications are retried, in order.
	second := newHook(t, 2)
	created := e.ok("ana", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "second", "url": second.srv.URL})
	if str(t, created, "id") != "second" || str(t, created, "taskId") != id || created["authentication"] != nil {
		t.Fatalf("created: %v", created)
	}
	list := e.ok("ana", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": id})
	cfgs := get(t, list, "configs").([]any)
	if len(cfgs) != 2 || str(t, cfgs[0], "authentication", "scheme") != "Bearer" || get(t, cfgs[0], "authentication", "credentials") != nil {
		t.Fatalf("list (credentials are never read back): %v", list)
	}
	e.ok("ana", "1.0", "SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": id}))
	for _, hk := range []*hook{first, second} {
		got := hk.wait(t, statusIs("TASK_STATE_COMPLETED"))
		last := got[len(got)-1]
		if str(t, last.body, "statusUpdate", "status", "state") != "TASK_STATE_COMPLETED" {
			t.Fatalf("the final status is not the last notification: %+v", got)
		}
		art := got[len(got)-2]
		if str(t, art.body, "artifactUpdate", "artifact", "parts", 0, "text") != "Release 2.1 fixes the login bug." {
			t.Fatalf("artifact notification: %v", art.body)
		}
	}
	if s := states1(second.got); strings.Join(s, ",") != "TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
		t.Fatalf("second webhook's states %v (seen %d requests)", s, second.seen)
	}

	// Get, delete (twice: the same), get again.
	if g := e.ok("ana", "1.0", "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "second"}); str(t, g, "url") != second.srv.URL {
		t.Fatalf("get: %v", g)
	}
	for range 2 {
		e.ok("ana", "1.0", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "second"})
	}
	e.fail("ana", "1.0", "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "second"}, -32001)
	if n := len(get(t, e.ok("ana", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": id}), "configs").([]any)); n != 1 {
		t.Fatalf("after delete: %d configs", n)
	}
	// Another user sees none of it.
	e.fail("bob", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": id}, -32001)
	e.fail("bob", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": second.srv.URL}, -32001)
}

func TestPushNotifications03(t *testing.T) {
	e := pushEnv(t)
	task := e.ok("ana", "", "message/send", msg03("publish the release notes", nil))
	id := str(t, task, "id")
	hk := newHook(t, 0)
	set := e.ok("ana", "", "tasks/pushNotificationConfig/set", map[string]any{"taskId": id,
		"pushNotificationConfig": map[string]any{"url": hk.srv.URL, "token": "t03", "authentication": map[string]any{"schemes": []string{"Bearer"}, "credentials": "c03"}}})
	cfgID := str(t, set, "pushNotificationConfig", "id")
	if str(t, set, "taskId") != id || cfgID == "" {
		t.Fatalf("set: %v", set)
	}
	if g := e.ok("ana", "", "tasks/pushNotificationConfig/get", map[string]any{"id": id, "pushNotificationConfigId": cfgID}); str(t, g, "pushNotificationConfig", "url") != hk.srv.URL {
		t.Fatalf("get: %v", g)
	}
	r := e.call("ana", "", "tasks/pushNotificationConfig/list", map[string]any{"id": id})
	var list []any
	if r.Error != nil || json.Unmarshal(r.Result, &list) != nil || len(list) != 1 {
		t.Fatalf("list: %s %+v", r.Result, r.Error)
	}
	e.ok("ana", "", "message/send", msg03(`{"approved": true}`, map[string]any{"taskId": id}))
	// 0.3 posts the task itself.
	got := hk.wait(t, func(r hookReq) bool { return get(t, r.body, "status", "state") == "completed" })
	last := got[len(got)-1]
	if last.body["kind"] != "task" || last.body["id"] != id || last.header.Get("X-A2A-Notification-Token") != "t03" ||
		last.header.Get("Authorization") != "Bearer c03" || last.header.Get("Content-Type") != "application/json" {
		t.Fatalf("0.3 notification: %v %v", last.header, last.body)
	}
	if r := e.call("ana", "", "tasks/pushNotificationConfig/delete", map[string]any{"id": id, "pushNotificationConfigId": cfgID}); r.Error != nil || string(r.Result) != "null" {
		t.Fatalf("delete: %s %+v", r.Result, r.Error)
	}
}

func TestPushConfigRefused(t *testing.T) {
	e := pushEnv(t)
	id := str(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", nil)), "task", "id")
	hk := newHook(t, 0)
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name   string
		params map[string]any
		code   int
	}{
		{"host not allowed", map[string]any{"taskId": id, "url": "http://example.com/hook"}, -32602},
		{"not http", map[string]any{"taskId": id, "url": "file:///etc/passwd"}, -32602},
		{"relative", map[string]any{"taskId": id, "url": "/hook"}, -32602},
		{"user info", map[string]any{"taskId": id, "url": strings.Replace(hk.srv.URL, "http://", "http://u:p@", 1)}, -32602},
		{"no url", map[string]any{"taskId": id}, -32602},
		{"no task", map[string]any{"url": hk.srv.URL}, -32602},
		{"unknown task", map[string]any{"taskId": "task_nope", "url": hk.srv.URL}, -32001},
		{"header injection", map[string]any{"taskId": id, "url": hk.srv.URL, "token": "a\r\nX-Evil: 1"}, -32602},
		{"long secret", map[string]any{"taskId": id, "url": hk.srv.URL, "authentication": map[string]any{"scheme": "Bearer", "credentials": long}}, -32602},
		{"bad scheme", map[string]any{"taskId": id, "url": hk.srv.URL, "authentication": map[string]any{"scheme": "Bearer x"}}, -32602},
		{"no scheme", map[string]any{"taskId": id, "url": hk.srv.URL, "authentication": map[string]any{"credentials": "c"}}, -32602},
		{"wrong type", map[string]any{"taskId": id, "url": 7}, -32602},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.fail("ana", "1.0", "CreateTaskPushNotificationConfig", c.params, c.code)
		})
	}
	e.t = t
	for i := range 10 {
		e.ok("ana", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "id": fmt.Sprint("c", i), "url": hk.srv.URL})
	}
	e.fail("ana", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": hk.srv.URL}, -32602)
	// Replacing one by its id is not adding one.
	e.ok("ana", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c3", "url": hk.srv.URL + "/again"})
	// A configuration refused on send starts nothing.
	send := msg1("What is the capital of France?", map[string]any{"contextId": "refused"})
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": "http://10.0.0.1/hook"}}
	e.fail("ana", "1.0", "SendMessage", send, -32602)
	if runs, err := e.backend.Sessions.Runs(t.Context(), sessionKey(e, "ana", "refused")); err == nil && len(runs) > 0 {
		t.Fatalf("a refused send started %d run(s)", len(runs))
	}
}

func TestPushNotSupportedWithoutOptions(t *testing.T) {
	e := newEnv(t, memory.New())
	if get(t, e.card(t), "capabilities", "pushNotifications") != false {
		t.Fatal("the card must say pushNotifications false")
	}
	e.fail("ana", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": "task_x"}, -32003)
}

// A configuration is part of the task's record: a server started again
// over the same store notifies the webhook when the task goes on.
func TestPushConfigSurvivesRestart(t *testing.T) {
	st := memory.New()
	e := newEnvWith(t, st, func(o *a2a.Options) { o.Push = localPush() })
	id := str(t, e.ok("ana", "1.0", "SendMessage", msg1("publish the release notes", nil)), "task", "id")
	hk := newHook(t, 0)
	e.ok("ana", "1.0", "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": hk.srv.URL})
	e.close()
	e2 := newEnvWith(t, st, func(o *a2a.Options) { o.Push = localPush() })
	e2.ok("ana", "1.0", "SendMessage", msg1(`{"approved": true}`, map[string]any{"taskId": id}))
	hk.wait(t, statusIs("TASK_STATE_COMPLETED"))
}

// A webhook that keeps failing is given up after the attempts; a 4xx is
// not retried; Close does not wait past its context for a webhook.
func TestPushGivesUp(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.Push = localPush(); o.Push.Attempts = 3 })
	send := msg1("What is the capital of France?", nil)
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": srv.URL + "/down"}}
	e.ok("ana", "1.0", "SendMessage", send)
	send = msg1("What is the capital of France?", nil)
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": srv.URL + "/gone"}}
	e.ok("ana", "1.0", "SendMessage", send)
	e.close() // waits for the queued notifications (they fail fast)
	mu.Lock()
	defer mu.Unlock()
	// working, then artifact and completed: 3 notifications each.
	if hits["/down"] != 3*3 || hits["/gone"] != 3 {
		t.Fatalf("attempts %v, want /down 9 (3 notifications × 3 attempts), /gone 3 (no retry)", hits)
	}
}

// card fetches the 1.0 agent card.
func (e *env) card(t *testing.T) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+a2a.CardPath, nil)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPushCarriesTraceparent: with Propagate set (tracing on), the
// notifications of a run carry the trace context of the request that
// started it, so the webhook's span joins the caller's trace.
func TestPushCarriesTraceparent(t *testing.T) {
	e := newEnvWith(t, memory.New(), func(o *a2a.Options) {
		o.Push = localPush()
		o.Push.Propagate = telemetry.Inject
	})
	hk := newHook(t, 0)
	send := msg1("publish the release notes", nil)
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": hk.srv.URL}}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/a2a", bytes.NewReader(request("SendMessage", send)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer ana")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := hk.wait(t, statusIs("TASK_STATE_INPUT_REQUIRED"))
	for _, r := range got {
		if tp := r.header.Get("traceparent"); !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
			t.Errorf("notification traceparent %q, want the request's trace", tp)
		}
	}
	// Without a trace context on the request, none is sent.
	plain := newHook(t, 0)
	send = msg1("publish the release notes", nil)
	send["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": plain.srv.URL}}
	e.ok("ana", "1.0", "SendMessage", send)
	for _, r := range plain.wait(t, statusIs("TASK_STATE_INPUT_REQUIRED")) {
		if tp := r.header.Get("traceparent"); tp != "" {
			t.Errorf("notification traceparent %q without a trace", tp)
		}
	}
}

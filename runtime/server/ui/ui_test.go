package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/internal/decidetest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

const mini = `workflow mini "tiny"

type Ok { approved: bool, note: string? }

state S {
  q  : string
  a  : string = ""
  n  : int = 0
  ok : Ok?
}

graph g(S) input q output a {
  node echo = set { a = "got {q}", n = 1 }
  node ask  = interrupt "OK?" returns Ok into ok
  node done = set { a = "{a}!" }
  start -> echo
  echo  -> ask
  ask   -> done
  done  -> end
}
`

// fixture is a server with the inspector mounted over a memory store, users
// alice (token ta), bob (tb) and the administrator (tadmin), and one run of
// alice's that waits on ask.
type fixture struct {
	t   testing.TB
	url string
	st  store.Store
	run string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "mini.agent", mini)
	st := memory.New()
	clock, ent := &runtimetest.Clock{}, &runtimetest.Entropy{}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Clock: clock, Entropy: ent, App: "mini"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock,
		NewID: func(p string) string { n++; return fmt.Sprintf("%s%d", p, n) }, Limits: server.Limits{MaxBodyBytes: 1 << 10}}
	h, err := ui.New(ui.Config{Store: st, Backend: b, App: "mini", Admins: map[string]bool{ui.AdminUser: true},
		Inspect: inspect.Config{Now: clock.Now, Clock: clock, Entropy: ent}, Poll: 5 * time.Millisecond, MaxBody: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Mounts: h.Mounts(),
		Tokens: map[string]string{"ta": "alice", "tb": "bob", "tadmin": ui.AdminUser}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); _ = r.Close(context.Background()) })
	run, err := b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for range run.Events {
	}
	return &fixture{t: t, url: ts.URL, st: st, run: run.ID}
}

// call sends a request as token tok and decodes a JSON answer into out
// (when not nil); it returns the status.
func (f *fixture) call(method, path, tok, body string, out any) int {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, f.url+path, rd)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, b, err)
		}
	}
	return res.StatusCode
}

type apiError struct {
	Error struct {
		Code    string               `json:"code"`
		Message string               `json:"message"`
		Fields  []inspect.FieldError `json:"fields"`
	} `json:"error"`
}

// waitStatus polls the run until it has status want.
func (f *fixture) waitStatus(run, want string) inspect.RunDetail {
	f.t.Helper()
	var d inspect.RunDetail
	for i := 0; i < 400; i++ {
		if f.call("GET", "/ui/api/v1/runs/"+run, "ta", "", &d); d.Run.Status == want {
			return d
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("run %s is %s, want %s", run, d.Run.Status, want)
	return d
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	for _, tok := range []string{"", "nope"} {
		var e apiError
		if st := f.call("GET", "/ui/api/v1/runs", tok, "", &e); st != 401 || e.Error.Code != "unauthorized" {
			t.Errorf("token %q: %d %+v; want 401", tok, st, e)
		}
	}
	// A refused request's body is never read: the answer comes at once.
	var e apiError
	if st := f.call("POST", "/ui/api/v1/runs/"+f.run+"/answer", "", `{"values":{}}`, &e); st != 401 {
		t.Errorf("an unauthenticated action: %d", st)
	}
	res, err := http.Get(f.url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `<script type="module" src="app.js">`) ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("the page: %d %q %s", res.StatusCode, res.Header.Get("Content-Security-Policy"), b)
	}
	for _, asset := range []string{"app.js", "api.js", "graph.js", "form.js", "style.css"} {
		res, err := http.Get(f.url + "/ui/" + asset)
		if err != nil || res.StatusCode != 200 {
			t.Errorf("%s: %v %v", asset, res.StatusCode, err)
		}
		res.Body.Close()
	}
	var me map[string]any
	if f.call("GET", "/ui/api/v1/me", "tadmin", "", &me); me["admin"] != true || me["user"] != ui.AdminUser || me["app"] != "mini" {
		t.Errorf("me as the administrator: %v", me)
	}
}

// A second user sees none of the first user's runs: every lookup is 404
// (never 403), every list is empty; the administrator sees them.
func TestTenancy(t *testing.T) {
	f := newFixture(t)
	var runs struct{ Runs []inspect.RunInfo }
	if f.call("GET", "/ui/api/v1/runs", "tb", "", &runs); len(runs.Runs) != 0 {
		t.Errorf("bob lists %+v", runs.Runs)
	}
	if f.call("GET", "/ui/api/v1/runs", "ta", "", &runs); len(runs.Runs) != 1 || runs.Runs[0].ID != f.run || runs.Runs[0].User != "alice" {
		t.Errorf("alice lists %+v", runs.Runs)
	}
	if f.call("GET", "/ui/api/v1/runs", "tadmin", "", &runs); len(runs.Runs) != 1 {
		t.Errorf("the administrator lists %+v", runs.Runs)
	}
	var sess struct{ Sessions []inspect.Session }
	if f.call("GET", "/ui/api/v1/sessions", "tb", "", &sess); len(sess.Sessions) != 0 {
		t.Errorf("bob's sessions: %+v", sess.Sessions)
	}
	if f.call("GET", "/ui/api/v1/sessions?user=alice", "tb", "", &sess); len(sess.Sessions) != 0 {
		t.Errorf("bob naming alice: %+v", sess.Sessions)
	}
	if f.call("GET", "/ui/api/v1/sessions?user=alice", "tadmin", "", &sess); len(sess.Sessions) != 1 {
		t.Errorf("the administrator naming alice: %+v", sess.Sessions)
	}
	r := "/ui/api/v1/runs/" + f.run
	for _, c := range []struct{ method, path, body string }{
		{"GET", r, ""},
		{"GET", r + "/checkpoints", ""},
		{"GET", r + "/steps/1", ""},
		{"GET", r + "/stream", ""},
		{"POST", r + "/answer", `{"values":{"ask":{"approved":true}}}`},
		{"POST", r + "/decide", `{"decisions":{}}`},
		{"POST", r + "/fork", `{"step":1}`},
		{"POST", r + "/cancel", `{}`},
		{"GET", "/ui/api/v1/sessions/s1", ""},
		{"GET", "/ui/api/v1/sessions/s1?user=alice", ""},
		{"GET", "/ui/api/v1/sessions/s1/events", ""},
		{"GET", "/ui/api/v1/artifacts/revisions?session=s1&name=x.md&user=alice", ""},
		{"GET", "/ui/api/v1/runs/run_nope", ""},
	} {
		var e apiError
		if st := f.call(c.method, c.path, "tb", c.body, &e); st != 404 || e.Error.Code != "not_found" {
			t.Errorf("bob: %s %s = %d %+v; want 404 not_found", c.method, c.path, st, e)
		}
	}
	var d inspect.RunDetail
	if st := f.call("GET", r, "tadmin", "", &d); st != 200 || d.Run.ID != f.run {
		t.Errorf("the administrator's view of alice's run: %d %+v", st, d.Run)
	}
	// Nothing of alice's run changed.
	f.waitStatus(f.run, "interrupted")
}

func TestRunDetailStepsAndEvents(t *testing.T) {
	f := newFixture(t)
	d := f.waitStatus(f.run, "interrupted")
	states := map[string]string{}
	for _, n := range d.Graph.Nodes {
		states[n.Name] = n.State
	}
	want := map[string]string{"start": "finished", "echo": "finished", "ask": "waiting", "done": "idle", "end": "idle"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("node %s is %s, want %s (all: %v)", k, states[k], v, states)
		}
	}
	if len(d.Graph.Edges) != 4 || d.Graph.Edges[0].From != "start" || d.Graph.Edges[0].To != "echo" {
		t.Errorf("edges %+v", d.Graph.Edges)
	}
	if len(d.Interrupts) != 1 || d.Interrupts[0].ID != "g/ask" || d.Interrupts[0].Node != "ask" || d.Interrupts[0].Schema["type"] != "object" {
		t.Fatalf("interrupts %+v", d.Interrupts)
	}
	var cps struct{ Checkpoints []inspect.Checkpoint }
	if f.call("GET", "/ui/api/v1/runs/"+f.run+"/checkpoints", "ta", "", &cps); len(cps.Checkpoints) != 3 {
		t.Fatalf("checkpoints %+v", cps)
	}
	var s inspect.StepDiff
	if st := f.call("GET", "/ui/api/v1/runs/"+f.run+"/steps/1", "ta", "", &s); st != 200 || s.Previous == nil || *s.Previous != 0 {
		t.Fatalf("step 1: %d %+v", st, s)
	}
	got, _ := json.Marshal(s.Changes)
	if string(got) != `[{"field":"a","op":"changed","before":"","after":"got hi"},{"field":"n","op":"changed","before":0,"after":1}]` {
		t.Errorf("step 1 changes %s", got)
	}
	if f.call("GET", "/ui/api/v1/runs/"+f.run+"/steps/0", "ta", "", &s); s.Previous != nil || len(s.Changes) != 3 || s.Changes[0].Op != "added" || s.Changes[0].Field != "q" {
		t.Errorf("step 0: %+v", s)
	}
	var e apiError
	if st := f.call("GET", "/ui/api/v1/runs/"+f.run+"/steps/9", "ta", "", &e); st != 404 {
		t.Errorf("step 9: %d %+v", st, e)
	}
	if st := f.call("GET", "/ui/api/v1/runs/"+f.run+"/steps/x", "ta", "", &e); st != 400 {
		t.Errorf("step x: %d %+v", st, e)
	}
	var evs struct {
		Events []map[string]any
		Last   uint64
	}
	if f.call("GET", "/ui/api/v1/sessions/s1/events?kind=node_finished&run="+f.run, "ta", "", &evs); len(evs.Events) != 1 || evs.Events[0]["node"] != "echo" || evs.Events[0]["summary"] == nil {
		t.Errorf("node_finished events %+v", evs)
	}
	if f.call("GET", "/ui/api/v1/sessions/s1/events?node=ask", "ta", "", &evs); len(evs.Events) != 0 {
		t.Errorf("events of node ask %+v", evs)
	}
	if f.call("GET", "/ui/api/v1/sessions/s1/events?limit=2", "ta", "", &evs); len(evs.Events) != 2 || evs.Last != 2 {
		t.Errorf("two events: %+v", evs)
	}
	if st := f.call("GET", "/ui/api/v1/sessions/s1/events?kind=bogus", "ta", "", &e); st != 400 || !strings.Contains(e.Error.Message, "bogus") {
		t.Errorf("an unknown kind: %d %+v", st, e)
	}
	if st := f.call("GET", "/ui/api/v1/sessions/s1/events?after=-1", "ta", "", &e); st != 400 {
		t.Errorf("after=-1: %d", st)
	}
	// A rolling summary's boundary is listed with the ledger.
	if f.call("GET", "/ui/api/v1/sessions/s1/events", "ta", "", &evs); len(evs.Events) < 4 {
		t.Fatalf("events %+v", evs)
	}
	fk, _ := evs.Events[2]["filter_key"].(string)
	key := store.SessionKey{App: "mini", User: "alice", Session: "s1"}
	if err := f.st.PutSummary(context.Background(), key, store.Summary{FilterKey: fk, Text: "so far", Boundary: 3, Time: time.Unix(5, 0)}); err != nil {
		t.Fatal(err)
	}
	var withSum struct {
		Summaries []struct {
			FilterKey string `json:"filter_key"`
			Boundary  uint64
		}
	}
	if f.call("GET", "/ui/api/v1/sessions/s1/events", "ta", "", &withSum); len(withSum.Summaries) != 1 || withSum.Summaries[0].Boundary != 3 || withSum.Summaries[0].FilterKey != fk {
		t.Errorf("summaries %+v; want the boundary at 3 of %q", withSum.Summaries, fk)
	}
	var sess inspect.Session
	if f.call("GET", "/ui/api/v1/sessions/s1", "ta", "", &sess); len(sess.Runs) != 1 || sess.Runs[0].ID != f.run {
		t.Errorf("session %+v", sess)
	}
}

func TestAnswer(t *testing.T) {
	f := newFixture(t)
	path := "/ui/api/v1/runs/" + f.run + "/answer"
	bad := []struct {
		body, field, msg string
	}{
		{`{"values":{"ask":{"approved":"yes"}}}`, "g/ask $.approved", "want boolean, got string"},
		{`{"values":{"ask":{}}}`, "g/ask $.approved", "missing required field"},
		{`{"values":{"g/ask":{"approved":true,"extra":1}}}`, "g/ask $", `unknown field "extra"`},
		{`{"values":{"nope":1}}`, "nope", "no such pending interrupt"},
		{`{"values":{}}`, "g/ask", "the run waits for an answer"},
	}
	for _, b := range bad {
		var e apiError
		st := f.call("POST", path, "ta", b.body, &e)
		if st != 422 || e.Error.Code != "invalid_value" || len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != b.field || !strings.Contains(e.Error.Fields[0].Message, b.msg) {
			t.Errorf("%s: %d %+v; want 422 on %q saying %q", b.body, st, e, b.field, b.msg)
		}
	}
	f.waitStatus(f.run, "interrupted") // still waiting
	var ok map[string]string
	if st := f.call("POST", path, "ta", `{"values":{"ask":{"approved":true,"note":"fine"}}}`, &ok); st != 202 || ok["run"] != f.run {
		t.Fatalf("a good answer: %d %v", st, ok)
	}
	d := f.waitStatus(f.run, "completed")
	if string(d.Output) != `"got hi!"` {
		t.Errorf("output %s", d.Output)
	}
	var e apiError
	if st := f.call("POST", path, "ta", `{"values":{"ask":{"approved":true}}}`, &e); st != 409 || e.Error.Code != "not_resumable" {
		t.Errorf("answering a completed run: %d %+v", st, e)
	}
	if st := f.call("POST", "/ui/api/v1/runs/"+f.run+"/decide", "ta", `{"decisions":{"x":{"action":"retry"}}}`, &e); st != 409 {
		t.Errorf("deciding a completed run: %d %+v", st, e)
	}
	if st := f.call("POST", "/ui/api/v1/runs/"+f.run+"/cancel", "ta", `{}`, &e); st != 409 || e.Error.Code != "not_running" {
		t.Errorf("canceling a completed run: %d %+v", st, e)
	}
}

func TestFork(t *testing.T) {
	f := newFixture(t)
	path := "/ui/api/v1/runs/" + f.run + "/fork"
	var e apiError
	if st := f.call("POST", path, "ta", `{"step":1,"set":{"a":5,"nope":1,"q":"fine"}}`, &e); st != 422 || len(e.Error.Fields) != 2 ||
		e.Error.Fields[0].Field != "a" || e.Error.Fields[1].Field != "nope" {
		t.Errorf("bad edits: %d %+v", st, e)
	}
	if st := f.call("POST", path, "ta", `{"set":{}}`, &e); st != 422 || e.Error.Fields[0].Field != "step" {
		t.Errorf("no step: %d %+v", st, e)
	}
	if st := f.call("POST", path, "ta", `{"step":2,"continue":true}`, &e); st != 422 || e.Error.Fields[0].Field != "g/ask" {
		t.Errorf("continuing at a step that waits, without an answer: %d %+v", st, e)
	}
	var fk struct {
		inspect.Forked
		Status string
	}
	if st := f.call("POST", path, "ta", `{"step":1,"set":{"q":"edited"}}`, &fk); st != 201 || fk.ParentRun != f.run || fk.Status != "interrupted" {
		t.Fatalf("fork: %d %+v", st, fk)
	}
	if st := f.call("POST", path, "ta", `{"step":1,"set":{"a":"edited"},"continue":true}`, &fk); st != 201 || fk.Status != "running" {
		t.Fatalf("fork and continue: %d %+v", st, fk)
	}
	// The fork goes on from step 1 (echo done) to ask, with the edit.
	var d inspect.RunDetail
	for i := 0; i < 400; i++ {
		if f.call("GET", "/ui/api/v1/runs/"+fk.Run, "ta", "", &d); d.Run.Status == "interrupted" && d.Step > 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := f.call("POST", "/ui/api/v1/runs/"+fk.Run+"/answer", "ta", `{"values":{"ask":{"approved":false}}}`, nil); st != 202 {
		t.Fatalf("answering the fork: %d", st)
	}
	d = f.waitStatus(fk.Run, "completed")
	if string(d.Output) != `"edited!"` || d.Run.ParentRun != f.run {
		t.Errorf("the fork ended with %s (parent %s); want the edited value", d.Output, d.Run.ParentRun)
	}
}

func TestStream(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.url+"/ui/api/v1/runs/"+f.run+"/stream", nil)
	req.Header.Set("Authorization", "Bearer ta")
	req.Header.Set("Last-Event-ID", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var kinds []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			kinds = append(kinds, k)
		}
	}
	got := strings.Join(kinds, ",")
	if !strings.HasPrefix(got, "run_started,") || !strings.Contains(got, ",node_finished,") || !strings.HasSuffix(got, "interrupt,run_finished,end") {
		t.Errorf("stream after seq 1: %s", got)
	}
}

func TestRequests(t *testing.T) {
	f := newFixture(t)
	path := "/ui/api/v1/runs/" + f.run + "/answer"
	send := func(ct, body string) (int, apiError) {
		req, _ := http.NewRequest("POST", f.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer ta")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var e apiError
		_ = json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, e
	}
	tests := []struct {
		ct, body string
		status   int
		code     string
	}{
		{"text/plain", `{}`, 415, "unsupported_media_type"},
		{"", `{}`, 415, "unsupported_media_type"},
		{"application/json", `{"values":`, 400, "invalid_json"},
		{"application/json", `{"valuez":{}}`, 400, "invalid_json"},
		{"application/json", `{} {}`, 400, "invalid_json"},
		{"application/json", `[1]`, 400, "invalid_json"},
		{"application/json", `{"values":{"ask":"` + strings.Repeat("x", 2<<10) + `"}}`, 413, "body_too_large"},
	}
	for _, tt := range tests {
		if st, e := send(tt.ct, tt.body); st != tt.status || e.Error.Code != tt.code {
			t.Errorf("%s %.30s: %d %+v; want %d %s", tt.ct, tt.body, st, e, tt.status, tt.code)
		}
	}
	var e apiError
	if st := f.call("DELETE", "/ui/api/v1/runs/"+f.run, "ta", "", &e); st != 405 && st != 404 {
		t.Errorf("DELETE: %d", st)
	}
	if st := f.call("GET", "/ui/api/v1/nothing", "ta", "", &e); st != 404 {
		t.Errorf("an unknown path: %d", st)
	}
	if st := f.call("GET", "/ui/api/v1/runs?limit=x", "ta", "", &e); st != 400 {
		t.Errorf("limit=x: %d", st)
	}
}

// A candidate belongs to the user of the session it came from.
func TestCandidates(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "evolved", "tidy-notes")
	put := func(id, user string) {
		c := evolution.Candidate{ID: id, Status: evolution.StatusPendingApproval, Agent: "a",
			Session: store.SessionKey{App: "mini", User: user, Session: "s1"}, Run: f.run, Dir: dir, Revision: 1,
			Proposal: evolution.Proposal{Name: "tidy-notes", Description: "Tidies notes", WhenToUse: "When notes are messy",
				Steps: []string{"Read the notes", "Sort them by topic"}},
			Gates: []evolution.GateResult{{Gate: "human", Passed: false}}}
		b, _ := json.Marshal(c)
		if err := f.st.ApplyDocs(context.Background(), store.DocOp{Coll: evolution.Coll, Key: store.DocPath("cand", id), Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	put("cand_a", "alice")
	put("cand_b", "bob")
	var list struct{ Candidates []evolution.Candidate }
	if f.call("GET", "/ui/api/v1/candidates", "ta", "", &list); len(list.Candidates) != 1 || list.Candidates[0].ID != "cand_a" {
		t.Errorf("alice's candidates %+v", list.Candidates)
	}
	if f.call("GET", "/ui/api/v1/candidates?status=all", "tadmin", "", &list); len(list.Candidates) != 2 {
		t.Errorf("every candidate %+v", list.Candidates)
	}
	var e apiError
	for _, p := range []string{"/ui/api/v1/candidates/cand_a", "/ui/api/v1/candidates/cand_nope"} {
		if st := f.call("GET", p, "tb", "", &e); st != 404 {
			t.Errorf("bob: GET %s = %d", p, st)
		}
	}
	if st := f.call("POST", "/ui/api/v1/candidates/cand_a/approve", "tb", `{}`, &e); st != 404 {
		t.Errorf("bob approving alice's candidate: %d", st)
	}
	var c evolution.Candidate
	if st := f.call("POST", "/ui/api/v1/candidates/cand_a/approve", "ta", `{}`, &c); st != 200 || c.Status != evolution.StatusActive || c.Decided != "alice" {
		t.Fatalf("approve: %d %+v", st, c)
	}
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err != nil {
		t.Errorf("the approved skill was not published: %v", err)
	}
	if st := f.call("POST", "/ui/api/v1/candidates/cand_a/reject", "ta", `{}`, &e); st != 409 || e.Error.Code != "not_pending" {
		t.Errorf("rejecting a published candidate: %d %+v", st, e)
	}
	if st := f.call("POST", "/ui/api/v1/candidates/cand_b/reject", "tb", `{"reason":"no"}`, &c); st != 200 || c.Status != evolution.StatusRejected || !strings.Contains(c.Reason, "bob: no") {
		t.Errorf("bob rejecting his own: %d %+v", st, c)
	}
}

// FuzzAPI: no request body or path makes the API fail inside (a 5xx) or
// answer anything but JSON.
func FuzzAPI(f *testing.F) {
	fx := newFixture(f)
	r := "runs/" + fx.run
	for _, seed := range []struct{ path, body string }{
		{r + "/answer", `{"values":{"ask":{"approved":true}}}`},
		{r + "/answer", `{"values":{"g/ask":{"approved":"x","note":[1]}}}`},
		{r + "/fork", `{"step":1,"set":{"q":"x","n":"1"},"continue":true,"values":{"ask":{}}}`},
		{r + "/fork", `{"step":18446744073709551615}`},
		{r + "/decide", `{"decisions":{"a":{"action":"done","value":{}}}}`},
		{r + "/cancel", `{}`},
		{"candidates/x/reject", `{"reason":"\u0000"}`},
		{r + "/steps/99999999999999999999", ``},
	} {
		f.Add(seed.path, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		if strings.ContainsAny(path, "?#% \t\r\n") || strings.HasSuffix(path, "/stream") || strings.Contains(path, "raw") {
			return
		}
		method := "POST"
		if len(body) == 0 {
			method = "GET"
		}
		req, err := http.NewRequest(method, fx.url+"/ui/api/v1/"+path, strings.NewReader(string(body)))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer ta")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 500 || res.StatusCode != 301 && res.StatusCode != 307 && !json.Valid(b) {
			t.Fatalf("%s %s %q: %d %s", method, path, body, res.StatusCode, b)
		}
	})
}

// A side effect canceled mid-call (through the API) leaves the run
// needs_decision once resumed; the API settles it as agentc run --decide
// does.
func TestCancelAndDecide(t *testing.T) {
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "dec.agent", decidetest.Source)
	st := memory.New()
	clock, ent := &runtimetest.Clock{}, &runtimetest.Entropy{}
	tool := decidetest.NewPokeTool()
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Clock: clock, Entropy: ent, App: "dec",
		Tools: map[string]runtime.Tool{"poke": tool}})
	if err != nil {
		t.Fatal(err)
	}
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock, NewID: func(p string) string { return p + "1" }}
	h, err := ui.New(ui.Config{Store: st, Backend: b, App: "dec", Inspect: inspect.Config{Now: clock.Now, Clock: clock, Entropy: ent}, Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Mounts: h.Mounts(), Tokens: map[string]string{"ta": "alice", "tb": "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); _ = r.Close(context.Background()) }()
	f := &fixture{t: t, url: ts.URL, st: st}

	run, err := b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range run.Events {
		}
	}()
	<-tool.Entered
	var e apiError
	if st := f.call("POST", "/ui/api/v1/runs/"+run.ID+"/cancel", "tb", `{}`, &e); st != 404 {
		t.Errorf("bob canceling alice's run: %d", st)
	}
	var ok map[string]string
	if st := f.call("POST", "/ui/api/v1/runs/"+run.ID+"/cancel", "ta", `{}`, &ok); st != 202 || ok["status"] != "canceling" {
		t.Fatalf("cancel: %d %v", st, ok)
	}
	<-done
	resumed, err := b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Resume: &runtime.ResumeRequest{Run: run.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for range resumed.Events {
	}
	var d inspect.RunDetail
	if f.call("GET", "/ui/api/v1/runs/"+run.ID, "ta", "", &d); d.Run.Status != "needs_decision" || len(d.Decisions) != 1 || d.Decisions[0].ID != "g/p" {
		t.Fatalf("after the resume: %s %+v", d.Run.Status, d.Decisions)
	}
	path := "/ui/api/v1/runs/" + run.ID + "/decide"
	for body, want := range map[string]string{
		`{"decisions":{"g/p":{"action":"maybe"}}}`:              "g/p",
		`{"decisions":{}}`:                                      "decisions",
		`{"decisions":{"g/q":{"action":"retry"}}}`:              "",
		`{"decisions":{"g/p":{"action":"done","value":5}}}`:     "",
		`{"decisions":{"g/p":{"action":"done"}}}`:               "g/p",
		`{"decisions":{"g/p":{"decision":"retry","result":1}}}`: "g/p",
	} {
		if st := f.call("POST", path, "ta", body, &e); st != 422 || len(e.Error.Fields) == 0 || e.Error.Fields[0].Field != want {
			t.Errorf("%s: %d %+v; want 422 on %q", body, st, e, want)
		}
	}
	if st := f.call("POST", path, "ta", `{"decisions":{"p":{"decision":"done","result":"it happened"}}}`, &ok); st != 202 {
		t.Fatalf("decide: %d %v", st, ok)
	}
	d = f.waitStatus(run.ID, "completed")
	if string(d.Output) != `"it happened"` || tool.Calls.Load() != 1 {
		t.Errorf("output %s after %d calls; want the decided result, the side effect called once", d.Output, tool.Calls.Load())
	}
}

// BenchmarkRunDetail: the run view's data through the API (HTTP on
// loopback, auth, JSON) against the same query on the Inspector in
// process, the baseline.
//
//	go test ./runtime/server/ui -run X -bench RunDetail -benchmem
func BenchmarkRunDetail(b *testing.B) {
	f := newFixture(b)
	in := inspect.New(inspect.Config{Store: f.st})
	b.Run("inspect", func(b *testing.B) {
		for b.Loop() {
			if _, err := in.RunDetail(context.Background(), f.run); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("api", func(b *testing.B) {
		for b.Loop() {
			if st := f.call("GET", "/ui/api/v1/runs/"+f.run, "ta", "", nil); st != 200 {
				b.Fatal(st)
			}
		}
	})
}

const gateSource = `workflow gated "A step that waits"

tool gate "Waits for its gate" {
  input  {}
  output string
  run    = http { url = "http://127.0.0.1:9/gate" }
  effect = read_only
}

state S { q: string, r: string = "" }

graph g(S) input q output r {
  node p = tool gate {} into r
  start -> p
  p     -> end
}
`

// gateTool answers once its gate opens.
type gateTool struct{ gate chan struct{} }

func (gateTool) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: "gate"} }
func (gateTool) Effect() runtime.Effect { return runtime.Effect(bytecode.EffectReadOnly) }
func (g gateTool) Call(ctx context.Context, _ runtime.ToolRequest) (json.RawMessage, error) {
	select {
	case <-g.gate:
		return json.RawMessage(`"opened"`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestStreamWokenByCommits: a run's event stream is woken by the run's
// commits, not by its poll (an hour here): it sends the step and the end
// as they are committed, then ends.
func TestStreamWokenByCommits(t *testing.T) {
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "gated.agent", gateSource)
	st := memory.New()
	clock, ent := &runtimetest.Clock{}, &runtimetest.Entropy{}
	tool := gateTool{gate: make(chan struct{})}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Clock: clock, Entropy: ent, App: "gated",
		Tools: map[string]runtime.Tool{"gate": tool}})
	if err != nil {
		t.Fatal(err)
	}
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock, NewID: func(p string) string { return p + "1" }}
	h, err := ui.New(ui.Config{Store: st, Backend: b, App: "gated", Inspect: inspect.Config{Now: clock.Now, Clock: clock, Entropy: ent}, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Mounts: h.Mounts(), Tokens: map[string]string{"ta": "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); _ = r.Close(context.Background()) }()
	run, err := b.Start(ctx, "test", runtime.Invocation{User: "alice", Session: "s1", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { // owned by the run: ends with its events
		for range run.Events {
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", ts.URL+"/ui/api/v1/runs/"+run.ID+"/stream", nil)
	req.Header.Set("Authorization", "Bearer ta")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var kinds []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		k, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		kinds = append(kinds, k)
		if k == "input" {
			close(tool.gate) // the stream has read what was recorded before the step
		}
	}
	got := strings.Join(kinds, ",")
	if !strings.HasPrefix(got, "input,") || !strings.Contains(got, ",tool_result,") || !strings.HasSuffix(got, "run_finished,end") {
		t.Errorf("stream: %s (%v)", got, sctx.Err())
	}
}

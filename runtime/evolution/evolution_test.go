package evolution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

var ctx = context.Background()

// reviewer is a scripted reviewer: it answers every call with the next
// reply and records the requests.
type reviewer struct {
	replies []string
	calls   []*runtime.ModelRequest
}

func (r *reviewer) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "rev", Provider: "scripted", Model: "scripted:rev", Scripted: true}
}

func (r *reviewer) Generate(_ context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	r.calls = append(r.calls, req)
	if len(r.replies) == 0 {
		return nil, errors.New("no reply scripted")
	}
	text := r.replies[0]
	r.replies = r.replies[1:]
	return &runtime.ModelResponse{Text: text, Model: "scripted:rev"}, nil
}

type env struct {
	st   store.Store
	svc  *Service
	rev  *reviewer
	key  store.SessionKey
	base string
	t    *testing.T
	now  time.Time
}

func newEnv(t *testing.T, gates []string) *env {
	e := &env{st: memory.New(), rev: &reviewer{}, key: store.SessionKey{App: "app", User: "ann", Session: "s1"}, t: t,
		now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	e.base = filepath.Join(t.TempDir(), "evolved")
	if gates == nil {
		gates = DefaultGates
	}
	var n atomic.Int64
	e.svc = New(Config{Store: e.st, Repo: skill.NewRepository(),
		Now:   func() time.Time { return e.now.Add(time.Duration(n.Load()) * time.Second) },
		NewID: func() string { return fmt.Sprintf("cand_%02d", n.Add(1)) },
		Policies: map[string]Policy{"ops": {Agent: "ops", Reviewer: e.rev, MinToolCalls: 3, Gates: gates, MinScore: 0.8,
			Scope: "app", Publish: e.base, Declared: map[string]string{"house-style": "/skills/house-style"}}},
	})
	if _, _, err := e.st.GetOrCreateSession(ctx, e.key, e.now); err != nil {
		t.Fatal(err)
	}
	return e
}

// run appends a run's events: the user's input, then tool calls of agent
// ops (failing ones where fail[i]).
func (e *env) run(input string, tools int, fail ...bool) runtime.PostRun {
	e.t.Helper()
	evs := []*runtime.Event{{Kind: runtime.EventInput, Author: "user", Text: input}}
	for i := range tools {
		tc := runtime.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "cert_scan", Args: json.RawMessage(`{"host":"h"}`)}
		evs = append(evs, &runtime.Event{Kind: runtime.EventModelResponse, Author: "ops", ToolCalls: []runtime.ToolCall{tc}})
		res := &runtime.Event{Kind: runtime.EventToolResult, Author: "ops", ToolCall: &tc, Result: json.RawMessage(`"ok"`)}
		if i < len(fail) && fail[i] {
			res.Result, res.Error = nil, &runtime.ErrorInfo{Kind: "unavailable", Message: "refused"}
		}
		evs = append(evs, res)
	}
	evs = append(evs, &runtime.Event{Kind: runtime.EventModelResponse, Author: "ops", Text: "done"})
	var data [][]byte
	for i, ev := range evs {
		ev.ID, ev.Time, ev.App, ev.User, ev.Session, ev.Run = fmt.Sprintf("ev_%d", i), e.now, e.key.App, e.key.User, e.key.Session, "run_1"
		b, err := runtime.EncodeEvent(ev)
		if err != nil {
			e.t.Fatal(err)
		}
		data = append(data, b)
	}
	if _, err := e.st.AppendEvents(ctx, e.key, data, e.now); err != nil {
		e.t.Fatal(err)
	}
	return runtime.PostRun{Session: e.key, Run: "run_1", Runnable: "ops", Status: runtime.StatusCompleted}
}

const good = `{"name": "chain-check", "description": "Checks a TLS chain for a missing intermediate.",
 "when_to_use": "A client reports unknown authority.", "steps": ["Scan the host with cert_scan.", "Compare the chain length with 2."],
 "script": "echo checking \"$1\"", "score": 0.9}`

func TestReviewGatesAndApproval(t *testing.T) {
	e := newEnv(t, []string{GateSpec, GateSafety, GateEffectiveness, GateHuman})
	e.rev.replies = []string{"```json\n" + good + "\n```"}
	cs, err := e.svc.Review(ctx, e.run("check prod.example.com", 4))
	if err != nil || len(cs) != 1 {
		t.Fatalf("review = %v, %v", cs, err)
	}
	c := cs[0]
	if c.Status != StatusPendingApproval || c.Revision != 1 || c.Proposal.Name != "chain-check" || c.Evidence[0] != "4 tool calls" ||
		c.Dir != filepath.Join(e.base, "app", "chain-check") || len(c.Gates) != 4 || !c.Gates[2].Passed {
		t.Fatalf("candidate = %+v", c)
	}
	req := e.rev.calls[0]
	if req.Site.Node != "evolution/ops" || !strings.Contains(req.Messages[1].Content, "cert_scan result: \"ok\"") {
		t.Errorf("reviewer request = %+v", req)
	}
	// The cursor moved: the same events are not reviewed again.
	if cs, err := e.svc.Review(ctx, runtime.PostRun{Session: e.key, Run: "run_1", Status: runtime.StatusCompleted}); err != nil || len(cs) != 0 || len(e.rev.calls) != 1 {
		t.Fatalf("second review = %v, %v (%d calls)", cs, err, len(e.rev.calls))
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Fatal("published before approval")
	}
	pend, err := e.svc.Pending(ctx)
	if err != nil || len(pend) != 1 || pend[0].ID != c.ID {
		t.Fatalf("pending = %v, %v", pend, err)
	}
	a, err := e.svc.Approve(ctx, c.ID, "alice")
	if err != nil || a.Status != StatusActive || a.Decided != "alice" {
		t.Fatalf("approve = %+v, %v", a, err)
	}
	s, err := skill.NewRepository().Load(c.Dir)
	if err != nil || s.Name() != "chain-check" || !strings.Contains(s.Body, "2. Compare the chain length with 2.") ||
		strings.Join(s.Scripts, ",") != "scripts/run.sh" || s.Front.WhenToUse != "A client reports unknown authority." {
		t.Fatalf("published skill = %+v, %v", s, err)
	}
	if _, err := e.svc.Approve(ctx, c.ID, "alice"); !errors.Is(err, ErrNotPending) {
		t.Errorf("approve twice: %v", err)
	}
	// The same content again is a duplicate; new content is revision 2,
	// which archives revision 1 when approved.
	e.rev.replies = []string{good, strings.Replace(good, "with 2.", "with 2 or 3.", 1)}
	cs, _ = e.svc.Review(ctx, e.run("again", 4))
	if len(cs) != 1 || cs[0].Status != StatusRejected || !strings.HasPrefix(cs[0].Reason, "duplicate") {
		t.Fatalf("duplicate = %+v", cs[0])
	}
	cs, _ = e.svc.Review(ctx, e.run("and again", 4))
	if len(cs) != 1 || cs[0].Revision != 2 || cs[0].Status != StatusPendingApproval {
		t.Fatalf("revision 2 = %+v", cs[0])
	}
	if _, err := e.svc.Approve(ctx, cs[0].ID, "bob"); err != nil {
		t.Fatal(err)
	}
	old, _ := e.svc.Get(ctx, c.ID)
	if old.Status != StatusArchived {
		t.Errorf("revision 1 = %s", old.Status)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Dir, "SKILL.md")); !strings.Contains(string(b), "with 2 or 3.") {
		t.Errorf("SKILL.md = %s", b)
	}
}

func TestEvidenceGate(t *testing.T) {
	e := newEnv(t, nil)
	if cs, err := e.svc.Review(ctx, e.run("hello", 1)); err != nil || len(cs) != 0 || len(e.rev.calls) != 0 {
		t.Fatalf("weak evidence reviewed: %v %v", cs, err)
	}
	// A correction or a recovery is enough evidence with few calls.
	e.rev.replies = []string{`{"skip": true}`, `{"skip": true}`}
	e.svc.Review(ctx, e.run("no, that's wrong: use port 8443", 1))
	if len(e.rev.calls) != 1 || !strings.Contains(e.rev.calls[0].Messages[1].Content, "a user correction") {
		t.Fatalf("correction: %d calls", len(e.rev.calls))
	}
	e.svc.Review(ctx, e.run("scan", 2, true, false))
	if len(e.rev.calls) != 2 || !strings.Contains(e.rev.calls[1].Messages[1].Content, "a recovery after a failed tool call") {
		t.Fatalf("recovery: %d calls", len(e.rev.calls))
	}
	// A failed run is not reviewed, but its events are consumed.
	job := e.run("scan", 5)
	job.Status = runtime.StatusFailed
	if cs, _ := e.svc.Review(ctx, job); len(cs) != 0 || len(e.rev.calls) != 2 {
		t.Fatalf("failed run reviewed")
	}
}

func TestGatesReject(t *testing.T) {
	cases := map[string]string{
		`{"name": "x", "description": "d", "when_to_use": "w", "steps": ["one"]}`:                                                "spec:",
		`{"name": "deploy", "description": "d", "when_to_use": "w", "steps": ["set api_key=abcdef123456", "b"], "score": 1}`:     "safety: found a credential assignment",
		`{"name": "clean", "description": "d", "when_to_use": "w", "steps": ["run rm -rf / now", "b"], "score": 1}`:              "safety: found a recursive forced delete",
		`{"name": "mail", "description": "mail ann@example.com", "when_to_use": "w", "steps": ["a", "b"], "score": 1}`:           "safety: found an e-mail address",
		`{"name": "walk", "description": "d", "when_to_use": "w", "steps": ["cat ../../secrets", "b"], "score": 1}`:              "safety: found path traversal",
		`{"name": "key", "description": "d", "when_to_use": "w", "steps": ["use sk-abcdefghijklmnopqrstuvwx", "b"], "score": 1}`: "safety: found an OpenAI-style API key",
		`{"name": "ann-notes", "description": "notes of ann", "when_to_use": "w", "steps": ["a", "b"], "score": 1}`:              "safety: found the user's id",
		`{"name": "house-style", "description": "d", "when_to_use": "w", "steps": ["a", "b"], "score": 1}`:                       "conflict: house-style is a declared skill",
	}
	for reply, want := range cases {
		e := newEnv(t, nil)
		e.rev.replies = []string{reply}
		cs, err := e.svc.Review(ctx, e.run("go", 3))
		if err != nil || len(cs) != 1 || cs[0].Status != StatusRejected || !strings.HasPrefix(cs[0].Reason, want) {
			t.Errorf("%s: %+v, %v; want %q", reply, cs, err, want)
		}
	}
}

func TestEffectivenessAndAutoPublish(t *testing.T) {
	e := newEnv(t, nil) // spec, safety, effectiveness: no human gate
	noScore := strings.Replace(good, `, "score": 0.9`, "", 1)
	e.rev.replies = []string{noScore, good}
	cs, _ := e.svc.Review(ctx, e.run("go", 3))
	if len(cs) != 1 || cs[0].Status != StatusPendingEval {
		t.Fatalf("no score = %+v", cs)
	}
	r, err := e.svc.Reject(ctx, cs[0].ID, "carol", "not useful")
	if err != nil || r.Status != StatusRejected || r.Reason != "rejected by carol: not useful" {
		t.Fatalf("reject = %+v, %v", r, err)
	}
	cs, _ = e.svc.Review(ctx, e.run("go", 3))
	if len(cs) != 1 || cs[0].Status != StatusActive || cs[0].Revision != 2 {
		t.Fatalf("scored = %+v", cs)
	}
	if _, err := os.Stat(filepath.Join(cs[0].Dir, "scripts", "run.sh")); err != nil {
		t.Errorf("auto-published skill: %v", err)
	}
	if _, err := e.svc.Get(ctx, "cand_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
}

func TestReviewHoldsTheSessionLease(t *testing.T) {
	e := newEnv(t, nil)
	job := e.run("go", 5)
	if _, err := e.st.AcquireLease(ctx, "evolution/"+e.key.String(), "other", time.Minute, e.now); err != nil {
		t.Fatal(err)
	}
	if cs, err := e.svc.Review(ctx, job); err != nil || len(cs) != 0 || len(e.rev.calls) != 0 {
		t.Fatalf("reviewed under another's lease: %v %v", cs, err)
	}
	if err := e.st.ReleaseLease(ctx, "evolution/"+e.key.String(), "other", e.now); err != nil {
		t.Fatal(err)
	}
	e.rev.replies = []string{`{"skip": true}`}
	if _, err := e.svc.Review(ctx, job); err != nil || len(e.rev.calls) != 1 {
		t.Fatalf("after release: %v, %d calls", err, len(e.rev.calls))
	}
	// The review released its lease.
	if _, err := e.st.AcquireLease(ctx, "evolution/"+e.key.String(), "other", time.Minute, e.now); err != nil {
		t.Errorf("lease kept: %v", err)
	}
}

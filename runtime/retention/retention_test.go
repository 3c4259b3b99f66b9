package retention_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

var (
	ctx = context.Background()
	now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	day = 24 * time.Hour
)

func ago(d time.Duration) time.Time { return now.Add(-d) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world is a store with sessions and runs set up by name.
type world struct {
	t  *testing.T
	st *memory.Store
}

func newWorld(t *testing.T) *world { return &world{t: t, st: memory.New()} }

func key(session string) store.SessionKey {
	return store.SessionKey{App: "app", User: "u", Session: session}
}

// session creates a session last active at updated.
func (w *world) session(id string, updated time.Time) {
	_, _, err := w.st.GetOrCreateSession(ctx, key(id), ago(1000*day))
	must(w.t, err)
	_, err = w.st.AppendEvents(ctx, key(id), [][]byte{[]byte("e")}, updated)
	must(w.t, err)
}

// run creates a run in session with a full checkpoint and a delta, and
// gives it status at updated; parent names its fork base.
func (w *world) run(session, id string, status store.RunStatus, updated time.Time, parent string) {
	must(w.t, w.st.CreateRun(ctx, store.Run{ID: id, Session: key(session), Runnable: "g", Status: store.RunRunning,
		ParentRun: parent, Created: ago(1000 * day), Updated: ago(1000 * day)}))
	for step, kind := range []store.CheckpointKind{store.Full, store.Delta} {
		_, err := w.st.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: id, Step: uint64(step), Kind: kind,
			State: []byte("s"), Time: ago(1000 * day)}})
		must(w.t, err)
	}
	must(w.t, w.st.UpdateRunStatus(ctx, id, status, updated))
}

func (w *world) retainer(cfg retention.Config) *retention.Retainer {
	cfg.Store, cfg.Now = w.st, func() time.Time { return now }
	return retention.New(cfg)
}

// names renders items as "kind name reason", sorted.
func names(items []retention.Item) []string {
	var out []string
	for _, it := range items {
		name := it.Run
		switch it.Kind {
		case retention.KindSession:
			name = it.ID
		case retention.KindIdempotency, retention.KindRecord:
			name = it.Record
		}
		out = append(out, fmt.Sprintf("%s %s %s", it.Kind, name, it.Reason))
	}
	slices.Sort(out)
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    retention.Policy
		setup     func(w *world)
		del, keep []string
	}{{
		name:   "max_age deletes finished runs only",
		policy: retention.Policy{MaxAge: 30 * day},
		setup: func(w *world) {
			w.session("s", ago(time.Hour))
			w.run("s", "done_old", store.RunCompleted, ago(40*day), "")
			w.run("s", "failed_old", store.RunFailed, ago(40*day), "")
			w.run("s", "canceled_old", store.RunCanceled, ago(31*day), "")
			w.run("s", "done_new", store.RunCompleted, ago(10*day), "")
			w.run("s", "waiting_old", store.RunInterrupted, ago(40*day), "")
			w.run("s", "decide_old", "needs_decision", ago(40*day), "")
			w.run("s", "running_old", store.RunRunning, ago(40*day), "")
			w.run("s", "unknown_old", "paused", ago(40*day), "")
		},
		del: []string{"run canceled_old max_age", "run done_old max_age", "run failed_old max_age"},
	}, {
		name:   "max_runs keeps the newest finished runs of each session",
		policy: retention.Policy{MaxRuns: 2},
		setup: func(w *world) {
			w.session("s", ago(time.Hour))
			w.session("t", ago(time.Hour))
			for i := range 4 {
				w.run("s", fmt.Sprintf("r%d", i), store.RunCompleted, ago(time.Duration(10-i)*day), "")
			}
			w.run("s", "waiting", store.RunInterrupted, ago(100*day), "")
			w.run("t", "t0", store.RunCompleted, ago(100*day), "")
		},
		del: []string{"run r0 max_runs", "run r1 max_runs"},
	}, {
		name:   "a fork base stays while its fork stays",
		policy: retention.Policy{MaxAge: 30 * day},
		setup: func(w *world) {
			w.session("s", ago(time.Hour))
			w.run("s", "base", store.RunCompleted, ago(40*day), "")
			w.run("s", "fork", store.RunCompleted, ago(35*day), "base")
			w.run("s", "fork2", store.RunInterrupted, ago(35*day), "fork")
			w.run("s", "base2", store.RunCompleted, ago(40*day), "")
			w.run("s", "fork3", store.RunCompleted, ago(40*day), "base2")
		},
		del:  []string{"run base2 max_age", "run fork3 max_age"},
		keep: []string{"run base fork_base", "run fork fork_base"},
	}, {
		name:   "session_ttl deletes idle sessions with their finished runs, never one holding a resumable run",
		policy: retention.Policy{SessionTTL: 90 * day},
		setup: func(w *world) {
			w.session("idle", ago(100*day))
			w.run("idle", "i1", store.RunCompleted, ago(100*day), "")
			w.run("idle", "i2", store.RunFailed, ago(120*day), "")
			w.session("empty", ago(91*day))
			w.session("waiting", ago(100*day))
			w.run("waiting", "w1", store.RunCompleted, ago(100*day), "")
			w.run("waiting", "w2", store.RunInterrupted, ago(100*day), "")
			w.session("active", ago(100*day))
			w.run("active", "a1", store.RunCompleted, ago(10*day), "") // a run's update is activity
			w.session("forked", ago(100*day))
			w.run("forked", "base", store.RunCompleted, ago(100*day), "")
			w.run("forked", "child", store.RunInterrupted, ago(95*day), "base")
		},
		del: []string{"run i1 session_ttl", "run i2 session_ttl", "run w1 session_ttl",
			"session empty session_ttl", "session idle session_ttl"},
		keep: []string{"run base fork_base", "session forked resumable", "session waiting resumable"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			pl, err := w.retainer(retention.Config{}).Plan(ctx, "app", tc.policy)
			must(t, err)
			if got := names(pl.Delete); !slices.Equal(got, tc.del) {
				t.Errorf("delete:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.del, "\n"))
			}
			if got := names(pl.Keep); !slices.Equal(got, tc.keep) {
				t.Errorf("keep: %q, want %q", got, tc.keep)
			}
			// Applied, the plan deletes exactly its items, and every run
			// left still rebuilds its state (whole runs only: no chain
			// loses its base).
			res, err := w.retainer(retention.Config{}).Apply(ctx, pl)
			must(t, err)
			if got := names(res.Deleted); !slices.Equal(got, tc.del) || len(res.Skipped) > 0 {
				t.Errorf("applied: deleted %q, skipped %q", got, names(res.Skipped))
			}
			runs, _, err := w.st.ListRuns(ctx, store.RunFilter{})
			must(t, err)
			for _, r := range runs {
				if _, err := w.st.CheckpointChain(ctx, r.ID, 1); err != nil {
					t.Errorf("chain of kept run %s: %v", r.ID, err)
				}
				if _, err := w.st.GetSession(ctx, r.Session); err != nil {
					t.Errorf("session of kept run %s: %v", r.ID, err)
				}
			}
			again, err := w.retainer(retention.Config{}).Plan(ctx, "app", tc.policy)
			must(t, err)
			if len(again.Delete) != 0 {
				t.Errorf("a second plan deletes %q", names(again.Delete))
			}
		})
	}
}

// TestApplyRechecks changes each planned item between the plan and its
// application: each is skipped, and says why.
func TestApplyRechecks(t *testing.T) {
	w := newWorld(t)
	w.session("s", ago(100*day))
	w.run("s", "resumed", store.RunCanceled, ago(100*day), "")
	w.run("s", "forked", store.RunCompleted, ago(100*day), "")
	w.session("busy", ago(100*day))
	w.session("newrun", ago(100*day))
	w.session("quiet", ago(100*day))
	r := w.retainer(retention.Config{})
	pl, err := r.Plan(ctx, "app", retention.Policy{SessionTTL: 90 * day})
	must(t, err)
	must(t, w.st.UpdateRunStatus(ctx, "resumed", store.RunRunning, now))
	w.run("s", "child", store.RunInterrupted, now, "forked")
	_, err = w.st.AppendEvents(ctx, key("busy"), [][]byte{[]byte("hello")}, now)
	must(t, err)
	w.run("newrun", "fresh", store.RunRunning, now, "")
	res, err := r.Apply(ctx, pl)
	must(t, err)
	if got, want := names(res.Deleted), []string{"session quiet session_ttl"}; !slices.Equal(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
	var whys []string
	for _, it := range res.Skipped {
		name := it.Run
		if it.Kind == retention.KindSession {
			name = it.ID
		}
		whys = append(whys, name+": "+it.Why)
	}
	slices.Sort(whys)
	want := []string{
		"busy: it was active since the plan",
		"forked: run child was forked from it since the plan",
		"newrun: it still has runs (kept, or created since the plan)",
		"resumed: it was updated since the plan",
		"s: it still has runs (kept, or created since the plan)",
	}
	if !slices.Equal(whys, want) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(whys, "\n"), strings.Join(want, "\n"))
	}
	for _, run := range []string{"resumed", "forked", "child", "fresh"} {
		if _, err := w.st.GetRun(ctx, run); err != nil {
			t.Errorf("run %s: %v", run, err)
		}
	}
}

// record is an idempotency record like the protocols keep: the run its
// request started, or a task, and when it was made.
type record struct {
	Run  string `json:"run,omitempty"`
	Task string `json:"task,omitempty"`
	Made int64  `json:"made,omitempty"`
}

func readRecord(v []byte) (retention.Ref, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return retention.Ref{}, err
	}
	ref := retention.Ref{Run: r.Run, Task: r.Task}
	if r.Made != 0 {
		ref.Made = time.Unix(r.Made, 0)
	}
	return ref, nil
}

func TestIdempotencyRecords(t *testing.T) {
	w := newWorld(t)
	w.session("s", ago(time.Hour))
	w.run("s", "old", store.RunCompleted, ago(40*day), "")
	w.run("s", "recent", store.RunCompleted, ago(time.Hour), "")
	w.run("s", "waiting", store.RunInterrupted, ago(40*day), "")
	w.run("s", "expired", store.RunCompleted, ago(3*day), "")
	w.run("s", "tasked", store.RunCompleted, ago(3*day), "")
	must(t, w.st.PutTaskIndex(ctx, "u", "task-1", "tasked"))
	put := func(coll, user, name string, r record) {
		b, _ := json.Marshal(r)
		must(t, w.st.ApplyDocs(ctx, store.DocOp{Coll: coll, Key: store.DocPath("app", user, name), Value: b}))
	}
	put("idem", "u", "k-old", record{Run: "old"})                  // its run goes by max_age
	put("idem", "u", "k-recent", record{Run: "recent"})            // kept
	put("idem", "u", "k-waiting", record{Run: "waiting"})          // kept: resumable
	put("idem", "u", "k-expired", record{Run: "expired"})          // past the TTL
	put("idem", "u", "k-missing", record{Run: "nope"})             // its run is gone
	put("idem", "u", "k-stale", record{Made: ago(2 * day).Unix()}) // a reservation that never ran
	put("idem", "u", "k-starting", record{Made: ago(time.Minute).Unix()})
	put("idem", "u", "k-bad", record{})
	must(t, w.st.ApplyDocs(ctx, store.DocOp{Coll: "idem", Key: store.DocPath("app", "u", "k-junk"), Value: []byte("{")}))
	put("idem", "u", "k-other-app", record{Run: "nope"})
	must(t, w.st.ApplyDocs(ctx, store.DocOp{Coll: "idem", Key: store.DocPath("other", "u", "k"), Value: []byte(`{"run":"nope"}`)}))
	put("msg", "u", "m-task", record{Task: "task-1"})     // resolved through the task index
	put("msg", "u", "m-starting", record{Task: "task-2"}) // not indexed yet: its run is starting
	// Owned records go with their run only, with what goes with them.
	put("task", "u", "t-old", record{Run: "old"})
	put("task", "u", "t-expired", record{Run: "expired"})
	must(t, w.st.ApplyDocs(ctx, store.DocOp{Coll: "list", Key: "entry-of-t-old", Value: []byte("x")}))
	readTask := func(v []byte) (retention.Ref, error) {
		ref, err := readRecord(v)
		ref.With = []retention.DocKey{{Coll: "list", Key: "entry-of-" + map[string]string{"old": "t-old", "expired": "t-expired"}[ref.Run]}}
		return ref, err
	}
	r := w.retainer(retention.Config{Records: []retention.Records{{Coll: "idem", Read: readRecord}, {Coll: "msg", Read: readRecord},
		{Coll: "task", Owned: true, Read: readTask}}})
	pl, err := r.Plan(ctx, "app", retention.Policy{MaxAge: 30 * day, IdempotencyTTL: day})
	must(t, err)
	want := []string{
		"idempotency k-expired idempotency_ttl",
		"idempotency k-missing run_deleted",
		"idempotency k-old run_deleted",
		"idempotency k-other-app run_deleted",
		"idempotency k-stale idempotency_ttl",
		"idempotency m-task idempotency_ttl",
		"record t-old run_deleted",
		"run old max_age",
	}
	if got := names(pl.Delete); !slices.Equal(got, want) {
		t.Errorf("delete:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A record rewritten after the plan is kept.
	put("idem", "u", "k-expired", record{Run: "recent"})
	res, err := r.Apply(ctx, pl)
	must(t, err)
	if len(res.Skipped) != 1 || res.Skipped[0].Record != "k-expired" || res.Count(retention.KindIdempotency) != 5 || res.Count(retention.KindRun) != 1 || res.Count(retention.KindRecord) != 1 {
		t.Errorf("applied: deleted %q, skipped %q", names(res.Deleted), names(res.Skipped))
	}
	for _, k := range []string{"k-recent", "k-waiting", "k-starting", "k-junk", "k-expired"} {
		if _, err := w.st.GetDoc(ctx, "idem", store.DocPath("app", "u", k)); err != nil {
			t.Errorf("record %s: %v", k, err)
		}
	}
	if _, err := w.st.GetDoc(ctx, "idem", store.DocPath("other", "u", "k")); err != nil {
		t.Errorf("another app's record: %v", err)
	}
	if _, err := w.st.GetDoc(ctx, "list", "entry-of-t-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the list entry of a deleted task: %v", err)
	}
	if _, err := w.st.GetDoc(ctx, "task", store.DocPath("app", "u", "t-expired")); err != nil {
		t.Errorf("an owned record of a run past idempotency_ttl: %v", err)
	}
}

func TestSessionDocsAndForget(t *testing.T) {
	w := newWorld(t)
	w.session("s1", ago(100*day))
	w.session("s10", ago(time.Hour))
	for _, s := range []string{"s1", "s10"} {
		for i := range 300 { // more than a page
			must(t, w.st.ApplyDocs(ctx, store.DocOp{Coll: "artifact", Key: store.DocPath("app", "u", s, fmt.Sprint(i)), Value: []byte("x")}))
		}
	}
	var forgot []store.SessionKey
	r := w.retainer(retention.Config{SessionDocs: []string{"artifact"}, Forget: []func(context.Context, store.SessionKey) error{
		func(_ context.Context, k store.SessionKey) error { forgot = append(forgot, k); return nil },
	}})
	pl, err := r.Plan(ctx, "app", retention.Policy{SessionTTL: 90 * day})
	must(t, err)
	_, err = r.Apply(ctx, pl)
	must(t, err)
	left1, _ := w.st.ListDocs(ctx, "artifact", store.DocPath("app", "u", "s1"), "", 0)
	left10, _ := w.st.ListDocs(ctx, "artifact", store.DocPath("app", "u", "s10"), "", 0)
	if len(left1) != 0 || len(left10) != 300 || len(forgot) != 1 || forgot[0] != key("s1") {
		t.Errorf("after: %d docs of s1, %d of s10; forgot %v", len(left1), len(left10), forgot)
	}
}

func TestParseAge(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 0, false}, {"0", 0, false}, {"30d", 30 * day, false}, {"12h", 12 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false}, {"-1h", 0, true}, {"d", 0, true}, {"3w", 0, true}, {"99999999d", 0, true},
	} {
		got, err := retention.ParseAge(tc.in)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("ParseAge(%q) = %v, %v", tc.in, got, err)
		}
	}
	if s := (retention.Policy{MaxAge: 30 * day, MaxRuns: 5, IdempotencyTTL: 90 * time.Minute}).String(); s != "max_age 30d, max_runs 5, idempotency_ttl 1h30m0s" {
		t.Errorf("String = %q", s)
	}
}

func TestPlanRefuses(t *testing.T) {
	r := newWorld(t).retainer(retention.Config{})
	if _, err := r.Plan(ctx, "", retention.Policy{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("no app: %v", err)
	}
	if _, err := r.Plan(ctx, "app", retention.Policy{MaxRuns: -1}); err == nil {
		t.Error("a negative policy was accepted")
	}
}

// TestLoop runs passes until the context ends.
func TestLoop(t *testing.T) {
	w := newWorld(t)
	w.session("s", ago(100*day))
	r := w.retainer(retention.Config{})
	lctx, cancel := context.WithCancel(ctx)
	passes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Loop(lctx, "app", retention.Policy{SessionTTL: day}, time.Millisecond, func(res retention.Result, err error) {
			must(t, err)
			if passes++; passes == 3 {
				cancel()
			}
		})
	}()
	<-done
	if _, err := w.st.GetSession(ctx, key("s")); !errors.Is(err, store.ErrNotFound) || passes != 3 {
		t.Errorf("after the loop: session %v, %d passes", err, passes)
	}
}

// TestConcurrentPasses applies one policy from two retainers at once (two
// replicas on one store): every item is deleted once, the other pass skips
// it, and neither fails.
func TestConcurrentPasses(t *testing.T) {
	w := newWorld(t)
	for i := range 20 {
		s := fmt.Sprintf("s%02d", i)
		w.session(s, ago(100*day))
		w.run(s, "r"+s, store.RunCompleted, ago(100*day), "")
	}
	p := retention.Policy{SessionTTL: 90 * day}
	results := make(chan retention.Result, 2)
	for range 2 {
		go func() {
			r := w.retainer(retention.Config{})
			pl, err := r.Plan(ctx, "app", p)
			if err != nil {
				t.Error(err)
			}
			res, err := r.Apply(ctx, pl)
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	a, b := <-results, <-results
	if runs := a.Count(retention.KindRun) + b.Count(retention.KindRun); runs != 20 {
		t.Errorf("runs deleted %d, want 20 (%d skipped)", runs, len(a.Skipped)+len(b.Skipped))
	}
	if sessions := a.Count(retention.KindSession) + b.Count(retention.KindSession); sessions != 20 {
		t.Errorf("sessions deleted %d, want 20", sessions)
	}
	if ss, _, _ := w.st.ListSessions(ctx, store.SessionFilter{}); len(ss) != 0 {
		t.Errorf("sessions left: %d", len(ss))
	}
}

// TestForgetFails: a session whose services' documents could not be
// dropped is still deleted (and counted); the failure is the pass's error.
func TestForgetFails(t *testing.T) {
	w := newWorld(t)
	w.session("s", ago(100*day))
	boom := errors.New("boom")
	r := w.retainer(retention.Config{Forget: []func(context.Context, store.SessionKey) error{
		func(context.Context, store.SessionKey) error { return boom },
	}})
	pl, err := r.Plan(ctx, "app", retention.Policy{SessionTTL: day})
	must(t, err)
	res, err := r.Apply(ctx, pl)
	if !errors.Is(err, boom) || res.Count(retention.KindSession) != 1 {
		t.Errorf("Apply = %d sessions deleted, %v", res.Count(retention.KindSession), err)
	}
	if _, err := w.st.GetSession(ctx, key("s")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session: %v", err)
	}
}

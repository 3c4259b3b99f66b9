// Package storetest is the conformance suite of store.Store: every backend
// runs it, and a backend that passes it is interchangeable with the others.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
//	}
//
// The suite checks behaviour through the public interface only: round trips
// of every record, every list filter, the atomicity of a step commit, the
// exactly-once rules for pending writes and effects, deletion by listing,
// ordering and gap-free sequences, leases with injected times, task isolation
// across users, concurrent writers, and the sentinel errors.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// t0 is the suite's clock origin; times are always injected.
var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// at returns t0 plus d seconds.
func at(d int) time.Time { return t0.Add(time.Duration(d) * time.Second) }

// Run runs the suite. open is called once per subtest and must return an
// empty store; the suite closes it.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Programs", testPrograms},
		{"Runs", testRuns},
		{"AdmitRun", testAdmitRun},
		{"RunUsage", testRunUsage},
		{"ListRuns", testListRuns},
		{"CommitAndGet", testCommitAndGet},
		{"CommitRules", testCommitRules},
		{"ListCheckpoints", testListCheckpoints},
		{"DeltaChain", testDeltaChain},
		{"Prune", testPrune},
		{"PendingWrites", testPendingWrites},
		{"Effects", testEffects},
		{"Journal", testJournal},
		{"DeleteRun", testDeleteRun},
		{"DeleteRunIf", testDeleteRunIf},
		{"ListSessions", testListSessions},
		{"DeleteSession", testDeleteSession},
		{"DeleteSessionRace", testDeleteSessionRace},
		{"SessionEvents", testSessionEvents},
		{"CommitEvents", testCommitEvents},
		{"SessionState", testSessionState},
		{"Summaries", testSummaries},
		{"Leases", testLeases},
		{"Tasks", testTasks},
		{"Docs", testDocs},
		{"NotFound", testNotFound},
		{"Invalid", testInvalid},
		{"Copies", testCopies},
		{"Concurrent", testConcurrent},
		{"Canceled", testCanceled},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

// must fails the test when err is not nil.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails the test unless err wraps want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

func sess(app, user, id string) store.SessionKey {
	return store.SessionKey{App: app, User: user, Session: id}
}

// newSession creates a session.
func newSession(t *testing.T, s store.Store, key store.SessionKey) {
	t.Helper()
	if _, _, err := s.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
}

// newRun creates a running run in key's session, creating the session.
func newRun(t *testing.T, s store.Store, key store.SessionKey, id string) store.Run {
	t.Helper()
	newSession(t, s, key)
	r := store.Run{ID: id, Session: key, Runnable: "triage", ProgramHash: "prog-1", Status: store.RunRunning,
		Created: t0, Updated: t0, Meta: []byte("meta:" + id)}
	must(t, s.CreateRun(ctx, r))
	return r
}

// checkpoint returns a checkpoint whose fields all derive from run and step.
func checkpoint(run string, step uint64, kind store.CheckpointKind) store.Checkpoint {
	tag := fmt.Sprintf("%s/%d", run, step)
	return store.Checkpoint{
		Run: run, Step: step, Kind: kind,
		State:       []byte("state " + kind.String() + " " + tag),
		Frontier:    []byte("frontier " + tag),
		Counters:    []byte("counters " + tag),
		Interrupts:  []byte("interrupts " + tag),
		ProgramHash: "prog-1", SchemaHash: "schema-1",
		Time: at(int(step)),
	}
}

// commit commits checkpoint(run, step, kind) with no events or journal.
func commit(t *testing.T, s store.Store, run string, step uint64, kind store.CheckpointKind) {
	t.Helper()
	if _, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint(run, step, kind)}); err != nil {
		t.Fatal(err)
	}
}

// sameCheckpoint reports how got differs from want, ignoring JournalNext
// when want's is 0.
func sameCheckpoint(got, want store.Checkpoint) error {
	switch {
	case got.Run != want.Run || got.Step != want.Step || got.Kind != want.Kind:
		return fmt.Errorf("identity %s/%d/%v, want %s/%d/%v", got.Run, got.Step, got.Kind, want.Run, want.Step, want.Kind)
	case !bytes.Equal(got.State, want.State) || !bytes.Equal(got.Frontier, want.Frontier) ||
		!bytes.Equal(got.Counters, want.Counters) || !bytes.Equal(got.Interrupts, want.Interrupts):
		return fmt.Errorf("bytes of %s/%d differ: state %q, want %q", got.Run, got.Step, got.State, want.State)
	case got.ProgramHash != want.ProgramHash || got.SchemaHash != want.SchemaHash:
		return fmt.Errorf("hashes of %s/%d: %s %s, want %s %s", got.Run, got.Step, got.ProgramHash, got.SchemaHash, want.ProgramHash, want.SchemaHash)
	case !got.Time.Equal(want.Time):
		return fmt.Errorf("time of %s/%d: %v, want %v", got.Run, got.Step, got.Time, want.Time)
	case want.JournalNext != 0 && got.JournalNext != want.JournalNext:
		return fmt.Errorf("journal next of %s/%d: %d, want %d", got.Run, got.Step, got.JournalNext, want.JournalNext)
	}
	return nil
}

// pluck returns f of each of xs, in order: what a check compares.
func pluck[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// steps returns the steps of cps in order.
func steps(cps []store.Checkpoint) []uint64 {
	return pluck(cps, func(c store.Checkpoint) uint64 { return c.Step })
}

// datas returns the data of entries as strings.
func datas(es []store.Entry) []string {
	return pluck(es, func(e store.Entry) string { return string(e.Data) })
}

// seqs returns the sequence numbers of entries.
func seqs(es []store.Entry) []uint64 { return pluck(es, func(e store.Entry) uint64 { return e.Seq }) }

func byteses(ss ...string) [][]byte { return pluck(ss, func(s string) []byte { return []byte(s) }) }

// entriesCase is one read of an ordered log (a ledger, a journal): its
// bounds and what it returns, as "[seqs] [datas]".
type entriesCase struct {
	from  uint64
	limit int
	want  string
}

// checkEntries reads a log with each case's bounds; what names the read.
func checkEntries(t *testing.T, what string, read func(from uint64, limit int) ([]store.Entry, error), cases []entriesCase) {
	t.Helper()
	for _, tc := range cases {
		es, err := read(tc.from, tc.limit)
		must(t, err)
		if got := fmt.Sprint(seqs(es), datas(es)); got != tc.want {
			t.Errorf("%s(%d, limit %d) = %s, want %s", what, tc.from, tc.limit, got, tc.want)
		}
	}
}

func testPrograms(t *testing.T, s store.Store) {
	must(t, s.PutProgram(ctx, "h1", []byte("bytecode-1")))
	must(t, s.PutProgram(ctx, "h1", []byte("bytecode-1")))
	wantErr(t, "different bytes under one hash", s.PutProgram(ctx, "h1", []byte("other")), store.ErrConflict)
	got, err := s.GetProgram(ctx, "h1")
	must(t, err)
	if string(got) != "bytecode-1" {
		t.Errorf("GetProgram = %q", got)
	}
	_, err = s.GetProgram(ctx, "h2")
	wantErr(t, "missing program", err, store.ErrNotFound)
}

func testRuns(t *testing.T, s store.Store) {
	key := sess("app", "alice", "s1")
	r := newRun(t, s, key, "run_1")
	wantErr(t, "duplicate run", s.CreateRun(ctx, r), store.ErrConflict)
	orphan := r
	orphan.ID, orphan.Session = "run_2", sess("app", "alice", "nosuch")
	wantErr(t, "run without session", s.CreateRun(ctx, orphan), store.ErrNotFound)

	got, err := s.GetRun(ctx, "run_1")
	must(t, err)
	if got.ID != r.ID || got.Session != r.Session || got.Runnable != r.Runnable || got.ProgramHash != r.ProgramHash ||
		got.Status != r.Status || !got.Created.Equal(r.Created) || !got.Updated.Equal(r.Updated) || string(got.Meta) != string(r.Meta) {
		t.Errorf("GetRun = %+v, want %+v", got, r)
	}
	if got.FirstEvent != 0 {
		t.Errorf("a run created without its first event reads first event %d, want 0 (unknown)", got.FirstEvent)
	}
	fork := r
	fork.ID, fork.ParentRun, fork.ParentStep, fork.FirstEvent = "run_fork", "run_1", 7, 1<<40
	must(t, s.CreateRun(ctx, fork))
	got, err = s.GetRun(ctx, "run_fork")
	must(t, err)
	if got.ParentRun != "run_1" || got.ParentStep != 7 {
		t.Errorf("fork parent = %s/%d, want run_1/7", got.ParentRun, got.ParentStep)
	}
	if got.FirstEvent != 1<<40 {
		t.Errorf("CreateRun kept first event %d, want %d", got.FirstEvent, uint64(1<<40))
	}
	huge := r
	huge.ID, huge.FirstEvent = "run_huge", 1<<63
	wantErr(t, "first event out of range", s.CreateRun(ctx, huge), store.ErrInvalid)

	must(t, s.UpdateRunStatus(ctx, "run_1", store.RunInterrupted, at(60)))
	got, err = s.GetRun(ctx, "run_1")
	must(t, err)
	if got.Status != store.RunInterrupted || !got.Updated.Equal(at(60)) || !got.Created.Equal(t0) {
		t.Errorf("after UpdateRunStatus: status %s updated %v created %v", got.Status, got.Updated, got.Created)
	}

	// EndRun: events and status together; sequences continue the ledger.
	_, err = s.AppendEvents(ctx, key, [][]byte{[]byte("input")}, at(61))
	must(t, err)
	first, err := s.EndRun(ctx, "run_1", [][]byte{[]byte("run_error"), []byte("run_finished")}, store.RunFailed, nil, at(62))
	must(t, err)
	if first != 2 {
		t.Errorf("EndRun first seq = %d, want 2", first)
	}
	es, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	if len(es) != 3 || string(es[2].Data) != "run_finished" || es[2].Seq != 3 {
		t.Errorf("ledger after EndRun = %d events", len(es))
	}
	got, err = s.GetRun(ctx, "run_1")
	must(t, err)
	if got.Status != store.RunFailed || !got.Updated.Equal(at(62)) {
		t.Errorf("after EndRun: status %s updated %v", got.Status, got.Updated)
	}
	if first, err := s.EndRun(ctx, "run_1", nil, store.RunCanceled, nil, at(63)); err != nil || first != 0 {
		t.Errorf("EndRun without events = %d, %v", first, err)
	}
	_, err = s.EndRun(ctx, "nosuch", [][]byte{[]byte("x")}, store.RunFailed, nil, at(64))
	wantErr(t, "EndRun of a missing run", err, store.ErrNotFound)
	if es, _ := s.ListEvents(ctx, key, 0, 0); len(es) != 3 {
		t.Errorf("a failed EndRun appended events: %d", len(es))
	}
	_, err = s.EndRun(ctx, "run_1", nil, "", nil, at(65))
	wantErr(t, "EndRun with an empty status", err, store.ErrInvalid)
}

// testRunUsage: a run's usage is kept by CreateRun, set by EndRun and by a
// step commit that carries one (both with the status), left alone when
// they carry none, listed with the run, and checked.
func testRunUsage(t *testing.T, s store.Store) {
	key := sess("app", "alice", "s1")
	usageOf := func(id string) store.RunUsage {
		t.Helper()
		r, err := s.GetRun(ctx, id)
		must(t, err)
		return r.Usage
	}
	r := newRun(t, s, key, "run_1")
	if u := usageOf("run_1"); u != (store.RunUsage{}) {
		t.Errorf("a run created without usage has %+v", u)
	}
	u1 := store.RunUsage{ModelCalls: 2, InputTokens: 1200, OutputTokens: 340, CachedTokens: 1000, Cost: 0.0123, Priced: true}
	first, err := s.EndRun(ctx, "run_1", [][]byte{[]byte("run_finished")}, store.RunInterrupted, &u1, at(10))
	must(t, err)
	if first != 1 {
		t.Errorf("EndRun first = %d, want 1", first)
	}
	if u := usageOf("run_1"); u != u1 {
		t.Errorf("after EndRun with usage: %+v, want %+v", u, u1)
	}
	_, err = s.EndRun(ctx, "run_1", nil, store.RunCanceled, nil, at(11))
	must(t, err)
	if got, err := s.GetRun(ctx, "run_1"); err != nil || got.Status != store.RunCanceled || got.Usage != u1 {
		t.Errorf("EndRun without usage: %+v, %v (usage kept %+v)", got, err, u1)
	}

	// A step commit: with a status and usage, with neither, with usage only.
	must(t, s.UpdateRunStatus(ctx, "run_1", store.RunRunning, at(12)))
	u2 := store.RunUsage{ModelCalls: 5, InputTokens: 9000, OutputTokens: 800, Cost: 0.5, Priced: true}
	cp := checkpoint("run_1", 1, store.Full)
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: cp, Status: store.RunCompleted, Usage: &u2})
	must(t, err)
	if got, err := s.GetRun(ctx, "run_1"); err != nil || got.Status != store.RunCompleted || got.Usage != u2 {
		t.Errorf("after a commit with usage: %+v, %v, want usage %+v", got, err, u2)
	}
	commit(t, s, "run_1", 2, store.Delta)
	if u := usageOf("run_1"); u != u2 {
		t.Errorf("a commit without usage changed it: %+v, want %+v", u, u2)
	}
	u3 := store.RunUsage{ModelCalls: 6, InputTokens: 9100, OutputTokens: 900}
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 3, store.Delta), Usage: &u3})
	must(t, err)
	if got, err := s.GetRun(ctx, "run_1"); err != nil || got.Status != store.RunCompleted || got.Usage != u3 {
		t.Errorf("after a commit with usage only: %+v, %v, want usage %+v", got, err, u3)
	}

	// CreateRun keeps what it is given; ListRuns lists the usage.
	r.ID, r.Usage = "run_2", store.RunUsage{ModelCalls: 1, OutputTokens: 7}
	must(t, s.CreateRun(ctx, r))
	runs, _, err := s.ListRuns(ctx, store.RunFilter{App: "app"})
	must(t, err)
	if len(runs) != 2 || runs[0].Usage != u3 || runs[1].Usage != r.Usage {
		t.Errorf("ListRuns usage = %+v, want %+v and %+v", runs, u3, r.Usage)
	}

	// Bad usage is refused and writes nothing.
	for _, bad := range []store.RunUsage{{Cost: -1}, {Cost: math.NaN()}, {Cost: math.Inf(1)}, {InputTokens: math.MaxInt64 + 1}, {ModelCalls: math.MaxUint64}} {
		_, err := s.EndRun(ctx, "run_1", [][]byte{[]byte("x")}, store.RunFailed, &bad, at(20))
		wantErr(t, fmt.Sprintf("EndRun with usage %+v", bad), err, store.ErrInvalid)
		_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 4, store.Delta), Usage: &bad})
		wantErr(t, fmt.Sprintf("CommitStep with usage %+v", bad), err, store.ErrInvalid)
		r.ID, r.Usage = "run_bad", bad
		wantErr(t, fmt.Sprintf("CreateRun with usage %+v", bad), s.CreateRun(ctx, r), store.ErrInvalid)
	}
	if got, err := s.GetRun(ctx, "run_1"); err != nil || got.Status != store.RunCompleted || got.Usage != u3 {
		t.Errorf("a refused end changed the run: %+v, %v", got, err)
	}
	if es, _ := s.ListEvents(ctx, key, 0, 0); len(es) != 1 {
		t.Errorf("a refused end appended events: %d", len(es))
	}
}

func testListRuns(t *testing.T, s store.Store) {
	statuses := []store.RunStatus{store.RunRunning, store.RunCompleted, store.RunInterrupted}
	var all []store.Run // in index order: app, user, session, id
	n := 0
	for _, app := range []string{"a1", "a2"} {
		for _, user := range []string{"u1", "u2"} {
			for _, session := range []string{"s1", "s2"} {
				for i := range 3 {
					id := fmt.Sprintf("run_%s_%s_%s_%d", app, user, session, i)
					r := newRun(t, s, sess(app, user, session), id)
					r.Status = statuses[n%len(statuses)]
					n++
					must(t, s.UpdateRunStatus(ctx, id, r.Status, t0))
					all = append(all, r)
				}
			}
		}
	}
	filters := []store.RunFilter{
		{}, {App: "a1"}, {App: "a2", User: "u1"}, {App: "a1", User: "u2", Session: "s2"},
		{App: "nosuch"}, {App: "a1", User: "nosuch"},
	}
	for _, base := range filters {
		for _, status := range append([]store.RunStatus{""}, statuses...) {
			for _, limit := range []int{0, 1, 2, 3, 5, 100} {
				for _, newest := range []bool{false, true} {
					f := base
					f.Status, f.Limit, f.Newest = status, limit, newest
					var want []string
					for _, r := range all {
						if (f.App == "" || r.Session.App == f.App) && (f.User == "" || r.Session.User == f.User) &&
							(f.Session == "" || r.Session.Session == f.Session) && (f.Status == "" || r.Status == f.Status) {
							want = append(want, r.ID)
						}
					}
					if newest {
						slices.Reverse(want)
					}
					var got []string
					pages := 0
					for {
						page, next, err := s.ListRuns(ctx, f)
						must(t, err)
						pages++
						if limit > 0 && len(page) > limit {
							t.Fatalf("%+v: page of %d runs", f, len(page))
						}
						for _, r := range page {
							got = append(got, r.ID)
							if f.Status != "" && r.Status != f.Status {
								t.Errorf("%+v: run %s has status %s", f, r.ID, r.Status)
							}
						}
						if next == "" {
							break
						}
						if pages > len(all)+1 {
							t.Fatalf("%+v: paging does not end", f)
						}
						f.Cursor = next
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("ListRuns(%+v, newest %v) = %v, want %v", base, newest, got, want)
					}
					wantPages := 1
					if limit > 0 && len(want) > limit {
						wantPages = (len(want) + limit - 1) / limit
					}
					if pages != wantPages {
						t.Errorf("ListRuns(%+v, status %q, limit %d, newest %v): %d pages, want %d", base, status, limit, newest, pages, wantPages)
					}
				}
			}
		}
	}
	// A cursor from one filter is refused by another it does not belong to.
	_, next, err := s.ListRuns(ctx, store.RunFilter{App: "a1", Limit: 1})
	must(t, err)
	_, _, err = s.ListRuns(ctx, store.RunFilter{App: "a2", Cursor: next})
	wantErr(t, "foreign cursor", err, store.ErrInvalid)
	_, _, err = s.ListRuns(ctx, store.RunFilter{Cursor: "not a cursor!"})
	wantErr(t, "garbage cursor", err, store.ErrInvalid)
}

package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

func testSessionEvents(t *testing.T, s store.Store) {
	key := sess("app", "u", "s1")
	got, created, err := s.GetOrCreateSession(ctx, key, t0)
	must(t, err)
	if !created || got.Key != key || !got.Created.Equal(t0) || got.LastSeq != 0 {
		t.Errorf("new session: %+v created=%v", got, created)
	}
	_, created, err = s.GetOrCreateSession(ctx, key, at(5))
	must(t, err)
	if created {
		t.Error("second GetOrCreateSession created again")
	}
	other := sess("app", "u", "s2")
	newSession(t, s, other)

	first, err := s.AppendEvents(ctx, key, byteses("e1", "e2"), at(1))
	must(t, err)
	if first != 1 {
		t.Errorf("first seq %d, want 1", first)
	}
	must2 := func(first uint64, err error) uint64 { t.Helper(); must(t, err); return first }
	if f := must2(s.AppendEvents(ctx, other, byteses("x1"), at(1))); f != 1 {
		t.Errorf("other session's first seq %d, want 1: sequences are per session", f)
	}
	if f := must2(s.AppendEvents(ctx, key, byteses("e3"), at(2))); f != 3 {
		t.Errorf("third event seq %d, want 3", f)
	}
	if f := must2(s.AppendEvents(ctx, key, nil, at(3))); f != 0 {
		t.Errorf("empty append returned %d, want 0", f)
	}
	if f := must2(s.AppendEvents(ctx, key, byteses("e4", "e5", "e6"), at(4))); f != 4 {
		t.Errorf("fourth event seq %d, want 4", f)
	}
	got, err = s.GetSession(ctx, key)
	must(t, err)
	if got.LastSeq != 6 || !got.Updated.Equal(at(4)) || !got.Created.Equal(t0) {
		t.Errorf("session after appends: %+v", got)
	}
	checkEntries(t, "ListEvents(after", func(after uint64, limit int) ([]store.Entry, error) {
		return s.ListEvents(ctx, key, after, limit)
	}, []entriesCase{
		{0, 0, "[1 2 3 4 5 6] [e1 e2 e3 e4 e5 e6]"},
		{2, 0, "[3 4 5 6] [e3 e4 e5 e6]"},
		{2, 2, "[3 4] [e3 e4]"},
		{6, 0, "[] []"},
		{0, 1, "[1] [e1]"},
		{math.MaxUint64, 0, "[] []"},
	})
}

// testCommitEvents checks that a step's events join the run's session ledger
// in the same sequence as directly appended ones.
func testCommitEvents(t *testing.T, s store.Store) {
	key := sess("app", "u", "s")
	newRun(t, s, key, "run_1")
	_, err := s.AppendEvents(ctx, key, byteses("user input"), t0)
	must(t, err)
	done, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 0, store.Full),
		Events: byteses("node a done", "node b done"), Status: store.RunRunning})
	must(t, err)
	if done.FirstEvent != 2 {
		t.Errorf("commit's first event %d, want 2", done.FirstEvent)
	}
	_, err = s.AppendEvents(ctx, key, byteses("streamed"), at(1))
	must(t, err)
	es, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	if got := fmt.Sprint(seqs(es), datas(es)); got != "[1 2 3 4] [user input node a done node b done streamed]" {
		t.Errorf("ledger = %s", got)
	}
	// A refused commit appends nothing.
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 0, store.Full), Events: byteses("dup")})
	wantErr(t, "recommit", err, store.ErrConflict)
	got, err := s.GetSession(ctx, key)
	must(t, err)
	if got.LastSeq != 4 {
		t.Errorf("last seq after a refused commit: %d, want 4", got.LastSeq)
	}
}

func testSessionState(t *testing.T, s store.Store) {
	key := sess("app", "u", "s")
	newSession(t, s, key)
	st, err := s.GetSessionState(ctx, key)
	must(t, err)
	if len(st) != 0 {
		t.Errorf("state of a new session: %q", st)
	}
	must(t, s.PutSessionState(ctx, key, []byte("v1"), at(1)))
	must(t, s.PutSessionState(ctx, key, []byte("v2"), at(2)))
	st, err = s.GetSessionState(ctx, key)
	must(t, err)
	if string(st) != "v2" {
		t.Errorf("state = %q, want v2", st)
	}
}

func testSummaries(t *testing.T, s store.Store) {
	key := sess("app", "u", "s")
	newSession(t, s, key)
	_, err := s.AppendEvents(ctx, key, byteses("1", "2", "3", "4", "5"), t0)
	must(t, err)
	put := func(filter, text string, boundary uint64) error {
		return s.PutSummary(ctx, key, store.Summary{FilterKey: filter, Text: text, Boundary: boundary, Time: at(int(boundary))})
	}
	get := func(filter string) string {
		t.Helper()
		sum, err := s.GetSummary(ctx, key, filter)
		if err != nil {
			return err.Error()
		}
		if sum.FilterKey != filter || !sum.Time.Equal(at(int(sum.Boundary))) {
			t.Errorf("summary %q: %+v", filter, sum)
		}
		return fmt.Sprintf("%s@%d", sum.Text, sum.Boundary)
	}
	must(t, put("", "first three", 3))
	must(t, put("branch/a", "branch two", 2))
	if got := get(""); got != "first three@3" {
		t.Errorf("summary '' = %s", got)
	}
	wantErr(t, "boundary moving back", put("", "stale", 2), store.ErrConflict)
	wantErr(t, "boundary past the ledger", put("", "future", 6), store.ErrInvalid)
	if got := get(""); got != "first three@3" {
		t.Errorf("refused puts changed the summary: %s", got)
	}
	must(t, put("", "rewritten three", 3)) // same boundary, new text
	must(t, put("", "all five", 5))
	if got := get(""); got != "all five@5" {
		t.Errorf("summary '' = %s", got)
	}
	if got := get("branch/a"); got != "branch two@2" {
		t.Errorf("summary branch/a = %s (filter keys are independent)", got)
	}
	_, err = s.GetSummary(ctx, key, "branch/b")
	wantErr(t, "missing filter key", err, store.ErrNotFound)
}

// testLeases walks one key's lease through its rules, a step a row: the
// call, who makes it when, and the error it must give or the owner, expiry
// and token (same: the previous step's; newer: greater than it) it must
// leave.
func testLeases(t *testing.T, s store.Store) {
	const key, ttl = "summary/app/u/s/", 10 * time.Second
	const (
		same = iota
		newer
	)
	var token uint64
	for i, st := range []struct {
		why, op, owner string
		now            int
		err            error
		wantOwner      string
		wantExpires    int
		token          int
	}{
		{"first acquisition", "acquire", "A", 0, nil, "A", 10, newer},
		{"a held lease", "acquire", "B", 5, store.ErrConflict, "", 0, same},
		{"re-acquired by its owner", "acquire", "A", 5, nil, "A", 15, same},
		{"before expiry", "acquire", "B", 14, store.ErrConflict, "", 0, same},
		{"after expiry (now == Expires)", "acquire", "B", 15, nil, "B", 25, newer},
		{"renewed by the former owner", "renew", "A", 16, store.ErrConflict, "", 0, same},
		{"renewed", "renew", "B", 20, nil, "B", 30, same},
		{"renewed after expiry", "renew", "B", 30, store.ErrConflict, "", 0, same},
		{"B again after its expiry: a new tenure", "acquire", "B", 31, nil, "B", 41, newer},
		{"released by a non-owner", "release", "A", 32, store.ErrConflict, "", 0, same},
		{"released", "release", "B", 32, nil, "", 0, same},
		{"a free lease released: a no-op", "release", "B", 32, nil, "", 0, same},
		{"renewed after release", "renew", "B", 33, store.ErrConflict, "", 0, same},
		{"acquired after release", "acquire", "A", 33, nil, "A", 43, newer},
	} {
		var (
			l   store.Lease
			err error
		)
		switch st.op {
		case "acquire":
			l, err = s.AcquireLease(ctx, key, st.owner, ttl, at(st.now))
		case "renew":
			l, err = s.RenewLease(ctx, key, st.owner, ttl, at(st.now))
		default:
			err = s.ReleaseLease(ctx, key, st.owner, at(st.now))
		}
		if st.err != nil || st.op == "release" {
			wantErr(t, fmt.Sprintf("step %d, %s", i, st.why), err, st.err)
			continue
		}
		must(t, err)
		if l.Key != key || l.Owner != st.wantOwner || !l.Expires.Equal(at(st.wantExpires)) || (st.token == newer) != (l.Token > token) || l.Token < token {
			t.Errorf("step %d, %s: %+v, want owner %s until %v, token %s %d", i, st.why, l, st.wantOwner, at(st.wantExpires),
				map[int]string{same: "equal to", newer: "greater than"}[st.token], token)
		}
		token = l.Token
	}
	must(t, s.ReleaseLease(ctx, "never-taken", "A", at(0)))
	_, err := s.AcquireLease(ctx, "other-key", "B", ttl, at(33))
	must(t, err) // leases are per key
	_, err = s.AcquireLease(ctx, key, "A", 0, at(40))
	wantErr(t, "zero ttl", err, store.ErrInvalid)
	_, err = s.AcquireLease(ctx, key, "", ttl, at(40))
	wantErr(t, "empty owner", err, store.ErrInvalid)
}

func testTasks(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "alice", "s"), "run_a")
	newRun(t, s, sess("app", "bob", "s"), "run_b")
	must(t, s.PutTaskIndex(ctx, "alice", "task-1", "run_a"))
	must(t, s.PutTaskIndex(ctx, "alice", "task-1", "run_a")) // idempotent
	got, err := s.LookupTask(ctx, "alice", "task-1")
	must(t, err)
	if got != "run_a" {
		t.Errorf("alice's task-1 = %s", got)
	}
	_, err = s.LookupTask(ctx, "bob", "task-1")
	wantErr(t, "another user's task id", err, store.ErrNotFound)
	must(t, s.PutTaskIndex(ctx, "bob", "task-1", "run_b")) // same id, other user: independent
	got, err = s.LookupTask(ctx, "bob", "task-1")
	must(t, err)
	if got != "run_b" {
		t.Errorf("bob's task-1 = %s", got)
	}
	got, err = s.LookupTask(ctx, "alice", "task-1")
	must(t, err)
	if got != "run_a" {
		t.Errorf("alice's task-1 after bob's = %s", got)
	}
	wantErr(t, "remap a task", s.PutTaskIndex(ctx, "alice", "task-1", "run_b"), store.ErrConflict)
	wantErr(t, "task of a missing run", s.PutTaskIndex(ctx, "alice", "task-2", "nosuch"), store.ErrNotFound)
	// Prefix tricks do not resolve: user "ali" + task "ce…" is not alice's.
	_, err = s.LookupTask(ctx, "ali", "cetask-1")
	wantErr(t, "prefix-shifted lookup", err, store.ErrNotFound)
	wantErr(t, "empty user", s.PutTaskIndex(ctx, "", "task-1", "run_a"), store.ErrInvalid)
}

// testNotFound checks every read and every write that needs an existing
// record against a store that has none.
func testNotFound(t *testing.T, s store.Store) {
	key := sess("app", "u", "nosuch")
	r := store.Run{ID: "run_x", Session: key, Status: store.RunRunning}
	errOf := func(_ any, err error) error { return err }
	for name, err := range map[string]error{
		"GetProgram":       errOf(s.GetProgram(ctx, "h")),
		"GetRun":           errOf(s.GetRun(ctx, "run_x")),
		"UpdateRunStatus":  s.UpdateRunStatus(ctx, "run_x", store.RunFailed, t0),
		"DeleteRun":        s.DeleteRun(ctx, "run_x"),
		"CreateRun":        s.CreateRun(ctx, r),
		"CommitStep":       errOf(s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_x", 0, store.Full)})),
		"GetCheckpoint":    errOf(s.GetCheckpoint(ctx, "run_x", 0)),
		"LatestCheckpoint": errOf(s.LatestCheckpoint(ctx, "run_x")),
		"CheckpointChain":  errOf(s.CheckpointChain(ctx, "run_x", 0)),
		"PruneCheckpoints": errOf(s.PruneCheckpoints(ctx, "run_x", 0)),
		"PutPendingWrite":  s.PutPendingWrite(ctx, "run_x", 0, "n", 0, nil),
		"PutIntent":        errOf(s.PutIntent(ctx, "run_x", "n", 0)),
		"PutEffectResult":  s.PutEffectResult(ctx, store.IdempotencyKey("run_x", "n", 0), nil),
		"GetEffectResult":  errOf(s.GetEffectResult(ctx, store.IdempotencyKey("run_x", "n", 0))),
		"GetSession":       errOf(s.GetSession(ctx, key)),
		"AppendEvents":     errOf(s.AppendEvents(ctx, key, byteses("e"), t0)),
		"ListEvents":       errOf(s.ListEvents(ctx, key, 0, 0)),
		"PutSessionState":  s.PutSessionState(ctx, key, nil, t0),
		"GetSessionState":  errOf(s.GetSessionState(ctx, key)),
		"PutSummary":       s.PutSummary(ctx, key, store.Summary{Text: "x"}),
		"GetSummary":       errOf(s.GetSummary(ctx, key, "")),
		"PutTaskIndex":     s.PutTaskIndex(ctx, "u", "t", "run_x"),
		"LookupTask":       errOf(s.LookupTask(ctx, "u", "t")),
	} {
		wantErr(t, name, err, store.ErrNotFound)
	}
}

// testInvalid checks that broken arguments are refused before anything is
// written.
func testInvalid(t *testing.T, s store.Store) {
	errOf := func(_ any, err error) error { return err }
	errOf3 := func(_ any, _ bool, err error) error { return err }
	listErr := func(f store.RunFilter) error { _, _, err := s.ListRuns(ctx, f); return err }
	good := sess("app", "u", "s")
	newRun(t, s, good, "run_1")
	for name, err := range map[string]error{
		"session without user":   errOf3(s.GetOrCreateSession(ctx, sess("app", "", "s"), t0)),
		"run without id":         s.CreateRun(ctx, store.Run{Session: good, Status: store.RunRunning}),
		"run without status":     s.CreateRun(ctx, store.Run{ID: "run_2", Session: good}),
		"run without session":    s.CreateRun(ctx, store.Run{ID: "run_2", Status: store.RunRunning}),
		"empty status":           s.UpdateRunStatus(ctx, "run_1", "", t0),
		"filter session no user": listErr(store.RunFilter{App: "app", Session: "s"}),
		"filter user no app":     listErr(store.RunFilter{User: "u"}),
		"empty node":             s.PutPendingWrite(ctx, "run_1", 0, "", 0, nil),
		"intent empty node":      errOf(s.PutIntent(ctx, "run_1", "", 0)),
		"empty program hash":     s.PutProgram(ctx, "", []byte("x")),
		"empty lease key":        errOf(s.AcquireLease(ctx, "", "A", time.Second, t0)),
		"empty task":             errOf(s.LookupTask(ctx, "u", "")),
	} {
		wantErr(t, name, err, store.ErrInvalid)
	}
}

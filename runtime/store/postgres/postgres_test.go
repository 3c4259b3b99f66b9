package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/storetest"
)

var ctx = context.Background()

// openFresh opens a store in a fresh schema.
func openFresh(t testing.TB) *Store {
	t.Helper()
	url := pgtest.URL(t)
	s, err := Open(ctx, url, &Options{Schema: pgtest.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
}

// TestMigrations checks that Open creates the schema and records its
// version, that a second Open of a migrated schema changes nothing, that
// concurrent Opens of a new schema all succeed (the advisory lock), and
// that a schema migrated by a newer build is refused.
func TestMigrations(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := Open(ctx, url, &Options{Schema: schema})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	versions := func() []int {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT version FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	if got := versions(); len(got) != len(migrations) || got[len(got)-1] != SchemaVersion {
		t.Fatalf("schema_migrations = %v, want 1..%d", got, SchemaVersion)
	}

	// The schema name can also come from the URL.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s, err := Open(ctx, url+sep+"schema="+schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema() != schema {
		t.Errorf("schema from the URL: %q, want %q", s.Schema(), schema)
	}
	if _, _, err := s.GetOrCreateSession(ctx, store.SessionKey{App: "a", User: "u", Session: "s"}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, about) VALUES ($1, 'from the future')`,
		SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, url, &Options{Schema: schema})
	if !errors.Is(err, store.ErrLayoutVersion) || !strings.Contains(err.Error(), "newer agentc") || !strings.Contains(err.Error(), schema) {
		t.Errorf("open of a newer schema: %v, want ErrLayoutVersion naming the schema and a newer agentc", err)
	}
}

// TestRunUsageMigration checks that a run recorded under schema version 1
// (no usage columns, no first event) reads as no usage and an unknown first
// event once Open migrates the schema, and that its end then records a
// usage.
func TestRunUsageMigration(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	all := migrations
	migrations = migrations[:1]
	s, err := Open(ctx, url, &Options{Schema: schema})
	migrations = all
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := s.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	old := store.Run{ID: "run_old", Session: key, Runnable: "triage", ProgramHash: "h", Status: store.RunCompleted, Created: t0, Updated: t0}
	// What CreateRun wrote under version 1.
	if _, err := s.pool.Exec(ctx, `INSERT INTO runs (id, index_key, app, usr, session, runnable, program_hash, status, parent_run, parent_step, created, updated, meta)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '', 0, $9, $9, NULL)`,
		bs(old.ID), []byte(store.RunIndexKey(old)), bs(key.App), bs(key.User), bs(key.Session), bs(old.Runnable), bs(old.ProgramHash), bs(string(old.Status)), t0); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, url, &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetRun(ctx, "run_old")
	if err != nil || got.Status != store.RunCompleted || got.Usage != (store.RunUsage{}) || got.FirstEvent != 0 {
		t.Fatalf("a version 1 run after the migration: %+v, %v", got, err)
	}
	u := store.RunUsage{ModelCalls: 3, InputTokens: 30, OutputTokens: 3, Cost: 0.25, Priced: true}
	if _, err := s.EndRun(ctx, "run_old", nil, store.RunCompleted, &u, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetRun(ctx, "run_old"); err != nil || got.Usage != u {
		t.Fatalf("its usage after EndRun: %+v, %v, want %+v", got.Usage, err, u)
	}
}

// TestTwoStores checks that two stores on one schema (two processes) see one
// another's writes and keep one ledger without gaps when they append to the
// same session at once, and that a lease taken through one is held against
// the other.
func TestTwoStores(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, url, &Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := stores[0].GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	const each = 40
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			for range each {
				if _, err := s.AppendEvents(ctx, key, [][]byte{[]byte("a"), []byte("b")}, t0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	es, err := stores[1].ListEvents(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*2*each {
		t.Fatalf("%d events, want %d", len(es), 2*2*each)
	}
	for i, e := range es {
		if e.Seq != uint64(i)+1 {
			t.Fatalf("event %d has seq %d: gap", i, e.Seq)
		}
		if want := "ab"[i%2 : i%2+1]; string(e.Data) != want {
			t.Fatalf("event %d = %q, want %q: a batch was split", i, e.Data, want)
		}
	}
	l, err := stores[0].AcquireLease(ctx, "run/1", "replica-a", time.Minute, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stores[1].AcquireLease(ctx, "run/1", "replica-b", time.Minute, t0.Add(time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("acquire through the other store: %v, want ErrConflict", err)
	}
	l2, err := stores[1].AcquireLease(ctx, "run/1", "replica-b", time.Minute, t0.Add(time.Minute))
	if err != nil || l2.Token <= l.Token {
		t.Errorf("takeover after expiry: %+v, %v; want a token above %d", l2, err, l.Token)
	}
}

// TestOpenBadURL checks that a malformed URL is refused with a message.
func TestOpenBadURL(t *testing.T) {
	_, err := Open(ctx, "postgres://%zz", nil)
	if err == nil || !strings.Contains(err.Error(), "postgres url") {
		t.Errorf("bad url: %v", err)
	}
}

// TestCommitAtomic makes a late statement of a step commit's batch fail (a
// checkpoint row planted behind the store's back collides with the step)
// and checks that the statements before it, the events and the journal
// entries, were rolled back with it.
func TestCommitAtomic(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	s, err := Open(ctx, url, &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := s.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "run_1", Session: key, Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	first := store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Step: 0, Kind: store.Full, Time: t0},
		Events: [][]byte{[]byte("e1")}, Journal: [][]byte{[]byte("j1")}}
	if _, err := s.CommitStep(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO checkpoints (run, step, kind, program_hash, schema_hash, time, journal_next)
		VALUES ('run_1', 5, 2, '', '', now(), 1)`); err != nil {
		t.Fatal(err)
	}
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Step: 5, Kind: store.Delta, Time: t0},
		Events: [][]byte{[]byte("e2"), []byte("e3")}, Journal: [][]byte{[]byte("j2")}, Status: store.RunFailed})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("commit onto a planted checkpoint: %v, want a unique violation from the checkpoint insert", err)
	}
	sess, err := s.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := s.ListEvents(ctx, key, 0, 0)
	js, _ := s.ListJournal(ctx, "run_1", 0, 0)
	r, _ := s.GetRun(ctx, "run_1")
	if sess.LastSeq != 1 || len(es) != 1 || len(js) != 1 || r.Status != store.RunRunning {
		t.Errorf("after a failed commit: last seq %d, %d events, %d journal entries, status %s; want 1, 1, 1, running",
			sess.LastSeq, len(es), len(js), r.Status)
	}
	// The store goes on from where it was.
	done, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Step: 6, Kind: store.Delta, Time: t0},
		Events: [][]byte{[]byte("e2")}, Journal: [][]byte{[]byte("j2")}})
	if err != nil || done.FirstEvent != 2 || done.FirstJournal != 2 {
		t.Errorf("next commit: %+v, %v; want first event 2, first journal 2", done, err)
	}
}

// TestNotify checks that a notification sent through one store reaches a
// listener of another store on the same schema, and not a listener of
// another schema, and that Wait returns when its context ends.
func TestNotify(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, url, &Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	other, err := Open(ctx, url, &Options{Schema: pgtest.FreshSchema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	l, err := stores[0].Listen(ctx, "runs")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lo, err := other.Listen(ctx, "runs")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if err := stores[1].Notify(ctx, "runs", "run_1"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := l.Wait(wctx)
	if err != nil || got != "run_1" {
		t.Fatalf("Wait = %q, %v; want run_1", got, err)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if got, err := lo.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("listener of another schema got %q, %v; want nothing until its deadline", got, err)
	}
	// A channel name past PostgreSQL's 63 bytes still works.
	long := strings.Repeat("x", 80)
	ll, err := stores[0].Listen(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	if err := stores[1].Notify(ctx, long, "long"); err != nil {
		t.Fatal(err)
	}
	if got, err := ll.Wait(wctx); err != nil || got != "long" {
		t.Errorf("long channel: %q, %v", got, err)
	}
	if err := stores[1].Close(); err != nil {
		t.Fatal(err)
	}
	if err := stores[1].Notify(ctx, "runs", "x"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Notify after Close: %v", err)
	}
}

// TestCommitFenced checks that a commit fenced by a run's lease lands while
// its writer holds the lease, and that once another process has taken the
// lease over, the former holder's fenced commit writes nothing.
func TestCommitFenced(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	var a, b *Store
	for _, p := range []**Store{&a, &b} {
		s, err := Open(ctx, url, &Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		*p = s
	}
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if _, _, err := a.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRun(ctx, store.Run{ID: "run_1", Session: key, Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	step := func(n uint64) store.StepCommit {
		k := store.Delta
		if n == 0 {
			k = store.Full
		}
		return store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Step: n, Kind: k, Time: t0}, Events: [][]byte{[]byte("e")}}
	}
	la, err := a.AcquireLease(ctx, "run/run_1", "replica-a", 10*time.Second, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CommitStepFenced(ctx, step(0), la, at(1)); err != nil {
		t.Fatalf("fenced commit by the holder: %v", err)
	}
	// replica-a stalls past its lease; replica-b takes the run over.
	lb, err := b.AcquireLease(ctx, "run/run_1", "replica-b", 10*time.Second, at(11))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.CommitStepFenced(ctx, step(1), la, at(12))
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "not held") {
		t.Errorf("fenced commit by the former holder: %v, want ErrConflict (lease not held)", err)
	}
	// Its own clock cannot save it either: the token has moved on.
	if _, err := a.CommitStepFenced(ctx, step(1), la, at(5)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("fenced commit with a stale token: %v, want ErrConflict", err)
	}
	if cp, err := b.LatestCheckpoint(ctx, "run_1"); err != nil || cp.Step != 0 {
		t.Errorf("latest after refused commits: step %d, %v; want 0", cp.Step, err)
	}
	if sess, _ := b.GetSession(ctx, key); sess.LastSeq != 1 {
		t.Errorf("refused fenced commits appended events: last seq %d", sess.LastSeq)
	}
	if _, err := b.CommitStepFenced(ctx, step(1), lb, at(12)); err != nil {
		t.Errorf("fenced commit by the new holder: %v", err)
	}
	if _, err := b.CommitStepFenced(ctx, step(2), store.Lease{Key: "run/run_1"}, at(12)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("fence without an owner: %v, want ErrInvalid", err)
	}
}

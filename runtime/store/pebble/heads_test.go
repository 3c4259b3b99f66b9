package pebble

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// TestSessionCacheAgreesWithPebble runs every writer of a session record
// and checks, after each, that a cached record equals the one in Pebble
// and that a deleted session is not served from the cache.
func TestSessionCacheAgreesWithPebble(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ev := [][]byte{[]byte(`{"e":1}`), []byte(`{"e":2}`)}
	steps := []struct {
		name string
		do   func() error
	}{
		{"create", func() error { _, _, err := s.GetOrCreateSession(ctx, k, at(0)); return err }},
		{"create run", func() error { return s.CreateRun(ctx, store.Run{ID: "run_1", Session: k, Status: store.RunRunning}) }},
		{"commit step 0", func() error {
			_, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Kind: store.Full, Time: at(1)}, Events: ev})
			return err
		}},
		{"append events", func() error { _, err := s.AppendEvents(ctx, k, ev, at(2)); return err }},
		{"put state", func() error { return s.PutSessionState(ctx, k, []byte("st"), at(3)) }},
		{"commit step 1", func() error {
			_, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Step: 1, Kind: store.Delta, Time: at(4)}, Events: ev[:1]})
			return err
		}},
		{"end run", func() error { _, err := s.EndRun(ctx, "run_1", ev, store.RunCompleted, nil, at(5)); return err }},
	}
	for _, st := range steps {
		must(t, st.do())
		cached, ok := s.sessions.get(k)
		fresh, err := s.readSession(k)
		must(t, err)
		if !cached.bare {
			t.Errorf("after %s: the session this handle created is not bare", st.name)
		}
		cached.bare = false // the cache's own: not in Pebble
		if !ok || cached != fresh {
			t.Fatalf("after %s: cached %+v (%v), in Pebble %+v", st.name, cached, ok, fresh)
		}
	}
	if got, err := s.GetSession(ctx, k); err != nil || got.LastSeq != 7 || !got.Updated.Equal(at(5)) {
		t.Fatalf("GetSession = %+v, %v; want last sequence 7 updated at %v", got, err, at(5))
	}
	must(t, s.Close())

	// A new process reads the same record; a deleted session starts over.
	s, err = Open(dir, nil)
	must(t, err)
	defer s.Close()
	if got, err := s.GetSession(ctx, k); err != nil || got.LastSeq != 7 {
		t.Fatalf("reopened: %+v, %v", got, err)
	}
	if _, err := s.AppendEvents(ctx, k, ev[:1], at(6)); err != nil { // fills the cache
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteSession(ctx, k, nil); err != nil || !ok {
		t.Fatalf("DeleteSession = %v, %v", ok, err)
	}
	if _, err := s.GetSession(ctx, k); err == nil {
		t.Fatal("a deleted session is still served")
	}
	got, created, err := s.GetOrCreateSession(ctx, k, at(7))
	if err != nil || !created || got.LastSeq != 0 {
		t.Fatalf("recreated: %+v created=%v, %v", got, created, err)
	}
}

// TestSessionCacheRemembersAbsence checks the cache's entries for sessions
// with no record: read once, served from the cache, and never served once
// the session exists — also while readers and the creator race.
func TestSessionCacheRemembersAbsence(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	must(t, err)
	defer s.Close()
	k := store.SessionKey{App: "app", User: "u", Session: "new"}
	if _, err := s.GetSession(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession of a new session: %v, want not found", err)
	}
	if r, ok := s.sessions.get(k); !ok || !r.absent {
		t.Fatalf("cache after a miss: %+v (%v), want an absent entry", r, ok)
	}
	if _, err := s.GetSession(ctx, k); err == nil || err.Error() != "get session app/u/new: store: not found" {
		t.Fatalf("GetSession from the cache: %v", err)
	}
	if _, err := s.AppendEvents(ctx, k, [][]byte{[]byte(`{}`)}, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AppendEvents to a session not created: %v", err)
	}
	if _, created, err := s.GetOrCreateSession(ctx, k, t0); err != nil || !created {
		t.Fatalf("GetOrCreateSession = created %v, %v", created, err)
	}
	if _, err := s.GetSession(ctx, k); err != nil {
		t.Fatalf("GetSession after creation: %v", err)
	}
	if ok, err := s.DeleteSession(ctx, k, nil); err != nil || !ok {
		t.Fatalf("DeleteSession = %v, %v", ok, err)
	}
	if _, err := s.GetSession(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession after deletion: %v", err)
	}
	if _, created, err := s.GetOrCreateSession(ctx, k, t0); err != nil || !created {
		t.Fatalf("recreated = %v, %v", created, err)
	}

	// Readers race each session's creation: once created, it is found.
	var wg sync.WaitGroup
	for i := range 64 {
		k := store.SessionKey{App: "app", User: "u", Session: fmt.Sprintf("s%d", i)}
		created := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-created:
						if _, err := s.GetSession(ctx, k); err != nil {
							t.Errorf("GetSession of %s after its creation: %v", k, err)
						}
						return
					default:
						if _, err := s.GetSession(ctx, k); err != nil && !errors.Is(err, store.ErrNotFound) {
							t.Errorf("GetSession of %s: %v", k, err)
							return
						}
					}
				}
			})
		}
		wg.Go(func() {
			defer close(created)
			if _, _, err := s.GetOrCreateSession(ctx, k, t0); err != nil {
				t.Errorf("GetOrCreateSession %s: %v", k, err)
			}
		})
	}
	wg.Wait()
}

// TestCreateRunSeedsHead checks that the head CreateRun caches is the one
// a miss reads from Pebble (less the may-exist flag for pending writes, which
// a new run cannot have), and that it does not alias the caller's Meta.
func TestCreateRunSeedsHead(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	must(t, err)
	defer s.Close()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	_, _, err = s.GetOrCreateSession(ctx, k, t0)
	must(t, err)
	meta := []byte(`{"m":1}`)
	must(t, s.CreateRun(ctx, store.Run{ID: "run_1", Session: k, Status: store.RunRunning, Created: t0, Updated: t0, Meta: meta}))
	meta[2] = 'X'
	seeded, ok := s.heads.get("run_1")
	if !ok {
		t.Fatal("CreateRun left no head in the cache")
	}
	s.heads.drop("run_1")
	fresh, err := s.head("run_1")
	must(t, err)
	if !fresh.pending || seeded.pending {
		t.Errorf("pending: seeded %v, read %v; want false, true", seeded.pending, fresh.pending)
	}
	seeded.pending, fresh.pending = false, false
	if fmt.Sprintf("%+v", seeded) != fmt.Sprintf("%+v", fresh) {
		t.Errorf("seeded head %+v, read from Pebble %+v", seeded, fresh)
	}
	// The first commit through the seeded head lands where a cold one would.
	s.heads.put("run_1", seeded)
	done, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Kind: store.Full, Time: t0}, Journal: [][]byte{[]byte("j")}})
	must(t, err)
	if done.FirstJournal != 1 {
		t.Errorf("first journal entry %d, want 1", done.FirstJournal)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "run_2", Session: store.SessionKey{App: "app", User: "u", Session: "none"}, Status: store.RunRunning}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateRun in a missing session: %v, want ErrNotFound", err)
	}
}

// TestSessionCacheAnswersReads: the session cache answers two reads of a
// run's context without touching Pebble — the summary of a session this
// handle created and put none of since, and the events after a session's
// last sequence — which keys written behind the store's back (nothing
// does that but this test: Pebble's lock excludes other writers) show.
// Anything else still reads: a summary put through the store, events up to
// the last sequence, a session opened from disk.
func TestSessionCacheAnswersReads(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	admitted := store.SessionKey{App: "app", User: "u", Session: "a"}
	_, _, err = s.GetOrCreateSession(ctx, k, t0)
	must(t, err)
	_, err = s.AdmitRun(ctx, store.Run{ID: "run_1", Session: admitted, Status: store.RunRunning, Created: t0, Updated: t0}, [][]byte{[]byte(`{"kind":"user"}`)}, t0)
	must(t, err)
	hidden := store.Summary{FilterKey: "", Text: "hidden", Boundary: 0, Time: t0}
	for _, key := range []store.SessionKey{k, admitted} {
		must(t, s.db.Set(summaryKey(key, ""), summaryCodec.value(hidden), nil))
		_, err := s.GetSummary(ctx, key, "")
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `get summary "" of `) {
			t.Errorf("%s: GetSummary = %v, want not found without a read", key.Session, err)
		}
	}
	must(t, s.db.Set(eventPrefix(admitted).U64(2), store.Frame([]byte(`{"kind":"hidden"}`)), nil))
	if es, err := s.ListEvents(ctx, admitted, 1, 0); err != nil || len(es) != 0 {
		t.Errorf("ListEvents after the last sequence = %v, %v; want none without a scan", es, err)
	}
	if es, err := s.ListEvents(ctx, admitted, 0, 0); err != nil || len(es) == 0 || string(es[0].Data) != `{"kind":"user"}` {
		t.Errorf("ListEvents from the start = %v, %v", es, err)
	}
	if _, err := s.ListEvents(ctx, store.SessionKey{App: "app", User: "u", Session: "none"}, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListEvents of no session = %v, want not found", err)
	}
	// A summary put through the store is read.
	_, err = s.AppendEvents(ctx, k, [][]byte{[]byte(`{}`)}, t0)
	must(t, err)
	must(t, s.PutSummary(ctx, k, store.Summary{Text: "put", Boundary: 1, Time: t0}))
	if sum, err := s.GetSummary(ctx, k, ""); err != nil || sum.Text != "put" {
		t.Errorf("GetSummary after PutSummary = %+v, %v", sum, err)
	}
	must(t, s.Close())
	// Opened again, the session was not created by this handle: read.
	s, err = Open(dir, nil)
	must(t, err)
	defer s.Close()
	if sum, err := s.GetSummary(ctx, admitted, ""); err != nil || sum.Text != "hidden" {
		t.Errorf("GetSummary from a new handle = %+v, %v; want the record on disk", sum, err)
	}
}

// TestListEventsDuringAWrite: a session's events are in Pebble (and a run's
// end, which GetRun reads there) before their writer updates the session
// cache, under the session's lock. ListEvents, which the stale entry
// would answer "nothing after", waits for the writer and lists them: a
// follower that saw the run end must find its last events
// (TestServeCrashAndResendOnPebble lost them one time in five).
func TestListEventsDuringAWrite(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	must(t, err)
	defer s.Close()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	_, _, err = s.GetOrCreateSession(ctx, k, t0)
	must(t, err)
	_, err = s.AppendEvents(ctx, k, [][]byte{[]byte(`{"e":1}`)}, t0) // fills the cache
	must(t, err)

	// A writer between its apply and its cache update.
	unlock := s.locks.lock(sessionKey(k))
	b := s.db.NewBatch()
	_, sr, err := s.appendEvents(b, k, [][]byte{[]byte(`{"e":2}`)}, t0)
	must(t, err)
	must(t, s.apply(b))
	got := make(chan []store.Entry, 1)
	go func() {
		es, err := s.ListEvents(ctx, k, 1, 0)
		if err != nil {
			t.Error(err)
		}
		got <- es
	}()
	select {
	case es := <-got:
		t.Fatalf("ListEvents answered %d entries while the writer held the session", len(es))
	case <-time.After(50 * time.Millisecond):
	}
	s.wroteSession(k, sr, nil)
	unlock()
	if es := <-got; len(es) != 1 || es[0].Seq != 2 {
		t.Fatalf("ListEvents after the write: %+v, want the event of sequence 2", es)
	}
}

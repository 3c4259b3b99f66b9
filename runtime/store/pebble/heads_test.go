package pebble

import (
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

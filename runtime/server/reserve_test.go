package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
)

// reservation is a protocol's record as Reserve sees it: what its request
// started, and its claim.
type reservation struct {
	Run   string        `json:"run,omitempty"`
	Claim *server.Claim `json:"claim,omitempty"`
}

func runOf(prev []byte) (bool, error) {
	var r reservation
	err := json.Unmarshal(prev, &r)
	return r.Run != "", err
}

// reserve reserves id on b for a request of user u in session s whose run
// will carry invocation inv.
func reserve(t *testing.T, b *server.Backend, id, inv string) server.Reservation {
	t.Helper()
	v, _ := json.Marshal(reservation{Claim: b.NewClaim("s", inv)})
	res, err := b.Reserve(context.Background(), "u", "test.reserve", id, v, runOf)
	if err != nil {
		t.Fatalf("reserve %s: %v", id, err)
	}
	return res
}

// settle records the run id's request started.
func settle(t *testing.T, b *server.Backend, id, run string) {
	t.Helper()
	v, _ := json.Marshal(reservation{Run: run})
	if err := b.Docs.ApplyDocs(context.Background(), store.DocOp{Coll: "test.reserve", Key: id, Value: v}); err != nil {
		t.Fatal(err)
	}
}

// runsIn counts the runs of session s.
func runsIn(t *testing.T, b *server.Backend) int {
	t.Helper()
	runs, err := b.Sessions.Runs(context.Background(), store.SessionKey{App: b.App(), User: "u", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// TestReserveTakesOrphansOver: on a store shared by replicas, a
// reservation whose replica is alive is in progress; once the replica is
// gone (its presence lease expired), a re-sent request takes it over —
// and runs once: a reservation whose request had started its run (its
// input event is in the session) yields that run, not a second.
func TestReserveTakesOrphansOver(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	m := gatedModel{gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	a := replicaBackend(t, target, "A", &skewedClock{}, m, replicaTTL)
	later := &skewedClock{}
	b := replicaBackend(t, target, "B", later, quietModel{}, replicaTTL)
	ctx := context.Background()

	// r1: A reserved it and died before starting its run.
	if res := reserve(t, a, "r1", "inv_1"); !res.Reserved {
		t.Fatalf("first reservation: %+v", res)
	}
	if res := reserve(t, b, "r1", "inv_2"); res.Reserved || res.Run != "" {
		t.Fatalf("re-sent while A lives: %+v", res)
	}
	// r2: A reserved it, started its run, and died before recording it.
	if res := reserve(t, a, "r2", "inv_3"); !res.Reserved {
		t.Fatalf("first reservation: %+v", res)
	}
	run, err := a.Start(ctx, "test", runtime.Invocation{ID: "inv_3", User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-m.entered
	later.off.Store(int64(2 * replicaTTL)) // to B, A's presence has expired

	if res := reserve(t, b, "r1", "inv_4"); !res.Reserved {
		t.Fatalf("re-sent after A died: %+v", res)
	}
	if res := reserve(t, b, "r1", "inv_5"); res.Reserved {
		t.Fatal("the taken-over reservation was taken again")
	}
	res := reserve(t, b, "r2", "inv_6")
	if res.Reserved || res.Run != run.ID {
		t.Fatalf("re-sent after A died having started %s: %+v", run.ID, res)
	}
	if n := runsIn(t, b); n != 1 {
		t.Fatalf("session has %d runs, want A's one", n)
	}
	close(m.gate)
	for range run.Events {
	}
}

// TestReserveAcrossRestart: on a store one process opens (Pebble), a
// reservation an earlier process left is taken over at once by a request
// re-sent to the next: started again when it had not started its run,
// joined when it had.
func TestReserveAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	src := "workflow w \"W\"\nmodel m { provider = openai, name = \"x\" }\nagent a llm \"A\" { model = m }\n"
	prog := runtimetest.Compile(t, fstest.MapFS{"w.agent": {Data: []byte(src)}}, "w.agent")
	open := func() (*server.Backend, func()) {
		st, err := pebble.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"m": quietModel{}},
			Clock: &skewedClock{}, Entropy: &runtimetest.Entropy{}})
		if err != nil {
			t.Fatal(err)
		}
		b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: &skewedClock{}, Metrics: server.NewMetrics()}
		return b, func() { _ = r.Close(context.Background()); _ = st.Close() }
	}
	ctx := context.Background()
	first, closeFirst := open()
	if res := reserve(t, first, "r1", "inv_1"); !res.Reserved {
		t.Fatalf("first reservation: %+v", res)
	}
	if res := reserve(t, first, "r2", "inv_2"); !res.Reserved {
		t.Fatalf("first reservation: %+v", res)
	}
	run, err := first.Start(ctx, "test", runtime.Invocation{ID: "inv_2", User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for range run.Events {
	}
	if res := reserve(t, first, "r1", "inv_3"); res.Reserved {
		t.Fatal("a reservation of this process was taken over")
	}
	closeFirst() // the process dies with both reservations unsettled

	next, closeNext := open()
	defer closeNext()
	if res := reserve(t, next, "r1", "inv_4"); !res.Reserved {
		t.Fatalf("re-sent after the restart: %+v", res)
	}
	res := reserve(t, next, "r2", "inv_5")
	if res.Reserved || res.Run != run.ID {
		t.Fatalf("re-sent after the restart, its run %s started: %+v", run.ID, res)
	}
	settle(t, next, "r2", res.Run)
	if res := reserve(t, next, "r2", "inv_6"); res.Reserved || res.Run != "" || string(res.Prev) != `{"run":"`+run.ID+`"}` {
		t.Fatalf("re-sent once recorded: %+v", res)
	}
	if n := runsIn(t, next); n != 1 {
		t.Fatalf("session has %d runs", n)
	}
}

package a2a_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/runtime/store/postgres"
)

// shiftedClock is the wall clock shifted by off (real timers).
type shiftedClock struct{ off atomic.Int64 }

func (c *shiftedClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *shiftedClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// replicaEnv is an env over its own connection to the store target, one
// replica with owner id owner, pushing to webhooks on 127.0.0.1.
func replicaEnv(t *testing.T, target, owner string, clock *shiftedClock) *env {
	t.Helper()
	st, err := postgres.Open(context.Background(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOf(t, st, clock, &runtime.Replica{Shared: st, Owner: owner, TTL: 3 * time.Second},
		func(o *a2a.Options) { o.Push = localPush() })
}

// TestTakenOverTaskHasAPump: the replica that takes over a task's run
// from a replica that died attaches the task's pump: its record is
// settled as the run ends (not when read) and the task's webhook is told.
func TestTakenOverTaskHasAPump(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	a := replicaEnv(t, target, "A", &shiftedClock{})
	later := &shiftedClock{}
	b := replicaEnv(t, target, "B", later)
	close(b.gate.open) // B's model answers at once
	hk := newHook(t, 0)
	send := msg1("slow work", nil)
	send["configuration"] = map[string]any{"returnImmediately": true,
		"taskPushNotificationConfig": map[string]any{"url": hk.srv.URL + "/hook", "token": "tok-1"}}
	id := str(t, a.ok("ana", "1.0", "SendMessage", send), "task", "id")
	<-a.gate.started
	hk.wait(t, statusIs("TASK_STATE_WORKING"))

	later.off.Store(int64(2 * 3 * time.Second)) // to B, A has died
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.backend.TakeOver(ctx, nil)
	hk.wait(t, statusIs("TASK_STATE_COMPLETED"))
	if st := recordState(t, b, "ana", id); st != "completed" {
		t.Fatalf("the task's record, unread: %s", st)
	}
}

// recordState is the state in the stored record of user's task id.
func recordState(t *testing.T, e *env, user, id string) string {
	t.Helper()
	raw, err := e.st.GetDoc(t.Context(), a2a.CollTask, store.DocPath(e.backend.App(), user, id))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Status struct{ State string } `json:"status"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("task record %s: %v", raw, err)
	}
	return rec.Status.State
}

// TestRecoveredTaskHasAPump: a Pebble-backed server that resumes at start
// the run of a task a killed process left working attaches the task's
// pump: the record is settled as the run ends and the webhook is told.
func TestRecoveredTaskHasAPump(t *testing.T) {
	dir := t.TempDir()
	st1, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e1 := newEnvWith(t, st1, func(o *a2a.Options) { o.Push = localPush() })
	hk := newHook(t, 0)
	send := msg1("slow work", nil)
	send["configuration"] = map[string]any{"returnImmediately": true,
		"taskPushNotificationConfig": map[string]any{"url": hk.srv.URL + "/hook"}}
	id := str(t, e1.ok("ana", "1.0", "SendMessage", send), "task", "id")
	<-e1.gate.started
	hk.wait(t, statusIs("TASK_STATE_WORKING"))
	// The process dies: nothing more of it reaches the store.
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}
	e1.closed = true
	e1.srv.Close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = e1.h.Close(gone)
	_ = e1.runner.Close(gone)

	st2, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	e2 := newEnvWith(t, st2, func(o *a2a.Options) { o.Push = localPush() })
	close(e2.gate.open)
	if resumed, err := e2.backend.Recover(context.Background()); err != nil || len(resumed) != 1 {
		t.Fatalf("recover: %v %v", resumed, err)
	}
	hk.wait(t, statusIs("TASK_STATE_COMPLETED"))
	if st := recordState(t, e2, "ana", id); st != "completed" {
		t.Fatalf("the task's record, unread: %s", st)
	}
}

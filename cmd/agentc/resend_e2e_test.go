package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestServeCrashAndResendOnPebble is the replicas test on one node: one
// `agentc serve` on a Pebble data directory serves six sessions over
// AG-UI, A2A and OpenAI, each run calling a side effect and then a slow
// tool; the server is SIGKILLed while every run waits in the slow tool.
// The next `agentc serve` on the same directory resumes the runs at start,
// and the requests re-sent to it (same runId, messageId, Idempotency-Key)
// join their runs instead of starting others: every run completes with
// an uninterrupted run's output, each side effect ran once per run, and
// each session's ledger has a gapless sequence, each node finished once
// and one run end (issue 14: "the same crash-and-resend test on a single
// Pebble-backed server").
func TestServeCrashAndResendOnPebble(t *testing.T) {
	fx := &effects{marks: map[string]int{}, slows: map[string][]time.Time{}, entered: make(chan struct{}, 64), release: make(chan struct{})}
	tools := httptest.NewServer(fx)
	defer tools.Close()
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(fx.release) }) }
	defer open()

	root, env := replicasProject(t, tools)
	env = append(env, "AGENTC_DATA="+filepath.Join(root, "data"))
	args := []string{"replicas.agent", "--token", "tok=u"}
	srv1, addr1, _ := startServeArgs(t, root, env, args...)
	defer func() { _ = srv1.Process.Kill(); _ = srv1.Wait() }()

	const n = 6
	calls := make([]replicaCall, n)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var acks, first sync.WaitGroup
	for i := range calls {
		calls[i] = replicaCall{i: i, proto: []string{"openai", "agui", "a2a"}[i%3], session: fmt.Sprintf("s%02d", i)}
		acks.Add(1)
		first.Add(1)
		go func() { // the first sends: cut off by the kill
			defer first.Done()
			var once sync.Once
			ack := func(string) { once.Do(acks.Done) }
			calls[i].send(ctx, addr1, ack)
			ack("")
		}()
	}
	acks.Wait()
	for range n {
		select {
		case <-fx.entered:
		case <-ctx.Done():
			t.Fatal("only some runs reached their slow step")
		}
	}
	if err := srv1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = srv1.Wait()
	first.Wait()
	open()

	srv2, addr2, banner := startServeArgs(t, root, env, args...)
	defer func() { _ = srv2.Process.Kill(); _ = srv2.Wait() }()
	results := make([]outcome, n)
	var resent sync.WaitGroup
	for i := range calls {
		resent.Add(1)
		go func() {
			defer resent.Done()
			results[i] = calls[i].send(ctx, addr2, nil)
		}()
	}
	resent.Wait()
	for i, o := range results {
		if !o.completed(calls[i].proto, "slowed") {
			t.Errorf("session %s (%s) re-sent after the restart: status %d, err %v, frames %v\nserver:\n%s",
				calls[i].session, calls[i].proto, o.status, o.err, o.frames, banner())
		}
	}
	if err := srv2.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = srv2.Wait()

	runOf := checkLedgers(t, root, env, "replicas", calls, func(replicaCall) map[string]int { return nil })
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for _, c := range calls {
		run := runOf[c.session]
		if fx.marks[run] != 1 {
			t.Errorf("session %s (run %s): the side effect ran %d times, want once", c.session, run, fx.marks[run])
		}
		if got := len(fx.slows[run]); got != 2 {
			t.Errorf("session %s (run %s): the slow call came %d times, want twice (cut off, then once more)", c.session, run, got)
		}
	}
}

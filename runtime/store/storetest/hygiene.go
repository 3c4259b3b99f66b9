package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// testCopies checks that the store keeps no alias of caller bytes, on the way
// in or out.
func testCopies(t *testing.T, s store.Store) {
	in := []byte("bytecode")
	must(t, s.PutProgram(ctx, "h", in))
	in[0] = 'X'
	out, err := s.GetProgram(ctx, "h")
	must(t, err)
	out[1] = 'Y'
	again, err := s.GetProgram(ctx, "h")
	must(t, err)
	if string(again) != "bytecode" {
		t.Errorf("program changed through an alias: %q", again)
	}

	key := sess("app", "u", "s")
	newRun(t, s, key, "run_1")
	c := checkpoint("run_1", 0, store.Full)
	events := byteses("event")
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: c, Events: events})
	must(t, err)
	c.State[0], c.Frontier[0], events[0][0] = 'X', 'X', 'X'
	got, err := s.GetCheckpoint(ctx, "run_1", 0)
	must(t, err)
	got.State[1] = 'Y'
	got, err = s.GetCheckpoint(ctx, "run_1", 0)
	must(t, err)
	if err := sameCheckpoint(got, checkpoint("run_1", 0, store.Full)); err != nil {
		t.Errorf("checkpoint changed through an alias: %v", err)
	}
	es, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	if string(es[0].Data) != "event" {
		t.Errorf("event changed through an alias: %q", es[0].Data)
	}
}

func testCanceled(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.GetRun(cctx, "run_1")
	wantErr(t, "GetRun with a canceled context", err, context.Canceled)
	_, err = s.CommitStep(cctx, store.StepCommit{Checkpoint: checkpoint("run_1", 0, store.Full)})
	wantErr(t, "CommitStep with a canceled context", err, context.Canceled)
	_, err = s.LatestCheckpoint(ctx, "run_1")
	wantErr(t, "checkpoint of a canceled commit", err, store.ErrNotFound)
	dctx, cancel2 := context.WithDeadline(ctx, time.Unix(1, 0)) // long past
	defer cancel2()
	_, err = s.AppendEvents(dctx, sess("app", "u", "s"), byteses("e"), t0)
	wantErr(t, "AppendEvents past its deadline", err, context.DeadlineExceeded)
}

func testClosed(t *testing.T, s store.Store) {
	newRun(t, s, sess("app", "u", "s"), "run_1")
	must(t, s.Close())
	_, err := s.GetRun(ctx, "run_1")
	wantErr(t, "GetRun after Close", err, store.ErrClosed)
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: checkpoint("run_1", 0, store.Full)})
	wantErr(t, "CommitStep after Close", err, store.ErrClosed)
	_, err = s.AcquireLease(ctx, "k", "A", time.Second, t0)
	wantErr(t, "AcquireLease after Close", err, store.ErrClosed)
	wantErr(t, "ApplyDocs after Close", s.ApplyDocs(ctx, store.DocOp{Coll: "c", Key: "k"}), store.ErrClosed)
	_, err2 := s.ListDocs(ctx, "c", "", "", 0)
	wantErr(t, "ListDocs after Close", err2, store.ErrClosed)
	if err != nil && !strings.Contains(err.Error(), "closed") {
		t.Errorf("error %q does not say closed", err)
	}
	// The suite closes the store again in its cleanup: that must succeed.
}

package a2a

// Tasks whose run is in flight without a pump of this process: driven by
// another replica sharing the store, or left by one that died and about to
// be taken over (spec/serve.md, "Replicas"). Their record says working and
// only the store knows more: a read follows the run there until it stops
// (Backend.AwaitEnd), then settles the record from the run and its ledger
// (recoverTask).

import (
	"context"
	"errors"
)

// inFlight reports whether t's record says its run is in flight.
func inFlight(t *Task) bool {
	return t.Status.State == stateSubmitted || t.Status.State == stateWorking
}

// remote reports whether t is in flight without a pump here and its run
// goes on where this process can follow it: on a store shared by replicas,
// or driven here without a pump (Backend.Recover). A run a Pebble-backed
// server left is resumed at the next start, not followed.
func (c *call) remote(t *Task) bool {
	return inFlight(t) && c.h.liveFor(c.user, t.ID) == nil &&
		(c.h.b.Runner.Replicated() || c.h.b.Active(c.user, t.Run))
}

// awaitSettled waits until t's run stops, then returns the task settled.
func (c *call) awaitSettled(t *Task) (*Task, *rpcError) {
	if _, err := c.h.b.AwaitEnd(c.r.Context(), c.user, t.Run); err != nil {
		return nil, c.internal("follow task "+t.ID, err)
	}
	return c.settled(c.r.Context(), t.ID)
}

// settled returns task id, whose run has stopped, once its record is
// settled: another request of this process may be settling it (a live
// task), which is waited for.
func (c *call) settled(ctx context.Context, id string) (*Task, *rpcError) {
	for range 8 {
		if lt := c.h.liveFor(c.user, id); lt != nil {
			select {
			case <-lt.done:
			case <-ctx.Done():
				return nil, c.internal("read task "+id, ctx.Err())
			}
		}
		t, e := c.load(id)
		if e != nil || !inFlight(t) {
			return t, e
		}
	}
	return c.load(id)
}

// streamRemote streams a task in flight without a pump here: the task now,
// then, once its run stops, its new artifacts and its status (final).
func (c *call) streamRemote(t *Task) {
	sub := newSubscriber()
	sub.push(update{Task: t})
	ctx, cancel := context.WithCancel(c.r.Context())
	done := make(chan struct{})
	go func() { // owned by this call: canceled and joined below
		defer close(done)
		defer sub.close()
		if _, err := c.h.b.AwaitEnd(ctx, c.user, t.Run); err != nil {
			if !errors.Is(err, context.Canceled) {
				c.h.log.Error("a2a: follow a task", "task", t.ID, "err", err)
			}
			return
		}
		cur, e := c.settled(ctx, t.ID)
		if e != nil || inFlight(cur) {
			return
		}
		for i := len(t.Artifacts); i < len(cur.Artifacts); i++ {
			sub.push(update{Artifact: &cur.Artifacts[i]})
		}
		st := cur.Status
		sub.push(update{Status: &st, Final: true})
	}()
	c.stream(sub)
	cancel()
	<-done
}

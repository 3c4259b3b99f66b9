package server

// Reservations of the request ids that make a re-sent request join the
// run its first sending started (an AG-UI runId, an A2A messageId, an
// OpenAI Idempotency-Key): one rule for the three protocols
// (spec/serve.md, "Re-sent requests"). A request reserves its id before
// it starts its run and records the run once started; the reservation
// carries a Claim, so that a request re-sent after the first one died
// between the two (its process was killed) takes the reservation over and
// the request runs once.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Claim is what a reservation records about the request that made it, in
// the reservation's "claim" member.
type Claim struct {
	// Owner is the Runner.Instance of the process that made it.
	Owner string `json:"owner"`
	// Since is when, in Unix milliseconds.
	Since int64 `json:"since"`
	// Session is the session its run is started in.
	Session string `json:"session"`
	// Inv is the invocation id its run carries (the run's input event's).
	Inv string `json:"inv"`
}

// ReserveBound is how long a reservation whose run has not started may
// stand, whoever made it, before a re-sent request takes it over (a
// request of a live process that died without settling it).
const ReserveBound = 30 * time.Second

// reserveLock bounds the lease under which one re-sent request takes an
// orphaned reservation over.
const reserveLock = 10 * time.Second

// NewClaim returns the claim of a request of this process, now, about to
// start a run in session with invocation id inv (the run's
// Invocation.ID).
func (b *Backend) NewClaim(session, inv string) *Claim {
	return &Claim{Owner: b.Runner.Instance(), Since: b.now().UnixMilli(), Session: session, Inv: inv}
}

// Reservation is what Reserve found.
type Reservation struct {
	// Reserved: this request starts the run (its record is stored).
	Reserved bool
	// Prev is, when not Reserved, the earlier request's record.
	Prev []byte
	// Run is, when not Reserved, the run of an orphaned reservation whose
	// request died after starting it and before recording it: the caller
	// records it as Prev's run and follows it.
	Run string
}

// Reserve stores value — the record of user's request about to start a
// run: a JSON object whose "claim" member is its Claim — at coll/key,
// unless an earlier request reserved it, whose record it returns (Prev).
// started reports whether such a record names what its request started
// (its run, or its task). A record that does not, whose claim's owner is
// gone (Runner.Alive) or older than ReserveBound, is orphaned: one
// re-sent request (under a lease) takes it over — when the claim's
// session holds the input event of its invocation and the run exists, the
// request died after starting the run (Run); else value replaces it
// (Reserved).
func (b *Backend) Reserve(ctx context.Context, user, coll, key string, value []byte, started func(prev []byte) (bool, error)) (Reservation, error) {
	for range 3 {
		// Deferred: the run it precedes starts with a synced write of the
		// same store, which makes it durable first; lost in a crash
		// before that, nothing of its request had started.
		err := b.Docs.ApplyDocs(ctx, store.DocOp{Coll: coll, Key: key, Value: value, IfAbsent: true, Deferred: true})
		if err == nil {
			return Reservation{Reserved: true}, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return Reservation{}, fmt.Errorf("reserve %s: %w", key, err)
		}
		prev, err := b.Docs.GetDoc(ctx, coll, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return Reservation{}, fmt.Errorf("reserve %s: %w", key, err)
		}
		c, err := b.orphaned(ctx, prev, started)
		if err != nil || c == nil {
			return Reservation{Prev: prev}, err
		}
		res, again, err := b.takeOver(ctx, user, coll, key, value, prev, c)
		if err != nil || !again {
			return res, err
		}
	}
	return Reservation{}, fmt.Errorf("reserve %s: reserved and released repeatedly", key)
}

// orphaned returns prev's claim when prev is an orphaned reservation, nil
// otherwise.
func (b *Backend) orphaned(ctx context.Context, prev []byte, started func([]byte) (bool, error)) (*Claim, error) {
	if ok, err := started(prev); err != nil || ok {
		return nil, err
	}
	var rec struct {
		Claim *Claim `json:"claim"`
	}
	if json.Unmarshal(prev, &rec) != nil || rec.Claim == nil {
		return nil, nil // a record without a claim (an older agentc's): in progress
	}
	c := rec.Claim
	if b.now().Sub(time.UnixMilli(c.Since)) > ReserveBound {
		return c, nil
	}
	alive, err := b.Runner.Alive(ctx, c.Owner)
	if err != nil || alive {
		return nil, err
	}
	return c, nil
}

// takeOver takes the orphaned reservation prev over under a lease; again
// when prev changed meanwhile (read it again).
func (b *Backend) takeOver(ctx context.Context, user, coll, key string, value, prev []byte, c *Claim) (res Reservation, again bool, err error) {
	lock := "reserve/" + store.DocPath(coll, key)
	me := b.Runner.Instance()
	if _, err := b.Docs.AcquireLease(ctx, lock, me, reserveLock, b.now()); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Reservation{Prev: prev}, false, nil // another request is taking it over
		}
		return Reservation{}, false, fmt.Errorf("take reservation %s over: %w", key, err)
	}
	defer func() {
		if err := b.Docs.ReleaseLease(context.WithoutCancel(ctx), lock, me, b.now()); err != nil && b.Logger != nil {
			b.Logger.Warn("server: release a reservation's lock", "key", key, "err", err)
		}
	}()
	cur, err := b.Docs.GetDoc(ctx, coll, key)
	if errors.Is(err, store.ErrNotFound) || err == nil && !bytes.Equal(cur, prev) {
		return Reservation{}, true, nil
	}
	if err != nil {
		return Reservation{}, false, fmt.Errorf("take reservation %s over: %w", key, err)
	}
	run, err := b.startedRun(ctx, store.SessionKey{App: b.App(), User: user, Session: c.Session}, c.Inv)
	if err != nil {
		return Reservation{}, false, fmt.Errorf("take reservation %s over: %w", key, err)
	}
	if run != "" {
		return Reservation{Prev: prev, Run: run}, false, nil
	}
	if err := b.Docs.ApplyDocs(ctx, store.DocOp{Coll: coll, Key: key, Value: value}); err != nil {
		return Reservation{}, false, fmt.Errorf("take reservation %s over: %w", key, err)
	}
	return Reservation{Reserved: true}, false, nil
}

// startedRun returns the run invocation inv started in session key, ""
// when it started none (no input event of it, or no run record: the
// request died between the two).
func (b *Backend) startedRun(ctx context.Context, key store.SessionKey, inv string) (string, error) {
	if inv == "" {
		return "", nil
	}
	evs, err := b.Sessions.Events(ctx, key, session.EventFilter{Kinds: []runtime.EventKind{runtime.EventInput}})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range evs {
		if e.Invocation != inv || e.Run == "" {
			continue
		}
		if _, err := b.Runner.LookupRun(ctx, e.Run); errors.Is(err, store.ErrNotFound) {
			return "", nil
		} else if err != nil {
			return "", err
		}
		return e.Run, nil
	}
	return "", nil
}

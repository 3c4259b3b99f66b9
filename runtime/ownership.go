package runtime

// Run ownership among processes sharing a store (spec/serve.md,
// "Replicas"). Each process is a replica with an owner id of its own. A
// replica drives a run only while it holds the lease of the run's session
// (one active run per session, across replicas); it renews the lease every
// TTL/3, and every step commit and the run's end are fenced by it, so that
// a replica that lost the lease (it stalled, or the network cut it off)
// can never write the run again: its run goroutine stops without
// recording anything. A run left running whose lease expired (its replica
// died) is an orphan, which another replica takes over (Orphans, then a
// resume). Cancel requests and wake-ups travel through the store: a
// document per requested cancel and notifications on one channel.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// SharedStore is what a store several processes share offers beyond
// store.Store for run ownership: writes fenced by a lease, a read of
// leases, and notifications. The PostgreSQL store implements it.
type SharedStore interface {
	// CommitStepFenced is CommitStep while fence is held at now, else
	// ErrConflict and nothing written.
	CommitStepFenced(ctx context.Context, c store.StepCommit, fence store.Lease, now time.Time) (store.Committed, error)
	// EndRunFenced is EndRun while fence is held at now, else ErrConflict.
	EndRunFenced(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, fence store.Lease, now time.Time) (uint64, error)
	// GetLeases returns the current leases of keys (a key without one is
	// missing from the map).
	GetLeases(ctx context.Context, keys []string) (map[string]store.Lease, error)
	// Notify sends payload on channel name to every process that follows it.
	// The store itself announces each step commit and run end on
	// store.RunsChannel (store.CommitNotice), once it is visible.
	Notify(ctx context.Context, name, payload string) error
	// Follow calls fn with each payload sent on name, and with "" once
	// connected and after every reconnection, until ctx ends.
	Follow(ctx context.Context, name string, fn func(payload string)) error
}

// Replica makes a Runner one of several processes sharing a store
// (RunnerConfig.Replica).
type Replica struct {
	// Shared is RunnerConfig.Store's shared surface (the same store).
	Shared SharedStore
	// Owner is this process's owner id, unique among the processes that
	// share the store (a fresh random id per process start).
	Owner string
	// TTL is the lease of a driven run (default DefaultLeaseTTL); it is
	// renewed every TTL/3. A replica that dies leaves its runs to be taken
	// over once TTL has passed since its last renewal.
	TTL time.Duration
}

// DefaultLeaseTTL is the lease TTL of a replica's runs when none is given.
const DefaultLeaseTTL = 10 * time.Second

// notifyChannel is the channel replicas tell one another on:
// "cancel RUN" (a cancel request), "orphan RUN" (a run left without an
// owner); the store sends "commit RUN" there (a run committed a step or
// recorded its end: store.CommitNotice).
const notifyChannel = store.RunsChannel

// cancelColl holds the cancel requests of runs driven elsewhere: key the
// run id, value the request's time (RFC 3339).
const cancelColl = "runtime.cancel"

// ErrLeaseLost: this replica no longer holds the lease of a run it was
// driving; another replica continues it.
var ErrLeaseLost = errors.New("runtime: the run's lease was lost to another replica")

// ownership is a Runner's side of run ownership. Its goroutine (the
// notification follower) is owned by the Runner: Close stops it.
type ownership struct {
	r      *Runner
	shared SharedStore
	owner  string
	ttl    time.Duration

	stop    context.CancelFunc
	done    chan struct{} // closed when the follower has returned
	present chan struct{} // closed when the presence keeper has returned

	orphans chan struct{} // a wake-up for the takeover watcher (capacity 1)
}

func newOwnership(r *Runner, rep *Replica) (*ownership, error) {
	if rep.Shared == nil || rep.Owner == "" {
		return nil, errors.New("runtime: RunnerConfig.Replica needs Shared and Owner")
	}
	o := &ownership{r: r, shared: rep.Shared, owner: rep.Owner, ttl: rep.TTL, orphans: make(chan struct{}, 1),
		done: make(chan struct{})}
	if o.ttl <= 0 {
		o.ttl = DefaultLeaseTTL
	}
	var ctx context.Context
	ctx, o.stop = context.WithCancel(context.Background())
	o.present = make(chan struct{})
	go o.presence(ctx) // owned by the Runner, like the follower
	go func() {        // owned by the Runner: Close cancels ctx and waits for done
		defer close(o.done)
		for ctx.Err() == nil {
			if err := o.shared.Follow(ctx, notifyChannel, o.heard); err != nil && ctx.Err() == nil {
				r.log.Warn("runtime: follow replica notifications", "err", err)
				if errors.Is(err, store.ErrClosed) {
					return
				}
			}
		}
	}()
	return o, nil
}

// close stops the follower and the presence keeper and waits for them.
func (o *ownership) close() {
	o.stop()
	<-o.done
	<-o.present
}

// presenceKey is the lease a replica holds while it lives: another
// replica reads it to tell a request that died with its replica from one
// still in flight (Runner.Alive).
func presenceKey(owner string) string { return "replica/" + owner }

// presence holds this replica's presence lease, renewing it every TTL/3,
// until ctx ends or the Runner stops; it then releases it.
func (o *ownership) presence(ctx context.Context) {
	defer close(o.present)
	key := presenceKey(o.owner)
	for {
		actx, cancel := context.WithTimeout(ctx, o.ttl/3)
		if _, err := o.r.st.AcquireLease(actx, key, o.owner, o.ttl, o.r.clock.Now()); err != nil && ctx.Err() == nil {
			o.r.log.Warn("runtime: renew this replica's presence", "err", err)
		}
		cancel()
		if o.sleep(ctx, o.ttl/3) != nil {
			rctx, cancel := context.WithTimeout(context.Background(), o.ttl/3)
			_ = o.r.st.ReleaseLease(rctx, key, o.owner, o.r.clock.Now())
			cancel()
			return
		}
	}
}

// leaseKey is the lease of key's active run.
func leaseKey(key store.SessionKey) string {
	return "session/" + store.DocPath(key.App, key.User, key.Session)
}

// heard handles a notification ("" after a (re)connection: a notification
// may have been missed, so the watcher and every follower look again).
func (o *ownership) heard(payload string) {
	verb, run := store.ParseNotice(payload)
	switch {
	case verb == "cancel":
		o.r.Cancel(run)
	case store.IsCommitNotice(verb) && run != "":
		o.r.wakeRun(run)
	case store.IsCommitNotice(verb): // a run whose id a notice cannot carry
		o.r.wakeAll()
	case verb == "orphan":
		o.wakeWatcher()
	case verb == "":
		o.wakeWatcher()
		o.r.wakeAll()
	}
}

func (o *ownership) wakeWatcher() {
	select {
	case o.orphans <- struct{}{}:
	default:
	}
}

// acquire takes key's lease for a run of this replica: ErrSessionBusy when
// another replica holds it (SessionReject), or, with SessionWait, after
// waiting for it until ctx ends.
func (o *ownership) acquire(ctx context.Context, key store.SessionKey) (store.Lease, error) {
	lk := leaseKey(key)
	pause := 20 * time.Millisecond
	for {
		l, err := o.r.st.AcquireLease(ctx, lk, o.owner, o.ttl, o.r.clock.Now())
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return store.Lease{}, fmt.Errorf("runtime: session lease: %w", err)
		}
		if o.r.policy != SessionWait {
			return store.Lease{}, fmt.Errorf("%w: %s (driven by another replica)", ErrSessionBusy, key)
		}
		if err := o.sleep(ctx, pause); err != nil {
			return store.Lease{}, err
		}
		pause = min(2*pause, o.ttl/3)
	}
}

// sleep waits d on the Runner's clock, or until ctx ends.
func (o *ownership) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	stop := o.r.clock.AfterFunc(d, func() { close(ch) })
	defer stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-o.r.stop.Done():
		return ErrClosed
	}
}

// release gives key's lease up (best effort: an unreleased lease expires).
func (o *ownership) release(key store.SessionKey) {
	ctx, cancel := context.WithTimeout(context.Background(), o.ttl)
	defer cancel()
	if err := o.r.st.ReleaseLease(ctx, leaseKey(key), o.owner, o.r.clock.Now()); err != nil {
		o.r.log.Warn("runtime: release a session lease", "session", key.String(), "err", err)
	}
}

// cancelRequested reports whether a cancel of run was requested while
// another replica drove it.
func (o *ownership) cancelRequested(ctx context.Context, run string) (bool, error) {
	_, err := o.r.st.GetDoc(ctx, cancelColl, run)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// clearCancel drops run's cancel request (its run ended, or a new
// invocation continues it).
func (o *ownership) clearCancel(ctx context.Context, run string) {
	if err := o.r.st.ApplyDocs(ctx, store.DocOp{Coll: cancelColl, Key: run, Delete: true}); err != nil {
		o.r.log.Warn("runtime: clear a cancel request", "run", run, "err", err)
	}
}

// notify tells the other replicas verb about run (best effort: each
// listener also polls what it waits on).
func (o *ownership) notify(verb, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), o.ttl/3)
	defer cancel()
	if err := o.shared.Notify(ctx, notifyChannel, verb+" "+run); err != nil {
		o.r.log.Warn("runtime: notify replicas", "what", verb, "run", run, "err", err)
	}
}

// keeper renews a run's lease every TTL/3 until stopped; a renewal refused
// (another replica took the lease) or not made before the lease expired
// marks the run lost and cancels it. Each renewal also looks for a cancel
// request another replica recorded (in case its notification was missed).
type keeper struct {
	o     *ownership
	a     *activeRun
	stop  chan struct{}
	done  chan struct{}
	lease store.Lease
}

// keep starts a's keeper; its goroutine is owned by the run goroutine
// (finish stops it before releasing the lease).
func (o *ownership) keep(a *activeRun, l store.Lease) *keeper {
	k := &keeper{o: o, a: a, stop: make(chan struct{}), done: make(chan struct{}), lease: l}
	go k.run()
	return k
}

func (k *keeper) run() {
	defer close(k.done)
	o, a := k.o, k.a
	expires := k.lease.Expires
	for {
		tick := make(chan struct{})
		stopTick := o.r.clock.AfterFunc(o.ttl/3, func() { close(tick) })
		select {
		case <-k.stop:
			stopTick()
			return
		case <-tick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.ttl/3)
		now := o.r.clock.Now()
		l, err := o.r.st.RenewLease(ctx, k.lease.Key, o.owner, o.ttl, now)
		switch {
		case err == nil:
			expires = l.Expires
			if asked, err := o.cancelRequested(ctx, a.id); err == nil && asked {
				a.cancel()
			}
		case errors.Is(err, store.ErrConflict) || !o.r.clock.Now().Before(expires):
			cancel()
			o.r.log.Warn("runtime: lost the lease of a run; another replica continues it", "run", a.id, "err", err)
			a.lost.Store(true)
			a.cancel()
			return
		default:
			o.r.log.Warn("runtime: renew a run's lease (retrying)", "run", a.id, "err", err)
		}
		cancel()
	}
}

// halt stops the keeper and waits for it.
func (k *keeper) halt() {
	close(k.stop)
	<-k.done
}

// Replicated reports whether the Runner shares its store with other
// replicas (RunnerConfig.Replica).
func (r *Runner) Replicated() bool { return r.own != nil }

// AdmitsInOneWrite reports whether a new run's admission is one write of
// its store (store.RunAdmitter, without replicas): the write that can
// carry an Invocation's Records.
func (r *Runner) AdmitsInOneWrite() bool {
	_, ok := r.st.(store.RunAdmitter)
	return ok && r.own == nil
}

// Instance is this process's id among those that used the store: the
// replica's owner id, or, without replicas, an id the Runner mints at the
// first call (a restarted process has a new one).
func (r *Runner) Instance() string {
	if r.own != nil {
		return r.own.owner
	}
	r.selfOne.Do(func() { r.self = r.ids.nextWithPrefix("proc_") })
	return r.self
}

// Alive reports whether the process whose Instance is id may still be
// working: this one; without replicas no other (the store is this
// process's alone, so another instance was an earlier process); on a
// shared store, a replica whose presence lease is held.
func (r *Runner) Alive(ctx context.Context, id string) (bool, error) {
	if id == r.Instance() {
		return true, nil
	}
	if r.own == nil {
		return false, nil
	}
	key := presenceKey(id)
	ls, err := r.own.shared.GetLeases(ctx, []string{key})
	if err != nil {
		return false, fmt.Errorf("runtime: presence of %s: %w", id, err)
	}
	l, ok := ls[key]
	return ok && l.HeldAt(r.clock.Now()), nil
}

// LeaseTTL is the lease TTL of this replica's runs (0 without Replica).
func (r *Runner) LeaseTTL() time.Duration {
	if r.own == nil {
		return 0
	}
	return r.own.ttl
}

// OrphanWake returns a channel that receives when another replica says a
// run may have been left without an owner, or a notification may have been
// missed (nil without Replica).
func (r *Runner) OrphanWake() <-chan struct{} {
	if r.own == nil {
		return nil
	}
	return r.own.orphans
}

// RequestCancel cancels run wherever it is driven: here (Cancel), else, on
// a shared store, by recording a cancel request that the replica driving
// it (or the one taking it over) acts on. It reports whether a run was
// canceled here or a request recorded. The caller checks that the run is
// the user's and running.
func (r *Runner) RequestCancel(ctx context.Context, run string) (bool, error) {
	if r.Cancel(run) {
		return true, nil
	}
	if r.own == nil {
		return false, nil
	}
	now := r.clock.Now().UTC().Format(time.RFC3339Nano)
	if err := r.st.ApplyDocs(ctx, store.DocOp{Coll: cancelColl, Key: run, Value: []byte(now)}); err != nil {
		return false, fmt.Errorf("runtime: request cancel of %s: %w", run, err)
	}
	r.own.notify("cancel", run)
	return true, nil
}

// Changed returns a channel closed when run next commits a step or records
// its end, here or (on a shared store, as far as notifications reach) on
// another replica. A follower of the run's ledger reads again when it
// closes.
func (r *Runner) Changed(run string) <-chan struct{} {
	ch := make(chan struct{})
	r.mu.Lock()
	if r.waiters == nil {
		r.waiters = map[string][]chan struct{}{}
	}
	r.waiters[run] = append(r.waiters[run], ch)
	r.mu.Unlock()
	return ch
}

// Unwatch drops ch, a channel Changed returned for run that its follower no
// longer waits on.
func (r *Runner) Unwatch(run string, ch <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[run]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, run)
	} else {
		r.waiters[run] = ws
	}
}

// wakeRun closes the channels Changed returned for run.
func (r *Runner) wakeRun(run string) {
	r.mu.Lock()
	ws := r.waiters[run]
	delete(r.waiters, run)
	r.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// wakeAll closes every channel Changed returned.
func (r *Runner) wakeAll() {
	r.mu.Lock()
	all := r.waiters
	r.waiters = nil
	r.mu.Unlock()
	for _, ws := range all {
		for _, w := range ws {
			close(w)
		}
	}
}

// orphaned filters running runs not driven here down to those whose
// session lease nobody holds (on a shared store; all of them otherwise),
// and returns the earliest expiry of the leases others hold.
func (r *Runner) orphaned(ctx context.Context, runs []store.Run) ([]store.Run, time.Time, error) {
	if r.own == nil || len(runs) == 0 {
		return runs, time.Time{}, nil
	}
	keys := make([]string, len(runs))
	for i, run := range runs {
		keys[i] = leaseKey(run.Session)
	}
	leases, err := r.own.shared.GetLeases(ctx, keys)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("runtime: read run leases: %w", err)
	}
	now := r.clock.Now()
	var next time.Time
	out := runs[:0]
	for i, run := range runs {
		if l, ok := leases[keys[i]]; ok && l.HeldAt(now) {
			if next.IsZero() || l.Expires.Before(next) {
				next = l.Expires
			}
			continue
		}
		out = append(out, run)
	}
	return out, next, nil
}

// storeCommit writes a step commit, fenced by the session's lease on a
// shared store; a refused fence marks the run lost.
func (a *activeRun) storeCommit(ctx context.Context, c store.StepCommit) (store.Committed, error) {
	if a.fence.Key == "" {
		return a.r.st.CommitStep(ctx, c)
	}
	done, err := a.r.own.shared.CommitStepFenced(ctx, c, a.fence, a.r.clock.Now())
	if errors.Is(err, store.ErrConflict) {
		a.lost.Store(true)
		err = fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return done, err
}

// storeEndRun records the end of the run, fenced like storeCommit.
func (a *activeRun) storeEndRun(ctx context.Context, events [][]byte, status store.RunStatus, usage *store.RunUsage, now time.Time) (uint64, error) {
	if a.fence.Key == "" {
		return a.r.st.EndRun(ctx, a.id, events, status, usage, now)
	}
	first, err := a.r.own.shared.EndRunFenced(ctx, a.id, events, status, usage, a.fence, now)
	if errors.Is(err, store.ErrConflict) {
		a.lost.Store(true)
		err = fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return first, err
}

// abandon ends the run goroutine of a run whose lease was lost: nothing is
// written (the new owner records the run), the caller's stream ends
// without run_finished, and the session's slot here is freed.
func (a *activeRun) abandon() {
	a.r.log.Warn("runtime: stopped driving a run whose lease another replica took", "run", a.id)
	a.stopDriving(ErrLeaseLost.Error(), false)
}

// handOver ends the run goroutine of a run the Runner stopped at its Close
// on a shared store: like abandon, nothing is written, but the lease is
// released and the other replicas are told, so that one of them resumes
// the run at once from its last committed step (spec/serve.md,
// "Shutdown").
func (a *activeRun) handOver() {
	a.r.log.Info("runtime: handing a run over to another replica at shutdown", "run", a.id)
	a.stopDriving("handed over to another replica at shutdown", true)
}

// stopDriving stops the run's keeper (releasing the lease and telling the
// other replicas, when release), ends its span, unregisters it, frees the
// session's slot and closes the caller's stream without a terminal event.
func (a *activeRun) stopDriving(why string, release bool) {
	if a.keeper != nil {
		a.keeper.halt()
		if release {
			a.r.own.release(a.key)
			a.r.own.notify("orphan", a.id)
		}
	}
	if a.runSpan != nil {
		info := &ErrorInfo{Kind: string(vm.KindCanceled), Message: why}
		a.endStep(info)
		a.runSpan.End(&SpanEnd{Status: StatusCanceled, Err: info})
	}
	a.r.mu.Lock()
	if a.r.active[a.id] == a {
		delete(a.r.active, a.id)
	}
	a.r.mu.Unlock()
	a.slot()
	a.closeOut("")
}

// handingOver reports whether a, which ended canceled, was stopped by the
// Runner's Close on a shared store (not by its caller or a Cancel): its
// run is handed over instead of recorded canceled.
func (a *activeRun) handingOver(status RunStatus) bool {
	if a.keeper == nil || status != StatusCanceled || !a.r.handoff.Load() ||
		errors.Is(a.ctx.Err(), context.DeadlineExceeded) { // its Invocation.Deadline: canceled, as its client's leaving
		return false
	}
	select {
	case <-a.callerDone:
		return false // its client left: canceled, as without replicas
	default:
		return true
	}
}

// Package server is what the protocol adapters (runtime/server/agui, a2a,
// openai) share: the Backend they start runs through, the authenticated user
// of a request, limits, metrics and the error vocabulary. The adapters
// translate a protocol to and from runtime.Invocation and runtime.Event; they
// never drive the VM or write the store's run records themselves.
//
// Tenancy: every request is authenticated before an adapter sees it (the
// server's middleware puts the user in the request context, UserFrom reads
// it); an adapter passes that user in every Invocation and every lookup, so a
// user can never read or continue another user's session, task or artifact.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Errors of Backend calls; adapters map them to their protocol's error shape.
var (
	// ErrOverloaded: the server is running Limits.MaxRuns runs already
	// (OpenAI: 429; AG-UI: RUN_ERROR; A2A: JSON-RPC error).
	ErrOverloaded = errors.New("server: too many concurrent runs")
	// ErrNotFound: no such run, session or task for this user (also when it
	// exists but belongs to another user: existence is not disclosed).
	ErrNotFound = errors.New("server: not found")
	// ErrShuttingDown: the server is draining and accepts no new runs.
	ErrShuttingDown = errors.New("server: shutting down")
)

// Limits bound the server's work. Zero values take the defaults.
type Limits struct {
	MaxBodyBytes int64         // request body size (default 4 MiB)
	MaxRuns      int           // concurrent runs across all protocols (default 64)
	RunTimeout   time.Duration // per-run wall time (default 10 minutes; <0: none)
	WriteTimeout time.Duration // one write to a slow client (default 30 s)
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 4 << 20
	}
	if l.MaxRuns <= 0 {
		l.MaxRuns = 64
	}
	if l.RunTimeout == 0 {
		l.RunTimeout = 10 * time.Minute
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 30 * time.Second
	}
	return l
}

// Backend is the Runner-facing surface every adapter uses. It is safe for
// concurrent use. Runs, their state and the program are read through the
// Runner (Runner.LookupRun, StateAt, InitialState, SelectRunnable, Program);
// Docs holds only what the adapters record themselves.
type Backend struct {
	Runner *runtime.Runner
	// Docs keeps the adapters' own records: the A2A task index and task
	// documents, the AG-UI thread documents.
	Docs AdapterStore
	// Sessions reads session ledgers (events, history); required.
	Sessions *session.Service
	Clock    vm.Clock
	// NewID returns a fresh unique id with the given prefix ("msg_", "call_",
	// "task_"): adapters use it for protocol ids they mint.
	NewID   func(prefix string) string
	Logger  *slog.Logger
	Limits  Limits
	Metrics *Metrics

	mu       sync.Mutex
	running  int
	draining bool
	owners   map[string]string // active run id → user
	adopters []Adopter
}

// Adopter is offered each run the Backend resumes for an orphan (Recover,
// TakeOver): o is the run's record, run its resumption. It returns true
// when it reads run's events to their end (an adapter attaching its own
// follower of the run, e.g. A2A's task pump), false to leave them to the
// Backend, which drops them.
type Adopter func(o store.Run, run *Run) bool

// OnAdopt registers f (an adapter does, when it is made).
func (b *Backend) OnAdopt(f Adopter) {
	b.mu.Lock()
	b.adopters = append(b.adopters, f)
	b.mu.Unlock()
}

// offer hands run, the resumption of orphan o, to the first adopter that
// takes it, else drains its events.
func (b *Backend) offer(o store.Run, run *Run) {
	b.mu.Lock()
	as := b.adopters
	b.mu.Unlock()
	for _, f := range as {
		if f(o, run) {
			return
		}
	}
	go func() { // owned by the run: ends when its events close
		for range run.Events {
		}
	}()
}

// AdapterStore is the part of the store the adapters write themselves
// (and the leases under which an orphaned reservation is taken over:
// Reserve).
type AdapterStore interface {
	store.Tasks
	store.Docs
	store.Leases
}

// Run is one started run as an adapter sees it.
type Run struct {
	// ID is the run id.
	ID string
	// Events yields the run's events; it is closed after run_finished.
	Events <-chan *runtime.Event

	hooks startedRun // Backend.Start's part of it (one allocation for both)
}

// Quiet reports whether a stream of r flushes now under the flush rule
// (spec/serve.md, "Streams"): no further event waits (Idle) and the run is
// not writing a step or its end to the store. When it is, Quiet is false
// and WriteEnded receives once the write ends: the frames held meanwhile go
// out with what the run produces right after it. Quiet is for the one
// reader of r's events.
func (r *Run) Quiet() bool {
	if !Idle(r.Events) {
		return false
	}
	h := &r.hooks
	if !h.writing.Load() {
		return true
	}
	h.waiting.Store(true)
	if !h.writing.Load() { // the write ended meanwhile: its Written may not have seen waiting
		h.waiting.Store(false)
		return Idle(r.Events)
	}
	return false
}

// WriteEnded receives when a write that made Quiet false has ended (never,
// for a run not started by Backend.Start).
func (r *Run) WriteEnded() <-chan struct{} { return r.hooks.ended }

// Writing reports whether the run is writing to the store: a stream that
// holds its frames for it stops their write watchdog (SSE.Hold).
func (r *Run) Writing() bool { return r.hooks.writing.Load() }

// App is the app part of the session keys the Runner uses.
func (b *Backend) App() string { return b.Runner.App() }

// Start admits and starts a run for the authenticated user (inv.User must be
// UserFrom of the request). ctx bounds the run: a client that disconnects
// cancels it. ErrOverloaded beyond Limits.MaxRuns, ErrShuttingDown while
// draining, and the Runner's own errors (runtime.ErrSessionBusy,
// ErrInvalidInvocation, ErrNotResumable, ErrUnknownRunnable) otherwise.
//
// The returned run's Events must be read until closed (or ctx canceled).
func (b *Backend) Start(ctx context.Context, proto string, inv runtime.Invocation) (*Run, error) {
	lim := b.Limits.WithDefaults()
	b.mu.Lock()
	if b.draining {
		b.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if b.running >= lim.MaxRuns {
		b.mu.Unlock()
		b.Metrics.Rejected(proto)
		return nil, ErrOverloaded
	}
	b.running++
	b.mu.Unlock()
	run := &Run{hooks: startedRun{b: b, proto: proto, user: inv.User, ctx: ctx, start: b.now(), ended: make(chan struct{}, 1)}}
	if lim.RunTimeout > 0 {
		// Wall time, as a context's deadline is: the run's own context
		// carries it (no context and timer of the Backend's around it).
		inv.Deadline = time.Now().Add(lim.RunTimeout)
	}
	// The Backend's part of the run is done on the run goroutine (its
	// hooks), not in a goroutine of its own between the Runner and the
	// adapter: each event reaches the adapter in one hand-off.
	s, err := b.Runner.Start(ctx, inv, &run.hooks)
	if err != nil {
		b.release()
		return nil, err
	}
	run.ID, run.Events = s.ID, s.Events
	return run, nil
}

// startedRun is the Backend's part of a run it started: runtime.RunHooks
// and runtime.WriteHooks.
type startedRun struct {
	b           *Backend
	proto, user string
	ctx         context.Context // the run's caller's
	start       time.Time

	// writing: the run goroutine is writing to the store; waiting: the
	// run's stream holds frames until that write ends (Run.Quiet), which
	// ended (capacity 1) then tells it.
	writing, waiting atomic.Bool
	ended            chan struct{}

	// counters are the event counters of the kinds the run has sent so
	// far (Event, on the run goroutine): a run's events come in a few
	// kinds, and a counter found once is added to without the registry's
	// lookup.
	counters    []eventCounter
	countersBuf [8]eventCounter
}

type eventCounter struct {
	kind runtime.EventKind
	c    *cell
}

func (s *startedRun) Admitted(run string) {
	s.b.own(run, s.user)
	s.b.Metrics.RunStarted(s.proto)
}

func (s *startedRun) Event(e *runtime.Event) {
	for i := range s.counters {
		if s.counters[i].kind == e.Kind {
			s.counters[i].c.add(1)
			return
		}
	}
	c := s.b.Metrics.eventCell(s.proto, string(e.Kind))
	if c == nil {
		return
	}
	if s.counters == nil {
		s.counters = s.countersBuf[:0]
	}
	s.counters = append(s.counters, eventCounter{e.Kind, c})
	c.add(1)
}

func (s *startedRun) Writing() { s.writing.Store(true) }

func (s *startedRun) Written() {
	s.writing.Store(false)
	if s.waiting.Swap(false) {
		select {
		case s.ended <- struct{}{}:
		default: // one is pending already
		}
	}
}

func (s *startedRun) Done(run string, status runtime.RunStatus) {
	if status == "" {
		// This process stopped driving the run (its lease was lost, or
		// it was handed over): its end is in the store.
		if rec, err := s.b.Runner.LookupRun(context.WithoutCancel(s.ctx), run); err == nil {
			status = runtime.RunStatus(rec.Status)
		}
	}
	s.b.Metrics.RunFinished(s.proto, string(status), s.b.now().Sub(s.start))
	s.b.disown(run)
	s.b.release()
}

// release frees a run's place under Limits.MaxRuns.
func (b *Backend) release() {
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
}

// Cancel cancels user's active run id: in this process, or, on a store
// shared by replicas, wherever it runs (a cancel request the replica
// driving it, or the one taking it over, acts on; Runner.RequestCancel).
// ErrNotFound when the user has no such running run.
func (b *Backend) Cancel(user, runID string) error {
	b.mu.Lock()
	owner, ok := b.owners[runID]
	b.mu.Unlock()
	if ok && owner == user && b.Runner.Cancel(runID) {
		return nil
	}
	if !b.Runner.Replicated() {
		return fmt.Errorf("cancel run %s: %w", runID, ErrNotFound)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	run, err := b.GetRun(ctx, user, runID)
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if run.Status != store.RunRunning {
		return fmt.Errorf("cancel run %s: %w", runID, ErrNotFound)
	}
	if _, err := b.Runner.RequestCancel(ctx, runID); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return nil
}

// cancelTimeout bounds the store work of a cancel request.
const cancelTimeout = 5 * time.Second

// Active reports whether user's run id is running in this process.
func (b *Backend) Active(user, runID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owners[runID] == user && user != ""
}

// GetRun returns user's run id from the store; ErrNotFound when it does not
// exist or belongs to another user (or app).
func (b *Backend) GetRun(ctx context.Context, user, runID string) (store.Run, error) {
	r, err := b.Runner.LookupRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (r.Session.User != user || r.Session.App != b.App()) {
		return store.Run{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return r, nil
}

// Drain stops admitting runs; Start returns ErrShuttingDown from then on.
func (b *Backend) Drain() {
	b.mu.Lock()
	b.draining = true
	b.mu.Unlock()
}

// Running is the number of runs in flight.
func (b *Backend) Running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

func (b *Backend) own(run, user string) {
	if run == "" {
		return
	}
	b.mu.Lock()
	if b.owners == nil {
		b.owners = map[string]string{}
	}
	b.owners[run] = user
	b.mu.Unlock()
}

func (b *Backend) disown(run string) {
	b.mu.Lock()
	delete(b.owners, run)
	b.mu.Unlock()
}

func (b *Backend) now() time.Time {
	if b.Clock == nil {
		return time.Time{}
	}
	return b.Clock.Now()
}

type userKey struct{}

// WithUser returns ctx carrying the authenticated user id.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the authenticated user of a request's context ("" when
// the request was not authenticated, which the server's middleware never lets
// through to an adapter).
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// Recover resumes the runs a crash of this server cut off (Runner.Orphans)
// under protocol label "recover", each in its own session as its own user,
// as if its client had sent `--resume`: finished steps are not redone, a
// side effect whose outcome is unknown ends the run in needs_decision
// (spec/serve.md, "Restart"). It is for a store only this process opens: on
// a shared store another replica may be driving a run that is running.
// The runs are bounded by the server's limits and drained like any other;
// their events are read and dropped here (the session ledger has them).
// It returns the runs resumed, and an error for those it could not start
// (over MaxRuns, or refused by the Runner), which stay running in the
// store for the next start or `agentc run --resume`.
func (b *Backend) Recover(ctx context.Context) (resumed []string, err error) {
	resumed, _, err = b.adopt(ctx, "recover")
	return resumed, err
}

// adopt resumes the Runner's orphans under protocol label proto, offering
// each to the adopters (else dropping its events: the session ledger has
// them). An orphan another replica resumed first (ErrSessionBusy) is not
// an error.
func (b *Backend) adopt(ctx context.Context, proto string) (resumed []string, next time.Time, err error) {
	orphans, next, err := b.Runner.ScanOrphans(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	var errs []error
	for _, o := range orphans {
		inv := runtime.Invocation{User: o.Session.User, Session: o.Session.Session,
			Resume: &runtime.ResumeRequest{Run: o.ID}}
		run, err := b.Start(context.WithoutCancel(ctx), proto, inv)
		if errors.Is(err, runtime.ErrSessionBusy) && b.Runner.Replicated() {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resume run %s: %w", o.ID, err))
			continue
		}
		resumed = append(resumed, o.ID)
		b.offer(o, run)
	}
	return resumed, next, errors.Join(errs...)
}

// RunTimers fires the durable timers of waiting runs until ctx ends
// (runtime.Runner.RunTimers, with fireTimer).
func (b *Backend) RunTimers(ctx context.Context) { b.Runner.RunTimers(ctx, time.Second, b.fireTimer) }

// FireTimers fires the timers due now once (RunTimers' pass) and returns
// the next deadline.
func (b *Backend) FireTimers(ctx context.Context) (time.Time, error) {
	return b.Runner.FireTimersWith(ctx, b.fireTimer)
}

// fireTimer resumes run o as its own user in its own session (label
// protocol="timer" in the run metrics) and offers it to the adapters, so
// that a protocol's task that waited on the timer follows its run to the
// end (A2A's pump), as after a takeover.
func (b *Backend) fireTimer(ctx context.Context, o store.Run) error {
	inv := runtime.Invocation{User: o.Session.User, Session: o.Session.Session, Resume: &runtime.ResumeRequest{Run: o.ID}}
	run, err := b.Start(context.WithoutCancel(ctx), "timer", inv)
	if err != nil {
		return err
	}
	b.offer(o, run)
	return nil
}

// TakeOver runs until ctx ends on a Backend whose Runner shares its store
// with other replicas (Runner.Replicated; it returns at once otherwise): it
// looks for orphans (running runs whose session lease expired: their
// replica died) when the earliest lease another replica holds on a running
// run expires, at least every TTL/2, and at once when a replica says one
// may have been left, and resumes each it wins the lease of under protocol
// label "takeover" (spec/serve.md, "Replicas"). report, when set, is told
// of each pass that resumed runs or failed. A run a dead replica left is
// thus resumed about TTL after the replica's last renewal (at most
// 1.5 × TTL when a scan misses the expiry), plus one resume.
func (b *Backend) TakeOver(ctx context.Context, report func(resumed []string, err error)) {
	if !b.Runner.Replicated() {
		return
	}
	every := b.Runner.LeaseTTL() / 2
	wake := b.Runner.OrphanWake()
	for {
		resumed, next, err := b.adopt(ctx, "takeover")
		if ctx.Err() != nil || errors.Is(err, ErrShuttingDown) {
			return
		}
		if report != nil && (len(resumed) > 0 || err != nil) {
			report(resumed, err)
		}
		wait := every
		if !next.IsZero() {
			// Just after the lease expires (the margin covers the
			// clocks' reading of it).
			wait = min(wait, max(next.Sub(b.now())+takeoverMargin, takeoverMargin))
		}
		tick, stop := b.after(wait)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-wake:
		case <-tick:
		}
		stop()
	}
}

// takeoverMargin is how long after a lease's expiry the takeover loop
// looks at it again.
const takeoverMargin = 50 * time.Millisecond

// after returns a channel closed once d has passed on the Backend's clock
// (the wall clock without one), and the function that stops it.
func (b *Backend) after(d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	if b.Clock == nil {
		t := time.AfterFunc(d, func() { close(ch) })
		return ch, func() { t.Stop() }
	}
	stop := b.Clock.AfterFunc(d, func() { close(ch) })
	return ch, func() { stop() }
}

// FollowEvery is how often a follower of a run (Follow, AwaitEnd, the
// inspector's event stream) reads again without being woken: each step
// the run commits and its end wake it at once (Changed), so this is only
// the fallback for a notification that never came (a replica's listener
// reconnecting, a notice the store could not send).
const FollowEvery = 3 * time.Second

// Changed returns a channel closed when run next commits a step or records
// its end, here or (on a store shared by replicas, through the store's
// notifications) on another replica, and the function that stops watching
// it. Take it before reading what the run committed, then wait on it.
func (b *Backend) Changed(run string) (<-chan struct{}, func()) {
	ch := b.Runner.Changed(run)
	return ch, func() { b.Runner.Unwatch(run, ch) }
}

// Follow is user's run runID as a process that does not drive it sees it:
// the events of the run recorded in its session's ledger after sequence
// after, read as they are committed (woken by each commit here or, on a
// shared store, on another replica; every FollowEvery without a wake-up),
// until the run's next run_finished. Events closes after it, when ctx
// ends, or when the run is no longer running and the ledger has nothing
// more of it (a run abandoned without an end). It is the live source of a
// re-sent request whose run is in flight in another invocation, here or on
// another replica (Rejoin); only persisted events are seen (no model
// deltas).
func (b *Backend) Follow(ctx context.Context, key store.SessionKey, runID string, after uint64) *Run {
	out := make(chan *runtime.Event, 16)
	go func() { // owned by the returned run: ends with the run's end or ctx
		defer close(out)
		for {
			changed := b.Runner.Changed(runID)
			evs, err := b.Sessions.Events(ctx, key, session.EventFilter{After: after, Run: runID})
			if err != nil {
				b.Runner.Unwatch(runID, changed)
				if ctx.Err() == nil && b.Logger != nil {
					b.Logger.Warn("server: follow a run's ledger", "run", runID, "err", err)
				}
				return
			}
			for _, e := range evs {
				after = e.Seq
				select {
				case out <- e:
				case <-ctx.Done():
					b.Runner.Unwatch(runID, changed)
					return
				}
				if e.Kind == runtime.EventRunFinished {
					b.Runner.Unwatch(runID, changed)
					return
				}
			}
			if len(evs) == 0 {
				if rec, err := b.Runner.LookupRun(ctx, runID); err != nil || rec.Status != store.RunRunning {
					if err == nil {
						// Its end may have been recorded between the
						// two reads.
						b.drainEnd(ctx, key, runID, after, out)
					}
					b.Runner.Unwatch(runID, changed)
					return
				}
			}
			tick, stop := b.after(FollowEvery)
			select {
			case <-ctx.Done():
				stop()
				b.Runner.Unwatch(runID, changed)
				return
			case <-changed:
			case <-tick:
				b.Runner.Unwatch(runID, changed)
			}
			stop()
		}
	}()
	return &Run{ID: runID, Events: out}
}

// drainEnd sends the run's events recorded after seq after, up to its
// run_finished.
func (b *Backend) drainEnd(ctx context.Context, key store.SessionKey, runID string, after uint64, out chan<- *runtime.Event) {
	evs, err := b.Sessions.Events(ctx, key, session.EventFilter{After: after, Run: runID})
	if err != nil {
		return
	}
	for _, e := range evs {
		select {
		case out <- e:
		case <-ctx.Done():
			return
		}
		if e.Kind == runtime.EventRunFinished {
			return
		}
	}
}

// Continuation is the live source of a re-sent request's run by its
// recorded status (recorded: its ledger so far): the ledger followed past
// the last recorded event while it is running (Follow), a resumption with
// inv (whose Resume names the run) when its client left and it was
// canceled with it, nil when it has ended. Rejoin puts it after the
// recorded events.
func (b *Backend) Continuation(ctx context.Context, proto string, key store.SessionKey, runID string, status store.RunStatus, recorded []*runtime.Event, inv runtime.Invocation) (*Run, error) {
	switch status {
	case store.RunRunning:
		var after uint64
		if len(recorded) > 0 {
			after = recorded[len(recorded)-1].Seq
		}
		return b.Follow(ctx, key, runID, after), nil
	case store.RunCanceled:
		return b.Start(ctx, proto, inv)
	}
	return nil, nil
}

// Rejoin is a run as a re-sent request sees it: the recorded events of
// its ledger that keep passes (nil: all) and then, when live is not nil,
// the events of live, its continuation (a resumption); the recorded end of
// a run that continues (run_finished, run_error) is always left out, since
// live ends it. Events closes after both, or when ctx ends (live is still
// drained to its end, as Start requires).
func Rejoin(ctx context.Context, id string, recorded []*runtime.Event, keep func(*runtime.Event) bool, live *Run) *Run {
	events := make(chan *runtime.Event, 16)
	go func() { // owned by the returned run: ends with live's events, or ctx
		defer close(events)
		for _, e := range recorded {
			if keep != nil && !keep(e) || live != nil && (e.Kind == runtime.EventRunFinished || e.Kind == runtime.EventRunError) {
				continue
			}
			select {
			case events <- e:
			case <-ctx.Done():
				if live != nil {
					for range live.Events {
					}
				}
				return
			}
		}
		if live == nil {
			return
		}
		for e := range live.Events {
			select {
			case events <- e:
			case <-ctx.Done():
			}
		}
	}()
	return &Run{ID: id, Events: events}
}

// AwaitEnd waits until user's run runID is no longer running (it ended,
// or waits for input), wherever it is driven, and returns its record. It
// reads the run when the run commits (here, or on another replica
// as notifications reach; every FollowEvery without one), until ctx ends.
func (b *Backend) AwaitEnd(ctx context.Context, user, runID string) (store.Run, error) {
	for {
		changed := b.Runner.Changed(runID)
		rec, err := b.GetRun(ctx, user, runID)
		if err != nil || rec.Status != store.RunRunning {
			b.Runner.Unwatch(runID, changed)
			return rec, err
		}
		tick, stop := b.after(FollowEvery)
		select {
		case <-ctx.Done():
			stop()
			b.Runner.Unwatch(runID, changed)
			return store.Run{}, ctx.Err()
		case <-changed:
		case <-tick:
			b.Runner.Unwatch(runID, changed)
		}
		stop()
	}
}

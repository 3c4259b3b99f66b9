package runtime

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// The Runner opens the workbench for every invocation (spec/runner.md):
// it gets or creates the session, selects the runnable, persists the user's
// input before anything runs, creates and registers the run (one active run
// per session), drives the VM with a Host that dispatches models, tools,
// agents and sub-graphs, commits each superstep with its qualifying events
// in one synced batch, streams every event to the caller, records how the
// run ended, and hands the session to the post-run workers.

// Errors returned by Run (test with errors.Is).
var (
	// ErrSessionBusy: the session already has an active run and the policy
	// is SessionReject.
	ErrSessionBusy = errors.New("runtime: session has an active run")
	// ErrClosed: the Runner is closed (or closing).
	ErrClosed = errors.New("runtime: runner closed")
	// ErrInvalidInvocation: the invocation lacks a user or session, or its
	// input does not fit the runnable's input field.
	ErrInvalidInvocation = errors.New("runtime: invalid invocation")
	// ErrUnknownRunnable: no graph or agent has the requested name, or there
	// is no single runnable to default to; the message lists candidates.
	ErrUnknownRunnable = errors.New("runtime: unknown runnable")
	// ErrNotResumable: the run does not exist in this session, is
	// completed, or was written by another program.
	ErrNotResumable = errors.New("runtime: run cannot be resumed")
	// ErrInvalidResume: a resume value does not fit its interrupt's type, or
	// names no pending interrupt, or a decision is malformed.
	ErrInvalidResume = errors.New("runtime: invalid resume")
)

// SessionPolicy says what Run does when the session already has an active
// run.
type SessionPolicy uint8

// Session policies.
const (
	SessionReject SessionPolicy = iota // fail with ErrSessionBusy (the default)
	SessionWait                        // wait (FIFO) until the active run ends, or ctx is done
)

// DefaultMaxTurns is an llm agent's model-call budget when it declares none.
const DefaultMaxTurns = bytecode.DefaultMaxTurns

// RunnerConfig configures a Runner. Store, Program, Clock and Entropy are
// required.
type RunnerConfig struct {
	Store   store.Store
	Program *bytecode.Program
	// Models implement the program's models, by declared model name. Every
	// model an llm agent uses must be present.
	Models map[string]Model
	// Tools implement the program's tools, by declared name (or, for a
	// builtin tool, by its builtin name). Every tool an agent lists or a
	// tool node calls must be present, except `run = agent` tools, which the
	// Runner runs itself when none is given.
	Tools map[string]Tool
	// Funcs is the VM's builtin function table (nil: vm.Builtins()).
	Funcs map[string]vm.Func
	// Machine, when set, is Program already loaded (vm.New, or
	// vm.NewVerified for a program verified once at load, with Funcs);
	// NewRunner then neither verifies nor loads it again. Encoding, when
	// set, is Program's canonical encoding (compiler.Compile's Output.Bytes,
	// or the .agb file read): the bytes the store keeps, not encoded again.
	Machine  *vm.Machine
	Encoding []byte
	// Clock and Entropy are the only sources of time and randomness: event
	// times, ULIDs, node timeouts and retry jitter.
	Clock   vm.Clock
	Entropy vm.Entropy
	// App is the app part of session keys (default: the workflow's name).
	App    string
	Logger *slog.Logger // nil: discard
	// SessionPolicy applies when a session already has an active run.
	SessionPolicy SessionPolicy
	// Workers is the number of post-run workers (default 1); QueueSize
	// bounds the sessions waiting for one (default 256; beyond it a
	// session's post-run work is dropped with a warning).
	Workers   int
	QueueSize int
	// Summary, Memory and Evolution run, in this order, on the post-run
	// workers after each run ends (nil: nothing).
	Summary, Memory, Evolution PostRunHook
	// RunEnd are told when a run has ended for good (RunEndObserver);
	// tools that keep resources per run (RunScoped) add theirs.
	RunEnd []RunEndObserver
	// Closers release what the assembly opened for the Runner's tools (MCP
	// client sessions): Close calls them, in order, after the runs end.
	Closers []func(context.Context) error
	// Preloaders add context before an llm agent's first model turn
	// (recall, memory); see Preloader.
	Preloaders []Preloader
	// Context projects the session into llm agent calls (summaries,
	// compaction, pressure relief; runtime/history). nil: the plain
	// projection, the history events of the call's filter key among the
	// session's last PlainHistoryEvents events (spec/context.md).
	Context ContextBuilder
	// VMWorkers bounds a run's concurrent host calls per step (default
	// vm.DefaultWorkers); MaxSteps bounds its supersteps (default
	// vm.DefaultMaxSteps).
	VMWorkers int
	MaxSteps  uint64
	// Observer is told about runs, supersteps, node attempts, model and
	// tool calls and store commits (spec/telemetry.md; runtime/telemetry).
	// Nil: nothing is observed, at no cost.
	Observer Observer
	// Programs binds the program a resumed run was started by when it is
	// not Program (nil: the Runner loads it with Funcs and binds Models and
	// Tools by name). Upgrade is the least upgrade policy of every resume
	// (UpgradeNever: a run continues on the program of its last checkpoint
	// unless its invocation asks for more).
	Programs ProgramBinder
	Upgrade  Upgrade
	// Cache memoizes the results of nodes with a `cache` policy (nil: the
	// store's documents, durable across processes; agentc test passes an
	// in-memory one).
	Cache vm.Cache
	// Replica, when set, makes this Runner one of several processes
	// sharing Store: a run is driven only under its session's lease, and
	// its writes are fenced by it (ownership.go; spec/serve.md,
	// "Replicas"). Nil: the store is this process's alone (Pebble's
	// directory lock), at no cost.
	Replica *Replica
}

// Runner runs invocations against one program. It is safe for concurrent
// use. Goroutines: each accepted invocation has one run goroutine, owned by
// the Runner (Close waits for it), which drives the VM (whose workers the VM
// owns and joins) and closes the event channel when the run is over; the
// post-run workers are owned by the Runner and stopped by Close.
type Runner struct {
	st  store.Store
	cur *program // RunnerConfig.Program: what new runs run
	// pinned are the programs of runs started by another program, by
	// hash, loaded when one resumes (program.go).
	pinMu  sync.Mutex
	pinned map[string]*program

	clock  vm.Clock
	ent    vm.Entropy
	ids    *ulidGen
	log    *slog.Logger
	app    string
	policy SessionPolicy
	opts   RunnerConfig

	models map[string]Model
	obs    Observer // nil: no telemetry
	cache  vm.Cache

	mu       sync.Mutex
	closed   bool
	active   map[string]*activeRun              // by run id
	sessions store.KeyedMutex[store.SessionKey] // one run of a session at a time
	runs     sync.WaitGroup                     // accepted invocations (Run calls in progress and run goroutines)

	stop     context.Context // canceled when Close stops waiting for runs
	stopRuns context.CancelFunc

	post    *postRunPool
	closers []func(context.Context) error
	endObs  []RunEndObserver // RunEnd and the RunScoped tools' observers

	ledger *LedgerCache // the plain projection's (no RunnerConfig.Context)
	tap    LedgerTap    // told of the events the runs append: ledger, or the ContextBuilder's

	own     *ownership // nil: the store is this process's alone
	self    string     // Instance without replicas: minted at its first call
	selfOne sync.Once
	handoff atomic.Bool                // Close stopped the runs: hand them over (shared store)
	waiters map[string][]chan struct{} // by run id: closed when the run next commits a step or records its end (Changed)
	timerCh chan time.Time             // RunTimers' wake-up, nil when it does not run (timers.go)
}

// NewRunner checks cfg and loads the program.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("runtime: RunnerConfig.Store is required")
	case cfg.Program == nil:
		return nil, errors.New("runtime: RunnerConfig.Program is required")
	case cfg.Clock == nil || cfg.Entropy == nil:
		return nil, errors.New("runtime: RunnerConfig.Clock and Entropy are required (library code reads no system clock or global randomness)")
	}
	m := cfg.Machine
	if m == nil {
		var err error
		if m, err = vm.New(cfg.Program, cfg.Funcs); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
	} else if m.Program() != cfg.Program {
		return nil, errors.New("runtime: RunnerConfig.Machine is not loaded from RunnerConfig.Program")
	}
	data := cfg.Encoding
	if data == nil {
		var err error
		if data, err = bytecode.Encode(cfg.Program); err != nil {
			return nil, fmt.Errorf("runtime: encode program: %w", err)
		}
	}
	hash := bytecode.HashOf(data)
	if hash != m.Hash() {
		return nil, fmt.Errorf("runtime: program hash %x does not match its encoding's %x", m.Hash(), hash)
	}
	r := &Runner{
		st: cfg.Store, cur: &program{m: m, prog: cfg.Program, hash: hex.EncodeToString(hash[:]), data: data},
		clock: cfg.Clock, ent: cfg.Entropy, ids: newULIDGen(cfg.Clock, cfg.Entropy),
		log: cfg.Logger, app: cfg.App, policy: cfg.SessionPolicy, opts: cfg, models: cfg.Models, obs: cfg.Observer,
		active: map[string]*activeRun{},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.cache = cfg.Cache; r.cache == nil {
		r.cache = &docCache{st: cfg.Store, clock: cfg.Clock, log: r.log}
	}
	if r.app == "" {
		r.app = cfg.Program.Workflow
	}
	if r.app == "" {
		return nil, errors.New("runtime: RunnerConfig.App is required (the program has no workflow name)")
	}
	if err := r.cur.bind(cfg.Models, cfg.Tools); err != nil {
		return nil, err
	}
	r.stop, r.stopRuns = context.WithCancel(context.Background())
	r.post = newPostRunPool(r.log, cfg)
	r.closers = cfg.Closers
	r.endObs = runEndObservers(cfg)
	r.sweepRuns(context.Background())
	if cfg.Context == nil {
		r.ledger = NewLedgerCache(plainCacheSessions, PlainHistoryEvents)
		r.tap = r.ledger
	} else if t, ok := cfg.Context.(LedgerTap); ok {
		r.tap = t
	}
	if cfg.Replica != nil {
		o, err := newOwnership(r, cfg.Replica)
		if err != nil {
			r.stopRuns()
			_ = r.post.close(context.Background())
			return nil, err
		}
		r.own = o
	}
	return r, nil
}

// Machine returns the loaded program (for tools and tests that evaluate its
// chunks). It is shared and immutable.
func (r *Runner) Machine() *vm.Machine { return r.cur.m }

// App returns the app name of the Runner's session keys.
func (r *Runner) App() string { return r.app }

// Run accepts inv and returns the channel of its events. Before it returns,
// the session exists, the input event is durable, and the run is created and
// registered (Cancel finds it); an error means none of the later steps
// happened (ErrSessionBusy, ErrInvalidInvocation, ErrUnknownRunnable,
// ErrNotResumable, ErrInvalidResume, ErrClosed, a store error, or ctx's
// error while waiting for the session).
//
// The run goroutine, owned by the Runner, sends every event in order and
// closes the channel after run_finished. The caller reads the channel until
// it is closed; to abandon it, cancel ctx (the run is canceled and the
// remaining events are dropped). A reader that stops without canceling
// blocks the run until Close.
func (r *Runner) Run(ctx context.Context, inv Invocation) (<-chan *Event, error) {
	s, err := r.Start(ctx, inv, nil)
	return s.Events, err
}

// RunHooks are a caller's callbacks on one run it starts (Runner.Start):
// what a caller would otherwise do in a goroutine of its own that reads
// the run's events and passes them on. They run on the goroutine named
// and must not block.
type RunHooks interface {
	// Admitted is called on Start's goroutine once the run is admitted,
	// before its goroutine starts (so before Done), with its id.
	Admitted(run string)
	// Event is called on the run goroutine with each event as it is
	// handed to the caller (before it is; an event dropped because the
	// caller left is seen too).
	Event(e *Event)
	// Done is called once on the run goroutine after the run's last event
	// was handed over, before Events closes, with how the run ended: its
	// run_finished status, or "" when this process stopped driving it (its
	// lease was lost, or it was handed over to another replica at Close).
	Done(run string, status RunStatus)
}

// WriteHooks may be implemented by RunHooks that want to know when the run
// goroutine writes a step or the run's end to the store (CommitStep,
// EndRun: synced writes): Writing is called before each such write and
// Written after it, on the run goroutine (for a new run, Writing is first
// called on Start's goroutine at its admission: its goroutine begins with
// its initial checkpoint's write). A server's stream holds its
// frames while the run writes, so that what the run produces on either
// side of a write goes out together (spec/serve.md, "Streams").
type WriteHooks interface {
	Writing()
	Written()
}

// Started is a run Start started: its id and its events (as Run returns
// them).
type Started struct {
	ID     string
	Events <-chan *Event
}

// Start is Run with hooks: the caller's work on each event and at the run's
// end is done on the run goroutine, without a goroutine and a channel of
// the caller's between the run and the reader of its events. hooks may be
// nil; they are called only when Start succeeds.
func (r *Runner) Start(ctx context.Context, inv Invocation, hooks RunHooks) (Started, error) {
	if inv.User == "" || inv.Session == "" {
		return Started{}, fmt.Errorf("%w: user and session are required", ErrInvalidInvocation)
	}
	if err := r.checkClientTools(inv.ClientTools); err != nil {
		return Started{}, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Started{}, ErrClosed
	}
	r.runs.Add(1)
	r.mu.Unlock()
	ar, err := r.admit(ctx, inv, hooks)
	if err != nil {
		r.runs.Done()
		return Started{}, err
	}
	go ar.execute()
	return Started{ID: ar.id, Events: ar.out}, nil
}

// admit does everything Run does before the run goroutine starts.
func (r *Runner) admit(ctx context.Context, inv Invocation, hooks RunHooks) (_ *activeRun, err error) {
	key := store.SessionKey{App: r.app, User: inv.User, Session: inv.Session}
	var prev *store.Run
	gi := -1
	if inv.Resume != nil {
		run, err := r.st.GetRun(ctx, inv.Resume.Run)
		if errors.Is(err, store.ErrNotFound) || err == nil && run.Session != key {
			return nil, fmt.Errorf("%w: session %s has no run %q", ErrNotResumable, key, inv.Resume.Run)
		}
		if err != nil {
			return nil, fmt.Errorf("runtime: resume: %w", err)
		}
		prev = &run
	} else if gi, err = r.SelectRunnable(inv.Runnable); err != nil {
		return nil, err
	}
	input := types.Value{}
	if prev == nil {
		if input, err = r.inputValue(gi, inv.Input); err != nil {
			return nil, err
		}
	}

	slot, err := r.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	var ar *activeRun
	var lease store.Lease // the session's lease, on a shared store
	handedOff := false    // the run goroutine releases the slot
	defer func() {
		if err != nil && !handedOff {
			if ar != nil {
				ar.unlink()
				ar.cancel()
			}
			if lease.Key != "" {
				r.own.release(key)
			}
			slot()
		}
	}()
	if r.own != nil {
		if lease, err = r.own.acquire(ctx, key); err != nil {
			return nil, err
		}
	}
	now := r.clock.Now()
	// A new run on a store that admits runs in one write: the session, the
	// input and the run in one synced batch, not three (spec/storage.md).
	admitter, oneWrite := r.st.(store.RunAdmitter)
	oneWrite = oneWrite && prev == nil && lease.Key == ""
	if inv.Records != nil && !oneWrite {
		return nil, fmt.Errorf("%w: records go with a new run's admission in one write, which this run's is not", ErrInvalidInvocation)
	}
	if !oneWrite {
		if _, _, err := r.st.GetOrCreateSession(ctx, key, now); err != nil {
			return nil, fmt.Errorf("runtime: open session: %w", err)
		}
	}
	if err := r.cur.store(ctx, r.st); err != nil {
		return nil, err
	}

	ar = r.newActiveRun(ctx, key, inv, slot)
	ar.fence = lease
	cancelNow := false // a cancel requested while another replica drove the run
	in := ar.newEvent(EventInput, "user", "", 0)
	in.FilterKey = ""
	in.Sampling = inv.Sampling
	if prev != nil {
		// Re-read the run under the session slot: it may have ended
		// between GetRun and acquire.
		run, err := r.st.GetRun(ctx, prev.ID)
		if err != nil {
			return nil, fmt.Errorf("runtime: resume: %w", err)
		}
		ar.first = run.FirstEvent
		if err := r.prepareResume(ctx, ar, &run, inv.Resume); err != nil {
			return nil, err
		}
		if err := ar.seedUsage(ctx); err != nil {
			return nil, err
		}
		if r.own != nil {
			if cancelNow, err = r.own.cancelRequested(ctx, run.ID); err != nil {
				return nil, fmt.Errorf("runtime: resume %s: %w", run.ID, err)
			}
			if cancelNow && run.Status != store.RunRunning {
				// A request that came after the run had stopped: this
				// invocation continues the run anew.
				r.own.clearCancel(ctx, run.ID)
				cancelNow = false
			}
		}
		in.Resume = inv.Resume
	} else {
		ar.id = r.ids.nextWithPrefix("run_")
		ar.setGraph(gi)
		ar.input = input
		in.Text = inv.Input
	}
	in.Run = ar.id
	if in.Files, err = r.storeFiles(ctx, key, ar.id, inv.Files); err != nil {
		return nil, err
	}
	b, err := EncodeEvent(in)
	if err != nil {
		return nil, err
	}
	var run store.Run
	if prev == nil {
		run = store.Run{ID: ar.id, Session: key, Runnable: ar.root, ProgramHash: ar.p.hash,
			Status: store.RunRunning, Created: now, Updated: now}
	}
	var first uint64 // the input's sequence number
	switch {
	case oneWrite:
		var docs []store.DocOp
		if inv.Records != nil {
			docs = inv.Records(ar.id)
		}
		if first, err = admitter.AdmitRun(ctx, run, [][]byte{b}, now, docs...); err != nil {
			return nil, fmt.Errorf("runtime: admit run: %w", err)
		}
	default:
		if first, err = r.st.AppendEvents(ctx, key, [][]byte{b}, now); err != nil {
			return nil, fmt.Errorf("runtime: persist input: %w", err)
		}
		if prev == nil {
			run.FirstEvent = first // its input, just appended
			if err := r.st.CreateRun(ctx, run); err != nil {
				return nil, fmt.Errorf("runtime: create run: %w", err)
			}
		} else if err := r.st.UpdateRunStatus(ctx, ar.id, store.RunRunning, now); err != nil {
			return nil, fmt.Errorf("runtime: resume run %s: %w", ar.id, err)
		}
	}

	r.appended(key, first, [][]byte{b})
	if prev == nil {
		ar.first = first // a new run's: its input's (a resumed one's is its record's)
	}
	if lease.Key != "" {
		ar.keeper = r.own.keep(ar, lease)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		// The run was created but never ran: record that it was canceled.
		// Its goroutine is counted like any run's (Close waits for it) and
		// its events are dropped.
		ar.cancel()
		ar.callerDone = closedChan
		r.runs.Add(1)
		handedOff = true
		go ar.execute()
		return nil, ErrClosed
	}
	r.active[ar.id] = ar
	r.mu.Unlock()
	if cancelNow {
		ar.cancel()
	}
	if hooks != nil {
		hooks.Admitted(ar.id)
	}
	ar.hooks = hooks
	ar.writes, _ = hooks.(WriteHooks)
	if ar.resume == nil {
		// A new run's goroutine begins with the write of its initial
		// checkpoint (vm.Machine.Run): it is writing from here on.
		ar.writing()
	}
	ar.send(in)
	return ar, nil
}

// appended tells the ledger tap of events a run appended to session key's
// ledger from sequence first on.
func (r *Runner) appended(key store.SessionKey, first uint64, encoded [][]byte) {
	if r.tap != nil && len(encoded) > 0 {
		r.tap.Appended(key, first, encoded)
	}
}

// Cancel cancels the active run with id runID and reports whether there was
// one. The run ends with status canceled at its next cancellation point; its
// events still reach the caller, ending with run_finished.
func (r *Runner) Cancel(runID string) bool {
	r.mu.Lock()
	ar := r.active[runID]
	r.mu.Unlock()
	if ar == nil {
		return false
	}
	ar.cancel()
	return true
}

// Close stops accepting invocations, waits for the active runs to end (when
// ctx is done first, it cancels them, drops their undelivered events and
// waits for them to record their end — on a shared store (Replica), to hand
// them over instead: each stops without recording an end, releases its
// lease and tells the other replicas, one of which resumes it), then
// drains the post-run queue (when
// ctx is done, the hooks' context is canceled). It returns ctx's error if it
// had to cancel anything. Close does not close the Store.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	var err error
	if !already {
		done := make(chan struct{})
		go func() { // owned by Close: ends when the runs end (they do once stopRuns is called)
			r.runs.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
			// On a shared store the runs stopped now are handed over to
			// the other replicas rather than recorded canceled.
			r.handoff.Store(r.own != nil)
			r.stopRuns()
			<-done
		}
	}
	if perr := r.post.close(ctx); err == nil {
		err = perr
	}
	r.stopRuns()
	if r.own != nil && !already {
		r.own.close()
	}
	if !already {
		for _, c := range r.closers {
			if cerr := c(ctx); err == nil {
				err = cerr
			}
		}
	}
	return err
}

// acquire takes the session's slot, which admits one run of a session at
// a time, and returns its release: at once or ErrSessionBusy under
// SessionReject; under SessionWait in turn (FIFO), until ctx is done or
// the Runner closes.
func (r *Runner) acquire(ctx context.Context, key store.SessionKey) (release func(), err error) {
	if r.policy == SessionWait {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(r.stop, cancel)()
		if release, err = r.sessions.LockContext(wctx, key); err != nil {
			if ctx.Err() == nil {
				return nil, ErrClosed // r.stop canceled the wait
			}
			return nil, err
		}
	} else {
		var ok bool
		if release, ok = r.sessions.TryLock(key); !ok {
			return nil, fmt.Errorf("%w: %s", ErrSessionBusy, key)
		}
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		release()
		return nil, ErrClosed
	}
	return release, nil
}

// inputValue converts the invocation's text to graph gi's input field: a
// string field takes it as is; an enum field a literal as is (or quoted);
// a json field the JSON value the text is, else the text as a string; a
// messages field the list of messages the text is as JSON, else one user
// message; any other type is decoded from JSON. A graph without an input
// field ignores it.
func (r *Runner) inputValue(gi int, text string) (types.Value, error) {
	return r.cur.inputValue(gi, text)
}

// inputValue is Runner.inputValue over p; an input longer than its
// field's list size (spec/language.md §9.1) is an invalid invocation.
func (p *program) inputValue(gi int, text string) (types.Value, error) {
	v, err := p.decodeInput(gi, text)
	if err != nil || v.IsNull() {
		return v, err
	}
	g := &p.prog.Graphs[gi]
	if err := p.prog.States[g.State].Fields[g.Input].CheckSize(v); err != nil {
		return types.Value{}, fmt.Errorf("%w: input: %v", ErrInvalidInvocation, err)
	}
	return v, nil
}

// decodeInput converts the invocation's text as inputValue describes.
func (p *program) decodeInput(gi int, text string) (types.Value, error) {
	g := &p.prog.Graphs[gi]
	if g.Input == bytecode.None || text == "" {
		return types.Value{}, nil
	}
	f := p.prog.States[g.State].Fields[g.Input]
	t := p.prog.Types[f.Type]
	base := t
	if base.Kind() == types.KindOptional {
		base = base.Elem()
	}
	switch {
	case base.Kind() == types.KindString:
		return types.MakeString(text), nil
	case base.Kind() == types.KindEnum:
		if v, err := types.FromJSON(t, jsonString(text)); err == nil {
			return v, nil
		}
	case base.Kind() == types.KindJSON:
		if v, err := types.FromJSON(t, []byte(text)); err == nil {
			return v, nil
		}
		return types.MakeString(text), nil
	case base.Kind() == types.KindMessages || base.Kind() == types.KindList && types.Identical(base.Elem(), types.MessageType):
		if v, err := types.FromJSON(t, []byte(text)); err == nil {
			return v, nil
		}
		msg, err := types.FromJSON(types.MessageType, []byte(`{"role":"user","content":`+string(jsonString(text))+`}`))
		if err != nil {
			return types.Value{}, fmt.Errorf("%w: %v", ErrInvalidInvocation, err)
		}
		return types.MakeList([]types.Value{msg}), nil
	}
	v, err := types.FromJSON(t, []byte(text))
	if err != nil {
		return types.Value{}, fmt.Errorf("%w: input for %s (%s): %v", ErrInvalidInvocation, f.Name, t, err)
	}
	return v, nil
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) []byte {
	b, _ := types.ToJSON(types.MakeString(s))
	return b
}

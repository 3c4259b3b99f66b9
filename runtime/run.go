package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/internal/stack"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// activeRun is one accepted invocation: the run goroutine's state. The
// scheduler goroutine (the run goroutine itself: the VM runs supersteps on
// its caller's goroutine) owns changes and final; mu guards the event
// buffers, which the VM's workers append to.
type activeRun struct {
	r   *Runner
	p   *program // the program the run runs: the Runner's, or the one it is pinned to
	key store.SessionKey
	id  string // run_<ULID>
	inv string // invocation id
	// first is the sequence number of the run's first event in its
	// session (store.Run.FirstEvent; 0: unknown): a read of the run's
	// events starts there.
	first uint64
	slot  func() // releases the session's slot (Runner.acquire)

	hashes hexHashes // the hex hashes of its checkpoints (commit)

	gi     int
	graph  *bytecode.Graph
	root   string // the runnable's graph name: node paths are root/…
	fields []bytecode.StateField

	ctx        context.Context // canceled by Cancel, the caller's ctx, or Close giving up
	cancel     context.CancelFunc
	unlink     func() bool // detaches ctx from the Runner's stop context
	callerDone <-chan struct{}
	out        chan *Event
	hooks      RunHooks   // the caller's (Runner.Start), or nil
	writes     WriteHooks // hooks, when they are WriteHooks too

	// outMu orders the hand-off to out: held is the scheduler's events
	// not yet handed over (hold), which go before any later event.
	outMu   sync.Mutex
	held    []*Event
	heldBuf [4]*Event // held's first array: a step's events without allocating

	input      types.Value     // a new run's input
	sampling   *Sampling       // the invocation's sampling parameters (nil: the declarations')
	client     []ToolSpec      // the invocation's client tools (Invocation.ClientTools)
	files      []InputFile     // the invocation's files (Invocation.Files)
	resume     *vm.ResumeInput // a resumption's checkpoint chain and answers
	prevStatus RunStatus       // a resumption's status before this invocation

	mu    sync.Mutex
	lead  []*Event    // run-level events for the next commit (run_started)
	tasks []taskEvent // persisted events of the current step's host tasks
	sched []*Event    // persisted scheduler events of the current step
	// claimed counts, per task, the leading events of tasks that an effect
	// record of the current step carries (carry.go).
	claimed map[scopeKey]int
	totals  RunUsage    // the invocation's model calls (cost.go)
	prior   RunUsage    // what a resumed run's earlier invocations used (budget.go)
	budget  budgetScope // the run's budget and its model calls (budget.go)

	// With an Observer: the context of the run span (the parent of
	// superstep spans), the run span, and the open superstep's span, set
	// on the scheduler goroutine and read by the VM's workers.
	runCtx  context.Context
	runSpan Span
	stepObs atomic.Pointer[stepSpan]

	// On a shared store (RunnerConfig.Replica): the session's lease, which
	// fences every write of the run, its keeper, and whether the lease was
	// lost (another replica continues the run: nothing more is written).
	fence  store.Lease
	keeper *keeper
	lost   atomic.Bool

	changes  []vm.FieldChange // the current step's changed fields (scheduler goroutine)
	final    *vm.StepRecord   // the last commit, deferred until the run's end is known
	finalEvs []*Event
	nLead    int // how many of finalEvs are lead events
}

// taskEvent is a persisted event of a host task, ordered in the ledger by
// (node, item) and then arrival.
type taskEvent struct {
	node, item int
	ev         *Event
}

// closedChan is a closed channel: sends selecting on it drop the event.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// eventBuffer is the capacity of an invocation's event channel.
const eventBuffer = 64

func (r *Runner) newActiveRun(ctx context.Context, key store.SessionKey, inv Invocation, slot func()) *activeRun {
	var rctx context.Context
	var cancel context.CancelFunc
	if inv.Deadline.IsZero() {
		rctx, cancel = context.WithCancel(ctx)
	} else {
		rctx, cancel = context.WithDeadline(ctx, inv.Deadline)
	}
	a := &activeRun{r: r, p: r.cur, key: key, inv: inv.ID, slot: slot, ctx: rctx, cancel: cancel,
		callerDone: ctx.Done(), out: make(chan *Event, eventBuffer), gi: -1, sampling: inv.Sampling, client: inv.ClientTools, files: inv.Files}
	a.held = a.heldBuf[:0]
	a.unlink = context.AfterFunc(r.stop, cancel)
	if a.inv == "" {
		a.inv = r.ids.nextWithPrefix("inv_")
	}
	return a
}

func (a *activeRun) setGraph(gi int) {
	p := a.p.prog
	a.gi = gi
	a.graph = &p.Graphs[gi]
	a.root = a.graph.Name
	a.fields = p.States[a.graph.State].Fields
	a.setBudget(gi)
}

// rel turns a VM node path ("graph/node", "graph/node/sub/x") into the path
// events and call sites use, relative to the runnable ("node",
// "node/sub/x").
func (a *activeRun) rel(path string) string {
	if len(path) > len(a.root) && path[len(a.root)] == '/' && strings.HasPrefix(path, a.root) {
		return path[len(a.root)+1:]
	}
	return path
}

// newEvent returns an event of this run with its identity filled in.
func (a *activeRun) newEvent(kind EventKind, author, node string, step uint64) *Event {
	now := a.r.clock.Now()
	return &Event{
		ID: a.r.ids.nextAt(now), Kind: kind, Time: now.UTC(),
		App: a.key.App, User: a.key.User, Session: a.key.Session, Run: a.id, Invocation: a.inv,
		Author: author, Node: node, Step: step, FilterKey: node, Persisted: kind.Persisted(),
	}
}

// send delivers the held events and then e to the caller.
func (a *activeRun) send(e *Event) {
	a.outMu.Lock()
	a.releaseLocked()
	a.deliver(e)
	a.outMu.Unlock()
}

// hold keeps an event of the scheduler's goroutine until the next send,
// host call, commit or the run's end hands it over (spec/events.md, "When
// the stream delivers"): a step of inline nodes wakes the caller once,
// not once per event.
func (a *activeRun) hold(e *Event) {
	a.outMu.Lock()
	a.held = append(a.held, e)
	a.outMu.Unlock()
}

// holdFor is how long held events may wait for a step boundary to hand
// them over with later ones (releaseDue).
const holdFor = time.Millisecond

// releaseDue delivers the held events once the oldest is holdFor old (on
// the Runner's clock): a chain of quick inline steps wakes the caller
// about once a millisecond, not once per step.
func (a *activeRun) releaseDue() {
	a.outMu.Lock()
	if len(a.held) > 0 && a.r.clock.Now().Sub(a.held[0].Time) >= holdFor {
		a.releaseLocked()
	}
	a.outMu.Unlock()
}

// release delivers the held events.
func (a *activeRun) release() {
	a.outMu.Lock()
	a.releaseLocked()
	a.outMu.Unlock()
}

func (a *activeRun) releaseLocked() {
	for _, e := range a.held {
		a.deliver(e)
	}
	clear(a.held)
	a.held = a.held[:0]
}

// deliver hands e to the caller, unless the caller gave up (its ctx is
// done) or the Runner stopped waiting for runs. outMu is held.
func (a *activeRun) deliver(e *Event) {
	if a.hooks != nil {
		a.hooks.Event(e)
	}
	select {
	case a.out <- e:
	case <-a.callerDone:
	case <-a.r.stop.Done():
	}
}

// emitTask streams an event of a host task and, if it is persisted,
// buffers it for the commit of the task's step.
func (a *activeRun) emitTask(sc *taskScope, e *Event) {
	a.send(e)
	if e.Persisted {
		a.mu.Lock()
		a.tasks = append(a.tasks, taskEvent{node: sc.node, item: sc.item, ev: e})
		a.mu.Unlock()
	}
}

// onVM receives the scheduler's events (on the run goroutine).
func (a *activeRun) onVM(e vm.Event) {
	switch e.Kind {
	case vm.EventNodeStarted:
		if a.r.obs != nil {
			a.openStep(e.Step)
		}
		a.hold(a.newEvent(EventNodeStarted, a.root, a.rel(e.Node), e.Step))
	case vm.EventNodeFinished, vm.EventNodeFailed:
		kind := EventNodeFinished
		if e.Kind == vm.EventNodeFailed {
			kind = EventNodeFailed
		}
		ev := a.newEvent(kind, a.root, a.rel(e.Node), e.Step)
		if e.Err != nil {
			ev.Error = a.errorInfo(e.Err)
		}
		a.hold(ev)
		a.mu.Lock()
		a.sched = append(a.sched, ev)
		a.mu.Unlock()
	case vm.EventStateDelta:
		a.changes = e.Changes // turned into a state_delta event by the step's commit
	}
	// interrupted, run_finished and run_failed are built from the Result.
}

// onVM receives the scheduler events of a sub-run (an agent or graph
// node's callee), attributing them to the calling task c.
func (h *host) onVM(c *callCtx, graph string, e vm.Event) {
	a := h.a
	switch e.Kind {
	case vm.EventNodeStarted:
		ev := a.newEvent(EventNodeStarted, graph, h.rel(e.Node), c.step)
		ev.MapIndex = c.mapIndex()
		a.send(ev)
	case vm.EventNodeFinished, vm.EventNodeFailed:
		kind := EventNodeFinished
		if e.Kind == vm.EventNodeFailed {
			kind = EventNodeFailed
		}
		ev := a.newEvent(kind, graph, h.rel(e.Node), c.step)
		ev.MapIndex = c.mapIndex()
		if e.Err != nil {
			ev.Error = &ErrorInfo{Kind: string(e.Err.Kind), Message: e.Err.Message, Node: h.rel(e.Err.Node)}
		}
		a.emitTask(c.sc, ev)
	case vm.EventStateDelta:
		ev := a.newEvent(EventStateDelta, graph, c.node, c.step)
		ev.MapIndex = c.mapIndex()
		for _, ch := range e.Changes {
			if strings.HasPrefix(ch.Name, "$") {
				continue
			}
			if b, err := types.ToJSON(ch.Value); err == nil {
				ev.Changes = append(ev.Changes, StateChange{Field: ch.Name, Op: "set", Value: b})
			}
		}
		if len(ev.Changes) > 0 {
			a.emitTask(c.sc, ev)
		}
	}
}

// takeStep returns the persisted events of the step being committed, in
// ledger order, and empties the buffers.
func (a *activeRun) takeStep(delta *Event) []*Event {
	a.mu.Lock()
	lead, tasks, sched := a.lead, a.tasks, a.sched
	a.lead, a.tasks, a.sched = nil, nil, nil
	clear(a.claimed)
	a.mu.Unlock()
	slices.SortStableFunc(tasks, func(x, y taskEvent) int {
		if c := cmp.Compare(x.node, y.node); c != 0 {
			return c
		}
		return cmp.Compare(x.item, y.item)
	})
	out := make([]*Event, 0, len(lead)+len(tasks)+len(sched)+1)
	out = append(out, lead...)
	for _, t := range tasks {
		out = append(out, t.ev)
	}
	out = append(out, sched...)
	if delta != nil {
		out = append(out, delta)
	}
	return out
}

func (a *activeRun) errorInfo(e *vm.Error) *ErrorInfo {
	return &ErrorInfo{Kind: string(e.Kind), Message: e.Message, Node: a.rel(e.Node)}
}

// execute is the run goroutine: it drives the VM and records the end.
func (a *activeRun) execute() {
	stack.Grow() // a run goes deep: one growth now, not several in its calls
	defer a.r.runs.Done()
	defer a.unlink()
	defer a.cancel()
	var step uint64
	if a.resume != nil && len(a.resume.Chain) > 0 {
		step = a.resume.Chain[len(a.resume.Chain)-1].Step
	}
	started := a.newEvent(EventRunStarted, a.root, "", step)
	started.Runnable, started.Status = a.root, StatusRunning
	a.mu.Lock()
	a.lead = append(a.lead, started)
	a.mu.Unlock()
	a.send(started)

	ctx := a.ctx
	if obs := a.r.obs; obs != nil {
		ctx, a.runSpan = obs.Start(a.ctx, &SpanStart{Kind: SpanRun, App: a.key.App, Session: a.key.Session, Run: a.id,
			Invocation: a.inv, Runnable: a.root, Step: step, MapIndex: -1})
		a.runCtx = ctx
	}
	opts := vm.Options{
		RunID: a.id, Input: a.input, Host: &host{a: a}, Clock: a.r.clock, Entropy: a.r.ent,
		Checkpointer: &checkpointer{a: a}, Emit: a.onVM, Workers: a.r.opts.VMWorkers, MaxSteps: a.r.opts.MaxSteps, Cache: a.r.cache,
	}
	var res *vm.Result
	var err error
	if a.resume != nil {
		res, err = a.p.m.Resume(ctx, a.gi, *a.resume, opts)
	} else {
		res, err = a.p.m.Run(ctx, a.gi, opts)
	}
	a.finish(res, err)
}

// finish records how the run ended (spec/runner.md, "Ending a run"), frees
// the session, hands it to the post-run workers, and sends the terminal
// events.
func (a *activeRun) finish(res *vm.Result, runErr error) {
	a.release()
	if a.lost.Load() {
		a.abandon()
		return
	}
	status, einfo := a.outcome(res, runErr)
	if a.handingOver(status) {
		a.handOver()
		return
	}
	var step uint64
	if res != nil {
		step = res.Step
	}
	terminal := a.terminalEvents(res, status, einfo, step)
	ctx := context.WithoutCancel(a.ctx)
	now := a.r.clock.Now()

	committed, recorded := false, true
	if res != nil && status == StatusInterrupted && len(res.Timers) > 0 {
		// Indexed before the end is recorded: a crash in between leaves a
		// timer whose run firing resumes (timers.go).
		if err := a.scheduleTimer(ctx, res.Timers); err != nil {
			a.r.log.Error("runtime: index a timer", "run", a.id, "err", err)
		}
	}
	if a.final != nil && res != nil && (res.Status == vm.StatusCompleted || res.Status == vm.StatusInterrupted) {
		events := append(a.finalEvs, terminal...)
		if _, err := a.commit(ctx, a.final, events, store.RunStatus(status)); err != nil {
			if a.lost.Load() {
				a.abandon() // the lease was taken: the new owner records the run
				return
			}
			a.r.log.Error("runtime: commit the last step", "run", a.id, "step", a.final.Step, "err", err)
			status = StatusFailed
			einfo = &ErrorInfo{Kind: string(vm.KindInternal), Message: "commit the last step: " + err.Error()}
			terminal = a.terminalEvents(nil, status, einfo, step)
			a.lead = a.finalEvs[:a.nLead]
		} else {
			committed = true
		}
	}
	if a.runSpan != nil {
		// The open superstep ends with the commit that carried the run's
		// end, or with the run's failure.
		if committed {
			a.endStep(nil)
		} else {
			a.endStep(einfo)
		}
	}
	if !committed {
		// No step commit carries the end: append the run-level events not
		// yet committed (the uncommitted step's events are dropped: a
		// resumption re-executes that step) and set the status, in one
		// batch.
		a.mu.Lock()
		events := append(a.lead, terminal...)
		a.lead, a.tasks, a.sched = nil, nil, nil
		a.mu.Unlock()
		if err := a.endRun(ctx, events, store.RunStatus(status), now); err != nil {
			a.r.log.Error("runtime: record the end of a run", "run", a.id, "status", status, "err", err)
			recorded = false
		}
	}
	if a.lost.Load() && !committed && !recorded {
		// A fenced write found the lease taken: the run's end is the new
		// owner's to record. (A lease lost after the end was written
		// changes nothing: the end is recorded.)
		a.abandon()
		return
	}
	if status == StatusFailed && einfo != nil {
		a.r.log.Warn("runtime: run failed", "run", a.id, "kind", einfo.Kind, "node", einfo.Node, "err", einfo.Message)
	}
	if a.keeper != nil {
		a.keeper.halt()
		if status == StatusCanceled && recorded {
			a.r.own.clearCancel(ctx, a.id)
		}
		a.r.own.release(a.key)
	}

	// What was kept for a run that ended for good (its workspace) is freed
	// before the caller sees run_finished — once the store says it ended
	// (else a resume would find the run, not its files).
	if recorded {
		a.r.runEnded(ctx, a.id, status)
	}

	// The session accepts its next run before the caller sees run_finished.
	a.r.mu.Lock()
	if a.r.active[a.id] == a {
		delete(a.r.active, a.id)
	}
	a.r.mu.Unlock()
	a.slot()
	a.r.wakeRun(a.id)
	if a.runSpan != nil {
		end := &SpanEnd{EventID: terminal[len(terminal)-1].ID, Status: status, Step: step}
		if status == StatusFailed || status == StatusCanceled {
			end.Err = einfo
		}
		a.runSpan.End(end)
	}
	// After the run's span ended: the post-run work's spans link to it.
	a.r.post.enqueue(PostRun{Session: a.key, Run: a.id, FirstEvent: a.first, Runnable: a.root, Status: status, Trace: a.runCtx})
	for _, e := range terminal {
		a.send(e)
	}
	a.closeOut(status)
}

// writing and written tell the caller's WriteHooks of a write of the run
// to the store.
func (a *activeRun) writing() {
	if a.writes != nil {
		a.writes.Writing()
	}
}

func (a *activeRun) written() {
	if a.writes != nil {
		a.writes.Written()
	}
}

// closeOut ends the caller's stream: the caller's Done hook, then the
// channel's close.
func (a *activeRun) closeOut(status RunStatus) {
	if a.hooks != nil {
		a.hooks.Done(a.id, status)
	}
	close(a.out)
}

// outcome maps the VM's result to the run's status and error.
func (a *activeRun) outcome(res *vm.Result, err error) (RunStatus, *ErrorInfo) {
	if res != nil {
		var info *ErrorInfo
		if res.Err != nil {
			info = a.errorInfo(res.Err)
		}
		return RunStatus(res.Status), info
	}
	var ve *vm.Error
	switch {
	case errors.As(err, &ve) && ve.Kind == vm.KindInvalidResume:
		return a.prevStatus, a.errorInfo(ve) // nothing ran: the run still waits
	case a.ctx.Err() != nil:
		return StatusCanceled, &ErrorInfo{Kind: string(vm.KindCanceled), Message: a.ctx.Err().Error()}
	case errors.As(err, &ve):
		return StatusFailed, a.errorInfo(ve)
	case err != nil:
		return StatusFailed, &ErrorInfo{Kind: string(vm.KindInternal), Message: err.Error()}
	}
	return StatusFailed, &ErrorInfo{Kind: string(vm.KindInternal), Message: "the VM returned no result"}
}

// terminalEvents builds the events that end the invocation: interrupt (if
// the run waits), run_error (if it failed) and run_finished.
func (a *activeRun) terminalEvents(res *vm.Result, status RunStatus, einfo *ErrorInfo, step uint64) []*Event {
	var out []*Event
	var its []InterruptInfo
	if res != nil && status == StatusInterrupted {
		for _, it := range res.Interrupts {
			info := InterruptInfo{ID: it.ID, Node: a.rel(it.ID), Prompt: it.Prompt}
			if !it.Due.IsZero() {
				due := it.Due.UTC()
				info.Due = &due
			}
			if it.Type != nil {
				info.Schema = types.JSONSchema(it.Type)
			}
			if it.Data != nil {
				a.clientPauseInfo(&info, it.Data)
			}
			its = append(its, info)
		}
		ev := a.newEvent(EventInterrupt, a.root, "", step)
		ev.Interrupts = its
		out = append(out, ev)
	}
	if einfo != nil && status != StatusInterrupted && status != StatusNeedsDecision {
		ev := a.newEvent(EventRunError, a.root, "", step)
		ev.Error = einfo
		out = append(out, ev)
	}
	fin := a.newEvent(EventRunFinished, a.root, "", step)
	fin.Status, fin.Interrupts = status, its
	if res != nil && status == StatusInterrupted {
		for _, t := range res.Timers {
			fin.Timers = append(fin.Timers, TimerInfo{ID: t.ID, Node: a.rel(t.ID), Due: t.Due.UTC(), Wait: t.Wait})
		}
	}
	a.fillTotals(fin)
	if res != nil {
		if status == StatusCompleted && !res.Output.IsNull() {
			if b, err := types.ToJSON(res.Output); err == nil {
				fin.Output = json.RawMessage(b)
			} else {
				a.r.log.Warn("runtime: output has no JSON form", "run", a.id, "err", err)
			}
		}
		for _, d := range res.Decisions {
			fin.Decisions = append(fin.Decisions, a.decisionInfo(d.ID, a.rel(d.Node), d.MapIndex, d.Attempt, d.Key))
		}
	}
	return append(out, fin)
}

// encodeEvents encodes events for the ledger, each once.
func encodeEvents(events []*Event) ([][]byte, error) {
	out := make([][]byte, len(events))
	for i, e := range events {
		b, err := EncodeEvent(e)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// endRun appends events to the ledger and sets the run's status in one
// batch. An event that cannot be encoded is dropped with an error logged, so
// the status is still recorded.
func (a *activeRun) endRun(ctx context.Context, events []*Event, status store.RunStatus, now time.Time) error {
	bs, err := encodeEvents(events)
	if err != nil {
		a.r.log.Error("runtime: encode the end of a run", "run", a.id, "err", err)
		bs = nil
	}
	var sp Span
	if a.runSpan != nil {
		sp = a.startCommit(a.runCtx, len(bs))
	}
	a.writing()
	first, err := a.storeEndRun(ctx, bs, status, a.runUsage(), now)
	a.written()
	if sp != nil {
		sp.End(&SpanEnd{Err: storeErrorInfo(err)})
	}
	if err == nil {
		a.r.appended(a.key, first, bs)
	}
	return err
}

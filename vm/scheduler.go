package vm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// The superstep scheduler. A run is a loop of supersteps on one goroutine
// (the caller's). In step s:
//
//  1. plan: every node of the frontier becomes a task (a map node one task
//     per element of its list, evaluated on the snapshot); tasks finished
//     before a crash are restored from their pending writes instead;
//  2. execute: pure tasks (set, join, interrupt) run inline; host tasks
//     (llm, tool, agent, graph, map items) run on the scheduler goroutine and
//     a bounded pool of helper goroutines owned by the run (workerPool), all
//     against the same immutable snapshot;
//  3. merge: in program order (nodes in declaration order, map items in
//     index order) — never completion order — each node's writes go through
//     the field reducers; a failure goes to the node's catch route or fails
//     the run;
//  4. route: the edges of the nodes that completed are taken on the merged
//     state, in program order, updating loop and join counters and
//     building the next frontier;
//  5. commit: the step's record (state delta, frontier, counters, pending
//     interrupts, journal) goes to the Checkpointer.
//
// The run stops when the frontier is empty (completed), after a step that
// left an interrupt pending (interrupted), when a side effect needs a
// decision (needs_decision, before the step commits), on an uncaught
// failure, on cancellation, or at Options.MaxSteps (failed: max_steps).

type run struct {
	m     *Machine
	g     *graphInfo
	o     Options
	id    string
	paths []string

	ckpt       Checkpointer
	journaling bool
	replay     *replayIndex

	// The run's durable state.
	state    []types.Value
	step     uint64 // the last committed step
	frontier []int32
	waiting  []waitingInterrupt
	parked   []*parkedNode // call nodes waiting on their sub-runs' interrupts (suspend.go), by node
	arrived  []bool        // join arrivals, per join predecessor slot
	fired    []bool        // per join: a `join any` fired in the current wave
	loops    []uint32      // traversals per edge slot

	// Resume inputs, consumed by the first step after a resume.
	answers     map[int32]types.Value
	subAnswers  map[string]map[string]types.Value // by parked task id: answers by interrupt id
	expired     map[int32]bool                    // waiting nodes whose timer fired (timer.go)
	decisions   map[string]Decision
	restored    map[string]*restoredTask
	resumedStep uint64

	// Checkpoint bookkeeping.
	fullBytes, chainBytes, sinceFull int
	stepJournal                      []JournalEntry

	// Scratch, reused across steps.
	plans      []nodePlan
	tasks      []task
	hostIdx    []int
	args       []NamedValue // the step's host call arguments (argArena)
	next       []int32
	activated  []bool
	evals      []*evaluator
	dirty      []int32
	ops        []deltaOp
	wbuf       []write // the step's arena for pure tasks' writes
	undo       []undoEntry
	undoBits   []bool
	abufs      []appendBuf
	pool       workerPool
	scratch    *runScratch // where plans … evals[0] came from (putScratch)
	hostCtx    context.Context
	hostCancel context.CancelFunc
	newWait    []waitingInterrupt
	newParked  []*parkedNode
	parallel   bool
}

type waitingInterrupt struct {
	node int32
	it   Interrupt
	due  time.Time // its timer (zero: none)
	wait bool      // a wait node (it has only ID and Node)
}

// nodePlan is one frontier node in one step.
type nodePlan struct {
	node   int32
	first  int // its tasks are tasks[first : first+n]
	n      int
	err    *Error // failed while planning (a map's list)
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	state  planState
}

type planState uint8

const (
	planPending planState = iota
	planCompleted
	planCaught
	planWaiting
)

type task struct {
	node     int32
	plan     int32
	item     int // map index, or -1
	local    types.Value
	id       string
	restored bool
	args     int32      // a host task's arguments start at r.args[args]
	sub      *SubResume // a parked task woken by an answer: continue its sub-run (CallRequest.SubRun)
	out      outcome
	journal  []JournalEntry // host results, draws and clock reads of this task, in order
	into     [1]write       // the backing of out.writes for a call's result
	resume   *CallResume    // a paused call's answer (CallRequest.Resume)
}

type outcomeKind uint8

const (
	outNone      outcomeKind = iota
	outOK                    // writes are to be merged
	outFailed                // err, after retries
	outInterrupt             // an interrupt node waits, or a call paused (data)
	outDecision              // a side effect needs a decision
	outAbort                 // a storage call failed: the step is abandoned
	outSuspend               // a call's sub-run waits on interrupts (susp)
	outWait                  // a wait node waits until due
)

type outcome struct {
	kind     outcomeKind
	writes   []write
	err      *Error
	abort    error
	prompt   string
	data     []byte // a paused call's Pause.Data
	decision *PendingDecision
	susp     *Suspension
	due      time.Time // outInterrupt with a timeout, outWait
}

// write is one field write of a node, before the reducer. For an append
// field the value is the list of elements to append, or with one, the
// single element.
type write struct {
	field int32
	one   bool
	value types.Value
}

func (r *run) emit(e Event) {
	if r.o.Emit != nil {
		e.Run = r.id
		r.o.Emit(e)
	}
}

// loop runs supersteps until the run stops.
func (r *run) loop(ctx context.Context) (*Result, error) {
	defer func() {
		r.pool.stop()
		if r.hostCancel != nil {
			r.hostCancel()
		}
		r.putScratch()
	}()
	for {
		if r.isWaiting() && r.replay != nil && len(r.answers) == 0 && len(r.subAnswers) == 0 && len(r.expired) == 0 {
			r.replayAnswers()
		}
		if r.isWaiting() && r.replay == nil {
			r.fireDue()
		}
		switch {
		case r.isWaiting() && len(r.answers) == 0 && len(r.subAnswers) == 0 && len(r.expired) == 0 && len(r.restored) == 0 && !r.replayWakes():
			return r.finish(StatusInterrupted, nil)
		case len(r.frontier) == 0:
			return r.finish(StatusCompleted, nil)
		case r.step >= r.o.MaxSteps:
			return r.finish(StatusFailed, &Error{Kind: KindMaxSteps,
				Message: fmt.Sprintf("run reached the limit of %d steps with %d nodes still active", r.o.MaxSteps, len(r.frontier))})
		}
		if err := ctx.Err(); err != nil {
			return r.finish(StatusCanceled, &Error{Kind: KindCanceled, Message: err.Error(), Err: err})
		}
		res, err := r.superstep(ctx)
		if res != nil || err != nil {
			return res, err
		}
	}
}

// runScratch is the working memory of a run's steps that nothing outside
// the run sees: task and plan tables, the step's delta and write arena,
// the undo log and the scheduler's evaluator. A run takes one from its
// graph's pool when it starts and puts it back, cleared of every value,
// when its loop returns (no helper, host call or Result refers to it then;
// durable state, which a Result's Snapshot may share, is never pooled).
type runScratch struct {
	plans    []nodePlan
	tasks    []task
	hostIdx  []int
	ops      []deltaOp
	wbuf     []write
	undo     []undoEntry
	undoBits []bool
	ev       *evaluator
}

// takeScratch gives r the working memory of a finished run of its graph,
// or new memory.
func (r *run) takeScratch(budget int) {
	sc, _ := r.g.scratch.Get().(*runScratch)
	if sc == nil {
		sc = &runScratch{ev: newEvaluator(r.m, budget)}
	}
	if budget <= 0 {
		budget = DefaultEvalBudget
	}
	sc.ev.budget = budget
	r.plans, r.tasks, r.hostIdx, r.ops, r.wbuf, r.undo, r.undoBits = sc.plans, sc.tasks, sc.hostIdx, sc.ops, sc.wbuf, sc.undo, sc.undoBits
	r.evals = []*evaluator{sc.ev}
	r.scratch = sc
}

// putScratch clears r's working memory of every value and pointer it
// holds and returns it to the graph's pool.
func (r *run) putScratch() {
	clear(r.plans)
	clear(r.tasks) // slots past len are zero already (plan)
	ops := r.ops[:cap(r.ops)]
	for i := range ops {
		e := ops[i].elems
		clear(e[:cap(e)])
		ops[i] = deltaOp{elems: e[:0]}
	}
	clear(r.wbuf[:cap(r.wbuf)])
	ev := r.evals[0]
	clear(ev.stack[:cap(ev.stack)])
	ev.done = nil
	*r.scratch = runScratch{plans: r.plans[:0], tasks: r.tasks[:0], hostIdx: r.hostIdx[:0], ops: ops[:0],
		wbuf: r.wbuf[:0], undo: r.undo[:0], undoBits: r.undoBits[:0], ev: ev}
	r.g.scratch.Put(r.scratch)
	r.scratch = nil
	r.plans, r.tasks, r.hostIdx, r.ops, r.wbuf, r.undo, r.undoBits, r.evals = nil, nil, nil, nil, nil, nil, nil, nil
}

// finish builds the Result of a stopped run and emits the final event.
func (r *run) finish(st Status, e *Error) (*Result, error) {
	r.trimAppendBufs()
	res := &Result{Run: r.id, Status: st, Step: r.step, State: r.state, Err: e}
	if out := r.g.g.Output; out != bytecode.None {
		res.Output = r.state[out]
	} else if st == StatusCompleted {
		res.Output = r.stateMap()
	}
	if st == StatusInterrupted {
		res.Interrupts = r.pendingInterrupts()
		res.Timers = r.timers()
		r.emit(Event{Kind: EventInterrupted, Step: r.step, Interrupts: res.Interrupts})
	}
	if st != StatusCompleted {
		res.Snapshot = r.snapshot()
	}
	if e != nil {
		r.emit(Event{Kind: EventRunFailed, Step: r.step, Status: st, Err: e})
		return res, e
	}
	r.emit(Event{Kind: EventRunFinished, Step: r.step, Status: st})
	return res, nil
}

// stateMap is the whole state as a map from field name to value (the
// output of a graph without an output field). Hidden fields are left out.
func (r *run) stateMap() types.Value {
	keys := make([]string, 0, len(r.state))
	vals := make([]types.Value, 0, len(r.state))
	for i, f := range r.g.fields {
		if i == r.g.errorField {
			continue
		}
		keys = append(keys, f.Name)
		vals = append(vals, r.state[i])
	}
	v, _ := types.MakeMap(keys, vals)
	return v
}

// superstep executes step r.step+1. It returns a non-nil Result or error
// when the run stops inside the step.
func (r *run) superstep(ctx context.Context) (*Result, error) {
	s := r.step + 1
	// Host tasks run under the run's host context, which a storage failure
	// cancels (the run then returns).
	stepCtx, cancel := ctx, context.CancelFunc(func() {})
	if r.g.anyHost {
		if r.hostCancel == nil {
			r.hostCtx, r.hostCancel = context.WithCancel(ctx)
		}
		stepCtx, cancel = r.hostCtx, r.hostCancel
	}
	r.plan(stepCtx, s)
	defer r.releasePlans()
	if r.o.Emit != nil {
		for i := range r.plans {
			r.emit(Event{Kind: EventNodeStarted, Step: s, Node: r.paths[r.plans[i].node]})
		}
	}
	r.execute(stepCtx, cancel, s)

	// Stop without committing on a storage failure, a pending decision or
	// cancellation: the durable state stays at the previous step, and the
	// pending writes of the nodes that finished let a resume skip them.
	var decisions []PendingDecision
	for i := range r.tasks {
		switch t := &r.tasks[i]; t.out.kind {
		case outAbort:
			return nil, t.out.abort
		case outDecision:
			decisions = append(decisions, *t.out.decision)
		}
	}
	if err := ctx.Err(); err != nil {
		return r.finish(StatusCanceled, &Error{Kind: KindCanceled, Message: err.Error(), Err: err})
	}
	if len(decisions) > 0 {
		return r.needsDecision(decisions)
	}

	// Merge in program order.
	r.newWait = r.newWait[:0]
	r.newParked = nil
	for pi := range r.plans {
		if e := r.merge(s, &r.plans[pi]); e != nil {
			r.undoMerge()
			return r.finish(StatusFailed, e)
		}
	}
	if r.journaling {
		for i := range r.tasks {
			r.stepJournal = append(r.stepJournal, r.tasks[i].journal...)
		}
	}
	if r.o.Emit != nil && len(r.ops) > 0 {
		r.emit(Event{Kind: EventStateDelta, Step: s, Changes: r.changes()})
	}

	// Route in program order.
	r.next = r.next[:0]
	for pi := range r.plans {
		pl := &r.plans[pi]
		var e *Error
		switch pl.state {
		case planCompleted:
			e = r.safeRoute(pl.node)
		case planCaught:
			r.activate(pl.node, r.g.g.Nodes[pl.node].Catch)
		}
		if e != nil {
			r.undoMerge()
			return r.finish(StatusFailed, e)
		}
	}
	r.waiting, r.newWait = r.newWait, r.waiting
	r.parked, r.newParked = r.newParked, nil
	r.finishFrontier()
	r.step = s
	r.answers, r.subAnswers, r.expired, r.restored, r.decisions = nil, nil, nil, nil, nil
	if err := r.commit(ctx, false); err != nil {
		return nil, err
	}
	return nil, nil
}

// plan turns the frontier into tasks.
func (r *run) plan(ctx context.Context, s uint64) {
	// Every slot of r.tasks up to its capacity is zero after this (addTask
	// relies on it): the slots past the previous step's are still unused.
	clear(r.tasks) // drop the previous step's values and journals
	r.tasks = slices.Grow(r.tasks[:0], len(r.frontier))
	r.plans = slices.Grow(r.plans[:0], len(r.frontier))
	clear(r.wbuf)
	r.wbuf = r.wbuf[:0]
	for _, ni := range r.frontier {
		nd := &r.g.g.Nodes[ni]
		pl := nodePlan{node: ni, first: len(r.tasks)}
		pi := int32(len(r.plans))
		if pn := r.parkedNode(ni); pn != nil {
			r.planParked(pn, pi, &pl)
			if nd.Kind == bytecode.NodeMap && pl.n > 0 {
				pl.ctx, pl.cancel = context.WithCancel(ctx)
				if c := int(nd.Map.Concurrency); c > 0 && c < pl.n {
					pl.sem = make(chan struct{}, c)
				}
			}
			r.plans = append(r.plans, pl)
			continue
		}
		if nd.Kind != bytecode.NodeMap {
			r.addTask(ni, pi, -1, types.Value{}, r.paths[ni])
			pl.n = 1
			r.plans = append(r.plans, pl)
			continue
		}
		list, err := r.evalSafe(r.evals[0], nd.Map.List, nil)
		switch {
		case err != nil:
			pl.err = r.nodeError(ni, err)
		case list.Kind() != types.ValList && !list.IsNull():
			pl.err = &Error{Kind: KindEval, Message: "map over " + list.Kind().String() + ", want list", Node: r.paths[ni]}
		default:
			n := list.Len()
			if n < 0 {
				n = 0
			}
			pl.n = n
			if n > 0 {
				pl.ctx, pl.cancel = context.WithCancel(ctx)
				if c := int(nd.Map.Concurrency); c > 0 && c < n {
					pl.sem = make(chan struct{}, c)
				}
			}
			base := r.paths[ni] + "/"
			for i := 0; i < n; i++ {
				r.addTask(ni, pi, i, list.Elem(i), base+strconv.Itoa(i))
			}
		}
		r.plans = append(r.plans, pl)
	}
}

// addTask appends a task to r.tasks, filling a cleared slot in place
// (plan clears r.tasks first) rather than copying a whole task.
func (r *run) addTask(node, plan int32, item int, local types.Value, id string) {
	if n := len(r.tasks); n < cap(r.tasks) {
		r.tasks = r.tasks[:n+1]
	} else {
		r.tasks = append(r.tasks, task{})
	}
	t := &r.tasks[len(r.tasks)-1]
	t.node, t.plan, t.item, t.local, t.id = node, plan, item, local, id
	if r.restored != nil {
		if rt, ok := r.restored[id]; ok {
			t.restored, t.out, t.journal = true, rt.out, rt.journal
		}
	}
}

func (r *run) releasePlans() {
	for i := range r.plans {
		if c := r.plans[i].cancel; c != nil {
			c()
		}
	}
}

// execute runs the step's tasks: pure ones inline, host calls on workers.
func (r *run) execute(ctx context.Context, cancel context.CancelFunc, s uint64) {
	r.hostIdx = r.hostIdx[:0]
	for i := range r.tasks {
		t := &r.tasks[i]
		if t.restored {
			continue
		}
		if r.g.host[t.node] {
			r.hostIdx = append(r.hostIdx, i)
			continue
		}
		r.runPure(r.evals[0], t, s)
	}
	n := len(r.hostIdx)
	r.parallel = n > 1
	r.argArena()
	if n == 1 {
		r.runHost(ctx, cancel, r.evals[0], &r.tasks[r.hostIdx[0]], s)
		return
	}
	if n == 0 {
		return
	}
	// The scheduler goroutine takes part; the run's pool supplies the
	// other workers, woken one at a time (workerPool).
	helpers := min(r.o.Workers, n) - 1
	r.pool.init(r)
	job := &stepJob{ctx: ctx, cancel: cancel, s: s, n: int64(n), helpers: int64(helpers)}
	job.pending.Store(int64(n))
	r.pool.cur.Store(job)
	if !r.drain(job, r.evals[0]) {
		<-r.pool.finished
	}
}

// argArena gives every host task of the step its place in r.args, one
// array per step for all the step's arguments. The array is new each step
// and never reused: a host may keep the Args of its CallRequest.
func (r *run) argArena() {
	total := 0
	for _, i := range r.hostIdx {
		t := &r.tasks[i]
		t.args = int32(total)
		total += len(r.g.g.Nodes[t.node].Call.Args)
	}
	r.args = nil
	if total > 0 {
		r.args = make([]NamedValue, total)
	}
}

// stepJob is one step's host tasks, shared by the workers draining them.
// A job is never reused: a helper that wakes late finds every task of its
// job claimed and touches nothing else.
type stepJob struct {
	ctx     context.Context
	cancel  context.CancelFunc
	s       uint64
	n       int64 // host tasks: r.hostIdx[:n]
	helpers int64 // helpers the step may wake
	next    atomic.Int64
	woken   atomic.Int64
	pending atomic.Int64 // tasks not finished
}

// drain runs host tasks of job until none is left unclaimed. It reports
// whether the caller finished the job's last task. After a worker's
// first claim, while tasks are left unclaimed, it wakes one more helper
// before running its task, so that a step of blocking calls spreads over
// the workers while a step of quick ones wakes few.
func (r *run) drain(job *stepJob, ev *evaluator) (last bool) {
	woke := false
	for {
		i := job.next.Add(1) - 1
		if i >= job.n {
			return last
		}
		if !woke && i+1 < job.n {
			woke = true
			r.pool.wake(job)
		}
		r.runHost(job.ctx, job.cancel, ev, &r.tasks[r.hostIdx[i]], job.s)
		if job.pending.Add(-1) == 0 {
			last = true
		}
	}
}

// workerPool is a run's helper goroutines. The run owns them: they start
// when a step first needs them, at most Options.Workers-1, and stop when
// the run returns (stop).
//
// A step publishes its job in cur; the scheduler goroutine and each helper
// wake at most one more helper (drain), up to the job's helpers, starting
// one when none is idle. The scheduler waits for the job's tasks, not for
// the helpers: the helper that finishes the last task signals finished.
// Invariants: a wake token only ever leads a helper to cur's job, every
// task is claimed exactly once (job.next), and finished receives exactly
// one signal per job that the scheduler did not finish itself.
type workerPool struct {
	tokens   chan struct{} // wake tokens; a token may outlive its step
	finished chan struct{}
	cur      atomic.Pointer[stepJob]
	idle     atomic.Int32 // helpers waiting for a token
	mu       sync.Mutex   // guards started
	started  int
	max      int
	done     sync.WaitGroup
	r        *run
}

// init prepares the pool before a step's first wake.
func (p *workerPool) init(r *run) {
	if p.tokens == nil {
		p.r, p.max = r, r.o.Workers-1
		p.tokens = make(chan struct{}, r.o.Workers)
		p.finished = make(chan struct{}, 1)
	}
}

// wake wakes one helper for job unless it has woken all it may, starting
// a helper when none is idle. A full token buffer already holds enough
// wake-ups.
func (p *workerPool) wake(job *stepJob) {
	if job.woken.Add(1) > job.helpers {
		return
	}
	if p.idle.Load() == 0 {
		p.mu.Lock()
		if p.started < p.max {
			p.started++
			p.done.Go(p.helper)
		}
		p.mu.Unlock()
	}
	select {
	case p.tokens <- struct{}{}:
	default:
	}
}

// helper is a helper goroutine: on each token it drains cur's job.
func (p *workerPool) helper() {
	var ev *evaluator
	for {
		p.idle.Add(1)
		_, ok := <-p.tokens
		p.idle.Add(-1)
		if !ok {
			return
		}
		job := p.cur.Load()
		if job.next.Load() >= job.n {
			continue
		}
		if ev == nil {
			ev = newEvaluator(p.r.m, p.r.o.EvalBudget)
		}
		if p.r.drain(job, ev) {
			p.finished <- struct{}{}
		}
	}
}

// stop ends the helpers and waits for them. No step runs, so no helper
// is being started.
func (p *workerPool) stop() {
	if p.tokens != nil {
		close(p.tokens)
		p.done.Wait()
		p.tokens, p.finished, p.started = nil, nil, 0
		p.cur.Store(nil)
	}
}

// runPure executes a set, join or interrupt node.
func (r *run) runPure(ev *evaluator, t *task, s uint64) {
	defer r.recoverTask(t)
	ev.done = nil
	nd := &r.g.g.Nodes[t.node]
	switch nd.Kind {
	case bytecode.NodeSet:
		// Writes of pure tasks go to the step's arena (r.wbuf), not to a
		// slice per node.
		start := len(r.wbuf)
		for _, a := range nd.Set {
			v, err := ev.eval(a.Code, r.state, nil)
			if err != nil {
				t.out = outcome{kind: outFailed, err: r.nodeError(t.node, err)}
				return
			}
			w, err := r.fieldWrite(int(a.Field), v, false)
			if err != nil {
				t.out = outcome{kind: outFailed, err: &Error{Kind: KindEval, Message: err.Error(), Node: t.id}}
				return
			}
			r.wbuf = append(r.wbuf, w)
		}
		t.out = outcome{kind: outOK, writes: r.wbuf[start:len(r.wbuf):len(r.wbuf)]}
	case bytecode.NodeInterrupt:
		if v, ok := r.answers[t.node]; ok {
			t.out = outcome{kind: outOK}
			if nd.Into != bytecode.None {
				w, err := r.fieldWrite(int(nd.Into), v, false)
				if err != nil {
					t.out = outcome{kind: outFailed, err: &Error{Kind: KindEval, Message: err.Error(), Node: t.id}}
					return
				}
				t.out.writes = []write{w}
			}
			if r.journaling {
				t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Kind: JournalResume, Value: v})
			}
			return
		}
		if r.expired[t.node] {
			// Nobody answered in time: the timeout routes to the else
			// target (the node's catch route).
			e := &Error{Kind: KindTimeout, Message: "no answer within " + nd.Timeout.String(), Node: t.id}
			t.out = outcome{kind: outFailed, err: e}
			if r.journaling {
				t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Kind: JournalResume, Err: e})
			}
			return
		}
		for _, w := range r.waiting {
			if w.node == t.node {
				t.out = outcome{kind: outInterrupt, prompt: w.it.Prompt, due: w.due}
				return
			}
		}
		v, err := ev.eval(nd.Interrupt.Prompt, r.state, nil)
		if err != nil {
			t.out = outcome{kind: outFailed, err: r.nodeError(t.node, err)}
			return
		}
		b, err := types.AppendText(nil, v)
		if err != nil {
			t.out = outcome{kind: outFailed, err: &Error{Kind: KindEval, Message: "prompt: " + err.Error(), Node: t.id}}
			return
		}
		t.out = outcome{kind: outInterrupt, prompt: string(b)}
		if nd.Timeout > 0 {
			t.out.due = r.now(t, s).Add(nd.Timeout)
		}
	case bytecode.NodeWait:
		r.runWait(ev, t, nd, s)
	default: // join (start and end never run)
		t.out = outcome{kind: outOK}
	}
}

// runHost executes a call node or one map item: its arguments, then the
// call under the node's policies (policy.go).
func (r *run) runHost(ctx context.Context, cancelStep context.CancelFunc, ev *evaluator, t *task, s uint64) {
	defer r.recoverTask(t)
	pl := &r.plans[t.plan]
	if pl.ctx != nil {
		ctx = pl.ctx
		if pl.sem != nil {
			select {
			case pl.sem <- struct{}{}:
				defer func() { <-pl.sem }()
			case <-ctx.Done():
			}
		}
		if err := ctx.Err(); err != nil {
			t.out = outcome{kind: outFailed, err: &Error{Kind: KindCanceled, Message: "canceled", Node: t.id}}
			return
		}
	}
	nd := &r.g.g.Nodes[t.node]
	if t.item < 0 && r.pausedCall(t, s) {
		return
	}
	ev.done = ctx.Done()
	var locals []types.Value
	if t.item >= 0 {
		locals = []types.Value{t.local}
	}
	k := int(t.args)
	args := r.args[k : k+len(nd.Call.Args) : k+len(nd.Call.Args)]
	for i, a := range nd.Call.Args {
		v, err := ev.eval(a.Code, r.state, locals)
		if err != nil {
			t.out = outcome{kind: outFailed, err: r.nodeError(t.node, err)}
			r.itemFailed(pl, t)
			return
		}
		args[i] = NamedValue{Name: a.Name, Value: v}
	}
	r.call(ctx, t, nd, args, s)
	switch t.out.kind {
	case outFailed:
		r.itemFailed(pl, t)
	case outAbort:
		cancelStep()
	case outOK:
		if r.ckpt != nil && r.parallel && r.replay == nil {
			if err := r.putPending(ctx, s, t); err != nil {
				t.out = outcome{kind: outAbort, abort: err}
				cancelStep()
			}
		}
	}
}

// pausedCall handles a call task whose node waits on its pause: with an
// answer the call runs again with it (t.resume); without one the task
// waits on (true), the host not called.
func (r *run) pausedCall(t *task, s uint64) bool {
	i := slices.IndexFunc(r.waiting, func(w waitingInterrupt) bool { return w.node == t.node })
	if i < 0 {
		return false
	}
	w := r.waiting[i]
	v, ok := r.answers[t.node]
	if !ok {
		t.out = outcome{kind: outInterrupt, prompt: w.it.Prompt, data: w.it.Data}
		return true
	}
	t.resume = &CallResume{Value: v, Data: w.it.Data}
	if r.journaling {
		t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Kind: JournalResume, Value: v})
	}
	return false
}

// itemFailed cancels the other items of a map whose item failed.
func (r *run) itemFailed(pl *nodePlan, t *task) {
	if t.item >= 0 && pl.cancel != nil && t.out.err.Kind != KindCanceled {
		pl.cancel()
	}
}

// recoverTask is the worker boundary: a panic in a host, a builtin function
// or the VM itself becomes the node's `internal` error instead of reaching
// the caller.
func (r *run) recoverTask(t *task) {
	if p := recover(); p != nil {
		t.out = outcome{kind: outFailed, err: &Error{Kind: KindInternal, Message: fmt.Sprintf("panic: %v", p), Node: t.id}}
	}
}

// evalSafe evaluates on the scheduler goroutine, turning a panic of a
// builtin function into an error.
func (r *run) evalSafe(ev *evaluator, ci uint32, locals []types.Value) (v types.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	ev.done = nil
	return ev.eval(ci, r.state, locals)
}

// nodeError wraps an evaluation failure of node ni.
func (r *run) nodeError(ni int32, err error) *Error {
	return &Error{Kind: KindEval, Message: err.Error(), Node: r.paths[ni], Err: err}
}

// merge applies one node's outcome in program order.
func (r *run) merge(s uint64, pl *nodePlan) *Error {
	ni := pl.node
	nd := &r.g.g.Nodes[ni]
	tasks := r.tasks[pl.first : pl.first+pl.n]
	fail := pl.err
	if fail == nil {
		for i := range tasks {
			o := &tasks[i].out
			if o.kind == outFailed && (fail == nil || fail.Kind == KindCanceled && o.err.Kind != KindCanceled) {
				fail = o.err
			}
		}
	}
	if fail == nil {
		fail = r.sizeError(ni, tasks)
	}
	if fail != nil {
		r.emit(Event{Kind: EventNodeFailed, Step: s, Node: r.paths[ni], Err: fail})
		if nd.Catch == bytecode.None || !catchable(fail.Kind) {
			return fail
		}
		if f := r.g.errorField; f >= 0 {
			if e := r.apply(write{field: int32(f), value: fail.Record()}); e != nil {
				return e
			}
		}
		pl.state = planCaught
		return nil
	}
	if slices.ContainsFunc(tasks, func(t task) bool { return t.out.kind == outSuspend }) {
		r.park(pl, tasks)
		pl.state = planWaiting
		return nil
	}
	if nd.Kind == bytecode.NodeWait && pl.n == 1 && tasks[0].out.kind == outWait {
		r.newWait = append(r.newWait, waitingInterrupt{node: ni, it: Interrupt{ID: r.paths[ni], Node: nd.Name}, due: tasks[0].out.due, wait: true})
		pl.state = planWaiting
		return nil
	}
	if pl.n == 1 && tasks[0].out.kind == outInterrupt {
		due := tasks[0].out.due
		it := Interrupt{ID: r.paths[ni], Node: nd.Name, Prompt: tasks[0].out.prompt, Type: r.interruptType(nd), Data: tasks[0].out.data, Due: due}
		r.newWait = append(r.newWait, waitingInterrupt{node: ni, it: it, due: due})
		pl.state = planWaiting
		return nil
	}
	for i := range tasks {
		for _, w := range tasks[i].out.writes {
			if e := r.apply(w); e != nil {
				e.Node = r.paths[ni]
				return e
			}
		}
	}
	pl.state = planCompleted
	r.emit(Event{Kind: EventNodeFinished, Step: s, Node: r.paths[ni]})
	return nil
}

// safeRoute takes node ni's routes, turning a panic of a builtin function
// in a condition into an error.
func (r *run) safeRoute(ni int32) (e *Error) {
	defer func() {
		if p := recover(); p != nil {
			e = &Error{Kind: KindInternal, Message: fmt.Sprintf("panic: %v", p), Node: r.paths[ni]}
		}
	}()
	return r.route(ni)
}

// route takes node ni's route table on the merged state: every edge of a
// fan-out, or the first `when` edge whose condition holds (`otherwise` last).
func (r *run) route(ni int32) *Error {
	edges := r.g.g.Nodes[ni].Edges
	if len(edges) == 0 {
		return nil
	}
	if edges[0].Kind == bytecode.EdgeAlways {
		for ei := range edges {
			if e := r.traverse(ni, ei); e != nil {
				return e
			}
		}
		return nil
	}
	ev := r.evals[0]
	ev.done = nil
	for ei := range edges {
		e := &edges[ei]
		if e.Kind == bytecode.EdgeWhen {
			v, err := ev.eval(uint32(e.Cond), r.state, nil)
			if err != nil {
				return r.nodeError(ni, err)
			}
			if v.Kind() != types.ValBool {
				return &Error{Kind: KindEval, Message: "route condition is " + v.Kind().String() + ", want bool", Node: r.paths[ni]}
			}
			if !v.Bool() {
				continue
			}
		}
		return r.traverse(ni, ei)
	}
	return &Error{Kind: KindEval, Message: "no route condition holds and there is no otherwise edge", Node: r.paths[ni]}
}

// traverse takes edge ei of node ni, counting bounded loops.
func (r *run) traverse(ni int32, ei int) *Error {
	e := &r.g.g.Nodes[ni].Edges[ei]
	target := int32(e.Target)
	if e.Max > 0 {
		slot := r.g.edgeBase[ni] + int32(ei)
		if r.loops[slot] >= e.Max {
			if e.Else == bytecode.None {
				return &Error{Kind: KindLoopLimit, Node: r.paths[ni],
					Message: fmt.Sprintf("edge to %s taken %d times (max %d) and it has no else", r.g.g.Nodes[target].Name, r.loops[slot], e.Max)}
			}
			target = e.Else
		} else {
			r.saveLoop(slot)
			r.loops[slot]++
		}
	}
	r.activate(ni, target)
	return nil
}

// activate makes `to` active in the next step, going through its join
// barrier if it is a join. A join counts arrivals per predecessor: `join
// all` fires when every predecessor has arrived; `join any` fires at the
// first arrival of a wave, and a wave ends when every predecessor has
// arrived or one arrives a second time. An arrival from a node that is not
// a listed predecessor (a catch route) activates the join directly.
func (r *run) activate(from, to int32) {
	if to == r.g.end {
		return
	}
	jb := r.g.joinBase[to]
	if jb < 0 {
		r.push(to)
		return
	}
	pos := r.g.predPos(to, from)
	if pos < 0 {
		r.push(to)
		return
	}
	j := &r.g.g.Nodes[to].Join
	r.saveJoin(to)
	arr := r.arrived[jb : int(jb)+len(j.Preds)]
	ji := r.g.joinIndex[to]
	if j.Mode == bytecode.JoinAll {
		arr[pos] = true
		if !slices.Contains(arr, false) {
			clear(arr)
			r.push(to)
		}
		return
	}
	if arr[pos] {
		clear(arr)
		r.fired[ji] = false
	}
	arr[pos] = true
	if !r.fired[ji] {
		r.fired[ji] = true
		r.push(to)
	}
	if !slices.Contains(arr, false) {
		clear(arr)
		r.fired[ji] = false
	}
}

func (r *run) push(n int32) {
	if !r.activated[n] {
		r.activated[n] = true
		r.next = append(r.next, n)
	}
}

// interruptType is the type an interrupt of node nd takes: an interrupt
// node's declared resume type, JSON for a paused call.
func (r *run) interruptType(nd *bytecode.Node) *types.Type {
	if nd.Kind == bytecode.NodeInterrupt {
		return r.m.prog.Types[nd.Interrupt.Resume]
	}
	return types.JSONType
}

// finishFrontier makes r.next (plus the interrupts still waiting) the
// frontier, in program order.
func (r *run) finishFrontier() {
	for _, w := range r.waiting {
		r.push(w.node)
	}
	for _, p := range r.parked {
		r.push(p.node)
	}
	if !slices.IsSorted(r.next) {
		slices.Sort(r.next)
	}
	for _, n := range r.next {
		r.activated[n] = false
	}
	r.frontier, r.next = r.next, r.frontier[:0]
}

// needsDecision stops the run before the step commits: the run resumes
// from the previous checkpoint with decisions for the listed side effects.
func (r *run) needsDecision(ds []PendingDecision) (*Result, error) {
	res, _ := r.finish(StatusNeedsDecision, nil)
	res.Decisions = ds
	for i := range r.tasks {
		t := &r.tasks[i]
		if t.out.kind != outOK || !r.g.host[t.node] {
			continue
		}
		if pw, err := r.pendingWrite(r.step+1, t); err == nil {
			res.Pending = append(res.Pending, pw)
		}
	}
	return res, nil
}

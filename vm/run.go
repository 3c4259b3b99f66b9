package vm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Status is where a run stands when Run, Resume or Replay returns. The
// strings match the store's run statuses.
type Status string

// Run statuses.
const (
	StatusRunning       Status = "running"        // in a StepRecord: more steps follow
	StatusCompleted     Status = "completed"      // no branch is active
	StatusInterrupted   Status = "interrupted"    // waiting on Interrupts; resume with answers
	StatusNeedsDecision Status = "needs_decision" // a side effect may have happened; resume with Decisions
	StatusFailed        Status = "failed"         // Err says why
	StatusCanceled      Status = "canceled"       // the context was canceled
)

// Defaults.
const (
	DefaultMaxSteps      = 10_000
	DefaultWorkers       = 32
	DefaultSnapshotEvery = 256
)

// Options configure one run. Only Host is needed for graphs that call out;
// everything else has a default or is off when nil.
type Options struct {
	// RunID identifies the run in checkpoints, idempotency keys and events.
	RunID string
	// Input is written to the graph's input field (converted to its type)
	// when the graph declares one and Input is not null.
	Input types.Value
	// Fields set state fields by name before the run starts, after defaults
	// and input (a graph node's arguments, when the host runs a sub-graph).
	Fields []NamedValue
	// PathPrefix is put in front of node paths ("parent/node" for a
	// sub-graph run), so that interrupt ids and idempotency keys of nested
	// runs stay unique.
	PathPrefix string

	Host    Host
	Clock   Clock   // required when a node has a timeout, backoff or cache ttl
	Entropy Entropy // required when a node has jittered backoff
	Cache   Cache   // nil: the machine's in-memory cache
	// Checkpointer makes the run durable (nil: in memory only). With it,
	// the run also journals every host result, random draw and clock read.
	Checkpointer Checkpointer
	// Emit receives events synchronously from the scheduler goroutine.
	Emit func(Event)

	Workers       int    // concurrent host calls per step (default DefaultWorkers)
	MaxSteps      uint64 // supersteps per run before it fails with max_steps (default DefaultMaxSteps)
	EvalBudget    int    // instructions per evaluation (default DefaultEvalBudget)
	SnapshotEvery int    // a full checkpoint at least every this many steps (default DefaultSnapshotEvery)
}

// Interrupt is a pending interrupt: the run waits for a value of Type to
// resume it. ID ("graph/node") is stable across program versions.
type Interrupt struct {
	ID     string
	Node   string
	Prompt string
	Type   *types.Type
	Due    time.Time // an interrupt with a timeout: when it routes to its else target (zero: never)
	// Data is what a paused call recorded (Pause.Data); nil for an
	// interrupt node.
	Data []byte
	// Confirm marks a tool confirmation of a paused llm loop; Tool is
	// then the tool it asks about (a Program.Tools index) and Type is
	// ConfirmType.
	Confirm bool
	Tool    int
}

// Timer is a deadline a waiting run has: a wait node's, or an interrupt's
// timeout (spec/vm.md, "Timers"). Resuming the run at or after Due fires it.
type Timer struct {
	ID   string // the node's path id
	Node string
	Due  time.Time
	Wait bool // a wait node (else an interrupt's timeout)
}

// PendingDecision is a side effect whose intent was recorded by an earlier
// process that did not record its result: it may or may not have happened.
type PendingDecision struct {
	ID       string // the task path ("graph/node" or "graph/node/3"): the key of ResumeInput.Decisions
	Node     string
	MapIndex int
	Attempt  uint32
	Key      string // the idempotency key the earlier attempt used
}

// DecisionAction says how to settle a PendingDecision.
type DecisionAction uint8

// Decision actions.
const (
	DecideRerun  DecisionAction = iota + 1 // call again with the same idempotency key
	DecideResult                           // the effect happened; Value is its result (recorded, then used)
	DecideFail                             // the attempt failed (tool_error, no further retries)
)

// Decision settles a PendingDecision.
type Decision struct {
	Action DecisionAction
	Value  types.Value
}

// Result is the outcome of Run, Resume or Replay.
type Result struct {
	Run    string
	Status Status
	Step   uint64        // the last committed step (0: the initial checkpoint)
	State  []types.Value // the state after Step, by field index (shared with Snapshot; do not modify)
	// Output is the graph's output field, or, without one, the whole state
	// as a map from field name to value.
	Output     types.Value
	Interrupts []Interrupt       // StatusInterrupted
	Timers     []Timer           // StatusInterrupted: the deadlines the run waits for, earliest first
	Decisions  []PendingDecision // StatusNeedsDecision
	Err        *Error            // StatusFailed, StatusCanceled
	// Snapshot resumes the run in memory (Resume with From); Pending holds
	// the writes of the nodes that finished in the step a needs_decision
	// stopped, so that resuming does not re-run them.
	Snapshot *Snapshot
	Pending  []PendingWrite
}

// Run starts a run of graph gi.
//
// The returned error is nil for completed, interrupted and needs_decision
// runs; it is the run's *Error for failed and canceled ones (Result says
// more). A storage failure returns a nil Result and the error: the run's
// durable state is whatever the Checkpointer committed, and Resume continues
// from there.
func (m *Machine) Run(ctx context.Context, gi int, opts Options) (*Result, error) {
	r, err := m.newRun(gi, &opts, false)
	if err != nil {
		return nil, err
	}
	if err := r.init(); err != nil {
		return nil, err
	}
	if err := r.commit(ctx, true); err != nil {
		return nil, err
	}
	return r.loop(ctx)
}

// Run loads p with the default builtins and runs graph gi: a convenience for
// one-off runs (a server loads once with New and reuses the Machine).
func Run(ctx context.Context, p *bytecode.Program, gi int, opts Options) (*Result, error) {
	m, err := New(p, nil)
	if err != nil {
		return nil, err
	}
	return m.Run(ctx, gi, opts)
}

// newRun checks the options against graph gi and applies defaults.
func (m *Machine) newRun(gi int, o *Options, replay bool) (*run, error) {
	if gi < 0 || gi >= len(m.graphs) {
		return nil, fmt.Errorf("vm: graph %d out of range", gi)
	}
	g := &m.graphs[gi]
	if !replay {
		if o.Checkpointer != nil && o.RunID == "" {
			return nil, errors.New("vm: a durable run needs a RunID")
		}
		if g.needsClock && o.Clock == nil {
			return nil, fmt.Errorf("vm: graph %s needs a Clock (a node has a timeout, backoff or cache ttl)", g.g.Name)
		}
		if g.needsRand && o.Entropy == nil {
			return nil, fmt.Errorf("vm: graph %s needs an Entropy source (a node has jittered backoff)", g.g.Name)
		}
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.Cache == nil {
		m.cacheOnce.Do(func() { m.cache = NewMemCache(4096) })
		o.Cache = m.cache
	}
	r := &run{m: m, g: g, o: *o, id: o.RunID, paths: g.paths}
	if o.PathPrefix != "" {
		r.paths = make([]string, len(g.paths))
		for i, p := range g.paths {
			r.paths[i] = o.PathPrefix + "/" + p
		}
	}
	r.ckpt = o.Checkpointer
	r.journaling = r.ckpt != nil
	r.takeScratch(o.EvalBudget)
	nf := len(g.fields)
	r.dirty = make([]int32, nf)
	for i := range r.dirty {
		r.dirty[i] = -1
	}
	r.activated = make([]bool, len(g.g.Nodes))
	return r, nil
}

// init builds the initial state (defaults, input, fields) and the first
// frontier: the routes of the start node, taken on the initial state.
func (r *run) init() error {
	g := r.g
	r.state = append([]types.Value(nil), g.defaults...)
	r.arrived = make([]bool, g.nArrive)
	r.fired = make([]bool, g.nJoins)
	r.loops = make([]uint32, g.nEdges)
	set := func(f int, v types.Value, what string) error {
		c, err := types.Convert(v, g.fieldTypes[f])
		if err != nil {
			return fmt.Errorf("vm: %s for field %s: %w", what, g.fields[f].Name, err)
		}
		if err := g.fields[f].CheckSize(c); err != nil {
			return fmt.Errorf("vm: %s: %w", what, err)
		}
		r.state[f] = c
		return nil
	}
	if r.replay != nil {
		in := r.replay.input
		for i := 0; i < in.Len() && in.Kind() == types.ValMap; i++ {
			k, v := in.MapEntry(i)
			f, err := strconv.Atoi(k)
			if err != nil || f < 0 || f >= len(r.state) {
				return fmt.Errorf("vm: replay: journal input names field %q", k)
			}
			r.state[f] = v
		}
	}
	if g.g.Input != bytecode.None && !r.o.Input.IsNull() {
		if err := set(int(g.g.Input), r.o.Input, "input"); err != nil {
			return err
		}
	}
	for _, nv := range r.o.Fields {
		f := g.fieldIndex(nv.Name)
		if f < 0 {
			return fmt.Errorf("vm: graph %s has no state field %s", g.g.Name, nv.Name)
		}
		if err := set(f, nv.Value, "value"); err != nil {
			return err
		}
	}
	if r.journaling {
		in, err := initialValue(r.state, g.defaults)
		if err != nil {
			return err
		}
		r.stepJournal = append(r.stepJournal, JournalEntry{Kind: JournalInput, Value: in})
	}
	r.next = r.next[:0]
	if e := r.safeRoute(r.g.start); e != nil {
		return e
	}
	r.finishFrontier()
	return nil
}

// initialValue records the fields that differ from their defaults, for the
// journal's input entry: a map from field index (as a decimal string) to
// value.
func initialValue(state, defaults []types.Value) (types.Value, error) {
	var keys []string
	var vals []types.Value
	for i := range state {
		if state[i] != defaults[i] {
			keys = append(keys, strconv.Itoa(i))
			vals = append(vals, state[i])
		}
	}
	return types.MakeMap(keys, vals)
}

package vm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// Checkpointer makes runs durable. The Runner backs it with the store (one
// synced batch per CommitStep); MemStore is the in-memory implementation.
// Byte slices passed in are never modified by the VM afterwards, so an
// implementation may keep them. Methods are called concurrently from the
// step's workers (PutPendingWrite and the effect methods) and from the
// scheduler (CommitStep), never for the same run and step after CommitStep.
type Checkpointer interface {
	// CommitStep durably records one superstep. Steps of a run strictly
	// increase and its first record is Full. It also drops the run's pending
	// writes at or below rec.Step.
	CommitStep(ctx context.Context, rec *StepRecord) error
	// PutPendingWrite durably records the outcome of a task that finished
	// inside a step not yet committed, so that a resumed step does not run
	// it again. The VM writes them only for steps with more than one host
	// task (a single task's step commits right after it finishes).
	PutPendingWrite(ctx context.Context, run string, w PendingWrite) error

	// LookupEffect reports what is recorded for a side effect attempt:
	// whether its intent exists, its idempotency key, and its result.
	LookupEffect(ctx context.Context, run, effect string, attempt uint32) (EffectState, error)
	// PutIntent durably records that a side effect attempt is about to run
	// and returns its idempotency key (the same key when called again).
	PutIntent(ctx context.Context, run, effect string, attempt uint32) (key string, err error)
	// PutEffectResult records the result of the effect keyed key, once.
	PutEffectResult(ctx context.Context, key string, result []byte) error
}

// EffectState is what LookupEffect found.
type EffectState struct {
	Intent bool   // an intent was recorded
	Key    string // its idempotency key
	Done   bool   // a result was recorded
	Result []byte // the recorded result (encodeEffect)
}

// StepRecord is the durable result of one superstep (spec/vm.md,
// "Checkpoint records"). Its byte fields are canonical value encodings
// (types.AppendValue); they map one to one onto the store's checkpoint.
type StepRecord struct {
	Run  string
	Step uint64 // 0 is the initial checkpoint (input written, start routed)
	Full bool   // State is the whole state, else a delta over the previous record
	// State is the full state or the delta; Frontier the nodes of the next
	// step; Counters the join and loop counters; Interrupts the pending
	// interrupts (nil when none).
	State, Frontier, Counters, Interrupts []byte
	ProgramHash, SchemaHash               [32]byte
	Status                                Status
	Time                                  time.Time // Clock.Now() when a Clock is set
	// Journal holds the step's journal entries (EncodeJournalEntry), in
	// program order; they commit atomically with the checkpoint.
	Journal [][]byte
}

// PendingWrite is the recorded outcome of one task (a node, or a map item)
// inside the uncommitted step Step. Task is the task path ("graph/node",
// "graph/node/3"); Data encodes its writes and journal entries.
type PendingWrite struct {
	Step uint64
	Task string
	Data []byte
}

// IdempotencyKey returns the key of a side effect: "esc(run):esc(effect):
// attempt", where esc %-escapes '%', ':' and bytes outside printable ASCII,
// and effect is "task@step". It is the store's key format, so a Runner may
// derive keys either way.
func IdempotencyKey(run, effect string, attempt uint32) string {
	var b strings.Builder
	escapeKey(&b, run)
	b.WriteByte(':')
	escapeKey(&b, effect)
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(uint64(attempt), 10))
	return b.String()
}

func escapeKey(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == ':' || c <= ' ' || c >= 0x7F {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}

// Snapshot is a run's checkpoint in memory: what Resume needs to continue
// it without a Checkpointer. It is immutable; Resume copies what it changes.
type Snapshot struct {
	graph    int
	hash     [32]byte
	run      string
	step     uint64
	state    []types.Value
	frontier []int32
	waiting  []waitingInterrupt
	parked   []*parkedNode
	arrived  []bool
	fired    []bool
	loops    []uint32
}

// Step returns the snapshot's step.
func (s *Snapshot) Step() uint64 { return s.step }

// Run returns the run id the snapshot belongs to.
func (s *Snapshot) Run() string { return s.run }

// snapshot captures the run's committed state (shared: the run is over).
func (r *run) snapshot() *Snapshot {
	return &Snapshot{
		graph: r.g.index, hash: r.m.hash, run: r.id, step: r.step,
		state: r.state, frontier: r.frontier, waiting: r.waiting, parked: r.parked,
		arrived: r.arrived, fired: r.fired, loops: r.loops,
	}
}

// commit records the step just merged (or the initial state) with the
// Checkpointer, then clears the step's delta.
func (r *run) commit(ctx context.Context, initial bool) error {
	defer r.resetStep()
	if r.ckpt == nil {
		return nil
	}
	rec := &StepRecord{Run: r.id, Step: r.step, ProgramHash: r.m.hash, SchemaHash: r.g.schemaHash, Status: StatusRunning}
	switch {
	case r.isWaiting():
		rec.Status = StatusInterrupted
	case len(r.frontier) == 0:
		rec.Status = StatusCompleted
	}
	var err error
	full := initial || r.fullBytes == 0 || r.sinceFull+1 >= r.o.SnapshotEvery
	if !full {
		if rec.State, err = r.encodeDelta(); err != nil {
			return err
		}
		full = r.chainBytes+len(rec.State) > r.fullBytes
	}
	if full {
		if rec.State, err = encodeList(r.state); err != nil {
			return fmt.Errorf("vm: encode state of step %d: %w", r.step, err)
		}
		rec.Full = true
		r.fullBytes, r.chainBytes, r.sinceFull = len(rec.State), 0, 0
	} else {
		r.chainBytes += len(rec.State)
		r.sinceFull++
	}
	if rec.Frontier, err = r.encodeFrontier(); err == nil {
		if rec.Counters, err = r.encodeCounters(); err == nil {
			rec.Interrupts, err = r.encodeInterrupts()
		}
	}
	if err != nil {
		return fmt.Errorf("vm: encode checkpoint of step %d: %w", r.step, err)
	}
	if len(r.stepJournal) > 0 {
		rec.Journal = make([][]byte, len(r.stepJournal))
		for i, e := range r.stepJournal {
			if rec.Journal[i], err = EncodeJournalEntry(e); err != nil {
				return fmt.Errorf("vm: encode journal of step %d: %w", r.step, err)
			}
		}
	}
	if r.o.Clock != nil && r.replay == nil {
		rec.Time = r.o.Clock.Now()
	}
	if err := r.ckpt.CommitStep(ctx, rec); err != nil {
		return storageError("commit step "+strconv.FormatUint(r.step, 10)+" of run "+r.id, err)
	}
	return nil
}

func encodeList(xs []types.Value) ([]byte, error) {
	return types.AppendValue(nil, types.MakeList(xs))
}

// encodeDelta encodes the step's delta: a list of (field, op, value)
// triples in field order.
func (r *run) encodeDelta() ([]byte, error) {
	vals := make([]types.Value, 0, 3*len(r.ops))
	for f := range r.dirty {
		i := r.dirty[f]
		if i < 0 {
			continue
		}
		op := &r.ops[i]
		v := op.val
		if op.op == opAppend {
			v = types.MakeList(op.elems) // encoded right away; the scratch slice is not retained
		}
		vals = append(vals, types.MakeInt(int64(f)), types.MakeInt(int64(op.op)), v)
	}
	b, err := types.AppendValue(nil, types.MakeList(vals))
	if err != nil {
		return nil, fmt.Errorf("vm: encode delta of step %d: %w", r.step, err)
	}
	return b, nil
}

func (r *run) encodeFrontier() ([]byte, error) {
	nodes := make([]int, len(r.frontier))
	for i, n := range r.frontier {
		nodes[i] = int(n)
	}
	return EncodeFrontier(nodes)
}

// encodeCounters encodes the run's counters (EncodeCounters).
func (r *run) encodeCounters() ([]byte, error) {
	c := countersOf(r.arrived, r.fired, r.loops, r.g.bounded)
	return EncodeCounters(c)
}

// countersOf collects a run's non-zero counters; bounded lists the loop
// slots that can move (nil: every slot is looked at).
func countersOf(arrived, fired []bool, loops []uint32, bounded []int32) Counters {
	var c Counters
	for i, b := range arrived {
		if b {
			c.Arrived = append(c.Arrived, i)
		}
	}
	for i, b := range fired {
		if b {
			c.Fired = append(c.Fired, i)
		}
	}
	if bounded == nil {
		for i, n := range loops {
			if n > 0 {
				c.Loops = append(c.Loops, LoopCount{Slot: i, Count: n})
			}
		}
		return c
	}
	for _, i := range bounded {
		if n := loops[i]; n > 0 {
			c.Loops = append(c.Loops, LoopCount{Slot: int(i), Count: n})
		}
	}
	return c
}

// encodeInterrupts encodes what the run waits on (EncodeInterrupts): its
// interrupt and wait nodes, then its parked tasks (suspend.go), nil when
// none.
func (r *run) encodeInterrupts() ([]byte, error) {
	vals, err := r.interruptValues()
	if err != nil || vals == nil {
		return nil, err
	}
	return types.AppendValue(nil, types.MakeList(vals))
}

func (r *run) interruptValues() ([]types.Value, error) {
	if !r.isWaiting() {
		return nil, nil
	}
	ins := make([]RecordedInterrupt, len(r.waiting))
	for i, w := range r.waiting {
		ins[i] = RecordedInterrupt{ID: w.it.ID, Node: int(w.node), Prompt: w.it.Prompt, Data: w.it.Data, Due: w.due, Wait: w.wait}
	}
	vals, err := interruptEntries(ins)
	if err != nil {
		return nil, err
	}
	return r.encodeParked(vals)
}

// pendingWrite encodes task t's outcome: [writes, journal] where writes is
// [field, one, value, ...] (one: the value is a single element of an
// append field) and journal a list of entries.
func (r *run) pendingWrite(s uint64, t *task) (PendingWrite, error) {
	ws := make([]types.Value, 0, 3*len(t.out.writes))
	for _, w := range t.out.writes {
		ws = append(ws, types.MakeInt(int64(w.field)), types.MakeBool(w.one), w.value)
	}
	js := make([]types.Value, len(t.journal))
	for i, e := range t.journal {
		js[i] = e.value()
	}
	b, err := types.AppendValue(nil, types.MakeList([]types.Value{types.MakeList(ws), types.MakeList(js)}))
	if err != nil {
		return PendingWrite{}, fmt.Errorf("vm: encode pending write of %s: %w", t.id, err)
	}
	return PendingWrite{Step: s, Task: t.id, Data: b}, nil
}

func (r *run) putPending(ctx context.Context, s uint64, t *task) error {
	pw, err := r.pendingWrite(s, t)
	if err != nil {
		return err
	}
	if err := r.ckpt.PutPendingWrite(ctx, r.id, pw); err != nil {
		return storageError("put pending write "+t.id, err)
	}
	return nil
}

// encodeEffect encodes a side effect's result: [true, value] or [false,
// error record].
func encodeEffect(v types.Value, herr *Error) ([]byte, error) {
	if herr != nil {
		return types.AppendValue(nil, types.MakeList([]types.Value{types.MakeBool(false), herr.Record()}))
	}
	return types.AppendValue(nil, types.MakeList([]types.Value{types.MakeBool(true), v}))
}

func decodeEffect(b []byte) (types.Value, *Error, error) {
	v, n, err := types.DecodeValue(b)
	if err != nil {
		return types.Value{}, nil, err
	}
	if n != len(b) || v.Kind() != types.ValList || v.Len() != 2 || v.Elem(0).Kind() != types.ValBool {
		return types.Value{}, nil, errors.New("malformed effect result")
	}
	if v.Elem(0).Bool() {
		return v.Elem(1), nil, nil
	}
	if v.Elem(1).Kind() != types.ValRecord {
		return types.Value{}, nil, errors.New("malformed effect error")
	}
	return types.Value{}, errorFromRecord(v.Elem(1)), nil
}

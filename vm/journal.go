package vm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// The journal records everything a run took from outside the program, so
// that Replay re-executes it offline to the identical state: the initial
// fields, every host result (value or error), every entropy draw, every
// clock read that influenced execution, and every resume value. Entries are
// keyed by (step, task, attempt), never by arrival order, so concurrent
// tasks journal deterministically: a step's entries are committed with its
// checkpoint in program order, and a task's entries travel in its pending
// write until then.

// JournalKind says what a journal entry records.
type JournalKind uint8

// Journal entry kinds.
const (
	JournalInput   JournalKind = iota + 1 // Value: the initial fields that differ from the defaults, {"<field index>": value}
	JournalCall                           // the result (Value) or error (Err) of Task's attempt; Final: no retry followed
	JournalRandom                         // an entropy draw (Value: int) for Task's attempt
	JournalClock                          // a clock read (Value: Unix nanoseconds) by Task
	JournalResume                         // the value that resumed interrupt Task (a timer that fired: null, or the timeout error)
	JournalPause                          // Task's attempt paused (Host returned a *Pause): Value [prompt, data]
	JournalSuspend                        // Task's call parked: its sub-run waits on interrupts (Value: their ids)
	journalKindEnd
)

// JournalEntry is one journal record.
type JournalEntry struct {
	Step    uint64
	Task    string
	Attempt uint32
	Kind    JournalKind
	Final   bool
	Value   types.Value
	Err     *Error
}

// value is the entry as a canonical list [step, task, attempt, kind, final,
// value, error record or null].
func (e JournalEntry) value() types.Value {
	var errv types.Value
	if e.Err != nil {
		errv = e.Err.Record()
	}
	return types.MakeList([]types.Value{
		types.MakeInt(int64(e.Step)), types.MakeString(e.Task), types.MakeInt(int64(e.Attempt)),
		types.MakeInt(int64(e.Kind)), types.MakeBool(e.Final), e.Value, errv,
	})
}

// EncodeJournalEntry returns the canonical encoding of e.
func EncodeJournalEntry(e JournalEntry) ([]byte, error) { return types.AppendValue(nil, e.value()) }

// DecodeJournalEntry decodes an entry written by EncodeJournalEntry.
func DecodeJournalEntry(b []byte) (JournalEntry, error) {
	v, n, err := types.DecodeValue(b)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("journal entry: %w", err)
	}
	if n != len(b) {
		return JournalEntry{}, errors.New("journal entry: trailing bytes")
	}
	return journalFromValue(v)
}

func journalFromValue(v types.Value) (JournalEntry, error) {
	bad := errors.New("journal entry: malformed")
	if v.Kind() != types.ValList || v.Len() != 7 {
		return JournalEntry{}, bad
	}
	step, task, att, kind, final, val, errv := v.Elem(0), v.Elem(1), v.Elem(2), v.Elem(3), v.Elem(4), v.Elem(5), v.Elem(6)
	if step.Kind() != types.ValInt || step.Int() < 0 || task.Kind() != types.ValString ||
		att.Kind() != types.ValInt || att.Int() < 0 || att.Int() > 1<<32-1 ||
		kind.Kind() != types.ValInt || kind.Int() <= 0 || kind.Int() >= int64(journalKindEnd) ||
		final.Kind() != types.ValBool || (errv.Kind() != types.ValRecord && !errv.IsNull()) {
		return JournalEntry{}, bad
	}
	e := JournalEntry{Step: uint64(step.Int()), Task: task.Str(), Attempt: uint32(att.Int()),
		Kind: JournalKind(kind.Int()), Final: final.Bool(), Value: val}
	if !errv.IsNull() {
		e.Err = errorFromRecord(errv)
	}
	return e, nil
}

// replayIndex answers a replaying run from a journal.
type replayIndex struct {
	calls   map[journalKey]JournalEntry
	randoms map[journalKey]uint64
	clocks  map[journalKey]int64
	resumes map[uint64][]JournalEntry
	pauses  map[journalKey]Pause
	// suspends are the parked calls; wakes the tasks with an entry in a
	// step (a parked task runs again in a step that journaled it).
	suspends map[journalKey]types.Value
	wakes    map[uint64]map[string]bool
	input    types.Value
}

type journalKey struct {
	step    uint64
	task    string
	attempt uint32
}

func newReplayIndex(entries [][]byte) (*replayIndex, error) {
	idx := &replayIndex{
		calls:    map[journalKey]JournalEntry{},
		randoms:  map[journalKey]uint64{},
		clocks:   map[journalKey]int64{},
		resumes:  map[uint64][]JournalEntry{},
		pauses:   map[journalKey]Pause{},
		suspends: map[journalKey]types.Value{},
		wakes:    map[uint64]map[string]bool{},
	}
	for i, b := range entries {
		e, err := DecodeJournalEntry(b)
		if err != nil {
			return nil, fmt.Errorf("vm: replay: entry %d: %w", i, err)
		}
		k := journalKey{e.Step, e.Task, e.Attempt}
		switch e.Kind {
		case JournalInput:
			idx.input = e.Value
		case JournalCall:
			idx.calls[k] = e
		case JournalRandom:
			idx.randoms[k] = uint64(e.Value.Int())
		case JournalClock:
			idx.clocks[k] = e.Value.Int()
		case JournalResume:
			idx.resumes[e.Step] = append(idx.resumes[e.Step], e)
		case JournalPause:
			if e.Value.Kind() != types.ValList || e.Value.Len() != 2 || e.Value.Elem(0).Kind() != types.ValString || e.Value.Elem(1).Kind() != types.ValString {
				return nil, fmt.Errorf("vm: replay: entry %d: malformed pause", i)
			}
			idx.pauses[k] = Pause{Prompt: e.Value.Elem(0).Str(), Data: []byte(e.Value.Elem(1).Str())}
		case JournalSuspend:
			idx.suspends[k] = e.Value
		}
		if e.Kind == JournalCall || e.Kind == JournalSuspend {
			w := idx.wakes[e.Step]
			if w == nil {
				w = map[string]bool{}
				idx.wakes[e.Step] = w
			}
			w[e.Task] = true
		}
	}
	return idx, nil
}

// call returns the journaled result of a task's attempt.
func (x *replayIndex) call(ctx context.Context, s uint64, task string, attempt uint32) (types.Value, *Error, bool) {
	e, ok := x.calls[journalKey{s, task, attempt}]
	if !ok {
		kind := KindInternal
		if ctx.Err() != nil {
			kind = KindCanceled
		}
		return types.Value{}, &Error{Kind: kind, Node: task,
			Message: "journal has no result for attempt " + strconv.Itoa(int(attempt)) + " in step " + strconv.FormatUint(s, 10)}, true
	}
	if e.Err != nil {
		return types.Value{}, e.Err, e.Final
	}
	return e.Value, nil, false
}

func (x *replayIndex) random(s uint64, task string, attempt uint32) uint64 {
	return x.randoms[journalKey{s, task, attempt}]
}

func (x *replayIndex) now(s uint64, task string) time.Time {
	return time.Unix(0, x.clocks[journalKey{s, task, 0}])
}

// suspended returns the interrupts a parked call of the journal waited on.
func (x *replayIndex) suspended(s uint64, task string, attempt uint32) ([]Interrupt, bool) {
	v, ok := x.suspends[journalKey{s, task, attempt}]
	if !ok {
		return nil, false
	}
	its := make([]Interrupt, 0, v.Len()&^(v.Len()>>63))
	for i := 0; i < v.Len(); i++ {
		if id := v.Elem(i); id.Kind() == types.ValString {
			its = append(its, Interrupt{ID: id.Str()})
		}
	}
	return its, true
}

// replayWakes reports whether the journal runs a parked task in the next
// step.
func (r *run) replayWakes() bool {
	if r.replay == nil {
		return false
	}
	for _, p := range r.parked {
		for _, t := range p.tasks {
			if !t.done && r.replay.touches(r.step+1, t.id) {
				return true
			}
		}
	}
	return false
}

// replayAnswers feeds the resume values journaled for the next step.
func (r *run) replayAnswers() {
	for _, e := range r.replay.resumes[r.step+1] {
		for _, w := range r.waiting {
			if w.it.ID != e.Task {
				continue
			}
			if e.Err != nil || w.wait { // a timer that fired (timer.go)
				if r.expired == nil {
					r.expired = map[int32]bool{}
				}
				r.expired[w.node] = true
				continue
			}
			if r.answers == nil {
				r.answers = map[int32]types.Value{}
			}
			r.answers[w.node] = e.Value
		}
	}
}

// Replay re-executes a run of graph gi offline from its journal (the
// concatenated Journal of its StepRecords, in step order): host results,
// entropy draws and resume values come from the journal, timeouts and
// backoff waits do not happen, and nothing is checkpointed. It reaches the
// identical state, including across interrupts and resumes, and stops where
// the journal ends. opts.Host, Clock, Entropy, Checkpointer and Cache are
// ignored.
func (m *Machine) Replay(ctx context.Context, gi int, journal [][]byte, opts Options) (*Result, error) {
	idx, err := newReplayIndex(journal)
	if err != nil {
		return nil, err
	}
	opts.Host, opts.Clock, opts.Entropy, opts.Checkpointer, opts.Cache = nil, nil, nil, nil, nil
	opts.Input, opts.Fields = types.Value{}, nil
	r, err := m.newRun(gi, &opts, true)
	if err != nil {
		return nil, err
	}
	r.replay = idx
	if err := r.init(); err != nil {
		return nil, err
	}
	r.resetStep()
	return r.loop(ctx)
}

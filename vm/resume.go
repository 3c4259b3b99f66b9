package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// ResumeInput is where a resumed run continues from and what it is given.
type ResumeInput struct {
	// From resumes from an in-memory snapshot (Result.Snapshot); otherwise
	// Chain is the checkpoint chain from the store: the last full record at
	// or before the step to resume, then every later record up to it.
	From  *Snapshot
	Chain []StepRecord
	// Pending are the pending writes of the step after the chain's last
	// (others are ignored): tasks they name are not run again.
	Pending []PendingWrite
	// Answers resume pending interrupts by id ("graph/node"); each value is
	// converted to the interrupt's declared type.
	Answers map[string]types.Value
	// Decisions settle side effects that need one, by task path.
	Decisions map[string]Decision
}

// Resume continues a run of graph gi exactly where its checkpoint left it:
// the state, frontier, join and loop counters and pending interrupts are
// restored, answered interrupts complete with their (converted) values, and
// tasks with pending writes are not re-executed. A checkpoint written by
// other bytecode or another state schema is refused (ErrProgramMismatch)
// naming both hashes; an answer for an unknown interrupt or a value that
// does not convert to its type is an *Error of kind invalid_resume, and
// nothing runs. opts.RunID defaults to the checkpoint's run.
func (m *Machine) Resume(ctx context.Context, gi int, in ResumeInput, opts Options) (*Result, error) {
	if gi < 0 || gi >= len(m.graphs) {
		return nil, fmt.Errorf("vm: graph %d out of range", gi)
	}
	snap := in.From
	if snap == nil {
		var err error
		if snap, err = m.restoreChain(gi, in.Chain); err != nil {
			return nil, err
		}
	} else if snap.hash != m.hash || snap.graph != gi {
		return nil, fmt.Errorf("vm: %w: snapshot of graph %d of program %x, resuming graph %d of program %x",
			ErrProgramMismatch, snap.graph, snap.hash[:8], gi, m.hash[:8])
	}
	if opts.RunID == "" {
		opts.RunID = snap.run
	}
	r, err := m.newRun(gi, &opts, false)
	if err != nil {
		return nil, err
	}
	r.load(snap)
	if err := r.takeAnswers(in.Answers); err != nil {
		return nil, err
	}
	r.decisions = in.Decisions
	r.resumedStep = r.step + 1
	for _, pw := range in.Pending {
		if pw.Step != r.resumedStep {
			continue
		}
		o, journal, err := r.decodePending(pw)
		if err != nil {
			return nil, err
		}
		if r.restored == nil {
			r.restored = map[string]*restoredTask{}
		}
		r.restored[pw.Task] = &restoredTask{out: *o, journal: journal}
	}
	return r.loop(ctx)
}

// load copies a snapshot into a fresh run.
func (r *run) load(s *Snapshot) {
	r.step = s.step
	r.state = slices.Clone(s.state)
	r.frontier = slices.Clone(s.frontier)
	r.waiting = slices.Clone(s.waiting)
	r.parked = slices.Clone(s.parked)
	r.arrived = slices.Clone(s.arrived)
	r.fired = slices.Clone(s.fired)
	r.loops = slices.Clone(s.loops)
}

// takeAnswers checks and converts resume values.
func (r *run) takeAnswers(answers map[string]types.Value) error {
	for id, v := range answers {
		i := slices.IndexFunc(r.waiting, func(w waitingInterrupt) bool { return w.it.ID == id })
		if i < 0 {
			if ok, err := r.takeSubAnswer(id, v); ok {
				if err != nil {
					return err
				}
				continue
			}
			all := r.pendingInterrupts()
			ids := make([]string, len(all))
			for j, it := range all {
				ids[j] = it.ID
			}
			pending := "none"
			if len(ids) > 0 {
				pending = strings.Join(ids, ", ")
			}
			return &Error{Kind: KindInvalidResume, Node: id,
				Message: fmt.Sprintf("no pending interrupt %s (pending: %s)", id, pending)}
		}
		w := r.waiting[i]
		if w.wait {
			return &Error{Kind: KindInvalidResume, Node: id, Message: id + " is a wait: it ends at its time, not with a value"}
		}
		c, err := types.Convert(v, w.it.Type)
		if err != nil {
			return &Error{Kind: KindInvalidResume, Node: id, Err: err,
				Message: fmt.Sprintf("resume value %s does not fit %s: %v", v, w.it.Type, err)}
		}
		if r.answers == nil {
			r.answers = map[int32]types.Value{}
		}
		r.answers[w.node] = c
	}
	return nil
}

// restoredTask is a task's outcome recovered from its pending write.
type restoredTask struct {
	out     outcome
	journal []JournalEntry
}

// decodePending decodes a pending write: [writes, journal].
func (r *run) decodePending(pw PendingWrite) (*outcome, []JournalEntry, error) {
	bad := func(why string) (*outcome, []JournalEntry, error) {
		return nil, nil, fmt.Errorf("vm: pending write %s of step %d: %s", pw.Task, pw.Step, why)
	}
	v, n, err := types.DecodeValue(pw.Data)
	if err != nil {
		return bad(err.Error())
	}
	if n != len(pw.Data) || v.Kind() != types.ValList || v.Len() != 2 ||
		v.Elem(0).Kind() != types.ValList || v.Elem(0).Len()%3 != 0 || v.Elem(1).Kind() != types.ValList {
		return bad("malformed")
	}
	o := &outcome{kind: outOK}
	ws := v.Elem(0)
	for i := 0; i < ws.Len(); i += 3 {
		f, one := ws.Elem(i), ws.Elem(i+1)
		if f.Kind() != types.ValInt || f.Int() < 0 || f.Int() >= int64(len(r.g.fields)) || one.Kind() != types.ValBool {
			return bad("malformed write")
		}
		w := write{field: int32(f.Int()), one: one.Bool(), value: ws.Elem(i + 2)}
		if !w.one && r.g.elemTypes[w.field] != nil && w.value.Kind() != types.ValList {
			return bad("append write is not a list")
		}
		o.writes = append(o.writes, w)
	}
	var journal []JournalEntry
	js := v.Elem(1)
	for i := 0; i < js.Len(); i++ {
		e, err := journalFromValue(js.Elem(i))
		if err != nil {
			return bad(err.Error())
		}
		journal = append(journal, e)
	}
	return o, journal, nil
}

// restoreChain rebuilds a snapshot from a checkpoint chain: the hashes of
// every record are checked here, the rest by the record decoders
// (record.go) that time travel shares.
func (m *Machine) restoreChain(gi int, chain []StepRecord) (*Snapshot, error) {
	g := &m.graphs[gi]
	if len(chain) == 0 {
		return nil, errors.New("vm: resume: empty checkpoint chain")
	}
	for i := range chain {
		rec := &chain[i]
		if rec.ProgramHash != m.hash {
			return nil, fmt.Errorf("vm: resume run %s step %d: %w: the checkpoint was written by program %x, this program is %x",
				rec.Run, rec.Step, ErrProgramMismatch, rec.ProgramHash, m.hash)
		}
		if rec.SchemaHash != g.schemaHash {
			return nil, fmt.Errorf("vm: resume run %s step %d: %w: the checkpoint's state schema is %x, graph %s's is %x",
				rec.Run, rec.Step, ErrProgramMismatch, rec.SchemaHash, g.g.Name, g.schemaHash)
		}
	}
	state, err := rebuildState(len(g.fields), chain)
	if err != nil {
		return nil, fmt.Errorf("vm: resume: %w", err)
	}
	last := &chain[len(chain)-1]
	s := &Snapshot{graph: gi, hash: m.hash, run: last.Run, step: last.Step, state: state}
	fail := func(rec *StepRecord, what string, err error) (*Snapshot, error) {
		return nil, fmt.Errorf("vm: resume run %s: checkpoint %d: %s: %w", rec.Run, rec.Step, what, err)
	}
	frontier, err := DecodeFrontier(g.g, last.Frontier)
	if err != nil {
		return fail(last, "frontier", err)
	}
	s.frontier = make([]int32, len(frontier))
	for i, n := range frontier {
		s.frontier[i] = int32(n)
	}
	s.arrived = make([]bool, g.nArrive)
	s.fired = make([]bool, g.nJoins)
	s.loops = make([]uint32, g.nEdges)
	if err := decodeCounters(s, g.layout, last.Counters); err != nil {
		return fail(last, "counters", err)
	}
	if len(last.Interrupts) > 0 {
		v, err := decodeList(last.Interrupts)
		if err != nil {
			return fail(last, "interrupts", err)
		}
		if s.waiting, s.parked, err = m.decodeWaiting(gi, last.Run, v, 0); err != nil {
			return fail(last, "interrupts", err)
		}
	}
	return s, nil
}

func decodeCounters(s *Snapshot, l CounterLayout, b []byte) error {
	c, err := DecodeCounters(l, b)
	if err != nil {
		return err
	}
	for _, i := range c.Arrived {
		s.arrived[i] = true
	}
	for _, i := range c.Fired {
		s.fired[i] = true
	}
	for _, lc := range c.Loops {
		s.loops[lc.Slot] = lc.Count
	}
	return nil
}

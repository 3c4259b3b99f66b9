package vm

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Timers (spec/vm.md, "Timers"). A wait node, and an interrupt with a
// timeout, wait until a deadline computed when the node is first reached
// (from the journaled clock read). The run stops as interrupted like any
// other wait, with its deadlines in Result.Timers and in the checkpoint's
// interrupts record ("due", Unix nanoseconds). Whoever resumes the run at
// or after a deadline fires it: at the top of the loop the run compares
// its Clock with every deadline it waits on, and a due one completes in
// the next step — a wait node routes on, an unanswered interrupt fails
// with kind timeout into its else target. The firing is journaled (a
// resume entry: null for a wait, the timeout error for an interrupt), so
// a replay fires it in the same step without a clock. A parked sub-run
// with a due timer is woken the same way and fires its own.

// fireDue marks the waiting nodes whose deadline has passed, and wakes the
// parked tasks whose sub-runs have one.
func (r *run) fireDue() {
	if r.o.Clock == nil {
		return
	}
	now := r.o.Clock.Now()
	for _, w := range r.waiting {
		if w.due.IsZero() || now.Before(w.due) {
			continue
		}
		if _, answered := r.answers[w.node]; answered {
			continue
		}
		if r.expired == nil {
			r.expired = map[int32]bool{}
		}
		r.expired[w.node] = true
	}
	for _, p := range r.parked {
		for _, t := range p.tasks {
			if t.done || t.sub == nil || r.subAnswers[t.id] != nil {
				continue
			}
			if d, ok := earliest(t.sub.timers()); ok && !now.Before(d) {
				if r.subAnswers == nil {
					r.subAnswers = map[string]map[string]types.Value{}
				}
				r.subAnswers[t.id] = map[string]types.Value{}
			}
		}
	}
}

// earliest is the first deadline of ts.
func earliest(ts []Timer) (time.Time, bool) {
	if len(ts) == 0 {
		return time.Time{}, false
	}
	return ts[0].Due, true
}

// timers lists the run's deadlines, those of parked sub-runs included,
// earliest first.
func (r *run) timers() []Timer {
	var out []Timer
	for _, w := range r.waiting {
		if !w.due.IsZero() {
			out = append(out, Timer{ID: w.it.ID, Node: w.it.Node, Due: w.due, Wait: w.wait})
		}
	}
	for _, p := range r.parked {
		for _, t := range p.tasks {
			if t.sub != nil {
				out = append(out, t.sub.timers()...)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Timer) int { return a.Due.Compare(b.Due) })
	return out
}

// timers lists a snapshot's deadlines, earliest first.
func (s *Snapshot) timers() []Timer {
	r := &run{waiting: s.waiting, parked: s.parked}
	return r.timers()
}

// runWait plans a wait node: its deadline is computed once, when it is
// first reached; a deadline already passed completes it at once.
func (r *run) runWait(ev *evaluator, t *task, nd *bytecode.Node, s uint64) {
	if r.expired[t.node] {
		t.out = outcome{kind: outOK}
		if r.journaling {
			t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Kind: JournalResume})
		}
		return
	}
	for _, w := range r.waiting {
		if w.node == t.node {
			t.out = outcome{kind: outWait, due: w.due}
			return
		}
	}
	v, err := ev.eval(nd.Wait.Code, r.state, nil)
	if err != nil {
		t.out = outcome{kind: outFailed, err: r.nodeError(t.node, err)}
		return
	}
	now := r.now(t, s)
	var due time.Time
	switch {
	case nd.Wait.Until && v.Kind() == types.ValString:
		if due, err = time.Parse(time.RFC3339Nano, v.Str()); err != nil {
			t.out = outcome{kind: outFailed, err: &Error{Kind: KindEval, Node: t.id, Err: err,
				Message: fmt.Sprintf("wait until %q: not an RFC 3339 time", v.Str())}}
			return
		}
	case !nd.Wait.Until && v.Kind() == types.ValDuration:
		due = now.Add(v.Duration())
	default:
		t.out = outcome{kind: outFailed, err: &Error{Kind: KindEval, Node: t.id, Message: "wait on a " + v.Kind().String()}}
		return
	}
	if !due.After(now) {
		t.out = outcome{kind: outOK}
		return
	}
	t.out = outcome{kind: outWait, due: due}
}

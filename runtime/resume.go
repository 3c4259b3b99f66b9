package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// prepareResume loads what resumes run (its checkpoint chain and the
// pending writes of the step after it) and converts the answers and
// decisions, so that a bad resume is refused before anything is persisted.
func (r *Runner) prepareResume(ctx context.Context, a *activeRun, run *store.Run, req *ResumeRequest) error {
	if run.Status == store.RunCompleted {
		return fmt.Errorf("%w: run %s is completed", ErrNotResumable, run.ID)
	}
	a.id = run.ID
	a.prevStatus = RunStatus(run.Status)
	policy := max(req.Upgrade, r.opts.Upgrade)
	latest, err := r.st.LatestCheckpoint(ctx, run.ID)
	if errors.Is(err, store.ErrNotFound) {
		if err := r.pinProgram(ctx, a, run, run.ProgramHash, nil, 0, policy); err != nil {
			return err
		}
		gi, err := r.runGraph(a, run)
		if err != nil {
			return err
		}
		return r.restartUncheckpointed(ctx, a, run, gi, req)
	}
	if err != nil {
		return fmt.Errorf("runtime: resume %s: %w", run.ID, err)
	}
	cps, err := r.st.CheckpointChain(ctx, run.ID, latest.Step)
	if err != nil {
		return fmt.Errorf("runtime: resume %s: %w", run.ID, err)
	}
	in := &vm.ResumeInput{Chain: make([]vm.StepRecord, len(cps))}
	for i, cp := range cps {
		if in.Chain[i], err = fromCheckpoint(cp); err != nil {
			return fmt.Errorf("runtime: resume %s: %w", run.ID, err)
		}
	}
	pws, err := r.st.ListPendingWrites(ctx, run.ID, latest.Step+1)
	if err != nil {
		return fmt.Errorf("runtime: resume %s: %w", run.ID, err)
	}
	if err := r.pinProgram(ctx, a, run, checkpointHash(run, &latest), in, len(pws), policy); err != nil {
		return err
	}
	if _, err := r.runGraph(a, run); err != nil {
		return err
	}
	for _, pw := range pws {
		data, evs, err := unwrapCarry(pw.Writes)
		if err != nil {
			return fmt.Errorf("runtime: resume %s: pending write of %s: %w", run.ID, pw.Node, err)
		}
		if err := a.restoreEvents(pw.Node, evs); err != nil {
			return fmt.Errorf("runtime: resume %s: %w", run.ID, err)
		}
		in.Pending = append(in.Pending, vm.PendingWrite{Step: latest.Step + 1, Task: pw.Node, Data: data})
	}

	waiting, err := a.p.pendingInterrupts(a.gi, in.Chain[len(in.Chain)-1].Interrupts)
	if err != nil {
		return fmt.Errorf("runtime: resume %s: interrupts of step %d: %w", run.ID, latest.Step, err)
	}
	for key, raw := range req.Values {
		id, i := AnswerTarget(a.root, key, waiting, func(w waitingInterrupt) string { return w.id })
		if i < 0 {
			ids := make([]string, len(waiting))
			for j, w := range waiting {
				ids[j] = w.id
			}
			return fmt.Errorf("%w: run %s has no pending interrupt %q (pending: %s)", ErrInvalidResume, run.ID, key, strings.Join(ids, ", "))
		}
		v, err := types.FromJSON(waiting[i].typ, raw)
		if err != nil {
			return fmt.Errorf("%w: the value for %s does not fit %s: %v", ErrInvalidResume, id, waiting[i].typ, err)
		}
		if in.Answers == nil {
			in.Answers = map[string]types.Value{}
		}
		in.Answers[id] = v
	}
	if len(in.Answers) == 0 && len(req.Decisions) == 0 {
		// Without values a waiting run resumes only to fire its due
		// timers (timers.go).
		waits, err := vm.DecodeWaits(a.p.prog, a.gi, in.Chain[len(in.Chain)-1].Interrupts)
		if err != nil {
			return fmt.Errorf("runtime: resume %s: interrupts of step %d: %w", run.ID, latest.Step, err)
		}
		now := r.clock.Now()
		due, next := false, time.Time{}
		for _, w := range waits {
			if w.Due.IsZero() {
				continue
			}
			due = due || !now.Before(w.Due)
			if next.IsZero() || w.Due.Before(next) {
				next = w.Due
			}
		}
		switch {
		case due:
		case len(waiting) > 0:
			ids := make([]string, len(waiting))
			for j, w := range waiting {
				ids[j] = w.id
			}
			msg := fmt.Sprintf("%s waits on %s; resume it with values", run.ID, strings.Join(ids, ", "))
			if !next.IsZero() {
				msg += " (or after its timer, due " + next.UTC().Format(time.RFC3339) + ")"
			}
			return fmt.Errorf("%w: run %s", ErrInvalidResume, msg)
		case !next.IsZero():
			return fmt.Errorf("%w: run %s waits until %s", ErrInvalidResume, run.ID, next.UTC().Format(time.RFC3339))
		}
	}
	for id, d := range req.Decisions {
		if d.Value != nil && !json.Valid(d.Value) {
			return fmt.Errorf("%w: decision %s: the value is not JSON", ErrInvalidResume, id)
		}
		var dec vm.Decision
		switch d.Action {
		case "rerun":
			dec.Action = vm.DecideRerun
		case "fail":
			dec.Action = vm.DecideFail
		case "result":
			dec.Action = vm.DecideResult
			v, err := types.ParseJSON(d.Value)
			if t := a.p.decisionType(a.graph, a.root, id); t != nil && err == nil {
				v, err = types.FromJSON(t, d.Value)
			}
			if err != nil {
				return fmt.Errorf("%w: decision %s: %v", ErrInvalidResume, id, err)
			}
			dec.Value = v
		default:
			return fmt.Errorf("%w: decision %s: action %q (want rerun, result or fail)", ErrInvalidResume, id, d.Action)
		}
		if in.Decisions == nil {
			in.Decisions = map[string]vm.Decision{}
		}
		in.Decisions[id] = dec
	}
	a.resume = in
	return nil
}

// runGraph sets a's graph: the run's runnable in the program it runs on.
func (r *Runner) runGraph(a *activeRun, run *store.Run) (int, error) {
	gi, ok := a.p.m.Graph(run.Runnable)
	if !ok {
		return -1, fmt.Errorf("%w: run %s runs %q, which the program does not have", ErrNotResumable, run.ID, run.Runnable)
	}
	a.setGraph(gi)
	return gi, nil
}

// restartUncheckpointed prepares a run that stopped before its first
// checkpoint (the VM commits one before any node runs, so nothing of the
// run happened) to start over under the same id, from the input persisted
// in the ledger.
func (r *Runner) restartUncheckpointed(ctx context.Context, a *activeRun, run *store.Run, gi int, req *ResumeRequest) error {
	if run.ParentRun != "" {
		return fmt.Errorf("%w: forked run %s has no checkpoint", ErrNotResumable, run.ID)
	}
	if len(req.Values) > 0 || len(req.Decisions) > 0 {
		return fmt.Errorf("%w: run %s stopped before its first step: it has no interrupt or decision to answer", ErrInvalidResume, run.ID)
	}
	entries, err := r.st.ListEvents(ctx, run.Session, store.EventsAfter(run.FirstEvent), 0)
	if err != nil {
		return fmt.Errorf("runtime: restart %s: %w", run.ID, err)
	}
	for _, en := range entries {
		e, err := DecodeEvent(en.Data)
		if err != nil {
			return fmt.Errorf("runtime: restart %s: event %d: %w", run.ID, en.Seq, err)
		}
		if e.Kind != EventInput || e.Run != run.ID || e.Resume != nil {
			continue
		}
		if a.input, err = a.p.inputValue(gi, e.Text); err != nil {
			return fmt.Errorf("runtime: restart %s: %w", run.ID, err)
		}
		return nil
	}
	return fmt.Errorf("%w: run %s has no checkpoint and no input in the ledger", ErrNotResumable, run.ID)
}

type waitingInterrupt struct {
	id  string
	typ *types.Type
}

// pendingInterrupts decodes a checkpoint's pending interrupts, those of
// parked sub-runs included (vm.DecodeInterrupts), with their resume types.
func (p *program) pendingInterrupts(gi int, b []byte) ([]waitingInterrupt, error) {
	ins, err := vm.DecodeInterrupts(p.prog, gi, b)
	if err != nil {
		return nil, err
	}
	out := make([]waitingInterrupt, len(ins))
	for i, in := range ins {
		out[i] = waitingInterrupt{id: in.ID, typ: vm.InterruptType(p.prog, in)}
		if !in.Confirm && p.prog.Graphs[in.Graph].Nodes[in.Node].Kind != bytecode.NodeInterrupt {
			out[i].typ = clientAnswerType // a paused llm call (clienttools.go)
		}
	}
	return out, nil
}

// decisionType is the type a decided result of task id ("graph/node" or
// "graph/node/3") is decoded as: the tool's output type for a tool call,
// else the type the node's into field takes (nil: untyped JSON).
func (p *program) decisionType(g *bytecode.Graph, root, id string) *types.Type {
	name, _, _ := strings.Cut(strings.TrimPrefix(id, root+"/"), "/")
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Name != name {
			continue
		}
		if n.Call.Kind == bytecode.CallTool {
			return p.prog.Types[p.prog.Tools[n.Call.Callee].Output]
		}
		if n.Into == bytecode.None {
			return nil
		}
		f := p.prog.States[g.State].Fields[n.Into]
		t := p.prog.Types[f.Type]
		if f.Reducer == bytecode.ReduceAppend && (t.Kind() == types.KindList || t.Kind() == types.KindMessages) {
			t = t.Elem()
		}
		return t
	}
	return nil
}

// LatestResumable returns the id of the newest run of the session (user,
// session) of this Runner's app that waits to continue: interrupted,
// needs_decision, or running while no invocation of this Runner drives it
// (a process cut off mid-run leaves its run running). It is what `agentc
// run --resume latest` resumes (spec/runner.md, "Resuming"). ErrNotFound
// (wrapped) when there is none.
func (r *Runner) LatestResumable(ctx context.Context, user, session string) (string, error) {
	return latestResumable(ctx, r.st, store.RunFilter{App: r.app, User: user, Session: session}, r.driving)
}

// LatestResumableIn is LatestResumable over st for app, before any Runner
// drives a run of it (what a process resolves "latest" to before it
// assembles its Runner).
func LatestResumableIn(ctx context.Context, st store.Runs, app, user, session string) (string, error) {
	return latestResumable(ctx, st, store.RunFilter{App: app, User: user, Session: session}, func(string) bool { return false })
}

func latestResumable(ctx context.Context, st store.Runs, f store.RunFilter, driving func(run string) bool) (string, error) {
	best := ""
	err := eachRun(ctx, st, f, func(run store.Run) {
		switch run.Status {
		case store.RunInterrupted, store.RunStatus(StatusNeedsDecision):
		case store.RunRunning:
			if driving(run.ID) {
				return
			}
		default:
			return
		}
		best = max(best, run.ID)
	})
	if err != nil {
		return "", fmt.Errorf("runtime: runs of session %s: %w", f.Session, err)
	}
	if best == "" {
		return "", fmt.Errorf("runtime: session %s of user %s has no run to resume (interrupted, needs_decision, or cut off while running): %w", f.Session, f.User, store.ErrNotFound)
	}
	return best, nil
}

// Orphans returns the runs of this Runner's app, of every user, that are
// running in the store while nobody drives them: on a store only this
// process can open (Pebble), those no invocation of this Runner drives
// (the runs a crash cut off); on a shared store (Replica), also those
// whose session lease no replica holds (their replica died or lost it).
// Each resumes with a ResumeRequest naming it and no values; on a shared
// store, of several replicas resuming one orphan, one gets its lease and
// the others ErrSessionBusy.
func (r *Runner) Orphans(ctx context.Context) ([]store.Run, error) {
	out, _, err := r.ScanOrphans(ctx)
	return out, err
}

// ScanOrphans is Orphans, and, on a shared store, the earliest time at
// which the lease of a running run that another replica drives expires
// (zero when there is none): the takeover loop looks again then, not
// only every TTL/2.
func (r *Runner) ScanOrphans(ctx context.Context) (orphans []store.Run, next time.Time, err error) {
	var out []store.Run
	err = eachRun(ctx, r.st, store.RunFilter{App: r.app, Status: store.RunRunning}, func(run store.Run) {
		if run.Status == store.RunRunning && !r.driving(run.ID) {
			out = append(out, run)
		}
	})
	if err == nil {
		out, next, err = r.orphaned(ctx, out)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("runtime: running runs of app %s: %w", r.app, err)
	}
	return out, next, nil
}

// eachRun calls fn for every run of st that f selects, page by page.
func eachRun(ctx context.Context, st store.Runs, f store.RunFilter, fn func(store.Run)) error {
	for {
		runs, next, err := st.ListRuns(ctx, f)
		if err != nil {
			return err
		}
		for _, run := range runs {
			fn(run)
		}
		if next == "" {
			return nil
		}
		f.Cursor = next
	}
}

// driving reports whether an invocation of this Runner drives run.
func (r *Runner) driving(run string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, active := r.active[run]
	return active
}

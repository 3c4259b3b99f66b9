package runtime

// Time travel over a run's checkpoints (spec/vm.md, "Durability"): the state
// at any committed step, and forks that continue a run from an earlier step
// as a new run.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// StateField is one field of a run's state at a step.
type StateField struct {
	Name  string
	Type  *types.Type
	Value types.Value
}

// StepState is a run's state at one committed step, rebuilt from the
// checkpoint chain (the last full snapshot, then every delta up to it).
type StepState struct {
	Step       uint64
	Graph      int                // the index of the run's graph in Program
	Program    *bytecode.Program  // the program that wrote the step (the run's, or the one an upgrade moved it to)
	Fields     []StateField       // in schema order, hidden ($…) fields included
	Checkpoint store.Checkpoint   // the step's own record (frontier, counters, interrupts)
	Frontier   []int              // the nodes of the next step (indices into the graph), ascending
	Interrupts []PendingInterrupt // the pending interrupts recorded at the step
}

// PendingInterrupt is an interrupt a checkpoint waits on: its id
// ("graph/node"), the node's index in the graph and its prompt.
type PendingInterrupt = vm.RecordedInterrupt

// ProgramHash returns the hex content hash a Runner over p records on runs
// and checkpoints.
func ProgramHash(p *bytecode.Program, funcs map[string]vm.Func) (string, error) {
	m, err := vm.New(p, funcs)
	if err != nil {
		return "", err
	}
	h := m.Hash()
	return hex.EncodeToString(h[:]), nil
}

// StateAt rebuilds the state of run at step from its checkpoint chain
// (vm.StateAt: the VM's own reading of its records, the one a resume
// continues from). prog is the run's program (loaded by run.ProgramHash);
// a chain written by another program — a run moved by an upgrade — is read
// with that one, which st provides when it is also a store.Programs
// (StepState.Program is the program the state was read with).
func StateAt(ctx context.Context, st store.Checkpoints, prog *bytecode.Program, run store.Run, step uint64) (*StepState, error) {
	chain, err := st.CheckpointChain(ctx, run.ID, step)
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: %w", run.ID, step, err)
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("run %s step %d: %w", run.ID, step, store.ErrNotFound)
	}
	if h := chain[len(chain)-1].ProgramHash; h != "" && h != hex.EncodeToString(prog.Hash[:]) {
		if ps, ok := st.(store.Programs); ok {
			if prog, err = ProgramByHash(ctx, ps, h); err != nil {
				return nil, fmt.Errorf("run %s step %d: %w", run.ID, step, err)
			}
		}
	}
	gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
	if gi < 0 {
		return nil, fmt.Errorf("run %s runs %q, which its program does not have", run.ID, run.Runnable)
	}
	recs := make([]vm.StepRecord, len(chain))
	for i, cp := range chain {
		recs[i] = vm.StepRecord{Run: cp.Run, Step: cp.Step, Full: cp.Kind == store.Full,
			State: cp.State, Frontier: cp.Frontier, Counters: cp.Counters, Interrupts: cp.Interrupts, Time: cp.Time}
	}
	cs, err := vm.StateAt(prog, gi, recs)
	if err != nil {
		return nil, fmt.Errorf("run %s step %d: %w", run.ID, step, err)
	}
	schema := &prog.States[prog.Graphs[gi].State]
	out := &StepState{Step: cs.Step, Graph: gi, Program: prog, Checkpoint: chain[len(chain)-1], Frontier: cs.Frontier, Interrupts: cs.Interrupts}
	for i, f := range schema.Fields {
		out.Fields = append(out.Fields, StateField{Name: f.Name, Type: prog.Types[f.Type], Value: cs.State[i]})
	}
	return out, nil
}

// LatestStateAt is StateAt at run's last committed step.
func LatestStateAt(ctx context.Context, st store.Checkpoints, prog *bytecode.Program, run store.Run) (*StepState, error) {
	latest, err := st.LatestCheckpoint(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return StateAt(ctx, st, prog, run, latest.Step)
}

// ErrBadEdit marks a fork edit that names no field, does not fit its type,
// or is a list longer than its field's size.
var ErrBadEdit = errors.New("runtime: bad state edit")

// ForkRequest forks a run at a step.
type ForkRequest struct {
	Run  string
	Step uint64
	// Set replaces fields by name with JSON values (checked against each
	// field's type and list size).
	Set map[string]json.RawMessage
	// ProgramHash, when set, must equal the run's (else ErrNotResumable
	// naming both).
	ProgramHash string
	Clock       vm.Clock
	Entropy     vm.Entropy
}

// Fork starts a new run (new id, same session and runnable, ParentRun and
// ParentStep set) whose first checkpoint is a full snapshot of the state at
// req.Step with req.Set applied, with that step's frontier, counters and
// pending interrupts. It is left interrupted: resuming it (Invocation.Resume,
// answering the step's pending interrupts if it has any) continues from the
// step's frontier. prog is the run's program.
func Fork(ctx context.Context, st store.Store, prog *bytecode.Program, req ForkRequest) (store.Run, error) {
	run, err := st.GetRun(ctx, req.Run)
	if err != nil {
		return store.Run{}, fmt.Errorf("run %s: %w", req.Run, err)
	}
	if req.ProgramHash != "" && req.ProgramHash != run.ProgramHash {
		return store.Run{}, fmt.Errorf("%w: run %s was started by program %s; this program is %s", ErrNotResumable, run.ID, run.ProgramHash, req.ProgramHash)
	}
	ss, err := StateAt(ctx, st, prog, run, req.Step)
	if err != nil {
		return store.Run{}, err
	}
	names := make([]string, 0, len(req.Set))
	for n := range req.Set {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		i := slices.IndexFunc(ss.Fields, func(f StateField) bool { return f.Name == name })
		if i < 0 || strings.HasPrefix(name, "$") {
			var known []string
			for _, f := range ss.Fields {
				if !strings.HasPrefix(f.Name, "$") {
					known = append(known, f.Name)
				}
			}
			return store.Run{}, fmt.Errorf("%w: the state has no field %q (fields: %s)", ErrBadEdit, name, strings.Join(known, ", "))
		}
		v, err := types.FromJSON(ss.Fields[i].Type, req.Set[name])
		if err != nil {
			return store.Run{}, fmt.Errorf("%w: %s = %s does not fit %s: %v", ErrBadEdit, name, req.Set[name], ss.Fields[i].Type, err)
		}
		if err := prog.States[prog.Graphs[ss.Graph].State].Fields[i].CheckSize(v); err != nil {
			return store.Run{}, fmt.Errorf("%w: %v", ErrBadEdit, err) // the list size holds (spec/language.md §9.1)
		}
		ss.Fields[i].Value = v
	}
	vals := make([]types.Value, len(ss.Fields))
	for i, f := range ss.Fields {
		vals[i] = f.Value
	}
	state, err := types.AppendValue(nil, types.MakeList(vals))
	if err != nil {
		return store.Run{}, err
	}
	clock := req.Clock
	if clock == nil || req.Entropy == nil {
		return store.Run{}, errors.New("runtime: fork needs a Clock and an Entropy")
	}
	now := clock.Now()
	ids := newULIDGen(clock, req.Entropy)
	nr := store.Run{ID: ids.nextWithPrefix("run_"), Session: run.Session, Runnable: run.Runnable,
		ProgramHash: checkpointHash(&run, &ss.Checkpoint), Status: store.RunRunning, ParentRun: run.ID, ParentStep: ss.Step,
		Created: now, Updated: now}
	// Its events follow the ledger as it is now: its first is after
	// the session's last.
	sess, err := st.GetSession(ctx, run.Session)
	if err != nil {
		return store.Run{}, fmt.Errorf("runtime: fork %s: %w", run.ID, err)
	}
	nr.FirstEvent = sess.LastSeq + 1
	if err := st.CreateRun(ctx, nr); err != nil {
		return store.Run{}, fmt.Errorf("runtime: fork %s: %w", run.ID, err)
	}
	var evs [][]byte
	if len(ss.Interrupts) > 0 {
		// A run_finished naming the pending interrupts, as an interrupted
		// run ends with, so that clients find what the fork waits on.
		fin := &Event{ID: ids.nextAt(now), Kind: EventRunFinished, Time: now.UTC(), App: run.Session.App,
			User: run.Session.User, Session: run.Session.Session, Run: nr.ID, Author: run.Runnable,
			Step: ss.Step, Persisted: true, Status: StatusInterrupted}
		root := ss.Program.Graphs[ss.Graph].Name + "/"
		for _, in := range ss.Interrupts {
			info := InterruptInfo{ID: in.ID, Prompt: in.Prompt, Node: strings.TrimPrefix(in.ID, root)}
			if t := vm.InterruptType(ss.Program, in); t != nil {
				info.Schema = types.JSONSchema(t)
			}
			fin.Interrupts = append(fin.Interrupts, info)
		}
		b, err := EncodeEvent(fin)
		if err != nil {
			return store.Run{}, err
		}
		evs = append(evs, b)
	}
	cp := ss.Checkpoint
	cp.Run, cp.Kind, cp.State, cp.Time, cp.JournalNext = nr.ID, store.Full, state, now, 0
	if _, err := st.CommitStep(ctx, store.StepCommit{Checkpoint: cp, Events: evs, Status: store.RunInterrupted}); err != nil {
		return store.Run{}, fmt.Errorf("runtime: fork %s: %w", run.ID, err)
	}
	nr.Status, nr.Updated = store.RunInterrupted, now
	return nr, nil
}

// ReplayResult is what replaying a run from its journal found.
type ReplayResult struct {
	Identical bool
	Step      uint64 // the last step the replay reached
	WantStep  uint64 // the run's last committed step
	// DivergedAt is the first committed step whose state the replay does
	// not reproduce, and Diverged says how (both empty when Identical).
	DivergedAt uint64
	Diverged   []string
}

// ReplayRun re-executes run offline from its journal (vm Machine.Replay)
// and compares the state it reaches with the state of the run's last
// checkpoint. funcs are the program's functions (nil: vm.Builtins()).
func ReplayRun(ctx context.Context, st store.Store, prog *bytecode.Program, funcs map[string]vm.Func, run store.Run) (*ReplayResult, error) {
	if run.ParentRun != "" {
		return nil, fmt.Errorf("run %s is a fork of %s at step %d: its journal starts there; replay %s", run.ID, run.ParentRun, run.ParentStep, run.ParentRun)
	}
	m, err := vm.New(prog, funcs)
	if err != nil {
		return nil, err
	}
	gi, ok := m.Graph(run.Runnable)
	if !ok {
		return nil, fmt.Errorf("run %s runs %q, which its program does not have", run.ID, run.Runnable)
	}
	want, err := LatestStateAt(ctx, st, prog, run)
	if err != nil {
		return nil, err
	}
	entries, err := st.ListJournal(ctx, run.ID, 1, 0)
	if err != nil {
		return nil, fmt.Errorf("run %s: journal: %w", run.ID, err)
	}
	journal := make([][]byte, len(entries))
	for i, e := range entries {
		journal[i] = e.Data
	}
	res, err := m.Replay(ctx, gi, journal, vm.Options{RunID: run.ID})
	if res == nil {
		if err == nil {
			err = errors.New("no result")
		}
		return nil, fmt.Errorf("replay %s: %w", run.ID, err)
	}
	out := &ReplayResult{Step: res.Step, WantStep: want.Step}
	if res.Step != want.Step {
		out.Diverged = append(out.Diverged, fmt.Sprintf("step: replay reached %d, the run committed %d", res.Step, want.Step))
	}
	out.Diverged = append(out.Diverged, diffState(res.State, want)...)
	out.Identical = len(out.Diverged) == 0
	if out.Identical {
		return out, nil
	}
	// Find the first committed step whose state the replay does not
	// reproduce: replay again, stopping after each step in turn.
	cps, err := st.ListCheckpoints(ctx, run.ID, store.CheckpointFilter{})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	slices.Reverse(cps)
	for _, cp := range cps {
		if cp.Step == 0 || cp.Step >= want.Step {
			continue
		}
		at, err := StateAt(ctx, st, prog, run, cp.Step)
		if err != nil {
			return nil, err
		}
		r, _ := m.Replay(ctx, gi, journal, vm.Options{RunID: run.ID, MaxSteps: cp.Step})
		if r == nil || r.Step != cp.Step {
			continue
		}
		if d := diffState(r.State, at); len(d) > 0 {
			out.DivergedAt, out.Diverged = cp.Step, d
			return out, nil
		}
	}
	out.DivergedAt = want.Step
	return out, nil
}

// diffState lists the fields whose values differ between a replayed state
// and a rebuilt one.
func diffState(got []types.Value, want *StepState) []string {
	var out []string
	for i, f := range want.Fields {
		var g types.Value
		if i < len(got) {
			g = got[i]
		}
		if !types.Equal(g, f.Value) {
			out = append(out, fmt.Sprintf("field %s: replay %s, run %s", f.Name, short(g.String()), short(f.Value.String())))
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

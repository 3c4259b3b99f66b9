package inspect

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Checkpoint is one committed step of a run.
type Checkpoint struct {
	Step uint64 `json:"step"`
	Kind string `json:"kind"` // full or delta
	// Nodes are the nodes that finished at the step ("n[2]" for a map
	// instance, "n(failed)" for a failure); for a step that only raised
	// interrupts, the interrupt nodes it waits on ("approve(waiting)").
	Nodes []string  `json:"nodes"`
	Time  time.Time `json:"time"`
	Bytes int       `json:"bytes"` // the record's size: state, frontier, counters, interrupts
}

// Checkpoints lists run id's checkpoints, oldest first.
func (in *Inspector) Checkpoints(ctx context.Context, id string) ([]Checkpoint, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
	cps, err := in.cfg.Store.ListCheckpoints(ctx, run.ID, store.CheckpointFilter{})
	if err != nil {
		return nil, err
	}
	slices.Reverse(cps) // oldest first
	evs, err := in.sessions.Events(ctx, run.Session, session.EventFilter{Run: run.ID,
		Kinds: []runtime.EventKind{runtime.EventNodeFinished, runtime.EventNodeFailed}})
	if err != nil {
		return nil, err
	}
	nodes := map[uint64][]string{}
	for _, e := range evs {
		n := e.Node
		if e.MapIndex != nil {
			n = fmt.Sprintf("%s[%d]", n, *e.MapIndex)
		}
		if e.Kind == runtime.EventNodeFailed {
			n += "(failed)"
		}
		if !slices.Contains(nodes[e.Step], n) {
			nodes[e.Step] = append(nodes[e.Step], n)
		}
	}
	out := make([]Checkpoint, 0, len(cps))
	progs := map[string]*bytecode.Program{}
	for _, cp := range cps {
		c := Checkpoint{Step: cp.Step, Kind: cp.Kind.String(), Nodes: nodes[cp.Step], Time: cp.Time.UTC(),
			Bytes: len(cp.State) + len(cp.Frontier) + len(cp.Counters) + len(cp.Interrupts)}
		if c.Nodes == nil {
			p, pgi := prog, gi
			if h := cp.ProgramHash; h != "" && h != hex.EncodeToString(prog.Hash[:]) {
				// Written after the run moved to another program (spec/upgrade.md).
				if progs[h] == nil {
					if progs[h], err = runtime.ProgramByHash(ctx, in.cfg.Store, h); err != nil {
						return nil, fmt.Errorf("run %s: checkpoint %d: %w", run.ID, cp.Step, err)
					}
				}
				p = progs[h]
				pgi = slices.IndexFunc(p.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
			}
			c.Nodes = waitingOn(p, pgi, cp.Interrupts)
		}
		out = append(out, c)
	}
	return out, nil
}

// waitingOn names the interrupt nodes a checkpoint of a run of graph gi
// waits on ("approve(waiting)"): a step that only raised interrupts
// finished no node.
func waitingOn(prog *bytecode.Program, gi int, b []byte) []string {
	out := []string{}
	if gi < 0 {
		return out
	}
	ins, err := vm.DecodeInterrupts(prog, gi, b)
	if err != nil {
		return out
	}
	for _, in := range ins {
		out = append(out, in.ID[strings.LastIndex(in.ID, "/")+1:]+"(waiting)")
	}
	return out
}

// State is a run's state at a committed step.
type State struct {
	Run        string   `json:"run"`
	Step       uint64   `json:"step"`
	Kind       string   `json:"kind"`                 // the step's checkpoint: full or delta
	Frontier   []string `json:"frontier"`             // the nodes of the next step
	Interrupts []string `json:"interrupts,omitempty"` // the pending interrupts' ids
	// State holds the fields by name, in schema order; hidden ($…) fields
	// are left out.
	State json.RawMessage `json:"state"`
}

// State returns run id's state at step (step < 0: its last step), rebuilt
// from the checkpoint chain (runtime.StateAt, the VM's own reading).
func (in *Inspector) State(ctx context.Context, id string, step int64) (*State, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	ss, err := in.stateAt(ctx, prog, run, step)
	if err != nil {
		return nil, err
	}
	state, err := stateJSON(ss.Fields)
	if err != nil {
		return nil, err
	}
	g := &ss.Program.Graphs[ss.Graph]
	out := &State{Run: run.ID, Step: ss.Step, Kind: ss.Checkpoint.Kind.String(), Frontier: []string{}, State: state}
	for _, n := range ss.Frontier {
		out.Frontier = append(out.Frontier, g.Nodes[n].Name)
	}
	for _, p := range ss.Interrupts {
		out.Interrupts = append(out.Interrupts, p.ID)
	}
	return out, nil
}

// stateAt is run's state at step (step < 0: its last step).
func (in *Inspector) stateAt(ctx context.Context, prog *bytecode.Program, run store.Run, step int64) (*runtime.StepState, error) {
	if step < 0 {
		return runtime.LatestStateAt(ctx, in.cfg.Store, prog, run)
	}
	return runtime.StateAt(ctx, in.cfg.Store, prog, run, uint64(step))
}

// stateJSON is a JSON object of the visible fields, in schema order.
func stateJSON(fields []runtime.StateField) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, fl := range fields {
		if strings.HasPrefix(fl.Name, "$") {
			continue
		}
		v, err := types.ToJSON(fl.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fl.Name, err)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(fl.Name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseSets reads fork edits written FIELD=JSON (ErrInvalid when one is not).
func ParseSets(sets []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, s := range sets {
		name, val, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, invalid(fmt.Errorf("--set %q: want FIELD=JSON", s))
		}
		if !json.Valid([]byte(val)) {
			return nil, invalid(fmt.Errorf("--set %s: %q is not valid JSON", name, val))
		}
		out[name] = json.RawMessage(val)
	}
	return out, nil
}

// ForkRequest forks run Run at step Step with the fields of Set replaced
// (each value checked against its field's type). A non-empty ProgramHash
// refuses the fork unless it is the run's program.
type ForkRequest struct {
	Run         string                     `json:"run"`
	Step        uint64                     `json:"step"`
	Set         map[string]json.RawMessage `json:"set,omitempty"`
	ProgramHash string                     `json:"program_hash,omitempty"`
}

// Forked is the run a fork started.
type Forked struct {
	ParentRun  string `json:"parent_run"`
	ParentStep uint64 `json:"parent_step"`
	Run        string `json:"run"`
	Session    string `json:"session"`
	User       string `json:"user"`
}

// Fork starts a new run in the run's session from its state at req.Step
// (runtime.Fork); it waits where that step left off. An edit that names no
// field or does not fit, and a fork under another program, are ErrInvalid.
func (in *Inspector) Fork(ctx context.Context, req ForkRequest) (Forked, error) {
	_, prog, err := in.Run(ctx, req.Run)
	if err != nil {
		return Forked{}, err
	}
	nr, err := runtime.Fork(ctx, in.cfg.Store, prog, runtime.ForkRequest{
		Run: req.Run, Step: req.Step, Set: req.Set, ProgramHash: req.ProgramHash,
		Clock: in.cfg.Clock, Entropy: in.cfg.Entropy,
	})
	switch {
	case errors.Is(err, runtime.ErrBadEdit), errors.Is(err, runtime.ErrNotResumable):
		return Forked{}, invalid(err)
	case err != nil:
		return Forked{}, err
	}
	return Forked{ParentRun: nr.ParentRun, ParentStep: nr.ParentStep, Run: nr.ID, Session: nr.Session.Session, User: nr.Session.User}, nil
}

// Replay is the outcome of re-executing a run offline from its journal.
type Replay struct {
	Diverged   []string `json:"diverged"` // how the states differ (empty when identical)
	DivergedAt uint64   `json:"diverged_at"`
	Identical  bool     `json:"identical"`
	Run        string   `json:"run"`
	Step       uint64   `json:"step"`      // the last step the replay reached
	WantStep   uint64   `json:"want_step"` // the run's last committed step
}

// Replay re-executes run id from its journal under its own program
// (runtime.ReplayRun, with the function table funcs builds for it) and
// compares the state it reaches with the run's last checkpoint.
func (in *Inspector) Replay(ctx context.Context, id string, funcs func(*bytecode.Program) map[string]vm.Func) (*Replay, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := runtime.ReplayRun(ctx, in.cfg.Store, prog, funcs(prog), run)
	if err != nil {
		return nil, err
	}
	return &Replay{Run: run.ID, Identical: res.Identical, Step: res.Step, WantStep: res.WantStep,
		DivergedAt: res.DivergedAt, Diverged: res.Diverged}, nil
}

package runtime

// What the protocol adapters ask the Runner instead of reading the program
// or the store themselves: which graph a runnable runs, the state a new run
// starts from, and the state of a run at a committed step.

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
)

// Program returns the Runner's program (shared and immutable: read its
// declarations, never modify it).
func (r *Runner) Program() *bytecode.Program { return r.cur.prog }

// SelectRunnable returns the graph a run of runnable name runs
// (bytecode.Program.Runnable: the named agent or graph, else the serve
// block's run, else the only runnable). ErrUnknownRunnable, listing the
// candidates, when there is none or "" is ambiguous.
func (r *Runner) SelectRunnable(name string) (int, error) {
	if gi, ok := r.cur.runnable(name); ok {
		return gi, nil
	}
	names := r.cur.prog.Runnables()
	switch {
	case name != "":
		return -1, fmt.Errorf("%w %q (runnables: %s)", ErrUnknownRunnable, name, strings.Join(names, ", "))
	case len(names) == 0:
		return -1, fmt.Errorf("%w: the program has no graph or agent", ErrUnknownRunnable)
	}
	return -1, fmt.Errorf("%w: choose one of %s", ErrUnknownRunnable, strings.Join(names, ", "))
}

// InitialState is the state a new run of runnable with input starts from,
// before its first step: every field's default (null where none), and the
// input field holding input as Run converts it. ErrUnknownRunnable or
// ErrInvalidInvocation as Run would fail.
func (r *Runner) InitialState(runnable, input string) (*StepState, error) {
	gi, err := r.SelectRunnable(runnable)
	if err != nil {
		return nil, err
	}
	in, err := r.inputValue(gi, input)
	if err != nil {
		return nil, err
	}
	p := r.cur.prog
	g := &p.Graphs[gi]
	out := &StepState{Graph: gi}
	for i, f := range p.States[g.State].Fields {
		sf := StateField{Name: f.Name, Type: p.Types[f.Type]}
		if f.HasDefault && int(f.Default) < len(p.Consts) {
			sf.Value = p.Consts[f.Default]
		}
		if int32(i) == g.Input && !in.IsNull() {
			sf.Value = in
		}
		out.Fields = append(out.Fields, sf)
	}
	return out, nil
}

// LookupRun returns the run id from the store (store.ErrNotFound when there
// is none).
func (r *Runner) LookupRun(ctx context.Context, id string) (store.Run, error) {
	return r.st.GetRun(ctx, id)
}

// StateAt returns the state of run id at a committed step (StateAt over the
// run's own program: this Runner's, or the one the store keeps under the
// run's program hash).
func (r *Runner) StateAt(ctx context.Context, id string, step uint64) (*StepState, error) {
	run, prog, err := r.runAndProgram(ctx, id)
	if err != nil {
		return nil, err
	}
	return StateAt(ctx, r.st, prog, run, step)
}

// LatestState returns the state of run id at its last committed step.
func (r *Runner) LatestState(ctx context.Context, id string) (*StepState, error) {
	run, prog, err := r.runAndProgram(ctx, id)
	if err != nil {
		return nil, err
	}
	return LatestStateAt(ctx, r.st, prog, run)
}

// runAndProgram returns run id and the program it was started by.
func (r *Runner) runAndProgram(ctx context.Context, id string) (store.Run, *bytecode.Program, error) {
	run, err := r.st.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("run %s: %w", id, err)
	}
	prog, err := r.programOf(ctx, run)
	return run, prog, err
}

// programOf returns the program run was started by.
func (r *Runner) programOf(ctx context.Context, run store.Run) (*bytecode.Program, error) {
	if run.ProgramHash == r.cur.hash {
		return r.cur.prog, nil
	}
	return LoadProgram(ctx, r.st, run)
}

// LoadProgram returns the program that started run: the bytecode stored
// under its program hash, decoded and verified.
func LoadProgram(ctx context.Context, st store.Programs, run store.Run) (*bytecode.Program, error) {
	p, err := ProgramByHash(ctx, st, run.ProgramHash)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return p, nil
}

// ProgramByHash returns the program stored under hash, decoded and
// verified.
func ProgramByHash(ctx context.Context, st store.Programs, hash string) (*bytecode.Program, error) {
	p, _, err := fetchProgram(ctx, st, hash)
	return p, err
}

// fetchProgram is ProgramByHash, with the stored bytes.
func fetchProgram(ctx context.Context, st store.Programs, hash string) (*bytecode.Program, []byte, error) {
	b, err := st.GetProgram(ctx, hash)
	if err == nil {
		var p *bytecode.Program
		if p, err = DecodeProgram(b); err == nil {
			return p, b, nil
		}
	}
	return nil, nil, fmt.Errorf("program %s: %w", hash, err)
}

// DecodeProgram decodes and verifies an encoded program.
func DecodeProgram(b []byte) (*bytecode.Program, error) {
	p, err := bytecode.Decode(b)
	if err != nil {
		return nil, err
	}
	if err := bytecode.Verify(p); err != nil {
		return nil, err
	}
	return p, nil
}

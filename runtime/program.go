package runtime

// Pinned programs and upgrades (spec/runner.md, "Pinned programs and
// upgrades"; spec/upgrade.md). A run continues on the program that wrote
// its last checkpoint: the Runner's own, or one the store keeps by hash,
// loaded and bound on first use and kept for the Runner's life. A resume
// that asks for an upgrade moves the run to the Runner's program when
// vm/upgrade proves it compatible over the run's checkpoint.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
	"github.com/agentc/agentc/vm/upgrade"
)

// program is one program a Runner runs: RunnerConfig.Program, or the one a
// run was pinned to, with its machine and bound implementations.
type program struct {
	m      *vm.Machine
	prog   *bytecode.Program
	hash   string // hex
	data   []byte // the encoding the store keeps
	stored atomic.Bool
	tools  []toolInfo  // by program tool index
	agents []agentInfo // by program agent index

	// main is the runnable an invocation that names none runs
	// (bytecode.Program.Runnable("")), found once: without a serve
	// block, finding it lists every runnable.
	mainOnce sync.Once
	main     int // -1: none
}

// runnable is prog.Runnable(name), the unnamed one found once.
func (p *program) runnable(name string) (int, bool) {
	if name != "" {
		return p.prog.Runnable(name)
	}
	p.mainOnce.Do(func() {
		var ok bool
		if p.main, ok = p.prog.Runnable(""); !ok {
			p.main = -1
		}
	})
	return p.main, p.main >= 0
}

// store puts the program in the store once.
func (p *program) store(ctx context.Context, st store.Programs) error {
	if p.stored.Load() {
		return nil
	}
	if err := st.PutProgram(ctx, p.hash, p.data); err != nil {
		return fmt.Errorf("runtime: store program: %w", err)
	}
	p.stored.Store(true)
	return nil
}

// ProgramBinder binds a program a run was started by, other than the
// Runner's own: its machine (with the function table its env() and
// visited() need) and the models and tools its declarations name. The
// assembly implements it by preparing the program as it prepared the
// Runner's (runtime/assemble), so an http tool of the old program calls
// the old program's URL.
type ProgramBinder interface {
	BindProgram(ctx context.Context, p *bytecode.Program, encoding []byte) (*ProgramBinding, error)
}

// ProgramBinding is what a ProgramBinder made; Close, when set, is called
// by Runner.Close after the runs end.
type ProgramBinding struct {
	Machine *vm.Machine
	Models  map[string]Model
	Tools   map[string]Tool
	Close   func(context.Context) error
}

// Upgrade says whether a resume moves a run waiting on another program to
// the Runner's.
type Upgrade uint8

// Upgrade policies.
const (
	// UpgradeNever resumes the run on its own program (the default).
	UpgradeNever Upgrade = iota
	// UpgradeIfCompatible moves it when vm/upgrade proves the move
	// compatible, and otherwise resumes it on its own program, logging the
	// report (agentc serve --upgrade-waiting).
	UpgradeIfCompatible
	// UpgradeRequired moves it, or refuses the resume with
	// ErrUpgradeRefused and the report (agentc run --resume --upgrade).
	UpgradeRequired
)

// ErrUpgradeRefused: the resume required an upgrade that vm/upgrade does
// not prove compatible; the run keeps its program and nothing was written.
// The error wraps an *UpgradeError with the report.
var ErrUpgradeRefused = errors.New("runtime: upgrade refused")

// UpgradeError carries the report of a refused upgrade.
type UpgradeError struct{ Report *upgrade.Report }

func (e *UpgradeError) Error() string { return e.Report.Error() }

// Unwrap makes errors.Is(err, ErrUpgradeRefused) hold.
func (e *UpgradeError) Unwrap() error { return ErrUpgradeRefused }

// programByHash returns the program stored under hash, loaded and bound
// (once per Runner).
func (r *Runner) programByHash(ctx context.Context, hash string) (*program, error) {
	if hash == r.cur.hash {
		return r.cur, nil
	}
	r.pinMu.Lock()
	defer r.pinMu.Unlock()
	if p := r.pinned[hash]; p != nil {
		return p, nil
	}
	prog, data, err := fetchProgram(ctx, r.st, hash)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	if got := hex.EncodeToString(prog.Hash[:]); got != hash {
		return nil, fmt.Errorf("runtime: program stored under %s has hash %s", hash, got)
	}
	b := &ProgramBinding{Models: r.opts.Models, Tools: r.opts.Tools}
	if r.opts.Programs != nil {
		if b, err = r.opts.Programs.BindProgram(ctx, prog, data); err != nil {
			return nil, fmt.Errorf("runtime: bind program %s: %w", hash, err)
		}
	}
	m := b.Machine
	if m == nil {
		if m, err = vm.NewVerified(prog, r.opts.Funcs); err != nil {
			return nil, fmt.Errorf("runtime: load program %s: %w", hash, err)
		}
	}
	p := &program{m: m, prog: prog, hash: hash, data: data}
	p.stored.Store(true)
	if err := p.bind(b.Models, b.Tools); err != nil {
		if b.Close != nil {
			_ = b.Close(ctx)
		}
		return nil, fmt.Errorf("runtime: program %s: %w", hash, err)
	}
	if b.Close != nil {
		r.mu.Lock()
		r.closers = append(r.closers, b.Close)
		r.mu.Unlock()
	}
	if r.pinned == nil {
		r.pinned = map[string]*program{}
	}
	r.pinned[hash] = p
	r.log.Info("runtime: loaded the program a run is pinned to", "program", hash, "current", r.cur.hash)
	return p, nil
}

// pinProgram chooses the program a resumed run continues on: the one that
// wrote its last checkpoint (hash; the run's own when it has none), or,
// when the invocation asks for an upgrade and vm/upgrade proves it, the
// Runner's, in which case in.Chain becomes the one checkpoint the Runner's
// program resumes from. pending is the number of pending writes of the
// step after the chain.
func (r *Runner) pinProgram(ctx context.Context, a *activeRun, run *store.Run, hash string, in *vm.ResumeInput, pending int, policy Upgrade) error {
	p, err := r.programByHash(ctx, hash)
	if err != nil {
		return fmt.Errorf("%w: run %s: %v", ErrNotResumable, run.ID, err)
	}
	a.p = p
	if p == r.cur || policy == UpgradeNever {
		return nil
	}
	if in == nil {
		// Stopped before its first checkpoint: nothing ran, so the
		// Runner's program may start it when it has the graph.
		if _, ok := r.cur.m.Graph(run.Runnable); ok {
			a.p = r.cur
			return nil
		}
		rep := &upgrade.Report{Old: hash, New: r.cur.hash, Run: run.ID, Issues: []upgrade.Issue{{Code: upgrade.GraphGone,
			Message: fmt.Sprintf("graph %s is not in the new program", run.Runnable)}}}
		return r.refuseUpgrade(a, rep, policy)
	}
	rec, rep := upgrade.Plan(p.prog, r.cur.prog, run.Runnable, in.Chain, pending)
	if rec == nil {
		return r.refuseUpgrade(a, rep, policy)
	}
	in.Chain, in.Pending = []vm.StepRecord{*rec}, nil
	a.p = r.cur
	r.log.Info("runtime: run moved to the new program", "run", run.ID, "from", hash, "to", r.cur.hash)
	return nil
}

func (r *Runner) refuseUpgrade(a *activeRun, rep *upgrade.Report, policy Upgrade) error {
	if policy == UpgradeRequired {
		return &UpgradeError{Report: rep}
	}
	r.log.Warn("runtime: the run keeps its program: "+rep.Error(), "run", rep.Run)
	return nil
}

// checkpointHash is the program hash a run continues on: its last
// checkpoint's, else the run's own.
func checkpointHash(run *store.Run, latest *store.Checkpoint) string {
	if latest != nil && latest.ProgramHash != "" {
		return latest.ProgramHash
	}
	return run.ProgramHash
}

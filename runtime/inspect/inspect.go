// Package inspect answers the questions a person asks of a store: the
// sessions and their ledgers, a run's checkpoints and its state at a step,
// forks, replays, artifacts and the evolution queue. Its results are typed
// and JSON-serialisable; agentc's inspection commands print them (as text,
// or their JSON with --json), and a browser inspector serves the same JSON.
// It reads programs as bytecode only: nothing here links the compiler.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// ErrInvalid marks a request that is wrong in itself (an unknown event
// kind, a malformed or ill-typed fork edit, a fork under another program),
// as opposed to a store that cannot answer it. The error's text is the
// problem's own.
var ErrInvalid = errors.New("inspect: invalid request")

type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(err error) error { return invalidError{err} }

// Config is what an Inspector reads and how it stamps what it writes.
type Config struct {
	Store store.Store
	// Now stamps artifact reads and evolution decisions (nil: time.Now).
	Now func() time.Time
	// Clock and Entropy start forked runs (their time and run id).
	Clock   vm.Clock
	Entropy vm.Entropy
}

// Inspector answers queries over one store. It holds no state of its own
// beyond the services it reads through, and is safe for concurrent use as
// far as the store is.
type Inspector struct {
	cfg       Config
	sessions  *session.Service
	artifacts *artifact.Service
	evolution *evolution.Service
}

// New returns an Inspector over cfg.Store.
func New(cfg Config) *Inspector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Inspector{
		cfg:       cfg,
		sessions:  session.New(cfg.Store),
		artifacts: artifact.New(cfg.Store, cfg.Now),
		// Reading and deciding only: no policies, and no candidate is created.
		evolution: evolution.New(evolution.Config{Store: cfg.Store, Now: cfg.Now, NewID: func() string { return "" }}),
	}
}

// Run returns the run id and the program that ran it (by the run's program
// hash), decoded and verified.
func (in *Inspector) Run(ctx context.Context, id string) (store.Run, *bytecode.Program, error) {
	run, err := in.cfg.Store.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("run %s: %w", id, err)
	}
	prog, err := runtime.LoadProgram(ctx, in.cfg.Store, run)
	if err != nil {
		return store.Run{}, nil, err
	}
	return run, prog, nil
}

// PickGraph chooses the graph to draw: the named graph (a declared graph or
// the graph an agent is lowered to), else the serve block's graph, else the
// only declared graph; else it fails listing the declared graphs.
func PickGraph(prog *bytecode.Program, name string) (int, error) {
	lowered := map[int]bool{}
	for _, ag := range prog.Agents {
		if ag.Graph >= 0 {
			lowered[int(ag.Graph)] = true
		}
	}
	var declared []int
	var names []string
	for gi := range prog.Graphs {
		if name != "" && prog.Graphs[gi].Name == name {
			return gi, nil
		}
		if !lowered[gi] {
			declared = append(declared, gi)
			names = append(names, prog.Graphs[gi].Name)
		}
	}
	switch {
	case name != "":
		return -1, fmt.Errorf("no graph or agent %q (graphs: %s)", name, strings.Join(names, ", "))
	case prog.Serve != nil && prog.Serve.Run.Kind == bytecode.RefGraph:
		return int(prog.Serve.Run.Index), nil
	}
	switch len(declared) {
	case 0:
		return -1, fmt.Errorf("the file declares no graph")
	case 1:
		return declared[0], nil
	}
	return -1, fmt.Errorf("several graphs; pick one with --graph (graphs: %s)", strings.Join(names, ", "))
}

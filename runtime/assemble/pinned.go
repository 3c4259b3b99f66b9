package assemble

import (
	"context"
	"errors"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
)

// BindProgram implements runtime.ProgramBinder: a program a resumed run was
// started by (spec/runner.md, "Pinned programs and upgrades") is prepared
// as this assembly's was — its own function table, its models, its
// declared http, exec and mcp tools, the replays of its test block of the
// same name (else its default one) — and every tool the store-backed
// services provide (session recall, memory, skills, workspaces) is the
// Runner's own. Its warnings are not repeated.
func (a *Assembly) BindProgram(ctx context.Context, p *bytecode.Program, encoding []byte) (*runtime.ProgramBinding, error) {
	o := a.o
	o.Program, o.Encoding, o.Verified = p, encoding, true
	o.Replay = sameReplay(p, a.o.Replay)
	o.Observer, o.Metrics = a.cfg.Observer, nil
	o.Warn = func(string) {}
	b, err := prepare(o, false)
	if err != nil {
		return nil, err
	}
	cfg := b.cfg
	for _, t := range p.Tools {
		if !replaceable(cfg.Tools, t.Name) {
			continue
		}
		if own := a.cfg.Tools[t.Name]; !replaceable(a.cfg.Tools, t.Name) {
			cfg.Tools[t.Name] = own
		}
	}
	bind := &runtime.ProgramBinding{Machine: cfg.Machine, Models: cfg.Models, Tools: cfg.Tools}
	if len(cfg.Closers) > 0 {
		bind.Close = func(ctx context.Context) error {
			var errs []error
			for _, c := range cfg.Closers {
				errs = append(errs, c(ctx))
			}
			return errors.Join(errs...)
		}
	}
	return bind, nil
}

// sameReplay is p's test block named as t, else p's default one (nil: t is
// nil).
func sameReplay(p *bytecode.Program, t *bytecode.Test) *bytecode.Test {
	if t == nil {
		return nil
	}
	for i := range p.Tests {
		if p.Tests[i].Name == t.Name {
			return &p.Tests[i]
		}
	}
	return DefaultReplay(p)
}

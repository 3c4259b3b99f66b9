package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/internal/batch"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/stdlib"
)

// loadInProject loads FILE (project.Load: a .agent file is compiled, any
// other read as bytecode), printing its diagnostics to stderr, and returns
// the program, verified, its encoding and the project FILE belongs to.
// Diagnostics and bad bytecode are the command's failure (exit 1).
func loadInProject(a *app, file string) (*bytecode.Program, []byte, *project.Project, error) {
	proj, err := openProject(file)
	if err != nil {
		return nil, nil, nil, usageErr(err)
	}
	prog, enc, ds, srcs, err := proj.Load(file)
	var bad *project.BytecodeError
	switch {
	case errors.As(err, &bad):
		return nil, nil, nil, failErr(err)
	case err != nil:
		return nil, nil, nil, usageErr(err)
	case len(ds) > 0:
		if err := a.textDiags(ds, srcs); err != nil {
			return nil, nil, nil, usageErr(err)
		}
	}
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		return nil, nil, nil, failed
	}
	return prog, enc, proj, nil
}

// batch is what agentc test and mcp lock run over files with: projects
// from openProject, diagnostics as text on stderr, reports on stdout.
func (a *app) batch() batch.Run {
	return batch.Run{Open: openProject, Diags: a.textDiags, Out: a.stdout, Err: a.stderr, Prefix: "agentc: "}
}

// onProgram is cmd, a batch command over the program FILE (args[0])
// holds, running fn with it: the batch GC target, FILE loaded
// (loadInProject), fn.
func onProgram(a *app, cmd *cobra.Command, fn func(args []string, prog *bytecode.Program, enc []byte) error) *cobra.Command {
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		tuneGCForBatch()
		prog, enc, _, err := loadInProject(a, args[0])
		if err != nil {
			return err
		}
		return fn(args, prog, enc)
	}
	return cmd
}

// storeFlags are --data and --store, on every command that opens a store
// (spec/storage.md, "Selecting a store").
type storeFlags struct{ data, store string }

// The help of --data and --store.
const (
	dataHelp  = "the data directory (default $AGENTC_DATA, else ./.agentc)"
	storeHelp = "the store: a postgres:// URL or a Pebble directory (default $AGENTC_STORE, else store: in agentc.yaml, else the data directory)"
)

// storeChosen is how a command's help names the store it works on
// (assemble.ResolveStore; spec/storage.md, "Selecting a store").
const storeChosen = `(--store, else $AGENTC_STORE,
else store: in agentc.yaml, else the data directory --data, $AGENTC_DATA,
./.agentc)`

func (f *storeFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.data, "data", "", dataHelp)
	fl.StringVar(&f.store, "store", "", storeHelp)
}

// dir is the data directory.
func (f storeFlags) dir() string { return assemble.DataDir(f.data, nil) }

// target is the selected store target; a bad one is a usage error.
func (f storeFlags) target() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", failErr(fmt.Errorf("working directory: %w", err))
	}
	t, err := assemble.ResolveStore(f.store, f.store != "", f.dir(), project.At(wd, nil).Root, nil)
	if err != nil {
		return "", usageErr(err)
	}
	return t, nil
}

// open opens the selected store.
func (f storeFlags) open(ctx context.Context) (store.Store, error) {
	t, err := f.target()
	if err != nil {
		return nil, err
	}
	st, err := dial.Open(ctx, t)
	if err != nil {
		return nil, failErr(err)
	}
	return st, nil
}

// openProject is the project of path (a file or folder a command names;
// "": the working directory), compiling against the stdlib table's
// universe.
func openProject(path string) (*project.Project, error) {
	return project.OpenFor(path, stdlib.Universe())
}

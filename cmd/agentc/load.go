package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

// loadVerified compiles FILE (.agent) or reads, decodes and verifies FILE
// (.agb): either way the program is verified once, and returned with its
// encoding.
func loadVerified(a *app, file string) (*bytecode.Program, []byte, error) {
	if !strings.HasSuffix(file, ".agb") {
		return compileFile(a, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("read %s: %w", file, err))
	}
	p, err := runtime.DecodeProgram(b)
	if err != nil {
		return nil, nil, failErr(fmt.Errorf("%s: %w", file, err))
	}
	return p, b, nil
}

// loadInProject is loadVerified and the project FILE belongs to: what run,
// serve and mcp stdio start from.
func loadInProject(a *app, file string) (*bytecode.Program, []byte, *project.Project, error) {
	prog, enc, err := loadVerified(a, file)
	if err != nil {
		return nil, nil, nil, err
	}
	proj, err := openProject(file)
	if err != nil {
		return nil, nil, nil, usageErr(err)
	}
	return prog, enc, proj, nil
}

// loadProgram is loadVerified without the encoding.
func loadProgram(a *app, file string) (*bytecode.Program, error) {
	p, _, err := loadVerified(a, file)
	return p, err
}

// funcTable is the VM's function table of a CLI process (assemble.Funcs
// over the process environment).
func funcTable(p *bytecode.Program, visited func(string) bool) map[string]vm.Func {
	return assemble.Funcs(p, visited, nil)
}

type (
	wallClock     = assemble.WallClock
	cryptoEntropy = assemble.CryptoEntropy
)

// assembleOptions are the assembly options of agentc run and serve: the
// program verified at load, replaying the fixtures of its default test
// block where a model or tool has no implementation, warnings to stderr.
func assembleOptions(a *app, prog *bytecode.Program, enc []byte, root, data string) assemble.Options {
	return assemble.Options{Program: prog, Verified: true, Encoding: enc, Root: root,
		Replay: assemble.DefaultReplay(prog), Evolution: true, Data: data, // workspaces: the default base, outside the data directory (spec/skills.md)
		Warn: func(msg string) { fmt.Fprintf(a.stderr, "agentc: %s\n", msg) },
		// On a shared store (PostgreSQL) this process is one replica among
		// others, with an owner id of its own (spec/serve.md, "Replicas").
		Replica: &runtime.Replica{Owner: newID("replica_")}}
}

// openRunner assembles opts and opens a Runner of it over the store the
// flags select. close closes the Runner, then the store.
func openRunner(ctx context.Context, opts assemble.Options, target string) (asm *assemble.Assembly, st store.Store, r *runtime.Runner, close func(), err error) {
	if asm, err = assemble.Prepare(opts); err != nil {
		return nil, nil, nil, nil, failErr(err)
	}
	if st, err = dial.Open(ctx, target); err != nil {
		_ = asm.Shutdown(context.Background())
		return nil, nil, nil, nil, failErr(err)
	}
	if r, err = asm.Runner(st); err != nil {
		_ = st.Close()
		_ = asm.Shutdown(context.Background())
		return nil, nil, nil, nil, failErr(err)
	}
	return asm, st, r, func() {
		_ = r.Close(context.Background())
		flushTraces(asm, nil)
		_ = st.Close()
	}, nil
}

// storeFlags are --data and --store, on every command that opens a store
// (spec/storage.md, "Selecting a store").
type storeFlags struct{ data, store string }

// The help of --data and --store.
const (
	dataHelp  = "the data directory (default $AGENTC_DATA, else ./.agentc)"
	storeHelp = "the store: a postgres:// URL or a Pebble directory (default $AGENTC_STORE, else store: in agentc.yaml, else the data directory)"
)

func (f *storeFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.data, "data", "", dataHelp)
	fl.StringVar(&f.store, "store", "", storeHelp)
}

// dir is the data directory.
func (f storeFlags) dir() string { return dataDir(f.data) }

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

// flushTraces exports the spans still buffered (spec/telemetry.md), for
// at most traceFlush; a failure is reported on warn (nil: dropped).
func flushTraces(asm *assemble.Assembly, warn func(string)) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlush)
	defer cancel()
	if err := asm.Shutdown(ctx); err != nil && warn != nil {
		warn(err.Error())
	}
}

// traceFlush bounds the export of the last spans at exit.
const traceFlush = 5 * time.Second

// openProject is the project of path (a file or folder a command names;
// "": the working directory), compiling against the stdlib table's
// universe.
func openProject(path string) (*project.Project, error) {
	return project.OpenFor(path, stdlib.Universe())
}

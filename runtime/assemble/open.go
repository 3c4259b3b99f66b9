package assemble

import (
	"context"
	"os"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
)

// Open prepares o and makes its Runner over the store at target
// (dial.Open): what agentc run, serve and mcp stdio start. close closes
// the Runner, flushes the spans still buffered (Flush, a failure dropped)
// and closes the store; on an error whatever was opened is closed again.
func Open(ctx context.Context, o Options, target string) (asm *Assembly, st store.Store, r *runtime.Runner, close func(), err error) {
	if asm, err = Prepare(o); err != nil {
		return nil, nil, nil, nil, err
	}
	if st, err = dial.Open(ctx, target); err != nil {
		_ = asm.Shutdown(context.Background())
		return nil, nil, nil, nil, err
	}
	if r, err = asm.Runner(st); err != nil {
		_ = st.Close()
		_ = asm.Shutdown(context.Background())
		return nil, nil, nil, nil, err
	}
	return asm, st, r, func() {
		_ = r.Close(context.Background())
		asm.Flush(nil)
		_ = st.Close()
	}, nil
}

// Process is the assembly of a process that runs or serves a program
// verified at load (enc its encoding; agentc run, serve, mcp stdio, ui):
// models and tools without an implementation replay the fixtures of its
// default test block, skills may evolve, workspaces take the default base
// outside the data directory data (spec/skills.md), warnings go to warn,
// and on a shared store (PostgreSQL) the process is one replica among
// others, with an owner id of its own that the assembly mints
// (spec/serve.md, "Replicas").
func Process(prog *bytecode.Program, enc []byte, root, data string, warn func(string)) Options {
	return Options{Program: prog, Verified: true, Encoding: enc, Root: root,
		Replay: DefaultReplay(prog), Evolution: true, Data: data, Warn: warn, Replica: &runtime.Replica{}}
}

// TraceFlush bounds the export of the last spans at exit.
const TraceFlush = 5 * time.Second

// Flush is Shutdown for at most TraceFlush (spec/telemetry.md); a failure
// is reported on warn (nil: dropped).
func (a *Assembly) Flush(warn func(string)) {
	ctx, cancel := context.WithTimeout(context.Background(), TraceFlush)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil && warn != nil {
		warn(err.Error())
	}
}

// DataDir is a command's data directory: flag when given, else
// AGENTC_DATA (env; nil: os.LookupEnv), else ./.agentc.
func DataDir(flag string, env func(string) (string, bool)) string {
	if env == nil {
		env = os.LookupEnv
	}
	if flag != "" {
		return flag
	}
	if d, _ := env("AGENTC_DATA"); d != "" {
		return d
	}
	return ".agentc"
}

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/session"
)

// Exit codes of a run beyond the shared ones.
const (
	exitInterrupted = 3
	exitCanceled    = 130
)

const (
	defaultUser    = "cli"
	defaultSession = "main"
)

type runFlags struct {
	input, session, user, run string
	storeFlags
	json          bool
	resume, value string
	record        string
	decide        []string
	upgrade       bool
}

func newRunCmd(a *app) *cobra.Command {
	cmd, f := command(&cobra.Command{
		Use:   "run FILE|OUT.agb --input TEXT [--run NAME] [--session S] [--user U] [--data DIR|--store URL] [--json] [--resume RUN|latest [--value JSON] [--decide ID=ACTION]... [--upgrade]] [--record DIR]",
		Short: "Run a workflow once against the local store",
		Long: `Run compiles FILE (or loads verified bytecode) and runs the graph or
agent --run names, else its serve target, else its only graph or agent, with --input as the user's message, in
session --session of user --user. State and the session ledger live in the
store --store selects (a postgres:// URL or a Pebble directory; default
$AGENTC_STORE, else store: in agentc.yaml, else the Pebble store in the
data directory --data, $AGENTC_DATA, ./.agentc).

Models: with OPENAI_API_KEY set, each model declaration calls an
OpenAI-compatible endpoint (OPENAI_BASE_URL, else the model's base_url).
Without it, the models and tools replay the fixtures of the first test
block that runs the same graph or agent.

Progress goes to standard error, the final output to standard output;
--json prints every event as one JSON line instead. --resume RUN (or
"latest": the session's newest run that is interrupted, needs a decision,
or was cut off while running) continues that run; --value JSON answers
its pending interrupts (required when it waits on one). --decide settles a
side effect of a run that needs a decision (repeatable): ID=done:JSON (it
happened; JSON is its result), ID=retry (call it again with the same
idempotency key) or ID=fail, where ID is the decision's id or its node.
A resumed run continues on the program it was started by (the store keeps
it), whatever FILE holds now; --upgrade moves it to FILE's program when
the upgrade check proves that safe for the run (spec/upgrade.md), and
otherwise prints why and exits 1, the run keeping its program.

--record DIR runs the declared http, exec and mcp tools live (even those
the test block replays) and writes, for each one called, a scripted tool
fixture DIR/TOOL.yaml of its calls (spec/fixtures.md): a test block
replays it with tool TOOL replay "DIR/TOOL.yaml". The files are written
when the run ends, whatever its status.

Exit status: 0 completed, 1 failed, 2 usage, 3 interrupted (waiting for
--resume), 130 canceled.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, f *runFlags) error {
		return runCommand(cmd.Context(), a, args[0], *f)
	})
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the user's message (a string, or JSON for other input types)")
	fl.StringVar(&f.run, "run", "", "the graph or agent to run (default: the serve block's run, else the only one)")
	fl.StringVar(&f.session, "session", defaultSession, "the session to run in")
	fl.StringVar(&f.user, "user", defaultUser, "the user the session belongs to")
	f.storeFlags.add(fl)
	fl.BoolVar(&f.json, "json", false, "print every event as a JSON line on standard output")
	fl.StringVar(&f.resume, "resume", "", "resume this run (run_…, or latest) instead of starting one")
	fl.StringVar(&f.value, "value", "", "with --resume: the JSON value answering the pending interrupt(s)")
	fl.StringArrayVar(&f.decide, "decide", nil, "with --resume: settle a pending side effect, ID=done:JSON|retry|fail (repeatable)")
	fl.BoolVar(&f.upgrade, "upgrade", false, "with --resume: move the run to FILE's program, refused unless agentc upgrade-check proves it compatible for the run")
	fl.StringVar(&f.record, "record", "", "run http, exec and mcp tools live and write their calls as replay fixtures DIR/TOOL.yaml")
	return cmd
}

func runCommand(ctx context.Context, a *app, file string, f runFlags) error {
	q := session.Request{User: f.user, Session: f.session, Input: f.input, Runnable: f.run,
		Resume: f.resume, Value: f.value, Decide: f.decide, Upgrade: f.upgrade}
	if err := q.Check(); err != nil {
		return usageErr(err)
	}
	prog, enc, proj, err := loadInProject(a, file)
	if err != nil {
		return err
	}
	target, err := f.target()
	if err != nil {
		return err
	}
	opts := assemble.Process(prog, enc, proj.Root, f.dir(), a.warn)
	if f.resume == "" {
		if opts.Replay, err = assemble.ReplayFor(prog, f.run); err != nil && f.run != "" {
			return usageErr(fmt.Errorf("--run: %w", err))
		} else if err != nil {
			return usageErr(fmt.Errorf("%s has %w with --run NAME", file, err))
		}
	}
	if f.record != "" {
		opts.Record = model.NewRecording()
		defer opts.Record.Save(f.record, a.warn)
	}
	asm, ch, closeRunner, err := assemble.RunOnce(ctx, opts, target, q)
	var refused *runtime.UpgradeError
	switch {
	case errors.As(err, &refused):
		return upgradeRefused(a, file, refused)
	case session.Invalid(err):
		return usageErr(err)
	case err != nil:
		return failErr(err)
	}
	defer closeRunner()
	// Ctrl-C cancels the run, and its last events (run_finished) still print.
	fin := inspect.Watch{Out: a.stdout, Err: a.stderr, JSON: f.json, Prefix: "agentc: "}.Follow(ch, asm.Config().Clock.Now)
	switch end, err := inspect.End(fin, ctx.Err() != nil); end {
	case inspect.Completed:
		if out, ok := inspect.OutputText(fin.Output); ok && !f.json {
			fmt.Fprintln(a.stdout, out)
		}
		return nil
	case inspect.Waiting:
		fmt.Fprintf(a.stderr, "agentc: %s", session.Hint(fin, "agentc run "+file))
		return &exitError{code: exitInterrupted}
	case inspect.Canceled:
		return &exitError{code: exitCanceled, err: err}
	default:
		return failErr(err)
	}
}

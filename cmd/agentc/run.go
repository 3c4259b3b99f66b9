package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
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

// dataDir is --data, else $AGENTC_DATA, else ./.agentc.
func dataDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("AGENTC_DATA"); d != "" {
		return d
	}
	return ".agentc"
}

type runFlags struct {
	input, session, user, run string
	storeFlags
	json          bool
	resume, value string
	decide        []string
	record        string
	upgrade       bool
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE|OUT.agb --input TEXT [--run NAME] [--session S] [--user U] [--data DIR|--store URL] [--json] [--resume RUN|latest [--value JSON]] [--record DIR]",
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

--record DIR runs the declared http, exec and mcp tools live (even those
the test block replays) and writes, for each one called, a scripted tool
fixture DIR/TOOL.yaml of its calls (spec/fixtures.md): a test block
replays it with tool TOOL replay "DIR/TOOL.yaml". The files are written
when the run ends, whatever its status.

Exit status: 0 completed, 1 failed, 2 usage, 3 interrupted (waiting for
--resume), 130 canceled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommand(cmd.Context(), a, args[0], f)
		},
	}
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
	if f.value != "" && f.resume == "" {
		return usageErr(errors.New("--value needs --resume"))
	}
	if len(f.decide) > 0 && f.resume == "" {
		return usageErr(errors.New("--decide needs --resume"))
	}
	if f.upgrade && f.resume == "" {
		return usageErr(errors.New("--upgrade needs --resume"))
	}
	if f.resume == "" && f.input == "" {
		return usageErr(errors.New("--input is required"))
	}
	if f.value != "" && !json.Valid([]byte(f.value)) {
		return usageErr(fmt.Errorf("--value is not valid JSON: %s", f.value))
	}
	prog, enc, proj, err := loadInProject(a, file)
	if err != nil {
		return err
	}
	target, err := f.target()
	if err != nil {
		return err
	}
	opts := assembleOptions(a, prog, enc, proj.Root, f.dir())
	if _, ok := prog.Runnable(""); !ok && f.run == "" && f.resume == "" && len(prog.Runnables()) > 1 {
		return usageErr(fmt.Errorf("%s has no serve block and several runnables: choose one of %s with --run NAME", file, strings.Join(prog.Runnables(), ", ")))
	}
	if f.run != "" {
		if f.resume != "" {
			return usageErr(errors.New("--run starts a run of that runnable: a resumed run keeps its own, drop --run"))
		}
		if _, ok := prog.Runnable(f.run); !ok {
			return usageErr(fmt.Errorf("--run: no graph or agent %q (runnables: %s)", f.run, strings.Join(prog.Runnables(), ", ")))
		}
		opts.Replay = assemble.ReplayFor(prog, f.run)
	}
	if f.record != "" {
		opts.Record = model.NewRecording()
		defer writeRecording(a, opts.Record, f.record)
	}
	asm, st, r, closeRunner, err := openRunner(ctx, opts, target)
	if err != nil {
		return err
	}
	defer closeRunner()

	inv := runtime.Invocation{User: f.user, Session: f.session, Input: f.input, Runnable: f.run}
	if f.resume != "" {
		if f.resume == "latest" {
			id, err := r.LatestResumable(ctx, f.user, f.session)
			if err != nil {
				return usageErr(err)
			}
			f.resume = id
		}
		svc := session.New(st)
		req, key, err := svc.Resume(ctx, f.resume, json.RawMessage(f.value))
		if err == nil {
			err = svc.Decide(ctx, req, f.decide)
		}
		if errors.Is(err, session.ErrNoRun) || errors.Is(err, session.ErrBadDecision) {
			return usageErr(err)
		} else if err != nil {
			return &exitError{code: exitFail, err: err}
		}
		if f.upgrade {
			req.Upgrade = runtime.UpgradeRequired
		}
		inv.User, inv.Session, inv.Input, inv.Resume = key.User, key.Session, "", req
	}
	// Ctrl-C cancels the run through the Runner rather than abandoning its
	// event stream, so the run's last events (run_finished) still print.
	ch, err := r.Run(context.WithoutCancel(ctx), inv)
	var refused *runtime.UpgradeError
	if errors.As(err, &refused) {
		return upgradeRefused(a, file, refused)
	}
	if err != nil {
		if errors.Is(err, runtime.ErrInvalidInvocation) || errors.Is(err, runtime.ErrUnknownRunnable) ||
			errors.Is(err, runtime.ErrInvalidResume) || errors.Is(err, runtime.ErrNotResumable) {
			return usageErr(err)
		}
		return &exitError{code: exitFail, err: err}
	}
	ch = cancelOnDone(ctx, r, ch)
	fin := printEvents(a, ch, f.json, asm.Config().Clock.Now)
	if fin == nil {
		if ctx.Err() != nil {
			return &exitError{code: exitCanceled, err: errors.New("canceled")}
		}
		return &exitError{code: exitFail, err: errors.New("the run ended without run_finished")}
	}
	switch fin.Status {
	case runtime.StatusCompleted:
		if !f.json {
			printOutput(a, fin.Output)
		}
		return nil
	case runtime.StatusInterrupted:
		fmt.Fprintf(a.stderr, "agentc: run %s is waiting (session %s, user %s)\n", fin.Run, inv.Session, inv.User)
		for _, in := range fin.Interrupts {
			fmt.Fprintf(a.stderr, "  interrupt %s: %s\n", in.ID, in.Prompt)
			if in.Schema != nil {
				schema, _ := json.Marshal(in.Schema)
				fmt.Fprintf(a.stderr, "    answer: JSON of schema %s, e.g. %s\n", schema, runtime.SchemaExample(in.Schema))
			}
		}
		example := "JSON"
		if len(fin.Interrupts) == 1 && fin.Interrupts[0].Schema != nil {
			example = shellQuote(string(runtime.SchemaExample(fin.Interrupts[0].Schema)))
		}
		fmt.Fprintf(a.stderr, "resume with: agentc run %s --resume %s --value %s\n", file, fin.Run, example)
		return &exitError{code: exitInterrupted}
	case runtime.StatusNeedsDecision:
		fmt.Fprintf(a.stderr, "agentc: run %s needs decisions on side effects that may have happened:\n", fin.Run)
		for _, d := range fin.Decisions {
			fmt.Fprintf(a.stderr, "  decision %s (node %s, attempt %d)\n", d.ID, d.Node, d.Attempt)
		}
		fmt.Fprintf(a.stderr, "settle with: agentc run %s --resume %s --decide ID=done:RESULT_JSON|retry|fail\n", file, fin.Run)
		return &exitError{code: exitInterrupted}
	case runtime.StatusCanceled:
		return &exitError{code: exitCanceled, err: fmt.Errorf("run %s canceled", fin.Run)}
	}
	msg := "failed"
	if fin.Error != nil {
		msg = fmt.Sprintf("failed: %s: %s", fin.Error.Kind, fin.Error.Message)
	}
	return &exitError{code: exitFail, err: fmt.Errorf("run %s %s", fin.Run, msg)}
}

// cancelOnDone forwards a run's events and cancels the run (by the id its
// first event carries) when ctx is done. The forwarding goroutine ends when
// the run's channel closes.
func cancelOnDone(ctx context.Context, r *runtime.Runner, ch <-chan *runtime.Event) <-chan *runtime.Event {
	out := make(chan *runtime.Event, cap(ch))
	go func() {
		defer close(out)
		stop := func() bool { return false }
		defer func() { stop() }()
		for e := range ch {
			if e.Run != "" && ctx != nil {
				run := e.Run
				stop = context.AfterFunc(ctx, func() { r.Cancel(run) })
				ctx = nil // one registration: the first event names the run
			}
			out <- e
		}
	}()
	return out
}

// printEvents consumes the run's events: JSON lines on stdout, or a
// progress line per finished node on stderr (elapsed time by now). It
// returns run_finished.
func printEvents(a *app, ch <-chan *runtime.Event, asJSON bool, now func() time.Time) *runtime.Event {
	var fin *runtime.Event
	start := now()
	started := map[string]time.Time{}
	for e := range ch {
		if asJSON {
			if b, err := runtime.EncodeEvent(e); err == nil {
				fmt.Fprintf(a.stdout, "%s\n", b)
			} else {
				fmt.Fprintf(a.stderr, "agentc: %v\n", err)
			}
		}
		key := e.Node
		if e.MapIndex != nil {
			key = fmt.Sprintf("%s[%d]", e.Node, *e.MapIndex)
		}
		switch e.Kind {
		case runtime.EventNodeStarted:
			started[key] = now()
		case runtime.EventNodeFinished, runtime.EventNodeFailed:
			if asJSON {
				break
			}
			t0, ok := started[key]
			if !ok {
				t0 = start
			}
			verb := "done"
			if e.Kind == runtime.EventNodeFailed {
				verb = "failed"
			}
			fmt.Fprintf(a.stderr, "  %-16s step %-3d %s %s\n", key, e.Step, verb, now().Sub(t0).Round(time.Millisecond))
		case runtime.EventRunError:
			if !asJSON && e.Error != nil {
				where := ""
				if e.Error.Node != "" {
					where = " in " + e.Error.Node
				}
				fmt.Fprintf(a.stderr, "agentc: error%s: %s: %s\n", where, e.Error.Kind, e.Error.Message)
			}
		case runtime.EventRunFinished:
			fin = e
		}
	}
	return fin
}

// printOutput prints a run's output: a string as is, anything else as JSON.
func printOutput(a *app, out json.RawMessage) {
	var s string
	if json.Unmarshal(out, &s) == nil {
		fmt.Fprintln(a.stdout, s)
		return
	}
	if len(out) > 0 {
		fmt.Fprintf(a.stdout, "%s\n", out)
	}
}

// shellQuote quotes s for a POSIX shell (single quotes).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeRecording writes each recorded tool's fixture to dir/TOOL.yaml and
// says so on stderr.
func writeRecording(a *app, rec *model.Recording, dir string) {
	tools := rec.Tools()
	if len(tools) == 0 {
		fmt.Fprintf(a.stderr, "agentc: --record: no http, exec or mcp tool was called; nothing written\n")
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(a.stderr, "agentc: --record: %v\n", err)
		return
	}
	for _, name := range tools {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, rec.Fixture(name), 0o644); err != nil {
			fmt.Fprintf(a.stderr, "agentc: --record: %v\n", err)
			continue
		}
		fmt.Fprintf(a.stderr, "agentc: recorded %s (replay: tool %s replay %q)\n", p, name, filepath.ToSlash(p))
	}
}

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/inspect"
)

type checkpointFlags struct {
	storeCmd
	step    int64
	set     []string
	program string
}

func newCheckpointsCmd(a *app) *cobra.Command {
	cmd, f := group[checkpointFlags](&cobra.Command{
		Use:   "checkpoints list|show|fork RUN",
		Short: "Inspect a run's checkpoints and fork a run from one",
		Long: `Checkpoints reads the store agentc run writes ` + storeChosen + `. Every committed superstep of a run has a checkpoint: a
full snapshot of the state or a delta over the previous step.

  agentc checkpoints list [RUN]               step, kind, nodes finished, time, bytes
  agentc checkpoints show [RUN] [--step N]    the state at step N (default: the last)

RUN defaults to the latest run in the store.
  agentc checkpoints fork RUN --step N [--set FIELD=JSON]...

Fork starts a new run in the same session from the state at step N, with
each --set applied (the value is checked against the field's type), and
prints its id. The new run waits where step N left off: continue it with
  agentc run FILE --resume NEWRUN --value JSON
where JSON answers the step's pending interrupt(s), if any (else it is
ignored: pass null). --program FILE refuses the fork when FILE's program is
not the one that ran RUN; resuming under another program is refused too.

Exit status: 0, 1 when the store cannot be read or the run or step does
not exist, 2 on usage errors (including a --set that does not fit).`,
	}, false)
	f.sub("list [RUN]", "List a run's checkpoints (default: the latest run's), oldest first", cobra.MaximumNArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		id, err := inspect.RunOrLatest(ctx, in, args...)
		if err != nil {
			return failErr(err)
		}
		cps, err := in.Checkpoints(ctx, id)
		return each(a, f.json, cps, err, func(cp inspect.Checkpoint) { fmt.Fprintln(a.stdout, cp.Line()) })
	})
	show := f.sub("show [RUN] [--step N]", "Print the state of a run (default: the latest) at a step, as JSON", cobra.MaximumNArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		id, err := inspect.RunOrLatest(ctx, in, args...)
		if err != nil {
			return failErr(err)
		}
		s, err := in.State(ctx, id, f.step)
		switch {
		case err != nil:
			return failErr(err)
		case f.json:
			return a.printJSON(s)
		}
		return a.printIndented(s)
	})
	show.Flags().Int64Var(&f.step, "step", -1, "the step (default: the last)")
	var req inspect.ForkRequest
	fork := f.sub("fork RUN --step N [--set FIELD=JSON]... [--program FILE]", "Start a new run from a run's state at a step", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		nr, err := in.Fork(ctx, req)
		if err != nil {
			return inspectErr(err)
		}
		if f.json {
			if err := a.printJSON(nr); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(a.stdout, nr.Run)
		}
		fmt.Fprintf(a.stderr, "agentc: forked %s at step %d as %s (session %s, user %s)\n", nr.ParentRun, nr.ParentStep, nr.Run, nr.Session, nr.User)
		fmt.Fprintf(a.stderr, "continue with: agentc run FILE --resume %s --value JSON (null when nothing is pending)\n", nr.Run)
		return nil
	})
	// The request is checked before the store is opened.
	fork.PreRunE = func(cmd *cobra.Command, args []string) error {
		if f.step < 0 {
			return usageErr(errors.New("--step is required"))
		}
		req = inspect.ForkRequest{Run: args[0], Step: uint64(f.step)}
		var err error
		if req.Set, err = inspect.ParseSets(f.set); err != nil {
			return usageErr(err)
		}
		if f.program != "" {
			p, _, _, err := loadInProject(a, f.program)
			if err != nil {
				return err
			}
			if req.ProgramHash, err = assemble.ProgramHash(p); err != nil {
				return failErr(err)
			}
		}
		return nil
	}
	fork.Flags().Int64Var(&f.step, "step", -1, "the step to fork at (required)")
	fork.Flags().StringArrayVar(&f.set, "set", nil, "FIELD=JSON: replace a state field in the fork")
	fork.Flags().StringVar(&f.program, "program", "", "refuse the fork unless FILE (.agent or .agb) is the run's program")
	return cmd
}

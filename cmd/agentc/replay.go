package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
)

func newReplayCmd(a *app) *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay RUN [--data DIR] [--json]",
		Short: "Re-execute a run offline from its journal and compare its final state",
		Long: `Replay re-executes RUN offline from its journal (every model and tool
result, random draw and resume value it recorded), under the program that
ran it (loaded from the store by its hash), and compares the state it
reaches with the run's last checkpoint. Nothing is written.

A forked run is replayed through its parent (its journal starts at the
fork).

Exit status: 0 identical, 1 diverged (the differing fields are printed) or
the store, run or journal cannot be read, 2 on usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd.Context(), data, args[0], func(st *pebble.Store, run store.Run, prog *bytecode.Program) error {
				res, err := runtime.ReplayRun(cmd.Context(), st, prog, funcTable(prog, nil), run)
				if err != nil {
					return &exitError{code: exitFail, err: err}
				}
				if asJSON {
					b, _ := json.Marshal(map[string]any{"run": run.ID, "identical": res.Identical, "step": res.Step,
						"want_step": res.WantStep, "diverged_at": res.DivergedAt, "diverged": res.Diverged})
					fmt.Fprintf(a.stdout, "%s\n", b)
				} else if res.Identical {
					fmt.Fprintf(a.stdout, "replay of %s reached step %d: identical state\n", run.ID, res.Step)
				} else {
					fmt.Fprintf(a.stdout, "replay of %s diverges at step %d (replay reached step %d, the run committed step %d):\n", run.ID, res.DivergedAt, res.Step, res.WantStep)
					for _, d := range res.Diverged {
						fmt.Fprintf(a.stdout, "  %s\n", d)
					}
				}
				if !res.Identical {
					return failed
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the data directory (default $AGENTC_DATA, else ./.agentc)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/vm"
)

func newReplayCmd(a *app) *cobra.Command {
	var g storeCmd
	return g.bind(&cobra.Command{
		Use:   "replay RUN [--data DIR|--store URL] [--json]",
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
			return g.inspect(cmd.Context(), func(in *inspect.Inspector) error {
				res, err := in.Replay(cmd.Context(), args[0], func(p *bytecode.Program) map[string]vm.Func { return assemble.Funcs(p, nil, nil) })
				if err != nil {
					return failErr(err)
				}
				switch {
				case g.json:
					if err := a.printJSON(res); err != nil {
						return err
					}
				default:
					fmt.Fprint(a.stdout, res)
				}
				if !res.Identical {
					return failed
				}
				return nil
			})
		},
	}, false)
}

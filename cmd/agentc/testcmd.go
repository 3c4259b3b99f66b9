package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTestCmd(a *app) *cobra.Command {
	cmd, asJSON := command(&cobra.Command{
		Use:   "test FILES|DIRS [--json]",
		Short: "Run the test blocks of workflows offline",
		Long: `Test compiles each FILE (a directory: every .agent file under it that
declares a test block) and runs every test block offline: its models and
tools replay the fixtures it names (any other tool fails when called), its
answers resume interrupts in order, and the runs use an in-memory store.
Each expect is evaluated on the final state; visited(a) before visited(b)
on the order nodes finished in. It prints PASS or FAIL per test, with the
failing expectation's file:line, and the edge coverage of each graph the
tests ran (edges taken / total, inferred from node events). --json prints
one JSON object per test instead.

Exit status: 0 when every test passed, 1 when any failed or did not
compile, 2 on a usage or I/O problem.`,
		Args: cobra.MinimumNArgs(1),
	}, func(cmd *cobra.Command, args []string, asJSON *bool) error {
		passed, total, err := a.batch().Test(cmd.Context(), args, *asJSON)
		if err != nil {
			return usageErr(err)
		}
		if !*asJSON {
			fmt.Fprintf(a.stdout, "%d of %d tests passed\n", passed, total)
		}
		if passed != total {
			return failed
		}
		return nil
	})
	cmd.Flags().BoolVar(asJSON, "json", false, "print one JSON object per test")
	return cmd
}

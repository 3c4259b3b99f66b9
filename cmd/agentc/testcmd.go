package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/testrun"
)

func newTestCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
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
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := project.TestFiles(args)
			if err != nil {
				return usageErr(err)
			}
			first := ""
			if len(files) > 0 {
				first = files[0]
			}
			proj, err := openProject(first)
			if err != nil {
				return usageErr(err)
			}
			var passed, total int
			for _, f := range files {
				p, n := testFile(cmd.Context(), a, proj, f, asJSON)
				passed, total = passed+p, total+n
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "%d of %d tests passed\n", passed, total)
			}
			if passed != total {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per test")
	return cmd
}

// testFile runs the tests of one file and returns how many passed and how
// many there were (a file that does not compile fails each of its test
// blocks, at least one).
func testFile(ctx context.Context, a *app, proj *project.Project, file string, asJSON bool) (passed, total int) {
	prog, enc, ds, srcs, err := proj.Compile(file)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentc: %v\n", err)
		return 0, 1
	}
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		_ = renderDiags(a, "text", ds, srcs)
		blocks := project.TestBlocks(file)
		fmt.Fprintf(a.stdout, "FAIL %s (does not compile: %d test(s) not run)\n", file, blocks)
		return 0, blocks
	}
	cfg := testrun.Config{Root: proj.Root, Display: proj.Display, Verified: true, Encoding: enc}
	cov := testrun.File(ctx, prog, file, cfg, func(r testrun.Report) {
		if total++; r.Pass {
			passed++
		}
		if asJSON {
			_ = a.printJSON(r)
		} else {
			fmt.Fprint(a.stdout, r)
		}
	})
	for _, c := range cov {
		if !asJSON {
			fmt.Fprintf(a.stdout, "coverage %s: graph %s: %d/%d edges\n", file, c.Graph, c.Taken, c.Total)
		}
	}
	return passed, total
}

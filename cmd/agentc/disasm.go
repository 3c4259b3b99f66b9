package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
)

func newDisasmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "disasm FILE.agb|FILE.agent",
		Short: "Print a compiled program: tables, graphs, routes, policies and code",
		Long: `Disasm prints a program in readable form: header and hash, constants,
types, state schemas, graphs with their nodes, policies and route tables,
tools, models, agents, skills, policies, serve and tests, then the code of
every expression with its source positions.

A .agent file is compiled first; any other file is read as bytecode,
decoded and verified (a corrupt file is reported, exit 1).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForBatch()
			file := args[0]
			var prog *bytecode.Program
			if strings.HasSuffix(file, ".agent") {
				p, _, err := compileFile(a, file)
				if err != nil {
					return err
				}
				prog = p
			} else {
				b, err := os.ReadFile(file)
				if err != nil {
					return usageErr(fmt.Errorf("read %s: %w", file, err))
				}
				prog, err = bytecode.Decode(b)
				if err != nil {
					if msg := err.Error(); strings.Contains(msg, "hash") || strings.Contains(msg, "truncated") {
						err = fmt.Errorf("%w (the file is truncated or damaged; compile it again)", err)
					}
					return &exitError{code: exitFail, err: fmt.Errorf("%s: %w", file, err)}
				}
				if err := bytecode.Verify(prog); err != nil {
					return &exitError{code: exitFail, err: fmt.Errorf("%s does not verify:\n%w", file, err)}
				}
			}
			fmt.Fprint(a.stdout, bytecode.Disasm(prog))
			return nil
		},
	}
}

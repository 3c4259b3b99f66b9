package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
)

func newDisasmCmd(a *app) *cobra.Command {
	return onProgram(a, &cobra.Command{
		Use:   "disasm FILE.agb|FILE.agent",
		Short: "Print a compiled program: tables, graphs, routes, policies and code",
		Long: `Disasm prints a program in readable form: header and hash, constants,
types, state schemas, graphs with their nodes, policies and route tables,
tools, models, agents, skills, policies, serve and tests, then the code of
every expression with its source positions.

A .agent file is compiled first; any other file is read as bytecode,
decoded and verified (a corrupt file is reported, exit 1).`,
		Args: cobra.ExactArgs(1),
	}, func(_ []string, prog *bytecode.Program, _ []byte) error {
		fmt.Fprint(a.stdout, bytecode.Disasm(prog))
		return nil
	})
}

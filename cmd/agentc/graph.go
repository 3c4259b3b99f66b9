package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/inspect"
)

func newGraphCmd(a *app) *cobra.Command {
	var format, name string
	cmd := onProgram(a, &cobra.Command{
		Use:   "graph FILE [--graph NAME] [--format mermaid|dot]",
		Short: "Draw a workflow's graph: every node, edge, condition, bound, join and interrupt",
		Long: `Graph compiles FILE and draws one of its graphs from the bytecode — what
will run — as Mermaid (default) or Graphviz DOT. With several graphs, --graph
picks one (default: the serve block's run target, else the only graph); it
may also name an agent, to draw the graph the agent is lowered to.`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(*cobra.Command, []string) error {
			if f := bytecode.PictureFormat(format); f != bytecode.Mermaid && f != bytecode.DOT {
				return usageErr(fmt.Errorf("unknown --format %q (want mermaid or dot)", format))
			}
			return nil
		},
	}, func(_ []string, prog *bytecode.Program, _ []byte) error {
		gi, err := inspect.PickGraph(prog, name)
		if err != nil {
			return usageErr(err)
		}
		out, err := bytecode.Picture(prog, gi, bytecode.PictureFormat(format))
		if err != nil {
			return usageErr(err)
		}
		fmt.Fprint(a.stdout, out)
		return nil
	})
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	cmd.Flags().StringVar(&name, "graph", "", "the graph (or agent) to draw")
	return cmd
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
)

func newGraphCmd(a *app) *cobra.Command {
	var format, name string
	cmd := &cobra.Command{
		Use:   "graph FILE [--graph NAME] [--format mermaid|dot]",
		Short: "Draw a workflow's graph: every node, edge, condition, bound, join and interrupt",
		Long: `Graph compiles FILE and draws one of its graphs from the bytecode — what
will run — as Mermaid (default) or Graphviz DOT. With several graphs, --graph
picks one (default: the serve block's run target, else the only graph); it
may also name an agent, to draw the graph the agent is lowered to.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForBatch()
			f := bytecode.PictureFormat(format)
			if f != bytecode.Mermaid && f != bytecode.DOT {
				return usageErr(fmt.Errorf("unknown --format %q (want mermaid or dot)", format))
			}
			proj, err := openProject()
			if err != nil {
				return usageErr(err)
			}
			prog, _, ds, srcs, err := proj.compile(args[0])
			if err != nil {
				return usageErr(err)
			}
			if nerr, _ := diag.CountErrors(ds); nerr > 0 || prog == nil {
				if err := renderDiags(a, "text", ds, srcs); err != nil {
					return usageErr(err)
				}
				return failed
			}
			gi, err := pickGraph(prog, name)
			if err != nil {
				return usageErr(err)
			}
			out, err := bytecode.Picture(prog, gi, f)
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprint(a.stdout, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	cmd.Flags().StringVar(&name, "graph", "", "the graph (or agent) to draw")
	return cmd
}

// pickGraph chooses the named graph (a declared graph or the graph an agent
// is lowered to), else the serve block's graph, else the only declared
// graph, else fails listing the declared graphs.
func pickGraph(prog *bytecode.Program, name string) (int, error) {
	lowered := map[int]bool{}
	for _, ag := range prog.Agents {
		if ag.Graph >= 0 {
			lowered[int(ag.Graph)] = true
		}
	}
	var declared []int
	var names []string
	for gi := range prog.Graphs {
		if name != "" && prog.Graphs[gi].Name == name {
			return gi, nil
		}
		if !lowered[gi] {
			declared = append(declared, gi)
			names = append(names, prog.Graphs[gi].Name)
		}
	}
	switch {
	case name != "":
		return -1, fmt.Errorf("no graph or agent %q (graphs: %s)", name, strings.Join(names, ", "))
	case prog.Serve != nil && prog.Serve.Run.Kind == bytecode.RefGraph:
		return int(prog.Serve.Run.Index), nil
	}
	switch len(declared) {
	case 0:
		return -1, fmt.Errorf("the file declares no graph")
	case 1:
		return declared[0], nil
	}
	return -1, fmt.Errorf("several graphs; pick one with --graph (graphs: %s)", strings.Join(names, ", "))
}

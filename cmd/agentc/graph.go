package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
)

func newGraphCmd(a *app) *cobra.Command {
	var format, name string
	cmd := &cobra.Command{
		Use:   "graph FILE [--graph NAME] [--format mermaid|dot]",
		Short: "Draw a workflow's graph: every node, edge, condition, bound, join and interrupt",
		Long: `Graph checks FILE and prints one of its graphs as Mermaid (default) or
Graphviz DOT. With several graphs, --graph picks one (default: the serve
block's run target, else the only graph).`,
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
			ds, srcs, infos, err := proj.check(args)
			if err != nil {
				return usageErr(err)
			}
			if nerr, _ := diag.CountErrors(ds); nerr > 0 {
				if err := renderDiags(a, "text", ds, srcs); err != nil {
					return usageErr(err)
				}
				return failed
			}
			g, err := pickGraph(infos[args[0]], name)
			if err != nil {
				return usageErr(err)
			}
			out, err := compiler.Picture(g, f)
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprint(a.stdout, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	cmd.Flags().StringVar(&name, "graph", "", "the graph to draw")
	return cmd
}

// pickGraph chooses the named graph, else the serve block's graph, else the
// only graph, else fails listing the candidates.
func pickGraph(info *compiler.Info, name string) (*compiler.Graph, error) {
	if info == nil {
		return nil, fmt.Errorf("nothing was checked")
	}
	var names []string
	for _, g := range info.Graphs {
		if g.Name() == name {
			return g, nil
		}
		names = append(names, g.Name())
	}
	switch {
	case name != "":
		return nil, fmt.Errorf("no graph %q (graphs: %s)", name, strings.Join(names, ", "))
	case info.Serve != nil:
		if g, ok := info.Serve.Run.(*compiler.Graph); ok {
			return g, nil
		}
	}
	if len(info.Graphs) == 1 {
		return info.Graphs[0], nil
	}
	if len(info.Graphs) == 0 {
		return nil, fmt.Errorf("the file declares no graph")
	}
	return nil, fmt.Errorf("several graphs; pick one with --graph (graphs: %s)", strings.Join(names, ", "))
}

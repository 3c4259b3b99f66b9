package compiler

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// describeInfo renders what the lowering pass and `agentc graph` consume
// from Info, one graph at a time, in a stable text form.
func describeInfo(info *Info) string {
	var b strings.Builder
	for _, g := range info.Graphs {
		a := g.Analysis
		fmt.Fprintf(&b, "graph %s(%s) effect %s, max steps %d\n", g.Name(), g.State.Name(), g.Effect, a.MaxSteps)
		for _, n := range g.Nodes[2:] {
			fmt.Fprintf(&b, "  node %s: %s", n.Name, n.Kind)
			switch {
			case n.Call != nil:
				fmt.Fprintf(&b, " %s", n.Call.Kind)
			case n.Map != nil && n.Map.Body != nil:
				fmt.Fprintf(&b, " over %s of %s", n.Map.Var, n.Map.Body.Kind)
			case n.Kind == NodeJoin && n.JoinAll:
				b.WriteString(" all")
			case n.Kind == NodeJoin:
				b.WriteString(" any")
			}
			fmt.Fprintf(&b, ", effect %s", n.Effect)
			if n.Output != nil {
				fmt.Fprintf(&b, ", output %s", n.Output)
			}
			if len(n.Writes) > 0 {
				fmt.Fprintf(&b, ", writes %s", fieldNames(n.Writes))
			}
			fmt.Fprintf(&b, ", assigned on entry %s", fieldNames(a.Assigned(n)))
			if conc := a.Concurrent(n); len(conc) > 0 {
				var names []string
				for _, m := range conc {
					names = append(names, m.Name)
				}
				fmt.Fprintf(&b, ", concurrent with %s", strings.Join(names, " "))
			}
			if n.Kind == NodeJoin {
				var names []string
				for _, p := range n.Preds {
					names = append(names, p.Name)
				}
				fmt.Fprintf(&b, ", waits for %s", strings.Join(names, " "))
			}
			b.WriteString("\n")
		}
		for _, e := range g.Edges {
			fmt.Fprintf(&b, "  edge %s -> %s %s", e.From.Name, e.To.Name, e.Kind)
			if e.When != nil {
				fmt.Fprintf(&b, " %s", ExprText(e.When))
			}
			if e.Case >= 0 {
				fmt.Fprintf(&b, " case %d", e.Case)
			}
			if e.Max > 0 {
				fmt.Fprintf(&b, " max %d", e.Max)
			}
			b.WriteString("\n")
		}
		for _, cy := range a.Cycles {
			var names, bounds []string
			for _, n := range cy.Nodes {
				names = append(names, n.Name)
			}
			for _, e := range cy.Bounds {
				bounds = append(bounds, fmt.Sprintf("%s->%s max %d", e.From.Name, e.To.Name, e.Max))
			}
			fmt.Fprintf(&b, "  cycle %s bounded by %s\n", strings.Join(names, " "), strings.Join(bounds, ", "))
		}
	}
	return b.String()
}

func fieldNames(fs []*Field) string {
	if len(fs) == 0 {
		return "-"
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	return strings.Join(names, " ")
}

// TestAnalysisGolden pins the analysis of every valid case in
// testdata/valid/NAME.analysis (-update rewrites them).
func TestAnalysisGolden(t *testing.T) {
	const dir = "testdata/valid"
	fsys := os.DirFS(dir)
	for _, name := range agentFiles(t, dir) {
		t.Run(strings.TrimSuffix(name, ".agent"), func(t *testing.T) {
			_, info, _ := checkFile(fsys, name)
			got := describeInfo(info)
			golden := dir + "/" + strings.TrimSuffix(name, ".agent") + ".analysis"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil || string(want) != got {
				t.Errorf("%s differs; run with -update and review:\n%s", golden, got)
			}
		})
	}
}

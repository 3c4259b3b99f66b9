package testrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
)

// TestCoverageJoinFromEarlierStep: the edge into a join from a branch that
// finished supersteps before the join fired counts as taken (issue 18).
func TestCoverageJoinFromEarlierStep(t *testing.T) {
	src := `workflow fan

state S {
  q    : string
  hits : list<string> = [] reduce append
}

graph g(S) input q {
  node a    = set { hits = ["a"] }
  node a2   = set { hits = ["a2"] }
  node b    = set { hits = ["b"] }
  node both = join all
  start -> a
  start -> b
  a     -> a2
  a2    -> both
  b     -> both
  both  -> end
}

test "fans out and joins" {
  run   = g
  input = "x"
  expect len(hits) == 3
}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fan.agent"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "fan.agent")
	var cov Coverage
	r := Run(context.Background(), prog, &prog.Tests[0], Config{Root: dir, Verified: true})
	if !r.Pass {
		t.Fatalf("%s %v", r.Status, r.Failures)
	}
	cov.Add(r)
	if gs := cov.Graphs(prog); len(gs) != 1 || gs[0].Taken != gs[0].Total {
		g := &prog.Graphs[r.Graph]
		for k, e := range EdgeList(g) {
			if !r.Edges[k] {
				t.Errorf("edge %s -> %s not taken", g.Nodes[e.From].Name, g.Nodes[e.To].Name)
			}
		}
		t.Fatalf("coverage %+v", gs)
	}
}

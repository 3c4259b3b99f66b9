package compiler

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

// genGraph writes a graph of `stages` stages. Each stage has 10 nodes: a
// fork, four branches of two nodes (a head with a four-way switch into its
// tail, a tail with a bounded loop back to the head), and a join all: 10
// nodes, 29 declared edges and one join per stage.
func genGraph(b *strings.Builder, name string, stages int) {
	fmt.Fprintf(b, "graph %s(S) input q output out {\n", name)
	for s := 0; s < stages; s++ {
		fmt.Fprintf(b, "  node f%d = set { x = %d }\n", s, s)
		for i := 0; i < 4; i++ {
			fmt.Fprintf(b, "  node h%d_%d = set { notes = \"h%d\" }\n", s, i, i)
			fmt.Fprintf(b, "  node t%d_%d = set { n = 1 }\n", s, i)
		}
		fmt.Fprintf(b, "  node j%d = join all\n", s)
	}
	b.WriteString("  node last = set { out = q }\n")
	b.WriteString("  start -> f0\n")
	for s := 0; s < stages; s++ {
		for i := 0; i < 4; i++ {
			fmt.Fprintf(b, "  f%d -> h%d_%d\n", s, s, i)
		}
		for i := 0; i < 4; i++ {
			h, t := fmt.Sprintf("h%d_%d", s, i), fmt.Sprintf("t%d_%d", s, i)
			fmt.Fprintf(b, "  %s -> %s when x == 1\n", h, t)
			fmt.Fprintf(b, "  %s -> %s when x == 2\n", h, t)
			fmt.Fprintf(b, "  %s -> %s when len(notes) > 3\n", h, t)
			fmt.Fprintf(b, "  %s -> %s otherwise\n", h, t)
			fmt.Fprintf(b, "  %s -> %s when n < 3 max 2 else -> j%d\n", t, h, s)
			fmt.Fprintf(b, "  %s -> j%d otherwise\n", t, s)
		}
		next := fmt.Sprintf("f%d", s+1)
		if s == stages-1 {
			next = "last"
		}
		fmt.Fprintf(b, "  j%d -> %s\n", s, next)
	}
	b.WriteString("  last -> end\n}\n\n")
}

const genHeader = `workflow bench "generated"

state S {
  q     : string
  x     : int = 0
  n     : int = 0 reduce sum
  notes : list<string> = [] reduce append
  out   : string = ""
}

`

// genWorkflow writes graphs of `stages` stages until the text has at least
// `lines` lines (at least one graph).
func genWorkflow(stages, lines int) string {
	var b strings.Builder
	b.WriteString(genHeader)
	for g := 0; g == 0 || strings.Count(b.String(), "\n") < lines; g++ {
		genGraph(&b, fmt.Sprintf("g%d", g), stages)
	}
	return b.String()
}

func loadGenerated(tb testing.TB, src string) (Config, *Package) {
	cfg := Config{FS: fstest.MapFS{"gen.agent": {Data: []byte(src)}}, Universe: stdlib.Universe()}
	pkg, ds := Load(cfg, "gen.agent")
	if len(ds) > 0 {
		tb.Fatalf("generated source does not parse: %v", ds[0])
	}
	return cfg, pkg
}

func checkClean(tb testing.TB, cfg Config, pkg *Package) *Info {
	info, ds := Check(cfg, pkg)
	if e, _ := diag.CountErrors(ds); e > 0 {
		tb.Fatalf("generated workflow has %d errors, first: %v", e, ds[0])
	}
	return info
}

func TestGeneratedGraphIsClean(t *testing.T) {
	cfg, pkg := loadGenerated(t, genWorkflow(100, 0))
	info := checkClean(t, cfg, pkg)
	g := info.Graphs[0]
	declared := 0
	for _, e := range g.Edges {
		if e.Kind != EdgeElse {
			declared++
		}
	}
	joins := 0
	for _, n := range g.Nodes {
		if n.Kind == NodeJoin {
			joins++
		}
	}
	if len(g.Nodes)-2 < 1000 || declared < 2900 || joins != 100 {
		t.Errorf("generated graph: %d nodes, %d edges, %d joins", len(g.Nodes)-2, declared, joins)
	}
	if g.Analysis.MaxSteps <= 0 {
		t.Errorf("MaxSteps = %d", g.Analysis.MaxSteps)
	}
}

func benchCheck(b *testing.B, stages int) {
	cfg, pkg := loadGenerated(b, genWorkflow(stages, 0))
	checkClean(b, cfg, pkg)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	for b.Loop() {
		Check(cfg, pkg)
	}
	reportCPU(b, cpu)
}

func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cputime.Process()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// BenchmarkCheck1k checks a graph of 1,001 nodes, 2,901 declared edges (plus
// 400 else edges) and 100 joins.
func BenchmarkCheck1k(b *testing.B) { benchCheck(b, 100) }

// BenchmarkCheck10k checks a graph ten times larger.
func BenchmarkCheck10k(b *testing.B) { benchCheck(b, 1000) }

func benchParseCheck(b *testing.B, lines int) {
	src := genWorkflow(100, lines)
	b.SetBytes(int64(len(src)))
	b.ReportMetric(float64(strings.Count(src, "\n")), "lines")
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		cfg, pkg := loadGenerated(b, src)
		Check(cfg, pkg)
	}
	reportCPU(b, cpu)
}

// BenchmarkParseCheck10kLines loads and checks a generated workflow of about
// 10,000 lines (graphs of 1,000 nodes).
func BenchmarkParseCheck10kLines(b *testing.B) { benchParseCheck(b, 10_000) }

// BenchmarkParseCheck100kLines does the same for about 100,000 lines.
func BenchmarkParseCheck100kLines(b *testing.B) { benchParseCheck(b, 100_000) }

package compiler

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

// Scaling benchmarks: the whole in-process pipeline (Load = parse and
// resolve, Check, lowering, encoding, verification) over three shapes at
// 1K, 10K and 100K nodes. Compile time should grow linearly with the
// graph: compare cpu-ms/op between sizes (issue 21: 10K ≤ 11× 1K).
//
//	go test ./compiler/ -run '^$' -bench 'Scale' -benchtime 5x
//
// chain: n set nodes in a row, each writing one replace field (every pair
// of writers is a candidate for W-conflicts, none can run concurrently).
// ladder: n nodes, each a switch on a counter into the next node (a
// condition and an otherwise), each writing two replace fields.
// fanout: blocks of 8 parallel nodes writing an append field and one
// replace field each (distinct per branch), closed by a join all.

func scaleChain(n int) string {
	var b strings.Builder
	b.WriteString("workflow chain \"A chain\"\n\nstate S { q: string, n: int = 0 }\n\ngraph chain(S) input q output n {\n")
	for i := range n {
		fmt.Fprintf(&b, "  node s%d = set { n = n + 1 }\n", i)
	}
	b.WriteString("  start -> s0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  s%d -> s%d\n", i-1, i)
	}
	fmt.Fprintf(&b, "  s%d -> end\n}\n", n-1)
	return b.String()
}

func scaleLadder(n int) string {
	// Compact text (still valid source) keeps 100K nodes under the 8 MiB
	// file limit.
	var b strings.Builder
	b.WriteString("workflow ladder \"A switch ladder\"\n\nstate S { q: string, n: int = 0, last: string = \"\" }\n\ngraph ladder(S) input q output last {\n")
	for i := range n {
		fmt.Fprintf(&b, "node s%d=set{n=n+1,last=q}\n", i)
	}
	b.WriteString("start->s0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "s%d->s%d when n<2\ns%d->s%d otherwise\n", i-1, i, i-1, i)
	}
	fmt.Fprintf(&b, "s%d->end\n}\n", n-1)
	return b.String()
}

func scaleFanout(n int) string {
	blocks := max(n/9, 1)
	var b strings.Builder
	b.WriteString("workflow fan \"Fan-outs\"\n\nstate S {\n  q: string\n  hits: list<string> = [] reduce append\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  r%d: string = \"\"\n", i)
	}
	b.WriteString("}\n\ngraph fan(S) input q output hits {\n")
	var edges []string
	prev := "start"
	for k := range blocks {
		j := fmt.Sprintf("j%d", k)
		for i := range 8 {
			nd := fmt.Sprintf("b%dn%d", k, i)
			fmt.Fprintf(&b, "  node %s = set { hits = \"%s\", r%d = q }\n", nd, nd, i)
			edges = append(edges, prev+" -> "+nd, nd+" -> "+j)
		}
		fmt.Fprintf(&b, "  node %s = join all\n", j)
		prev = j
	}
	edges = append(edges, prev+" -> end")
	for _, e := range edges {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func compileSourceOnce(tb testing.TB, src string) {
	cfg := Config{FS: fstest.MapFS{"gen.agent": {Data: []byte(src)}}, Universe: stdlib.Universe()}
	pkg, ds := Load(cfg, "gen.agent")
	if n, _ := diag.CountErrors(ds); n > 0 {
		tb.Fatalf("generated source does not load: %v", ds[0])
	}
	prog, _, ds := Compile(cfg, pkg)
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		tb.Fatalf("generated source does not compile: %v", ds)
	}
}

func benchScale(b *testing.B, gen func(int) string, n int) {
	src := gen(n)
	compileSourceOnce(b, src)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	for b.Loop() {
		compileSourceOnce(b, src)
	}
	reportCPU(b, cpu)
}

func BenchmarkScaleChain1k(b *testing.B)    { benchScale(b, scaleChain, 1_000) }
func BenchmarkScaleChain10k(b *testing.B)   { benchScale(b, scaleChain, 10_000) }
func BenchmarkScaleChain100k(b *testing.B)  { benchScale(b, scaleChain, 100_000) }
func BenchmarkScaleLadder1k(b *testing.B)   { benchScale(b, scaleLadder, 1_000) }
func BenchmarkScaleLadder10k(b *testing.B)  { benchScale(b, scaleLadder, 10_000) }
func BenchmarkScaleLadder100k(b *testing.B) { benchScale(b, scaleLadder, 100_000) }
func BenchmarkScaleFanout1k(b *testing.B)   { benchScale(b, scaleFanout, 1_000) }
func BenchmarkScaleFanout10k(b *testing.B)  { benchScale(b, scaleFanout, 10_000) }
func BenchmarkScaleFanout100k(b *testing.B) { benchScale(b, scaleFanout, 100_000) }

// TestScaleShapesCompile keeps the generators honest: each shape compiles
// without diagnostics at a small size.
func TestScaleShapesCompile(t *testing.T) {
	for name, gen := range map[string]func(int) string{"chain": scaleChain, "ladder": scaleLadder, "fanout": scaleFanout} {
		t.Run(name, func(t *testing.T) { compileSourceOnce(t, gen(50)) })
	}
}

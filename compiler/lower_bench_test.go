package compiler

import (
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/internal/cputime"
)

// Benchmarks of Compile: Check, lowering, encoding and verification of the
// generated graphs of bench_test.go (1,001 nodes, 2,901 declared edges, 400
// loop exits and 100 joins; and ten times that). Besides ns/op and allocs
// they report the CPU time per op and `x-check`, Compile's time over Check's
// alone on the same source (what lowering, encoding and verifying add).

func benchCompile(b *testing.B, stages int) {
	cfg, pkg := loadGenerated(b, genWorkflow(stages, 0))
	if prog, _, ds := Compile(cfg, pkg); prog == nil {
		b.Fatalf("generated workflow does not compile: %v", ds)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	start := time.Now()
	for b.Loop() {
		Compile(cfg, pkg)
	}
	compileNs := time.Since(start)
	reportCPU(b, cpu)
	// The same number of Checks, outside the timed loop, for the ratio.
	start = time.Now()
	for range b.N {
		Check(cfg, pkg)
	}
	if checkNs := time.Since(start); checkNs > 0 {
		b.ReportMetric(float64(compileNs)/float64(checkNs), "x-check")
	}
}

// BenchmarkCompile1k compiles the 1,001-node graph (target: under 50 ms).
func BenchmarkCompile1k(b *testing.B) { benchCompile(b, 100) }

// BenchmarkCompile10k compiles the 10,001-node graph.
func BenchmarkCompile10k(b *testing.B) { benchCompile(b, 1000) }

// BenchmarkLower1k is lowering and encoding alone, on a checked Info.
func BenchmarkLower1k(b *testing.B) {
	cfg, pkg := loadGenerated(b, genWorkflow(100, 0))
	info := checkClean(b, cfg, pkg)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	for b.Loop() {
		prog, ds := lower(info)
		if prog == nil {
			b.Fatal(ds)
		}
		if _, err := bytecode.Encode(prog); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkVerify1k is bytecode.Verify of the lowered 1k program, the last
// step of Compile.
func BenchmarkVerify1k(b *testing.B) {
	cfg, pkg := loadGenerated(b, genWorkflow(100, 0))
	prog, _, _ := Compile(cfg, pkg)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := bytecode.Verify(prog); err != nil {
			b.Fatal(err)
		}
	}
}

package bytecode

import (
	"fmt"
	"testing"
)

func benchDecodeVerify(b *testing.B, n int) {
	p := genProgram(b, n)
	edges, joins := 0, 0
	for _, nd := range p.Graphs[0].Nodes {
		edges += len(nd.Edges)
		if nd.Kind == NodeJoin {
			joins++
		}
	}
	enc := mustEncode(b, p)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		q, err := Decode(enc)
		if err != nil {
			b.Fatal(err)
		}
		if err := Verify(q); err != nil {
			b.Fatal(err)
		}
	}
	// After the loop: b.Loop's timer reset drops earlier metrics.
	b.ReportMetric(float64(edges), "edges")
	b.ReportMetric(float64(joins), "joins")
}

func BenchmarkDecodeVerify(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchDecodeVerify(b, n) })
	}
}

func BenchmarkEncode(b *testing.B) {
	p := genProgram(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDisasm(b *testing.B) {
	p := genProgram(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = Disasm(p)
	}
}

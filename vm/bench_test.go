package vm

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Benchmarks against the anchors of /work/shared/design/ANCHORS.md (same
// machine, medians): a no-op node step costs 477 µs in LangGraph.js, 86 µs
// in tRPC-Agent-Go and 6.5 µs in Eino; a fan-out of 8 + join superstep
// 1,340 µs in LangGraph.js and 26 µs in Eino; LangGraph writes 80 KB per step
// for the heavy state. Ratios are reported as x_<anchor> (how many times
// faster or smaller agentc is).

func chainMachine(tb testing.TB, n int) *Machine {
	b := newGraph(tb, fld("n", intT, ptr(vi(0)), 0))
	noop := b.loadChunk("n") // set { n = n }
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
		b.set(names[i], "n", noop)
	}
	b.chain(names...)
	return b.machine()
}

// BenchmarkChainStep: one node step of a 100-node chain of no-op set nodes,
// in memory (no checkpointer) and with the in-memory checkpointer.
func BenchmarkChainStep(b *testing.B) {
	const n = 100
	m := chainMachine(b, n)
	for _, durable := range []bool{false, true} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o := Options{RunID: "r"}
				if durable {
					o.Checkpointer = NewMemStore()
				}
				res, err := m.Run(context.Background(), 0, o)
				if err != nil || res.Step != n {
					b.Fatal(res, err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
			b.ReportMetric(ns, "ns/step")
			b.ReportMetric(6500/ns, "x_eino")
			b.ReportMetric(86000/ns, "x_trpc")
			b.ReportMetric(477000/ns, "x_langgraphjs")
		})
	}
}

// fanMachine: blocks of start -> 8 nodes -> join all -> ... -> end. With
// tools, the 8 nodes are host calls of a no-op host (run on goroutines),
// with into, each appending its result to hits (as bench/vm's fanout
// does); without tools, they are set nodes (run inline).
func fanMachine(tb testing.TB, blocks int, tools, into bool) *Machine {
	b := newGraph(tb, fld("hits", listStr, ptr(vl()), bytecode.ReduceAppend))
	prev := "start"
	for k := 0; k < blocks; k++ {
		var preds []string
		for i := 0; i < 8; i++ {
			n := fmt.Sprintf("b%dn%d", k, i)
			if tools {
				hits := ""
				if into {
					hits = "hits"
				}
				b.call(n, "noop", hits, "q", b.constChunk(vs("x")))
			} else {
				b.set(n, "hits", b.constChunk(vs("x")))
			}
			preds = append(preds, n)
		}
		j := fmt.Sprintf("j%d", k)
		b.join(j, bytecode.JoinAll, preds...)
		for _, p := range preds {
			b.edge(prev, p)
			b.edge(p, j)
		}
		prev = j
	}
	b.edge(prev, "end")
	return b.machine()
}

// BenchmarkFanOutJoin: one superstep of 8 parallel nodes plus the join's
// step, per block of a 10-block graph.
func BenchmarkFanOutJoin(b *testing.B) {
	const blocks = 10
	x := vs("x")
	noop := HostFunc(func(ctx context.Context, req CallRequest) (types.Value, error) { return x, nil })
	for _, name := range []string{"set", "tool", "tool+into"} {
		m := fanMachine(b, blocks, name != "set", name == "tool+into")
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := m.Run(context.Background(), 0, Options{Host: noop, Workers: 8})
				if err != nil || res.Step != 2*blocks {
					b.Fatal(res, err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / blocks
			b.ReportMetric(ns, "ns/fanout+join")
			b.ReportMetric(26000/ns, "x_eino")
			b.ReportMetric(1340000/ns, "x_langgraphjs")
		})
	}
}

// heavyMachine: a 10 KiB string field and 200 messages; each of n set nodes
// appends one 200-byte message.
func heavyMachine(tb testing.TB, n int) *Machine {
	msg := func(i int) types.Value {
		v, _ := types.MakeRecord(types.MessageType.Shape(), []types.Value{vs("user"),
			vs(fmt.Sprintf("%03d", i) + strings.Repeat("m", 197)), {}, {}})
		return v
	}
	msgs := make([]types.Value, 200)
	for i := range msgs {
		msgs[i] = msg(i)
	}
	b := newGraph(tb, fld("doc", strT, ptr(vs(strings.Repeat("d", 10240))), 0),
		fld("messages", types.MessagesType, ptr(vl(msgs...)), bytecode.ReduceAppend))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("say%d", i)
		b.set(names[i], "messages", b.constChunk(msg(1000+i)))
	}
	b.chain(names...)
	return b.machine()
}

// BenchmarkCheckpointBytes: bytes a step records for the heavy state:
// delta records alone, and amortized with the periodic full snapshots.
func BenchmarkCheckpointBytes(b *testing.B) {
	const n = 300
	m := heavyMachine(b, n)
	var deltaBytes, deltas, allBytes, full, fulls int
	b.ReportAllocs()
	for b.Loop() {
		store := NewMemStore()
		if _, err := m.Run(context.Background(), 0, Options{RunID: "r", Checkpointer: store}); err != nil {
			b.Fatal(err)
		}
		deltaBytes, deltas, allBytes, full, fulls = 0, 0, 0, 0, 0
		for _, r := range store.Records("r")[1:] {
			size := len(r.State) + len(r.Frontier) + len(r.Counters) + len(r.Interrupts)
			for _, j := range r.Journal {
				size += len(j)
			}
			allBytes += size
			if r.Full {
				fulls++
				full = len(r.State)
			} else {
				deltas++
				deltaBytes += size
			}
		}
	}
	b.ReportMetric(float64(deltaBytes)/float64(deltas), "B/delta-step")
	b.ReportMetric(float64(allBytes)/n, "B/step-amortized")
	b.ReportMetric(float64(full), "B/full-snapshot")
	b.ReportMetric(float64(fulls), "full-snapshots")
	b.ReportMetric(80000/(float64(deltaBytes)/float64(deltas)), "x_langgraph")
}

// BenchmarkSuspendedRuns: live heap per run parked at an interrupt, for
// 10,000 runs kept as their Results (state, snapshot, pending interrupt).
func BenchmarkSuspendedRuns(b *testing.B) {
	const runs = 10000
	b2 := newGraph(b, fld("question", strT, ptr(vs("")), 0), fld("report", strT, ptr(vs("")), 0),
		fld("approved", boolT, ptr(vb(false)), 0), fld("log", listStr, ptr(vl()), bytecode.ReduceAppend))
	b2.set("draft", "report", b2.constChunk(vs("a short report")), "log", b2.constChunk(vs("drafted")))
	b2.interrupt("approve", b2.chunk("prompt", 0, 1, func(c *bytecode.ChunkBuilder) {
		c.Const(vs("Publish "))
		c.Emit(bytecode.LOAD, b2.field("report"))
		c.Const(vs("?"))
		c.Emit(bytecode.INTERP, 3)
		c.Emit(bytecode.RETURN, 0)
	}), boolT, "approved")
	b2.chain("draft", "approve")
	m := b2.machine()
	var perRun float64
	for b.Loop() {
		parked := make([]*Result, runs)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range parked {
			res, err := m.Run(context.Background(), 0, Options{RunID: "r", Fields: []NamedValue{{Name: "question", Value: vs(fmt.Sprint("question ", i))}}})
			if err != nil || res.Status != StatusInterrupted {
				b.Fatal(res, err)
			}
			parked[i] = res
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perRun = float64(after.HeapAlloc-before.HeapAlloc) / runs
		runtime.KeepAlive(parked)
	}
	b.ReportMetric(perRun, "B/suspended-run")
}

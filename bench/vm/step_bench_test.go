package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentc/agentc/bench/internal/benchsrc"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/store/memory"
)

// BenchmarkDurableStepOwn is the durable figure's superstep without the
// disk: the chain of `durable` through the Runner and its checkpointer on
// the in-memory store, so that what a step costs the process besides the
// synced write (the VM's step, its events, the encoding, the store's
// bookkeeping) is all there is to time and profile.
//
//	go test ./bench/vm -run '^$' -bench DurableStepOwn -cpuprofile cpu.prof
func BenchmarkDurableStepOwn(b *testing.B) {
	prog, err := benchsrc.Compile("chain.agent", chainSource(chainSteps))
	if err != nil {
		b.Fatal(err)
	}
	r, err := assemble.New(memory.New(), benchOptions(prog, nil))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(context.Background())
	bn := &bench{r: r}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := bn.invoke(context.Background(), fmt.Sprint("s", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*chainSteps), "ns/step")
}

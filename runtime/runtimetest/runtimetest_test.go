package runtimetest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	var c Clock
	if a, b := c.Now(), c.Now(); !a.Equal(DefaultStart.Add(time.Millisecond)) || b.Sub(a) != time.Millisecond {
		t.Errorf("readings %v, %v", a, b)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c2 := Clock{Start: start}
	if got := c2.Now(); !got.Equal(start.Add(time.Millisecond)) {
		t.Errorf("first reading %v", got)
	}
	fired := make(chan struct{})
	if stop := c.AfterFunc(time.Nanosecond, func() { close(fired) }); !stop() {
		t.Error("a timer of a clock without real timers reported it ran")
	}
	real := Clock{RealTimers: true}
	real.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a real timer did not fire")
	}
}

func TestEntropy(t *testing.T) {
	var e Entropy
	seen := map[uint64]bool{}
	for range 1000 {
		v := e.Uint64()
		if seen[v] {
			t.Fatalf("value %d repeated", v)
		}
		seen[v] = true
	}
}

func TestCompileSource(t *testing.T) {
	p := CompileSource(t, "w.agent", `workflow w
state S { q: string, a: string = "" }
graph g(S) input q output a {
  node echo = set { a = q }
  start -> echo
  echo -> end
}`)
	if p.Workflow != "w" || len(p.Graphs) != 1 {
		t.Errorf("compiled %q with %d graphs", p.Workflow, len(p.Graphs))
	}
}

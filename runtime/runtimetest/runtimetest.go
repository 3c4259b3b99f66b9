// Package runtimetest holds what tests of the runtime and its adapters share:
// a deterministic clock and entropy source, and compiling a test program.
// It is imported by tests only.
package runtimetest

import (
	"io/fs"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

// DefaultStart is the first reading of a Clock whose Start is zero, less
// one step.
var DefaultStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a deterministic vm.Clock: every reading is one millisecond after
// the previous one, the first one millisecond after Start (DefaultStart when
// zero). Its timers never fire unless RealTimers is set, in which case
// AfterFunc uses real time (for tests of timeouts).
type Clock struct {
	Start      time.Time
	RealTimers bool
	n          atomic.Int64
}

// Now returns the next reading.
func (c *Clock) Now() time.Time {
	start := c.Start
	if start.IsZero() {
		start = DefaultStart
	}
	return start.Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

// AfterFunc schedules f after d when RealTimers is set; otherwise f never
// runs. The returned stop reports whether f was stopped before it ran.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	if c.RealTimers {
		return time.AfterFunc(d, f).Stop
	}
	return func() bool { return true }
}

// Entropy is a deterministic vm.Entropy: a multiplicative sequence.
type Entropy struct{ n atomic.Uint64 }

// Uint64 returns the next value.
func (e *Entropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

// Compile loads and compiles file from fsys (paths relative to its root)
// and fails t on any error diagnostic.
func Compile(t testing.TB, fsys fs.FS, file string) *bytecode.Program {
	t.Helper()
	cfg := compiler.Config{FS: fsys, Root: ".", Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, file)
	if n, _ := diag.CountErrors(ds); n > 0 {
		t.Fatalf("%s does not load: %v", file, ds)
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		t.Fatalf("%s does not compile: %v", file, ds)
	}
	return prog
}

// CompileSource compiles one file's source, named name.
func CompileSource(t testing.TB, name, src string) *bytecode.Program {
	t.Helper()
	return Compile(t, fstest.MapFS{name: {Data: []byte(src)}}, name)
}

// MapOfApprovals is source text (declarations, no workflow header) of a
// graph batch(question → answer) whose map runs two items of the sub-graph
// gate, each waiting at its own interrupt check ("Approve {item}?",
// returns bool): the shape of the tests of interrupts inside sub-runs.
const MapOfApprovals = `state Gate { item: string, ok: bool = false, verdict: string = "" }

graph gate(Gate) input item output verdict {
  node check = interrupt "Approve {item}?" returns bool into ok
  node mark  = set { verdict = item + " checked" }
  start -> check
  check -> mark
  mark  -> end
}

state Batch { question: string, items: list<string> = ["x", "y"], verdicts: list<string> = [] reduce append, answer: string = "" }

graph batch(Batch) input question output answer {
  node each = map i in items { graph gate { item = i } } into verdicts
  node done = set { answer = join(verdicts, ", ") }
  start -> each
  each  -> done
  done  -> end
}
`

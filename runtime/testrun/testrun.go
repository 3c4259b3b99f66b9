// Package testrun runs the test blocks of a compiled program offline
// (agentc test, spec/fixtures.md): each test's models and tools replay the
// fixtures it names (any other model or tool fails when called; skill and
// workspace tools run for real in a workspace removed afterwards), its
// answers resume interrupts in order, its run uses an in-memory store, a
// fake clock (retry backoff passes at once, timeouts never fire) and
// deterministic entropy, and each expect is evaluated on the
// final state; visited(a) before visited(b) on the order nodes finished in.
// Coverage counts the graph edges the tests took, inferred from node
// events.
package testrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// Config describes where a program's tests run.
type Config struct {
	// Root is the project root: fixture, skill and source paths in the
	// program are relative to it.
	Root string
	// Display shows a root-relative file name in failure messages (nil: as
	// is).
	Display func(name string) string
	// Verified and Encoding are passed to assemble.Options: the program
	// passed bytecode.Verify, and its encoding.
	Verified bool
	Encoding []byte
}

// Result is one test's outcome.
type Result struct {
	Name     string
	Pass     bool
	Failures []string // each "file:line: what" where the test names a place
	Status   string   // how the run ended ("" when it did not start)
	Elapsed  time.Duration
	// Graph is the index of the graph the test ran (-1: none), Edges the
	// edges it took (numbered as EdgeList numbers them).
	Graph int
	Edges map[int]bool
}

// Run runs test block t of prog.
func Run(ctx context.Context, prog *bytecode.Program, t *bytecode.Test, cfg Config) (res Result) {
	start := time.Now()
	res = Result{Name: t.Name, Graph: -1}
	defer func() {
		res.Elapsed = time.Since(start)
		res.Pass = len(res.Failures) == 0
	}()
	fail := func(format string, args ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, args...)) }
	span := func(s bytecode.Span) string { return spanString(cfg, prog, s) }
	gi := prog.RunGraph(t.Run)
	if gi < 0 {
		fail("no run graph")
		return
	}
	res.Graph = gi
	g := &prog.Graphs[gi]
	var finished []string // node names in the order they finished
	// Skill and workspace tools run for real, in a workspace removed after
	// the test; evolution stays off (a test publishes nothing).
	wsDir, err := os.MkdirTemp("", "agentc-test-ws-")
	if err != nil {
		fail("%v", err)
		return
	}
	defer os.RemoveAll(wsDir)
	st := memory.New()
	clock := &fakeClock{}
	r, err := assemble.New(st, assemble.Options{Program: prog, Verified: cfg.Verified, Encoding: cfg.Encoding, Root: cfg.Root,
		Replay: t, Offline: true, Workspaces: wsDir, Clock: clock, Entropy: &seqEntropy{},
		Visited: func(n string) bool { return slices.Contains(finished, n) }})
	if err != nil {
		fail("%v", err)
		return
	}
	defer r.Close(context.Background())
	input, err := testInput(prog, t)
	if err != nil {
		fail("input: %v", err)
		return
	}
	inv := runtime.Invocation{User: "test", Session: "test", Input: input, Runnable: prog.RefName(t.Run)}
	var events []*runtime.Event
	var runErrs []string
	used := make([]bool, len(t.Answers))
	var fin *runtime.Event
	timerFires := 0
	for {
		ch, err := r.Run(ctx, inv)
		if err != nil {
			fail("run: %v", err)
			return
		}
		fin = nil
		for e := range ch {
			events = append(events, e)
			visit := func(n string) {
				if n != "" && !strings.Contains(n, "/") && !slices.Contains(finished, n) {
					finished = append(finished, n)
				}
			}
			switch e.Kind {
			case runtime.EventNodeFinished, runtime.EventNodeFailed:
				visit(e.Node)
			case runtime.EventInterrupt:
				for _, in := range e.Interrupts {
					visit(in.Node)
				}
			case runtime.EventRunError:
				if e.Error != nil {
					runErrs = append(runErrs, fmt.Sprintf("%s: %s: %s", e.Error.Node, e.Error.Kind, e.Error.Message))
				}
			}
			if e.Kind == runtime.EventRunFinished {
				fin = e
			}
		}
		if fin == nil || fin.Status != runtime.StatusInterrupted {
			break
		}
		// Answer each pending interrupt with its node's next unused answer.
		vals := map[string]json.RawMessage{}
		for _, in := range fin.Interrupts {
			for j, ans := range t.Answers {
				if used[j] || int(ans.Node) >= len(g.Nodes) || g.Nodes[ans.Node].Name != in.Node {
					continue
				}
				b, err := types.ToJSON(prog.Consts[ans.Value])
				if err != nil {
					fail("answer %s: %v", in.Node, err)
					return
				}
				used[j] = true
				vals[in.ID] = b
				break
			}
		}
		if len(vals) == 0 {
			// No answer left: the test clock moves to the run's next
			// deadline, and resuming fires it (a wait ends, an
			// unanswered interrupt times out); with none the run stays
			// waiting.
			if len(fin.Timers) == 0 || timerFires >= maxTimerFires {
				break
			}
			timerFires++
			clock.advanceTo(fin.Timers[0].Due)
			inv = runtime.Invocation{User: "test", Session: "test", Resume: &runtime.ResumeRequest{Run: fin.Run}}
			continue
		}
		inv = runtime.Invocation{User: "test", Session: "test", Resume: &runtime.ResumeRequest{Run: fin.Run, Values: vals}}
	}
	if fin == nil {
		fail("the run ended without run_finished")
		return
	}
	res.Status = string(fin.Status)
	if fin.Status == runtime.StatusFailed || fin.Status == runtime.StatusCanceled {
		msg := string(fin.Status)
		if fin.Error != nil {
			msg += ": " + fin.Error.Kind + ": " + fin.Error.Message
		} else if len(runErrs) > 0 {
			msg += ": " + strings.Join(runErrs, "; ")
		}
		fail("%s: the run %s", span(t.Span), msg)
	}
	state, err := finalState(ctx, st, prog, fin.Run)
	if err != nil {
		fail("final state: %v", err)
		return
	}
	firstIndex := func(name string) int { return slices.Index(finished, name) }
	for _, ex := range t.Expects {
		switch ex.Kind {
		case bytecode.ExpectCond:
			v, err := r.Machine().Eval(ctx, int(ex.Code), state)
			switch {
			case err != nil:
				fail("%s: expect: %v", span(ex.Span), err)
			case v.Kind() != types.ValBool || !v.Bool():
				fail("%s: not met: %s", span(ex.Span), sourceLine(cfg, prog, ex.Span))
			}
		case bytecode.ExpectOrder:
			a, b := g.Nodes[ex.First].Name, g.Nodes[ex.Then].Name
			ia, ib := firstIndex(a), firstIndex(b)
			if ia < 0 || ib < 0 || ia > ib {
				fail("%s: visited(%s) before visited(%s) not met (finished: %s)", span(ex.Span), a, b, strings.Join(finished, ", "))
			}
		}
	}
	res.Edges = edgesTaken(g, events, fin.Status == runtime.StatusCompleted)
	return
}

// testInput is a test block's input as invocation text.
func testInput(p *bytecode.Program, t *bytecode.Test) (string, error) {
	if t.Input < 0 || int(t.Input) >= len(p.Consts) {
		return "", nil
	}
	v := p.Consts[t.Input]
	if v.Kind() == types.ValString {
		return v.Str(), nil
	}
	b, err := types.ToJSON(v)
	return string(b), err
}

// maxTimerFires bounds how often a test moves its clock to a deadline (a
// wait inside a bounded loop fires once per round).
const maxTimerFires = 1000

// fakeClock advances a millisecond per reading. It skips the backoff
// before a retry (vm.Sleeper: its time advances by the wait) and never
// fires a timer, so an attempt's timeout never races a replayed result:
// tests run offline, without waiting, with one outcome. A test moves it to
// a waiting run's next deadline (advanceTo), which a resume then fires.
type fakeClock struct{ n atomic.Int64 }

var fakeEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *fakeClock) Now() time.Time {
	return fakeEpoch.Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

// advanceTo moves the clock to t (never back): the next Now is past it.
func (c *fakeClock) advanceTo(t time.Time) {
	ms := int64(t.Sub(fakeEpoch) / time.Millisecond)
	for {
		cur := c.n.Load()
		if cur >= ms || c.n.CompareAndSwap(cur, ms) {
			return
		}
	}
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.n.Add(int64(d / time.Millisecond))
	return ctx.Err() == nil
}

func (c *fakeClock) AfterFunc(time.Duration, func()) func() bool { return func() bool { return true } }

type seqEntropy struct{ n atomic.Uint64 }

func (e *seqEntropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

// sourceLine is the trimmed source line a span starts on ("" if unreadable).
func sourceLine(cfg Config, p *bytecode.Program, s bytecode.Span) string {
	name := p.SpanFile(s)
	if name == "" || s.StartLine == 0 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(cfg.Root, filepath.FromSlash(name)))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	if int(s.StartLine) > len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[s.StartLine-1])
}

// spanString is file:line of a span.
func spanString(cfg Config, p *bytecode.Program, s bytecode.Span) string {
	file := p.SpanFile(s)
	switch {
	case file == "":
		file = "?"
	case cfg.Display != nil:
		file = cfg.Display(file)
	}
	return fmt.Sprintf("%s:%d", file, s.StartLine)
}

// finalState is the run graph's state at the run's last committed step,
// rebuilt from its checkpoint chain (the same state a resume would see).
func finalState(ctx context.Context, st store.Store, p *bytecode.Program, runID string) ([]types.Value, error) {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	last, err := st.LatestCheckpoint(ctx, runID)
	if err != nil {
		return nil, err
	}
	at, err := runtime.StateAt(ctx, st, p, run, last.Step)
	if err != nil {
		return nil, err
	}
	state := make([]types.Value, len(at.Fields))
	for i, f := range at.Fields {
		state[i] = f.Value
	}
	return state, nil
}

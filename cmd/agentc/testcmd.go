package main

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

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

func newTestCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test FILES|DIRS [--json]",
		Short: "Run the test blocks of workflows offline",
		Long: `Test compiles each FILE (a directory: every .agent file under it that
declares a test block) and runs every test block offline: its models and
tools replay the fixtures it names (any other tool fails when called), its
answers resume interrupts in order, and the runs use an in-memory store.
Each expect is evaluated on the final state; visited(a) before visited(b)
on the order nodes finished in. It prints PASS or FAIL per test, with the
failing expectation's file:line, and the edge coverage of each graph the
tests ran (edges taken / total, inferred from node events). --json prints
one JSON object per test instead.

Exit status: 0 when every test passed, 1 when any failed or did not
compile, 2 on a usage or I/O problem.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := testFiles(args)
			if err != nil {
				return usageErr(err)
			}
			proj, err := openProject()
			if err != nil {
				return usageErr(err)
			}
			var passed, total int
			for _, f := range files {
				p, n := testFile(cmd.Context(), a, proj, f, asJSON)
				passed, total = passed+p, total+n
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "%d of %d tests passed\n", passed, total)
			}
			if passed != total {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per test")
	return cmd
}

// testFiles expands FILES|DIRS like validate does; of the files found in
// directories, only those declaring a test block are kept.
func testFiles(args []string) ([]string, error) {
	named := map[string]bool{}
	for _, arg := range args {
		if st, err := os.Stat(arg); err == nil && !st.IsDir() {
			named[displayPath(arg)] = true
		}
	}
	all, err := collectAgentFiles(args)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range all {
		if named[f] {
			out = append(out, f)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "test ") {
				out = append(out, f)
				break
			}
		}
	}
	return out, nil
}

// testResult is one test's outcome (the --json form).
type testResult struct {
	File     string   `json:"file"`
	Name     string   `json:"name"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	Status   string   `json:"status,omitempty"`
	Elapsed  string   `json:"elapsed"`
}

// coverage counts the edges of one graph taken by the tests.
type coverage struct {
	graph string
	taken map[int]bool // edge number (see edgeList)
	total int
}

// testFile runs the tests of one file and returns how many passed and how
// many there were (a file that does not compile counts as one failure).
func testFile(ctx context.Context, a *app, proj *project, file string, asJSON bool) (passed, total int) {
	prog, ds, srcs, err := proj.compile(file)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentc: %v\n", err)
		return 0, 1
	}
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		_ = renderDiags(a, "text", ds, srcs)
		fmt.Fprintf(a.stdout, "FAIL %s (does not compile)\n", file)
		return 0, 1
	}
	covs := map[int]*coverage{}
	var order []int
	for i := range prog.Tests {
		t := &prog.Tests[i]
		res, gi, taken := runTest(ctx, prog, t, proj)
		res.File = file
		total++
		if res.Pass {
			passed++
		}
		if gi >= 0 {
			c := covs[gi]
			if c == nil {
				c = &coverage{graph: prog.Graphs[gi].Name, taken: map[int]bool{}, total: len(edgeList(&prog.Graphs[gi]))}
				covs[gi] = c
				order = append(order, gi)
			}
			for e := range taken {
				c.taken[e] = true
			}
		}
		if asJSON {
			b, _ := json.Marshal(res)
			fmt.Fprintf(a.stdout, "%s\n", b)
			continue
		}
		verdict := "PASS"
		if !res.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(a.stdout, "%s %s: %s (%s)\n", verdict, file, res.Name, res.Elapsed)
		for _, f := range res.Failures {
			fmt.Fprintf(a.stdout, "    %s\n", f)
		}
	}
	if !asJSON {
		for _, gi := range order {
			c := covs[gi]
			fmt.Fprintf(a.stdout, "coverage %s: graph %s: %d/%d edges\n", file, c.graph, len(c.taken), c.total)
		}
	}
	return passed, total
}

// edge is one way out of a node: an edge's target, or its else target.
type edge struct{ from, to int }

// edgeList numbers the edges of g: each edge, then its else, in node order.
func edgeList(g *bytecode.Graph) []edge {
	var out []edge
	for i := range g.Nodes {
		for _, e := range g.Nodes[i].Edges {
			out = append(out, edge{i, int(e.Target)})
			if e.Else >= 0 {
				out = append(out, edge{i, int(e.Else)})
			}
		}
	}
	return out
}

// fakeClock advances a millisecond per reading; its timers fire at once
// when short (retry backoff) and never when long (timeouts), so tests run
// offline without waiting.
type fakeClock struct{ n atomic.Int64 }

func (c *fakeClock) Now() time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	if d <= 10*time.Second {
		c.n.Add(int64(d / time.Millisecond))
		t := time.AfterFunc(0, f)
		return t.Stop
	}
	return func() bool { return true }
}

type seqEntropy struct{ n atomic.Uint64 }

func (e *seqEntropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

// runTest runs one test block. It returns the result, the run graph and
// the edges taken.
func runTest(ctx context.Context, prog *bytecode.Program, t *bytecode.Test, proj *project) (res testResult, gi int, taken map[int]bool) {
	start := time.Now()
	res = testResult{Name: t.Name}
	defer func() {
		res.Elapsed = time.Since(start).Round(time.Millisecond).String()
		res.Pass = len(res.Failures) == 0
	}()
	fail := func(format string, args ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, args...)) }
	gi = prog.RunGraph(t.Run)
	if gi < 0 {
		fail("no run graph")
		return
	}
	g := &prog.Graphs[gi]
	sc, err := loadFixtures(prog, t, proj.root)
	if err != nil {
		fail("%v", err)
		return
	}
	stubTools(prog, sc.tools)
	stubModels(prog, sc.models)
	var finished []string // node names in the order they finished
	visited := func(n string) bool { return slices.Contains(finished, n) }
	st := memory.New()
	cfg := runtime.RunnerConfig{Store: st, Program: prog, Models: sc.models, Tools: sc.tools,
		Funcs: funcTable(prog, visited), Clock: &fakeClock{}, Entropy: &seqEntropy{}}
	// Skill and workspace tools run for real, in a workspace removed after
	// the test; evolution stays off (a test publishes nothing).
	wsDir, err := os.MkdirTemp("", "agentc-test-ws-")
	if err != nil {
		fail("%v", err)
		return
	}
	defer os.RemoveAll(wsDir)
	if err := bindSkills(&cfg, proj.root, wsDir, false); err != nil {
		fail("%v", err)
		return
	}
	r, err := runtime.NewRunner(cfg)
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
	inv := runtime.Invocation{User: "test", Session: "test", Input: input, Runnable: refName(prog, t.Run)}
	var events []*runtime.Event
	var runErrs []string
	used := make([]bool, len(t.Answers))
	var fin *runtime.Event
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
			break // unanswered: the run stays waiting
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
		fail("%s: the run %s", spanString(proj, prog, t.Span), msg)
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
				fail("%s: expect: %v", spanString(proj, prog, ex.Span), err)
			case v.Kind() != types.ValBool || !v.Bool():
				fail("%s: not met: %s", spanString(proj, prog, ex.Span), sourceLine(proj, prog, ex.Span))
			}
		case bytecode.ExpectOrder:
			a, b := g.Nodes[ex.First].Name, g.Nodes[ex.Then].Name
			ia, ib := firstIndex(a), firstIndex(b)
			if ia < 0 || ib < 0 || ia > ib {
				fail("%s: visited(%s) before visited(%s) not met (finished: %s)", spanString(proj, prog, ex.Span), a, b, strings.Join(finished, ", "))
			}
		}
	}
	taken = edgesTaken(g, events, fin.Status == runtime.StatusCompleted)
	return
}

// sourceLine is the trimmed source line a span starts on ("" if unreadable).
func sourceLine(proj *project, p *bytecode.Program, s bytecode.Span) string {
	if int(s.File) >= len(p.Files) || s.StartLine == 0 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(proj.root, filepath.FromSlash(p.Files[s.File])))
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
func spanString(proj *project, p *bytecode.Program, s bytecode.Span) string {
	file := "?"
	if int(s.File) < len(p.Files) {
		file = proj.display(p.Files[s.File])
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

// edgesTaken infers the edges a run took from its node events: an edge
// from a node that finished at step s to a node that ran at the next step
// that ran any node; an edge to end from a node finishing the last step of
// a completed run; an edge from start to the nodes of the first step.
func edgesTaken(g *bytecode.Graph, events []*runtime.Event, completed bool) map[int]bool {
	byName := map[string]int{}
	for i, n := range g.Nodes {
		byName[n.Name] = i
	}
	type act struct {
		step uint64
		node int
	}
	var ran, done []act
	for _, e := range events {
		i, ok := byName[e.Node]
		if !ok {
			continue
		}
		switch e.Kind {
		case runtime.EventNodeStarted, runtime.EventNodeFinished, runtime.EventNodeFailed, runtime.EventInterrupt:
			ran = append(ran, act{e.Step, i})
		}
		if e.Kind == runtime.EventNodeFinished || e.Kind == runtime.EventNodeFailed {
			done = append(done, act{e.Step, i})
		}
	}
	next := func(s uint64) (uint64, bool) {
		best, found := uint64(0), false
		for _, r := range ran {
			if r.step > s && (!found || r.step < best) {
				best, found = r.step, true
			}
		}
		return best, found
	}
	ranAt := func(step uint64, node int) bool {
		return slices.Contains(ran, act{step, node})
	}
	edges := edgeList(g)
	taken := map[int]bool{}
	mark := func(from int, to func(int) bool) {
		for k, e := range edges {
			if e.from == from && to(e.to) {
				taken[k] = true
			}
		}
	}
	if s, ok := next(0); ok && g.Start() >= 0 {
		mark(g.Start(), func(n int) bool { return ranAt(s, n) })
	}
	end := g.End()
	for _, d := range done {
		if s, ok := next(d.step); ok {
			mark(d.node, func(n int) bool { return ranAt(s, n) })
		} else if completed {
			mark(d.node, func(n int) bool { return n == end })
		}
	}
	return taken
}

package upgrade

import (
	"fmt"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/vm"
)

// Plan decides whether one run of old's graph can continue on new, from the
// checkpoint chain that resumes it (vm.ResumeInput.Chain: the last full
// record, then every later one) and the number of pending writes of the
// step after it. The rules are Check's, over what the run holds: the nodes
// of its frontier (its pending interrupts among them), the counters that
// are not zero, and no half-finished step. When the report is compatible
// it also returns the record new resumes the run from: a full checkpoint
// at the chain's last step under new's program and schema hashes, whose
// state carries every kept field's value and every new field's default,
// and whose frontier, pending interrupts and counters are the run's,
// renumbered for the new graph. The old records stay as they are, read
// with the program that wrote them.
func Plan(old, new *bytecode.Program, graph string, chain []vm.StepRecord, pending int) (*vm.StepRecord, *Report) {
	rep := newReport(old, new)
	if len(chain) > 0 {
		rep.Run = chain[len(chain)-1].Run
	}
	oi := slices.IndexFunc(old.Graphs, func(g bytecode.Graph) bool { return g.Name == graph })
	c := pair(rep, old, new, graph)
	if oi < 0 || c == nil {
		if oi < 0 {
			rep.Issues = append(rep.Issues, Issue{Code: RunBroken, Severity: diag.Error,
				Message: "the run's graph " + graph + " is not in the program that wrote it"})
		}
		return nil, rep
	}
	cs, err := vm.StateAt(old, oi, chain)
	var cnt vm.Counters
	lo, ln := vm.Layout(c.og), vm.Layout(c.ng)
	if err == nil {
		cnt, err = vm.DecodeCounters(lo, chain[len(chain)-1].Counters)
	}
	if err != nil {
		c.errorf(RunBroken, c.og.Span, bytecode.Span{}, "the run's checkpoint does not read: %v", err)
		return nil, rep
	}
	if pending > 0 {
		c.errorf(StepUnfinished, c.og.Span, c.ng.Span, "the run stopped inside step %d with %d finished task(s) recorded; resume it on its own program to finish that step first", cs.Step+1, pending)
	}
	waits, err := vm.DecodeWaits(old, oi, chain[len(chain)-1].Interrupts)
	if err != nil {
		c.errorf(RunBroken, c.og.Span, bytecode.Span{}, "the run's checkpoint does not read: %v", err)
		return nil, rep
	}
	c.inside(oi, waits)
	c.fields(cs.Frontier)
	at := c.nodes(cs.Frontier)
	var next vm.Counters
	for _, lc := range cnt.Loops {
		if lc.Count > 0 {
			if s := c.mapLoop(lo, lc.Slot); s >= 0 {
				next.Loops = append(next.Loops, vm.LoopCount{Slot: s, Count: lc.Count})
			}
		}
	}
	for _, s := range cnt.Arrived {
		if t := c.mapArrival(lo, ln, s); t >= 0 {
			next.Arrived = append(next.Arrived, t)
		}
	}
	for _, s := range cnt.Fired {
		if t := c.mapFired(lo, ln, s); t >= 0 {
			next.Fired = append(next.Fired, t)
		}
	}
	state := make([]types.Value, len(c.ns.Fields))
	for i, f := range c.ns.Fields {
		if j := slices.IndexFunc(c.os.Fields, func(g bytecode.StateField) bool { return g.Name == f.Name }); j >= 0 {
			state[i] = cs.State[j]
		} else if f.HasDefault {
			state[i] = new.Consts[f.Default]
		}
	}
	if rep.Compatible() {
		c.unassigned(state, at)
		c.sizes(state)
	}
	sortIssues(rep.Issues)
	if !rep.Compatible() {
		return nil, rep
	}
	slices.SortFunc(next.Loops, func(a, b vm.LoopCount) int { return a.Slot - b.Slot })
	slices.Sort(next.Arrived)
	slices.Sort(next.Fired)

	frontier := slices.Clone(at)
	slices.Sort(frontier)
	var ins []vm.RecordedInterrupt
	for _, in := range waits {
		j := nodeIndex(c.ng, c.og.Nodes[in.Node].Name)
		if j < 0 {
			c.errorf(NodeGone, c.og.Nodes[in.Node].Span, c.ng.Span, "%s, which the run waits on, is not in the new graph", in.ID)
			return nil, rep
		}
		ins = append(ins, vm.RecordedInterrupt{ID: c.ng.Name + "/" + c.ng.Nodes[j].Name, Graph: -1, Node: j,
			Prompt: in.Prompt, Data: in.Data, Due: in.Due, Wait: in.Wait})
	}
	last := &chain[len(chain)-1]
	rec := &vm.StepRecord{Run: last.Run, Step: last.Step, Full: true, ProgramHash: new.Hash,
		SchemaHash: c.ns.Hash, Status: last.Status, Time: last.Time}
	if rec.State, err = vm.EncodeState(state); err == nil {
		if rec.Frontier, err = vm.EncodeFrontier(frontier); err == nil {
			if rec.Counters, err = vm.EncodeCounters(next); err == nil {
				rec.Interrupts, err = vm.EncodeInterrupts(ins)
			}
		}
	}
	if err != nil {
		c.errorf(RunBroken, c.og.Span, c.ng.Span, "the moved checkpoint does not encode: %v", err)
		return nil, rep
	}
	return rec, rep
}

// inside refuses what a run of old graph oi waits on below its own graph:
// an interrupt, wait node or timer of a parked sub-run (a path id), or a
// tool confirmation of a paused llm loop. A parked call's record holds the
// callee's snapshot (its graph, state and frontier by index) or the loop's
// conversation, both written for the old program and not renumbered here;
// the run finishes that call on its own program first.
func (c *checker) inside(oi int, waits []vm.RecordedInterrupt) {
	for _, in := range waits {
		switch {
		case in.Confirm:
			tool, sp := fmt.Sprint(in.Tool), c.og.Span
			if in.Tool >= 0 && in.Tool < len(c.old.Tools) {
				tool, sp = c.old.Tools[in.Tool].Name, c.old.Tools[in.Tool].Span
			}
			c.errorf(WaitsInside, sp, bytecode.Span{}, "the run waits on %s, a confirmation of a call of tool %s: the paused llm loop belongs to the old program; answer it, then upgrade", in.ID, tool)
		case in.Graph != oi || in.ID != c.og.Name+"/"+c.og.Nodes[in.Node].Name:
			// A sub-run's, though its graph may be the run's own (a
			// recursive call): a top-level id is graph/node.
			sp := c.old.Graphs[in.Graph].Nodes[in.Node].Span
			what := "interrupt"
			if in.Wait {
				what = "wait"
			}
			c.errorf(WaitsInside, sp, bytecode.Span{}, "the run waits on %s %s inside a sub-run: a parked sub-run's snapshot is the old program's; answer it (or let it fire), then upgrade", what, in.ID)
		}
	}
}

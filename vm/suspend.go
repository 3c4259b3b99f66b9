package vm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Interrupts inside sub-runs (spec/vm.md, "Suspended calls"). A host that
// runs a sub-graph for a call (a graph node, a composition agent, a map item
// of either) returns a *Suspension when the sub-run stops at interrupts.
// The calling task is then parked: the parent waits like an interrupt node
// would, the child's snapshot travels in the parent's checkpoint (its
// Interrupts record), and the child's interrupts are pending in the parent
// under their path ids ("g/fan/2/sub/approve"). An answer for one of them
// wakes the parked task: the host is called again with CallRequest.Resume
// and continues the child from its snapshot. A map whose items park keeps
// the results of its finished items in the same record, so they never run
// again, and merges all its items, in list order, once the last completes.

// Suspension is the error a Host returns when the sub-run it ran for a call
// stopped waiting (on interrupts, or timers): the task waits for them
// instead of failing.
type Suspension struct {
	Snapshot   *Snapshot   // the sub-run's state (Result.Snapshot)
	Interrupts []Interrupt // its pending interrupts, ids under the caller's path
	// Host, instead of a Snapshot, is state the host keeps for a call it
	// paused itself (an llm loop asking to confirm tool calls): the VM
	// records it and hands it back in SubResume.Host. Its Interrupts are
	// tool confirmations (Interrupt.Tool set; their type is ConfirmType).
	Host types.Value
}

func (s *Suspension) Error() string {
	var ids []string
	for _, it := range s.Interrupts {
		ids = append(ids, it.ID)
	}
	if s.Snapshot != nil {
		for _, t := range s.Snapshot.timers() {
			ids = append(ids, t.ID+" (until "+t.Due.UTC().Format(time.RFC3339)+")")
		}
	}
	return "sub-run waits on " + strings.Join(ids, ", ")
}

// SubResume continues a parked call's sub-run: Resume the callee from From
// with Answers (keyed by the interrupts' full ids). From is nil in a replay.
type SubResume struct {
	From    *Snapshot
	Host    types.Value // the Suspension's Host state (a host-paused call)
	Answers map[string]types.Value
}

// parkedNode is a call node (or a map) some of whose tasks wait on a
// sub-run's interrupts. Every task of the node is recorded: a parked one
// with its sub-run, a finished map item with its writes.
type parkedNode struct {
	node  int32
	tasks []parkedTask // by item, ascending
}

type parkedTask struct {
	id     string
	item   int         // map index, or -1
	local  types.Value // the map item's element
	done   bool
	writes []write // a finished item's writes
	sub    *Snapshot
	host   types.Value // a host-paused call's state (instead of sub)
	its    []Interrupt // the sub-run's pending interrupts (flattened)
}

// pendingInterrupts is every interrupt the run waits on: its interrupt
// nodes', then its parked tasks', in node order.
func (r *run) pendingInterrupts() []Interrupt {
	var out []Interrupt
	for _, w := range r.waiting {
		if !w.wait {
			out = append(out, w.it)
		}
	}
	for _, p := range r.parked {
		for _, t := range p.tasks {
			out = append(out, t.its...)
		}
	}
	return out
}

// isWaiting reports whether the run waits on anything.
func (r *run) isWaiting() bool { return len(r.waiting) > 0 || len(r.parked) > 0 }

// parkedNode returns node ni's parked record, nil when it has none.
func (r *run) parkedNode(ni int32) *parkedNode {
	for _, p := range r.parked {
		if p.node == ni {
			return p
		}
	}
	return nil
}

// takeSubAnswer accepts an answer for an interrupt of a parked task's
// sub-run; it reports false when no parked task waits on id.
func (r *run) takeSubAnswer(id string, v types.Value) (bool, error) {
	for _, p := range r.parked {
		for i := range p.tasks {
			pt := &p.tasks[i]
			j := slices.IndexFunc(pt.its, func(it Interrupt) bool { return it.ID == id })
			if j < 0 {
				continue
			}
			it := pt.its[j]
			c, err := types.Convert(v, it.Type)
			if err != nil {
				return true, &Error{Kind: KindInvalidResume, Node: id, Err: err,
					Message: fmt.Sprintf("resume value %s does not fit %s: %v", v, it.Type, err)}
			}
			if r.subAnswers == nil {
				r.subAnswers = map[string]map[string]types.Value{}
			}
			m := r.subAnswers[pt.id]
			if m == nil {
				m = map[string]types.Value{}
				r.subAnswers[pt.id] = m
			}
			m[id] = c
			return true, nil
		}
	}
	return false, nil
}

// planParked plans the tasks of parked node pn: finished items keep their
// writes, parked ones run again only when an answer (or, in a replay, the
// journal) wakes them.
func (r *run) planParked(pn *parkedNode, pi int32, pl *nodePlan) {
	for i := range pn.tasks {
		pt := &pn.tasks[i]
		r.addTask(pn.node, pi, pt.item, pt.local, pt.id)
		t := &r.tasks[len(r.tasks)-1]
		if t.restored {
			continue
		}
		switch {
		case pt.done:
			t.restored, t.out = true, outcome{kind: outOK, writes: pt.writes}
		case r.subAnswers[pt.id] != nil || r.replay != nil && r.replay.touches(r.step+1, pt.id):
			t.sub = &SubResume{From: pt.sub, Host: pt.host, Answers: r.subAnswers[pt.id]}
		default:
			t.restored, t.out = true, outcome{kind: outSuspend, susp: &Suspension{Snapshot: pt.sub, Host: pt.host, Interrupts: pt.its}}
		}
	}
	pl.n = len(pn.tasks)
}

// park records node pl's tasks after a step in which some of them parked.
func (r *run) park(pl *nodePlan, tasks []task) {
	pn := &parkedNode{node: pl.node, tasks: make([]parkedTask, len(tasks))}
	for i := range tasks {
		t := &tasks[i]
		pt := parkedTask{id: t.id, item: t.item, local: t.local}
		if t.out.kind == outSuspend {
			pt.sub, pt.host, pt.its = t.out.susp.Snapshot, t.out.susp.Host, t.out.susp.Interrupts
		} else {
			pt.done, pt.writes = true, slices.Clone(t.out.writes)
		}
		pn.tasks[i] = pt
	}
	r.newParked = append(r.newParked, pn)
}

// Encoding. A parked task is an entry of the Interrupts record:
//
//	{"id": task id, "node": n, "item": i, "local": v, "sub": snapshot}   parked
//	{"id": task id, "node": n, "item": i, "local": v, "done": writes}    a finished map item
//
// snapshot = {"graph": g, "step": s, "state": [values], "frontier": [n...],
// "counters": counters | null, "interrupts": Interrupts record | null}; writes
// = [field, one, value, ...] as in a pending write.

func (r *run) encodeParked(vals []types.Value) ([]types.Value, error) {
	for _, p := range r.parked {
		for _, pt := range p.tasks {
			v, err := encodeParkedTask(p.node, &pt)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
	}
	return vals, nil
}

func encodeParkedTask(node int32, pt *parkedTask) (types.Value, error) {
	keys := []string{"id", "node", "item", "local"}
	vals := []types.Value{types.MakeString(pt.id), types.MakeInt(int64(node)), types.MakeInt(int64(pt.item)), pt.local}
	if pt.done {
		ws := make([]types.Value, 0, 3*len(pt.writes))
		for _, w := range pt.writes {
			ws = append(ws, types.MakeInt(int64(w.field)), types.MakeBool(w.one), w.value)
		}
		keys, vals = append(keys, "done"), append(vals, types.MakeList(ws))
	} else if pt.sub == nil && !pt.host.IsNull() {
		its := make([]types.Value, len(pt.its))
		for i, it := range pt.its {
			m, err := types.MakeMap([]string{"id", "prompt", "tool"},
				[]types.Value{types.MakeString(it.ID), types.MakeString(it.Prompt), types.MakeInt(int64(it.Tool))})
			if err != nil {
				return types.Value{}, err
			}
			its[i] = m
		}
		keys, vals = append(keys, "host", "its"), append(vals, pt.host, types.MakeList(its))
	} else {
		sv, err := encodeSnapshot(pt.sub)
		if err != nil {
			return types.Value{}, err
		}
		keys, vals = append(keys, "sub"), append(vals, sv)
	}
	return types.MakeMap(keys, vals)
}

func encodeSnapshot(s *Snapshot) (types.Value, error) {
	if s == nil {
		return types.Value{}, errors.New("vm: a parked task has no snapshot")
	}
	// A throwaway run over the snapshot reuses the record encoders.
	r := &run{g: nil, state: s.state, frontier: s.frontier, waiting: s.waiting, parked: s.parked,
		arrived: s.arrived, fired: s.fired, loops: s.loops}
	fr := make([]types.Value, len(s.frontier))
	for i, n := range s.frontier {
		fr[i] = types.MakeInt(int64(n))
	}
	counters, err := countersValue(countersOf(s.arrived, s.fired, s.loops, nil))
	if err != nil {
		return types.Value{}, err
	}
	its, err := r.interruptValues()
	if err != nil {
		return types.Value{}, err
	}
	var itv types.Value
	if its != nil {
		itv = types.MakeList(its)
	}
	return types.MakeMap([]string{"graph", "step", "state", "frontier", "counters", "interrupts"},
		[]types.Value{types.MakeInt(int64(s.graph)), types.MakeInt(int64(s.step)), types.MakeList(s.state),
			types.MakeList(fr), counters, itv})
}

// decodeWaiting splits an Interrupts record of graph gi into the waiting
// interrupt nodes and the parked tasks (with their sub-runs' snapshots).
func (m *Machine) decodeWaiting(gi int, run string, v types.Value, depth int) ([]waitingInterrupt, []*parkedNode, error) {
	if depth > 64 {
		return nil, nil, fmt.Errorf("%w: sub-runs nested too deep", errMalformed)
	}
	g := m.graphs[gi].g
	var waiting []waitingInterrupt
	var parked []*parkedNode
	for i := 0; i < v.Len(); i++ {
		x := v.Elem(i)
		if x.Kind() != types.ValMap {
			return nil, nil, errMalformed
		}
		id, _ := x.MapGet("id")
		node, _ := x.MapGet("node")
		if id.Kind() != types.ValString || node.Kind() != types.ValInt || node.Int() < 0 || node.Int() >= int64(len(g.Nodes)) {
			return nil, nil, errMalformed
		}
		nd := &g.Nodes[node.Int()]
		sub, hasSub := x.MapGet("sub")
		done, hasDone := x.MapGet("done")
		host, hasHost := x.MapGet("host")
		if !hasSub && !hasDone && !hasHost {
			due, err := decodeDue(x)
			if err != nil {
				return nil, nil, err
			}
			if nd.Kind == bytecode.NodeWait {
				if due.IsZero() {
					return nil, nil, errMalformed
				}
				waiting = append(waiting, waitingInterrupt{node: int32(node.Int()), it: Interrupt{ID: id.Str(), Node: nd.Name}, due: due, wait: true})
				continue
			}
			prompt, _ := x.MapGet("prompt")
			data, hasData := x.MapGet("data")
			if !CanWait(nd) || prompt.Kind() != types.ValString || hasData && data.Kind() != types.ValString {
				return nil, nil, errMalformed
			}
			typ := types.JSONType // a paused call's answer (Pause)
			if nd.Kind == bytecode.NodeInterrupt {
				typ = m.prog.Types[nd.Interrupt.Resume]
			}
			it := Interrupt{ID: id.Str(), Node: nd.Name, Prompt: prompt.Str(), Type: typ, Due: due}
			if hasData {
				it.Data = []byte(data.Str())
			}
			waiting = append(waiting, waitingInterrupt{node: int32(node.Int()), due: due, it: it})
			continue
		}
		item, _ := x.MapGet("item")
		local, _ := x.MapGet("local")
		if item.Kind() != types.ValInt || item.Int() < -1 || item.Int() > 1<<31 ||
			(nd.Kind != bytecode.NodeGraph && nd.Kind != bytecode.NodeAgent && nd.Kind != bytecode.NodeLLM && nd.Kind != bytecode.NodeMap) {
			return nil, nil, errMalformed
		}
		pt := parkedTask{id: id.Str(), item: int(item.Int()), local: local}
		switch {
		case hasDone:
			ws, err := m.decodeWrites(gi, done)
			if err != nil {
				return nil, nil, err
			}
			pt.done, pt.writes = true, ws
		case hasHost:
			its, _ := x.MapGet("its")
			recs, err := hostInterrupts(m.prog, its)
			if err != nil || host.IsNull() {
				return nil, nil, errMalformed
			}
			pt.host = host
			for _, in := range recs {
				pt.its = append(pt.its, Interrupt{ID: in.ID, Node: nd.Name, Prompt: in.Prompt, Type: InterruptType(m.prog, in), Confirm: true, Tool: in.Tool})
			}
		default:
			s, err := m.decodeSnapshot(run, sub, depth+1)
			if err != nil {
				return nil, nil, err
			}
			pt.sub, pt.its = s, s.interrupts()
		}
		ni := int32(node.Int())
		if len(parked) == 0 || parked[len(parked)-1].node != ni {
			if len(parked) > 0 && parked[len(parked)-1].node > ni {
				return nil, nil, errMalformed
			}
			parked = append(parked, &parkedNode{node: ni})
		}
		p := parked[len(parked)-1]
		p.tasks = append(p.tasks, pt)
	}
	return waiting, parked, nil
}

// hostInterrupts decodes a host-paused call's interrupts: tool
// confirmations {"id", "prompt", "tool"}.
func hostInterrupts(p *bytecode.Program, v types.Value) ([]RecordedInterrupt, error) {
	if v.Kind() != types.ValList || v.Len() == 0 {
		return nil, errMalformed
	}
	out := make([]RecordedInterrupt, v.Len())
	for i := range out {
		x := v.Elem(i)
		id, _ := x.MapGet("id")
		prompt, _ := x.MapGet("prompt")
		tool, _ := x.MapGet("tool")
		if x.Kind() != types.ValMap || id.Kind() != types.ValString || prompt.Kind() != types.ValString ||
			tool.Kind() != types.ValInt || tool.Int() < 0 || tool.Int() >= int64(len(p.Tools)) {
			return nil, errMalformed
		}
		out[i] = RecordedInterrupt{ID: id.Str(), Prompt: prompt.Str(), Graph: -1, Node: -1, Tool: int(tool.Int()), Confirm: true}
	}
	return out, nil
}

// ConfirmType is the answer type of a confirmation of tool ti (spec/vm.md,
// "Suspended calls"): {decision: "approve" | "edit" | "reject", args:
// the tool's input?, reason: string?}.
func ConfirmType(p *bytecode.Program, ti int) *types.Type {
	if ti < 0 || ti >= len(p.Tools) || int(p.Tools[ti].Input) >= len(p.Types) {
		return nil
	}
	decision, _ := types.NewEnum("", []string{"approve", "edit", "reject"})
	t, err := types.NewRecord("", []types.Field{
		{Name: "decision", Type: decision},
		{Name: "args", Type: types.OptionalOf(p.Types[p.Tools[ti].Input])},
		{Name: "reason", Type: types.OptionalOf(types.StringType)},
	})
	if err != nil {
		return nil
	}
	return t
}

// decodeDue reads an entry's optional "due" (Unix nanoseconds).
func decodeDue(x types.Value) (time.Time, error) {
	d, ok := x.MapGet("due")
	if !ok || d.IsNull() {
		return time.Time{}, nil
	}
	if d.Kind() != types.ValInt || d.Int() <= 0 {
		return time.Time{}, errMalformed
	}
	return time.Unix(0, d.Int()).UTC(), nil
}

func (m *Machine) decodeWrites(gi int, v types.Value) ([]write, error) {
	g := &m.graphs[gi]
	if v.Kind() != types.ValList || v.Len()%3 != 0 {
		return nil, errMalformed
	}
	var out []write
	for i := 0; i < v.Len(); i += 3 {
		f, one := v.Elem(i), v.Elem(i+1)
		if f.Kind() != types.ValInt || f.Int() < 0 || f.Int() >= int64(len(g.fields)) || one.Kind() != types.ValBool {
			return nil, errMalformed
		}
		w := write{field: int32(f.Int()), one: one.Bool(), value: v.Elem(i + 2)}
		if !w.one && g.elemTypes[w.field] != nil && w.value.Kind() != types.ValList {
			return nil, errMalformed
		}
		out = append(out, w)
	}
	return out, nil
}

func (m *Machine) decodeSnapshot(run string, v types.Value, depth int) (*Snapshot, error) {
	if v.Kind() != types.ValMap {
		return nil, errMalformed
	}
	gv, _ := v.MapGet("graph")
	sv, _ := v.MapGet("step")
	st, _ := v.MapGet("state")
	fr, _ := v.MapGet("frontier")
	co, _ := v.MapGet("counters")
	its, _ := v.MapGet("interrupts")
	if gv.Kind() != types.ValInt || gv.Int() < 0 || gv.Int() >= int64(len(m.graphs)) || sv.Kind() != types.ValInt || sv.Int() < 0 ||
		st.Kind() != types.ValList || fr.Kind() != types.ValList || (its.Kind() != types.ValList && !its.IsNull()) {
		return nil, errMalformed
	}
	g := &m.graphs[gv.Int()]
	if st.Len() != len(g.fields) {
		return nil, errMalformed
	}
	s := &Snapshot{graph: int(gv.Int()), hash: m.hash, run: run, step: uint64(sv.Int()), state: st.Elems()}
	for i := 0; i < fr.Len(); i++ {
		n := fr.Elem(i)
		if n.Kind() != types.ValInt || n.Int() < 0 || n.Int() >= int64(len(g.g.Nodes)) || (i > 0 && int32(n.Int()) <= s.frontier[i-1]) {
			return nil, errMalformed
		}
		s.frontier = append(s.frontier, int32(n.Int()))
	}
	s.arrived = make([]bool, g.nArrive)
	s.fired = make([]bool, g.nJoins)
	s.loops = make([]uint32, g.nEdges)
	if !co.IsNull() {
		b, err := types.AppendValue(nil, co)
		if err != nil {
			return nil, err
		}
		if err := decodeCounters(s, g.layout, b); err != nil {
			return nil, err
		}
	}
	var err error
	if s.waiting, s.parked, err = m.decodeWaiting(s.graph, run, its, depth); err != nil {
		return nil, err
	}
	if len(s.waiting) == 0 && len(s.parked) == 0 {
		return nil, fmt.Errorf("%w: a parked sub-run waits on nothing", errMalformed)
	}
	return s, nil
}

// interrupts flattens what a snapshot waits on.
func (s *Snapshot) interrupts() []Interrupt {
	r := &run{waiting: s.waiting, parked: s.parked}
	return r.pendingInterrupts()
}

// Interrupts returns the interrupts the snapshot waits on, those of parked
// sub-runs included (by their path ids).
func (s *Snapshot) Interrupts() []Interrupt { return s.interrupts() }

// touches reports whether the journal has an entry of task (or of a task
// under it) in step s: a replay wakes a parked task then.
func (x *replayIndex) touches(s uint64, task string) bool {
	if x.wakes == nil {
		return false
	}
	return x.wakes[s][task]
}

// suspendValue is the journal value of a parked call: its interrupt ids.
func suspendValue(its []Interrupt) types.Value {
	ids := make([]types.Value, len(its))
	for i, it := range its {
		ids[i] = types.MakeString(it.ID)
	}
	return types.MakeList(ids)
}

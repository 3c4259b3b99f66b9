package vm

// Decoding the checkpoint records the VM writes (spec/vm.md, "Checkpoint
// records"). This file is the only reader of the record format: Resume,
// time travel (StateAt), the Runner's state_delta events and the CLI all go
// through it, so there is one set of validity rules and one implementation
// of how a delta applies to a state. A damaged record is an error, never a
// panic.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// DeltaOp is what a delta record did to one field.
type DeltaOp uint8

// Delta operations, as encoded in a delta record.
const (
	DeltaSet    DeltaOp = opSet    // the field's new value
	DeltaAppend DeltaOp = opAppend // the list of elements appended this step
	DeltaMerge  DeltaOp = opMerge  // the map merged in this step
)

// String returns "set", "append" or "merge" (the names of state_delta
// events, spec/runner.md).
func (o DeltaOp) String() string {
	switch o {
	case DeltaSet:
		return "set"
	case DeltaAppend:
		return "append"
	case DeltaMerge:
		return "merge"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// FieldDelta is one (field, op, value) triple of a delta record. A decoded
// DeltaAppend's Value is a list, a DeltaMerge's a map.
type FieldDelta struct {
	Field int
	Op    DeltaOp
	Value types.Value
}

// Apply applies d to state in place. It is the one definition of how a
// recorded delta rebuilds a state (resume, time travel and replay share it):
//
//	set     the field takes the value
//	append  a field holding a non-empty list gets the elements appended;
//	        any other (null: unassigned, or empty) takes the list
//	merge   a field holding a map gets the entries merged in key-wise (the
//	        delta's win); any other (null: unassigned) takes the map
//
// which is what the reducers did when the step ran: the first write to a
// null field stores the value. d must come from DecodeDelta over a state of
// the same length.
func (d FieldDelta) Apply(state []types.Value) {
	cur := &state[d.Field]
	switch d.Op {
	case DeltaAppend:
		if cur.Kind() == types.ValList && cur.Len() > 0 {
			*cur = types.ListAppend(*cur, d.Value.Elems()...)
		} else {
			*cur = d.Value
		}
	case DeltaMerge:
		if cur.Kind() == types.ValMap {
			*cur = types.MapMerge(*cur, d.Value)
		} else {
			*cur = d.Value
		}
	default:
		*cur = d.Value
	}
}

// ErrMalformedRecord marks a checkpoint record that does not have the
// shape spec/vm.md gives it (a damaged or foreign record).
var ErrMalformedRecord = errors.New("malformed record")

var errMalformed = ErrMalformedRecord

// DecodeState decodes a full record's state: one value per field of a state
// schema of nfields fields (null: unassigned).
func DecodeState(b []byte, nfields int) ([]types.Value, error) {
	v, err := decodeList(b)
	if err != nil {
		return nil, err
	}
	if v.Len() != nfields {
		return nil, fmt.Errorf("%w: %d fields, the schema has %d", errMalformed, v.Len(), nfields)
	}
	return v.Elems(), nil
}

// DecodeDelta decodes a delta record's state over a schema of nfields
// fields. Fields ascend, each at most once; an append's value is a list and
// a merge's a map.
func DecodeDelta(b []byte, nfields int) ([]FieldDelta, error) {
	v, err := decodeList(b)
	if err != nil {
		return nil, err
	}
	if v.Len()%3 != 0 {
		return nil, errMalformed
	}
	out := make([]FieldDelta, 0, v.Len()/3)
	for i := 0; i < v.Len(); i += 3 {
		f, op, x := v.Elem(i), v.Elem(i+1), v.Elem(i+2)
		if f.Kind() != types.ValInt || f.Int() < 0 || f.Int() >= int64(nfields) || op.Kind() != types.ValInt ||
			len(out) > 0 && int(f.Int()) <= out[len(out)-1].Field {
			return nil, errMalformed
		}
		d := FieldDelta{Field: int(f.Int()), Value: x}
		switch op.Int() {
		case opSet:
			d.Op = DeltaSet
		case opAppend:
			d.Op = DeltaAppend
			if x.Kind() != types.ValList {
				return nil, fmt.Errorf("%w: field %d: append of a value of kind %s, not a list", errMalformed, d.Field, x.Kind())
			}
		case opMerge:
			d.Op = DeltaMerge
			if x.Kind() != types.ValMap {
				return nil, fmt.Errorf("%w: field %d: merge of a value of kind %s, not a map", errMalformed, d.Field, x.Kind())
			}
		default:
			return nil, fmt.Errorf("%w: field %d: op %d", errMalformed, d.Field, op.Int())
		}
		out = append(out, d)
	}
	return out, nil
}

// DecodeFrontier decodes a record's frontier over graph g: the indices of
// the nodes of the next step (waiting interrupts included), ascending.
func DecodeFrontier(g *bytecode.Graph, b []byte) ([]int, error) {
	v, err := decodeList(b)
	if err != nil {
		return nil, err
	}
	start, end := int64(g.Start()), int64(g.End())
	out := make([]int, v.Len())
	for i := range out {
		n := v.Elem(i)
		if n.Kind() != types.ValInt || n.Int() < 0 || n.Int() >= int64(len(g.Nodes)) ||
			n.Int() == start || n.Int() == end || (i > 0 && int(n.Int()) <= out[i-1]) {
			return nil, errMalformed
		}
		out[i] = int(n.Int())
	}
	return out, nil
}

// RecordedInterrupt is an interrupt a checkpoint waits on: its id
// ("graph/node", or a path through parked sub-runs, "g/fan/2/sub/approve"),
// the graph its node belongs to and the node's index there (an interrupt
// node, or a call node whose call paused), its prompt, and a paused call's
// data.
type RecordedInterrupt struct {
	ID, Prompt string
	Graph      int
	Node       int
	Due        time.Time // its timer (zero: none)
	Wait       bool      // a wait node: a timer, not a question (DecodeInterrupts leaves it out)
	Confirm    bool      // a tool confirmation of a paused llm loop: Tool is the tool, Graph and Node are -1
	Tool       int
	Data       []byte // a paused call's (Pause.Data)
}

// DecodeInterrupts decodes a record's pending interrupts over graph gi of p
// (nil bytes: none), those of parked sub-runs included (spec/vm.md,
// "Suspended calls"). Wait nodes are left out (DecodeWaits has them).
func DecodeInterrupts(p *bytecode.Program, gi int, b []byte) ([]RecordedInterrupt, error) {
	all, err := DecodeWaits(p, gi, b)
	return slices.DeleteFunc(all, func(in RecordedInterrupt) bool { return in.Wait }), err
}

// DecodeWaits decodes everything a record waits on: its interrupts and
// wait nodes, those of parked sub-runs included. Due is set on the ones
// with a timer.
func DecodeWaits(p *bytecode.Program, gi int, b []byte) ([]RecordedInterrupt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	v, err := decodeList(b)
	if err != nil {
		return nil, err
	}
	return appendRecordedInterrupts(nil, p, gi, v, 0)
}

// InterruptType is the resume type of recorded interrupt in: an interrupt
// node's declared type, json for a paused call, ConfirmType for a tool
// confirmation (nil when the record names no such node of p).
func InterruptType(p *bytecode.Program, in RecordedInterrupt) *types.Type {
	if in.Confirm {
		return ConfirmType(p, in.Tool)
	}
	if in.Graph < 0 || in.Graph >= len(p.Graphs) {
		return nil
	}
	g := &p.Graphs[in.Graph]
	if in.Node < 0 || in.Node >= len(g.Nodes) || !CanWait(&g.Nodes[in.Node]) {
		return nil
	}
	if g.Nodes[in.Node].Kind != bytecode.NodeInterrupt {
		return types.JSONType
	}
	if r := g.Nodes[in.Node].Interrupt.Resume; int(r) < len(p.Types) {
		return p.Types[r]
	}
	return nil
}

func appendRecordedInterrupts(out []RecordedInterrupt, p *bytecode.Program, gi int, v types.Value, depth int) ([]RecordedInterrupt, error) {
	if gi < 0 || gi >= len(p.Graphs) || depth > 64 || v.Kind() != types.ValList {
		return nil, errMalformed
	}
	g := &p.Graphs[gi]
	for i := 0; i < v.Len(); i++ {
		x := v.Elem(i)
		id, _ := x.MapGet("id")
		node, _ := x.MapGet("node")
		if x.Kind() != types.ValMap || id.Kind() != types.ValString ||
			node.Kind() != types.ValInt || node.Int() < 0 || node.Int() >= int64(len(g.Nodes)) {
			return nil, errMalformed
		}
		if _, done := x.MapGet("done"); done {
			continue
		}
		if _, host := x.MapGet("host"); host {
			its, _ := x.MapGet("its")
			recs, err := hostInterrupts(p, its)
			if err != nil {
				return nil, err
			}
			out = append(out, recs...)
			continue
		}
		if sub, ok := x.MapGet("sub"); ok {
			sg, _ := sub.MapGet("graph")
			its, _ := sub.MapGet("interrupts")
			if sub.Kind() != types.ValMap || sg.Kind() != types.ValInt || sg.Int() < 0 || sg.Int() >= int64(len(p.Graphs)) {
				return nil, errMalformed
			}
			var err error
			if out, err = appendRecordedInterrupts(out, p, int(sg.Int()), its, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		due, err := decodeDue(x)
		if err != nil {
			return nil, err
		}
		if g.Nodes[node.Int()].Kind == bytecode.NodeWait {
			if due.IsZero() {
				return nil, errMalformed
			}
			out = append(out, RecordedInterrupt{ID: id.Str(), Graph: gi, Node: int(node.Int()), Due: due, Wait: true})
			continue
		}
		prompt, _ := x.MapGet("prompt")
		data, hasData := x.MapGet("data")
		if prompt.Kind() != types.ValString || !CanWait(&g.Nodes[node.Int()]) || hasData && data.Kind() != types.ValString {
			return nil, errMalformed
		}
		rec := RecordedInterrupt{ID: id.Str(), Prompt: prompt.Str(), Graph: gi, Node: int(node.Int()), Due: due}
		if hasData {
			rec.Data = []byte(data.Str())
		}
		out = append(out, rec)
	}
	return out, nil
}

// CanWait reports whether a checkpoint may record an interrupt of node n:
// an interrupt node, or a call node whose call paused (Pause).
func CanWait(n *bytecode.Node) bool {
	switch n.Kind {
	case bytecode.NodeInterrupt, bytecode.NodeLLM, bytecode.NodeAgent, bytecode.NodeTool, bytecode.NodeGraph:
		return true
	}
	return false
}

// ChainState is what a checkpoint chain rebuilds: the state at its last
// record, with that record's frontier and pending interrupts.
type ChainState struct {
	Run        string
	Step       uint64        // the last record's step
	State      []types.Value // one per field of the graph's state schema
	Frontier   []int         // node indices, ascending
	Interrupts []RecordedInterrupt
}

// StateAt rebuilds the state of a run of graph gi of p from a checkpoint
// chain (the last full record at or before the step, then every later
// record up to it; store.Checkpoints.CheckpointChain): the full record's
// state with every later delta applied (FieldDelta.Apply). It checks the
// chain's shape, not its hashes (Resume does: a Machine knows its own).
func StateAt(p *bytecode.Program, gi int, chain []StepRecord) (*ChainState, error) {
	if gi < 0 || gi >= len(p.Graphs) {
		return nil, fmt.Errorf("vm: graph %d out of range", gi)
	}
	g := &p.Graphs[gi]
	if int(g.State) < 0 || int(g.State) >= len(p.States) {
		return nil, fmt.Errorf("vm: graph %s: state %d out of range", g.Name, g.State)
	}
	state, err := rebuildState(len(p.States[g.State].Fields), chain)
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	last := &chain[len(chain)-1]
	cs := &ChainState{Run: last.Run, Step: last.Step, State: state}
	if cs.Frontier, err = DecodeFrontier(g, last.Frontier); err != nil {
		return nil, fmt.Errorf("vm: %w", chainError(last, "frontier", err))
	}
	if cs.Interrupts, err = DecodeInterrupts(p, gi, last.Interrupts); err != nil {
		return nil, fmt.Errorf("vm: %w", chainError(last, "interrupts", err))
	}
	return cs, nil
}

// rebuildState checks a chain's shape (a full record first, steps
// ascending, one run) and rebuilds its state.
func rebuildState(nfields int, chain []StepRecord) ([]types.Value, error) {
	if len(chain) == 0 {
		return nil, errors.New("empty checkpoint chain")
	}
	for i := range chain {
		if i > 0 && (chain[i].Step <= chain[i-1].Step || chain[i].Run != chain[0].Run) {
			return nil, fmt.Errorf("checkpoint chain out of order at step %d", chain[i].Step)
		}
	}
	if !chain[0].Full {
		return nil, fmt.Errorf("checkpoint chain of run %s starts at step %d, which is not a full snapshot", chain[0].Run, chain[0].Step)
	}
	var state []types.Value
	for i := range chain {
		rec := &chain[i]
		if rec.Full {
			s, err := DecodeState(rec.State, nfields)
			if err != nil {
				return nil, chainError(rec, "state", err)
			}
			state = s
			continue
		}
		ds, err := DecodeDelta(rec.State, nfields)
		if err != nil {
			return nil, chainError(rec, "state", err)
		}
		for _, d := range ds {
			d.Apply(state)
		}
	}
	return state, nil
}

func chainError(rec *StepRecord, what string, err error) error {
	return fmt.Errorf("run %s: checkpoint %d: %s: %w", rec.Run, rec.Step, what, err)
}

// decodeList decodes a canonical list value that must fill b exactly.
func decodeList(b []byte) (types.Value, error) {
	if len(b) == 0 {
		return types.MakeList(nil), nil
	}
	v, n, err := types.DecodeValue(b)
	if err != nil {
		return types.Value{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if n != len(b) || v.Kind() != types.ValList {
		return types.Value{}, errMalformed
	}
	return v, nil
}

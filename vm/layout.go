package vm

import (
	"fmt"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// CounterLayout numbers the counter slots of a graph (spec/vm.md,
// "Checkpoint records"): one loop-counter slot per edge, in node order
// then route order; one arrival slot per (join, predecessor), in node
// order then predecessor order; one fired slot per join, in node order.
// Checkpoints record counters by these slots, so a record is read against
// the layout of the graph that wrote it.
type CounterLayout struct {
	EdgeBase  []int32 // per node: its first loop-counter slot
	Edges     int     // loop-counter slots
	Bounded   []int32 // the slots of `max N` edges (the only loop counters that move)
	JoinBase  []int32 // per node: its first arrival slot, -1 for non-joins
	JoinIndex []int32 // per node: its fired slot, -1 for non-joins
	Arrivals  int     // arrival slots
	Joins     int     // fired slots
}

// Layout computes g's counter layout.
func Layout(g *bytecode.Graph) CounterLayout {
	nn := len(g.Nodes)
	l := CounterLayout{EdgeBase: make([]int32, nn), JoinBase: make([]int32, nn), JoinIndex: make([]int32, nn)}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		l.EdgeBase[i] = int32(l.Edges)
		for ei, e := range nd.Edges {
			if e.Max > 0 {
				l.Bounded = append(l.Bounded, int32(l.Edges+ei))
			}
		}
		l.Edges += len(nd.Edges)
		l.JoinBase[i], l.JoinIndex[i] = -1, -1
		if nd.Kind == bytecode.NodeJoin {
			l.JoinBase[i] = int32(l.Arrivals)
			l.JoinIndex[i] = int32(l.Joins)
			l.Arrivals += len(nd.Join.Preds)
			l.Joins++
		}
	}
	return l
}

// Counters are a checkpoint's join and loop counters, by slot of the
// graph's CounterLayout: the arrival slots set, the joins fired in the
// current wave, and the traversal count of every bounded edge taken at
// least once (ascending slots).
type Counters struct {
	Arrived []int
	Fired   []int
	Loops   []LoopCount
}

// LoopCount is how often the bounded edge of loop-counter slot Slot was
// taken in the run.
type LoopCount struct {
	Slot  int
	Count uint32
}

// IsZero reports whether every counter is zero.
func (c Counters) IsZero() bool { return len(c.Arrived)+len(c.Fired)+len(c.Loops) == 0 }

// DecodeCounters decodes a record's counters against layout l (nil bytes:
// every counter zero). Slots out of l's range are ErrMalformedRecord.
func DecodeCounters(l CounterLayout, b []byte) (Counters, error) {
	var c Counters
	if len(b) == 0 {
		return c, nil
	}
	v, n, err := types.DecodeValue(b)
	if err != nil {
		return c, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if n != len(b) || v.Kind() != types.ValMap {
		return c, errMalformed
	}
	ints := func(key string, limit int) ([]int, bool) {
		lv, _ := v.MapGet(key)
		if lv.Kind() != types.ValList && !lv.IsNull() {
			return nil, false
		}
		out := make([]int, lv.Len()&^(lv.Len()>>63))
		for i := range out {
			e := lv.Elem(i)
			if e.Kind() != types.ValInt || e.Int() < 0 || limit >= 0 && e.Int() >= int64(limit) {
				return nil, false
			}
			out[i] = int(e.Int())
		}
		return out, true
	}
	var loops []int
	var ok1, ok2, ok3 bool
	c.Arrived, ok1 = ints("arrived", l.Arrivals)
	c.Fired, ok2 = ints("fired", l.Joins)
	loops, ok3 = ints("loops", -1)
	if !ok1 || !ok2 || !ok3 || len(loops)%2 != 0 {
		return Counters{}, errMalformed
	}
	for i := 0; i < len(loops); i += 2 {
		if loops[i] >= l.Edges || loops[i+1] > 1<<32-1 {
			return Counters{}, errMalformed
		}
		c.Loops = append(c.Loops, LoopCount{Slot: loops[i], Count: uint32(loops[i+1])})
	}
	return c, nil
}

// EncodeCounters encodes c as a record's counters: {"arrived": [slot...],
// "fired": [join...], "loops": [slot, count, ...]}, nil when every counter
// is zero. Loops must ascend by slot.
func EncodeCounters(c Counters) ([]byte, error) {
	m, err := countersValue(c)
	if err != nil || m.IsNull() {
		return nil, err
	}
	return types.AppendValue(nil, m)
}

// countersValue is c as a value, null when every counter is zero (a parked
// sub-run's snapshot holds it so, suspend.go).
func countersValue(c Counters) (types.Value, error) {
	if c.IsZero() {
		return types.Value{}, nil
	}
	ints := func(xs []int) types.Value {
		vals := make([]types.Value, len(xs))
		for i, x := range xs {
			vals[i] = types.MakeInt(int64(x))
		}
		return types.MakeList(vals)
	}
	loops := make([]types.Value, 0, 2*len(c.Loops))
	for _, lc := range c.Loops {
		loops = append(loops, types.MakeInt(int64(lc.Slot)), types.MakeInt(int64(lc.Count)))
	}
	return types.MakeMap([]string{"arrived", "fired", "loops"}, []types.Value{ints(c.Arrived), ints(c.Fired), types.MakeList(loops)})
}

// EncodeFrontier encodes a record's frontier: node indices, ascending.
func EncodeFrontier(nodes []int) ([]byte, error) {
	if !slices.IsSorted(nodes) {
		return nil, fmt.Errorf("vm: frontier %v is not ascending", nodes)
	}
	vals := make([]types.Value, len(nodes))
	for i, n := range nodes {
		vals[i] = types.MakeInt(int64(n))
	}
	return types.AppendValue(nil, types.MakeList(vals))
}

// EncodeInterrupts encodes a record's pending interrupts and wait nodes
// as a list of {"id", "node", "prompt"} maps (with "data" for a paused
// call, "due" for a timer; a wait node's has no prompt), nil when none.
// The parked tasks a run records after them (spec/vm.md, "Suspended
// calls") are the VM's own.
func EncodeInterrupts(ins []RecordedInterrupt) ([]byte, error) {
	vals, err := interruptEntries(ins)
	if err != nil || len(vals) == 0 {
		return nil, err
	}
	return types.AppendValue(nil, types.MakeList(vals))
}

// interruptEntries are the record entries of ins (EncodeInterrupts).
func interruptEntries(ins []RecordedInterrupt) ([]types.Value, error) {
	vals := make([]types.Value, len(ins))
	for i, in := range ins {
		if in.Confirm {
			return nil, fmt.Errorf("vm: interrupt %s: a tool confirmation is recorded with its parked call", in.ID)
		}
		keys := []string{"id", "node", "prompt"}
		kv := []types.Value{types.MakeString(in.ID), types.MakeInt(int64(in.Node)), types.MakeString(in.Prompt)}
		if in.Wait {
			keys, kv = keys[:2], kv[:2]
		}
		if in.Data != nil {
			keys, kv = append(keys, "data"), append(kv, types.MakeString(string(in.Data)))
		}
		if !in.Due.IsZero() {
			keys, kv = append(keys, "due"), append(kv, types.MakeInt(in.Due.UnixNano()))
		}
		m, err := types.MakeMap(keys, kv)
		if err != nil {
			return nil, err
		}
		vals[i] = m
	}
	return vals, nil
}

// EncodeState encodes a full record's state: one value per field.
func EncodeState(state []types.Value) ([]byte, error) { return encodeList(state) }

package vm

import (
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Reducers merge a node's write into a state field (spec/language.md §9):
//
//	replace  the written value
//	append   the field's list with the written elements added at the end
//	merge    maps: key-wise union, the write wins; records: the write's
//	         non-null fields replace the current ones; otherwise replace
//	sum      current + written (int overflow is an error)
//	max/min  the larger / smaller (types.Compare)
//
// The first write to an unassigned (null) field stores the written value.
// While applying, the step records a delta per field (see spec/vm.md,
// "Checkpoint records"): `append` fields record only the appended elements
// and `merge` maps only the merged-in entries, so a checkpoint costs what
// changed, not the size of the field.

// Delta operations, as encoded in a delta record.
const (
	opSet    = 1 // the field's new value
	opAppend = 2 // elements appended to the field's list
	opMerge  = 3 // a map merged into the field's map
)

// deltaOp is what one step did to one field.
type deltaOp struct {
	field int32
	op    byte
	val   types.Value   // opSet: the new value; opMerge: the map merged in
	elems []types.Value // opAppend: the elements appended, in order
	old   types.Value   // the value before the step (to undo a failed merge)
}

// apply merges write w into its field and records the delta.
func (r *run) apply(w write) *Error {
	f, v := w.field, w.value
	fd := &r.g.fields[f]
	old := r.state[f]
	var nv types.Value
	var msg string
	if fd.Reducer == bytecode.ReduceAppend {
		nv = r.appendTo(f, old, w)
	} else {
		nv, msg = reduce(fd.Reducer, old, v)
	}
	if msg != "" {
		return &Error{Kind: KindEval, Message: "field " + fd.Name + ": " + msg}
	}
	if err := fd.CheckSize(nv); err != nil {
		// merge checked the node's writes (sizeError); this holds the size
		// on every other write too.
		return &Error{Kind: KindEval, Message: err.Error(), Err: err}
	}
	if nv == old {
		return nil
	}
	r.state[f] = nv
	r.record(fd.Reducer, old, w, nv)
	return nil
}

// sizeError is the failure of node ni when its writes, applied in order,
// would leave a list field longer than its declared size (spec/language.md
// §9.1). merge checks before it applies any write, so the node fails as a
// whole, nothing of it is written, and its catch route takes the error.
func (r *run) sizeError(ni int32, tasks []task) *Error {
	if !r.g.sized {
		return nil
	}
	var lens map[int32]int // the lengths the writes so far would leave
	for i := range tasks {
		for _, w := range tasks[i].out.writes {
			fd := &r.g.fields[w.field]
			if fd.MaxLen == 0 {
				continue
			}
			n, ok := lens[w.field]
			if !ok {
				n = max(r.state[w.field].Len(), 0)
			}
			switch {
			case fd.Reducer == bytecode.ReduceAppend && w.one:
				n++
			case fd.Reducer == bytecode.ReduceAppend:
				n += max(w.value.Len(), 0)
			default:
				n = max(w.value.Len(), 0)
			}
			if err := fd.CheckLen(n); err != nil {
				return &Error{Kind: KindEval, Message: err.Error(), Node: r.paths[ni], Err: err}
			}
			if lens == nil {
				lens = map[int32]int{}
			}
			lens[w.field] = n
		}
	}
	return nil
}

// reduce computes the result of the reducers other than append (appendTo).
func reduce(red bytecode.Reducer, old, v types.Value) (types.Value, string) {
	if old.IsNull() {
		return v, ""
	}
	switch red {
	case bytecode.ReduceMerge:
		return mergeValues(old, v), ""
	case bytecode.ReduceSum:
		return arith(bytecode.ADD, old, v)
	case bytecode.ReduceMax, bytecode.ReduceMin:
		c, ok := types.Compare(v, old)
		if !ok {
			return types.Value{}, "cannot order " + v.Kind().String() + " and " + old.Kind().String()
		}
		if (red == bytecode.ReduceMax) == (c > 0) && c != 0 {
			return v, ""
		}
		return old, ""
	}
	return v, ""
}

// appendBuf is the backing array of the last list the run built for an
// append field.
type appendBuf struct {
	buf  []types.Value
	last types.Value
}

// appendTo returns old with the elements of list appended, amortized O(len
// (list)): when old is the list this run last built for f, the elements go
// into the spare capacity of its backing array. That is safe for an
// immutable value: old (and every snapshot, checkpoint or host argument
// holding it) reads only its first old.Len() elements, which are never
// written again, and only this run's scheduler goroutine, between steps,
// writes past them.
func (r *run) appendTo(f int32, old types.Value, w write) types.Value {
	list := w.value
	k := 1
	if !w.one {
		if k = list.Len(); k <= 0 {
			return old
		}
		if old.IsNull() || old.Len() == 0 {
			return list
		}
	}
	n := old.Len()
	if n < 0 {
		n = 0
	}
	if r.abufs == nil {
		r.abufs = make([]appendBuf, len(r.state))
	}
	ab := &r.abufs[f]
	if n == 0 || old != ab.last || len(ab.buf) != n {
		ab.buf = make([]types.Value, n, max(2*(n+k), 8))
		for i := range n {
			ab.buf[i] = old.Elem(i)
		}
	}
	if w.one {
		ab.buf = append(ab.buf, list)
	} else {
		for i := range k {
			ab.buf = append(ab.buf, list.Elem(i))
		}
	}
	ab.last = types.MakeList(ab.buf)
	return ab.last
}

// trimAppendBufs gives the lists built in spare capacity exact-size
// backing arrays when the run stops, so that a parked run holds no slack.
func (r *run) trimAppendBufs() {
	for f := range r.abufs {
		ab := &r.abufs[f]
		if r.state[f] == ab.last && cap(ab.buf) > len(ab.buf) {
			r.state[f] = types.MakeList(slices.Clone(ab.buf))
		}
		*ab = appendBuf{}
	}
}

// mergeValues implements the merge reducer.
func mergeValues(old, w types.Value) types.Value {
	switch {
	case w.IsNull():
		return old
	case old.Kind() == types.ValMap && w.Kind() == types.ValMap:
		return types.MapMerge(old, w)
	case old.Kind() == types.ValRecord && w.Kind() == types.ValRecord:
		s := old.Shape()
		vals := make([]types.Value, s.Len())
		for i := range vals {
			vals[i] = old.FieldAt(i)
			if x, ok := w.Field(s.Name(i)); ok && !x.IsNull() {
				vals[i] = x
			}
		}
		v, err := types.MakeRecord(s, vals)
		if err != nil {
			return w
		}
		return v
	}
	return w
}

// record notes in the step's delta what write w did to its field.
func (r *run) record(red bytecode.Reducer, old types.Value, w write, nv types.Value) {
	f := w.field
	i := r.dirty[f]
	if i < 0 {
		i = int32(len(r.ops))
		r.dirty[f] = i
		if int(i) < cap(r.ops) {
			r.ops = r.ops[:i+1]
		} else {
			r.ops = append(r.ops, deltaOp{})
		}
		op := &r.ops[i]
		*op = deltaOp{field: f, op: opSet, val: nv, elems: op.elems[:0], old: old}
		switch {
		case red == bytecode.ReduceAppend:
			op.op = opAppend
			op.val = types.Value{}
			op.elems = appendElems(op.elems, w)
		case red == bytecode.ReduceMerge && nv.Kind() == types.ValMap && w.value.Kind() == types.ValMap:
			op.op, op.val = opMerge, w.value
		}
		return
	}
	op := &r.ops[i]
	switch {
	case op.op == opAppend && red == bytecode.ReduceAppend:
		op.elems = appendElems(op.elems, w)
	case op.op == opMerge && nv.Kind() == types.ValMap && w.value.Kind() == types.ValMap:
		op.val = types.MapMerge(op.val, w.value)
	default:
		op.op, op.val, op.elems = opSet, nv, op.elems[:0]
	}
}

func appendElems(dst []types.Value, w write) []types.Value {
	if w.one {
		return append(dst, w.value)
	}
	for k := 0; k < w.value.Len(); k++ {
		dst = append(dst, w.value.Elem(k))
	}
	return dst
}

// changes lists the fields the step changed, for EventStateDelta.
func (r *run) changes() []FieldChange {
	out := make([]FieldChange, len(r.ops))
	for i, op := range r.ops {
		out[i] = FieldChange{Field: int(op.field), Name: r.g.fields[op.field].Name, Value: r.state[op.field]}
	}
	return out
}

// undoMerge restores the state and counters of the last committed step
// after a merge or route failed half way.
func (r *run) undoMerge() {
	for _, op := range r.ops {
		r.state[op.field] = op.old
	}
	for i := len(r.undo) - 1; i >= 0; i-- {
		u := r.undo[i]
		switch u.kind {
		case undoLoop:
			r.loops[u.index] = u.count
		case undoJoin:
			jb := r.g.joinBase[u.index]
			n := len(r.g.g.Nodes[u.index].Join.Preds)
			copy(r.arrived[jb:int(jb)+n], r.undoBits[u.bits:u.bits+n])
			r.fired[r.g.joinIndex[u.index]] = u.fired
		}
	}
	r.resetStep()
}

// Undo log entries for counters changed during routing.
const (
	undoLoop = 1
	undoJoin = 2
)

type undoEntry struct {
	kind  uint8
	fired bool
	index int32  // loop slot, or join node
	count uint32 // undoLoop: the count before
	bits  int    // undoJoin: offset of the arrival bits saved in undoBits
}

func (r *run) saveLoop(slot int32) {
	r.undo = append(r.undo, undoEntry{kind: undoLoop, index: slot, count: r.loops[slot]})
}

func (r *run) saveJoin(j int32) {
	for _, u := range r.undo {
		if u.kind == undoJoin && u.index == j {
			return
		}
	}
	jb := r.g.joinBase[j]
	n := len(r.g.g.Nodes[j].Join.Preds)
	off := len(r.undoBits)
	r.undoBits = append(r.undoBits, r.arrived[jb:int(jb)+n]...)
	r.undo = append(r.undo, undoEntry{kind: undoJoin, index: j, bits: off, fired: r.fired[r.g.joinIndex[j]]})
}

// resetStep clears the per-step delta, undo log and journal.
func (r *run) resetStep() {
	for _, op := range r.ops {
		r.dirty[op.field] = -1
	}
	r.ops = r.ops[:0]
	r.undo = r.undo[:0]
	r.undoBits = r.undoBits[:0]
	clear(r.stepJournal)
	r.stepJournal = r.stepJournal[:0]
}

// fieldWrite prepares value v for a write into field f. For an append field
// a list that converts to the field's type is the elements to append, and
// anything else is one element (write.one). With convert, v is first
// converted to the field's (element) type, as host results are.
func (r *run) fieldWrite(f int, v types.Value, convert bool) (write, error) {
	w := write{field: int32(f), value: v}
	et := r.g.elemTypes[f]
	if et == nil {
		if convert {
			c, err := convertTo(v, r.g.fieldTypes[f])
			if err != nil {
				return write{}, err
			}
			w.value = c
		}
		return w, nil
	}
	if v.Kind() == types.ValList {
		if !listLike(et) && !convert {
			return w, nil
		}
		if c, err := types.Convert(v, listType(r.g.fieldTypes[f])); err == nil {
			w.value = c
			return w, nil
		} else if !listLike(et) {
			return write{}, err
		}
	}
	if convert || listLike(et) {
		c, err := convertTo(v, et)
		if err != nil {
			return write{}, err
		}
		w.value = c
	}
	w.one = true
	return w, nil
}

// convertTo is types.Convert, without its call when v already conforms to
// t as a scalar (conforms): Convert returns such a value unchanged, so the
// result is the same, and the common case of a host returning exactly the
// declared type allocates nothing.
func convertTo(v types.Value, t *types.Type) (types.Value, error) {
	if conforms(v, t) {
		return v, nil
	}
	return types.Convert(v, t)
}

// conforms reports whether types.Convert(v, t) certainly returns v
// unchanged and no error: v is null and t optional, or v has exactly the
// value kind of scalar type t (an optional's element). Enums, secrets and
// composite types are left to Convert.
func conforms(v types.Value, t *types.Type) bool {
	if t == nil {
		return false
	}
	k := v.Kind()
	if t.Kind() == types.KindOptional {
		if k == types.ValNull {
			return true
		}
		t = t.Elem()
		if t == nil {
			return false
		}
	}
	switch t.Kind() {
	case types.KindString:
		return k == types.ValString
	case types.KindBool:
		return k == types.ValBool
	case types.KindInt:
		return k == types.ValInt
	case types.KindFloat:
		return k == types.ValFloat
	case types.KindDuration:
		return k == types.ValDuration
	}
	return false
}

// listLike reports whether a value of type t may itself be a list.
func listLike(t *types.Type) bool {
	switch t.Kind() {
	case types.KindList, types.KindMessages, types.KindJSON:
		return true
	case types.KindOptional:
		return listLike(t.Elem())
	}
	return false
}

// listType strips an optional around an append field's list type.
func listType(t *types.Type) *types.Type {
	if t.Kind() == types.KindOptional {
		return t.Elem()
	}
	return t
}

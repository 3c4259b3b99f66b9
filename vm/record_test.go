package vm

import (
	"errors"
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

func encodeVals(t testing.TB, xs ...types.Value) []byte {
	t.Helper()
	b, err := types.AppendValue(nil, types.MakeList(xs))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFieldDeltaApply: the one reducer-replay semantics. The first write
// to a null field stores the value; an append to a list adds its
// elements; a merge into a map merges key-wise, the delta winning.
func TestFieldDeltaApply(t *testing.T) {
	m1, _ := types.MakeMap([]string{"a", "b"}, []types.Value{vi(1), vi(2)})
	m2, _ := types.MakeMap([]string{"b", "c"}, []types.Value{vi(20), vi(3)})
	tests := []struct {
		name     string
		cur      types.Value
		d        FieldDelta
		want     string
		wantNull bool
	}{
		{"set over value", vi(1), FieldDelta{Op: DeltaSet, Value: vi(2)}, "2", false},
		{"set null", vi(1), FieldDelta{Op: DeltaSet, Value: types.Value{}}, "", true},
		{"append to null", types.Value{}, FieldDelta{Op: DeltaAppend, Value: vl(vi(1))}, "[1]", false},
		{"append to empty", vl(), FieldDelta{Op: DeltaAppend, Value: vl(vi(1), vi(2))}, "[1, 2]", false},
		{"append to list", vl(vi(1)), FieldDelta{Op: DeltaAppend, Value: vl(vi(2), vi(3))}, "[1, 2, 3]", false},
		{"append nothing", vl(vi(1)), FieldDelta{Op: DeltaAppend, Value: vl()}, "[1]", false},
		{"merge into null", types.Value{}, FieldDelta{Op: DeltaMerge, Value: m2}, `{"b": 20, "c": 3}`, false},
		{"merge into map", m1, FieldDelta{Op: DeltaMerge, Value: m2}, `{"a": 1, "b": 20, "c": 3}`, false},
		{"merge into non-map", vs("x"), FieldDelta{Op: DeltaMerge, Value: m2}, `{"b": 20, "c": 3}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := []types.Value{vi(0), tt.cur}
			tt.d.Field = 1
			tt.d.Apply(state)
			if tt.wantNull != state[1].IsNull() || !tt.wantNull && state[1].String() != tt.want {
				t.Errorf("got %s, want %s", state[1], tt.want)
			}
			if state[0].Int() != 0 {
				t.Errorf("another field changed: %s", state[0])
			}
		})
	}
}

// TestDecodeDeltaRejects: a delta record that does not have the shape the
// VM writes is ErrMalformedRecord: an append of a non-list or a merge of a
// non-map is refused rather than stored (time travel used to store it
// where resume refused it).
func TestDecodeDeltaRejects(t *testing.T) {
	m, _ := types.MakeMap([]string{"k"}, []types.Value{vi(1)})
	tests := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty", nil, true},
		{"set", encodeVals(t, vi(0), vi(1), vs("x")), true},
		{"append list", encodeVals(t, vi(1), vi(2), vl(vi(1))), true},
		{"merge map", encodeVals(t, vi(1), vi(3), m), true},
		{"two fields ascending", encodeVals(t, vi(0), vi(1), vi(1), vi(1), vi(2), vl()), true},
		{"append scalar", encodeVals(t, vi(1), vi(2), vi(7)), false},
		{"append null", encodeVals(t, vi(1), vi(2), types.Value{}), false},
		{"merge list", encodeVals(t, vi(1), vi(3), vl(vi(1))), false},
		{"merge null", encodeVals(t, vi(1), vi(3), types.Value{}), false},
		{"unknown op", encodeVals(t, vi(0), vi(4), vi(1)), false},
		{"field out of range", encodeVals(t, vi(2), vi(1), vi(1)), false},
		{"negative field", encodeVals(t, vi(-1), vi(1), vi(1)), false},
		{"field twice", encodeVals(t, vi(0), vi(1), vi(1), vi(0), vi(1), vi(2)), false},
		{"not a triple", encodeVals(t, vi(0), vi(1)), false},
		{"not a list", func() []byte { b, _ := types.AppendValue(nil, vi(1)); return b }(), false},
		{"trailing bytes", append(encodeVals(t, vi(0), vi(1), vi(1)), 0), false},
		{"truncated", encodeVals(t, vi(0), vi(1), vs("hello"))[:5], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeDelta(tt.b, 2)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformedRecord) {
				t.Errorf("err = %v, not ErrMalformedRecord", err)
			}
		})
	}
}

// TestStateAtMatchesResume: StateAt rebuilds, at every committed step,
// the state, frontier and interrupts Resume restores.
func TestStateAtMatchesResume(t *testing.T) {
	m := fullGraph(t)
	store := NewMemStore()
	o := Options{RunID: "r", Host: randomHost(m, 3), Checkpointer: store, Clock: newFakeClock(true), Entropy: &seqEntropy{}, SnapshotEvery: 3}
	mustRun(t, m, o)
	recs := store.Records("r")
	deltas := 0
	for i := range recs {
		if !recs[i].Full {
			deltas++
		}
		j := i
		for !recs[j].Full {
			j--
		}
		chain := recs[j : i+1]
		snap, err := m.restoreChain(0, chain)
		if err != nil {
			t.Fatalf("step %d: resume: %v", recs[i].Step, err)
		}
		cs, err := StateAt(m.Program(), 0, chain)
		if err != nil {
			t.Fatalf("step %d: StateAt: %v", recs[i].Step, err)
		}
		if cs.Step != snap.step || cs.Run != "r" || len(cs.State) != len(snap.state) {
			t.Fatalf("step %d: StateAt step %d run %s %d fields", recs[i].Step, cs.Step, cs.Run, len(cs.State))
		}
		for f := range cs.State {
			if !types.Equal(cs.State[f], snap.state[f]) {
				t.Errorf("step %d field %d: StateAt %s, resume %s", cs.Step, f, cs.State[f], snap.state[f])
			}
		}
		if len(cs.Frontier) != len(snap.frontier) {
			t.Errorf("step %d: frontier %v, resume %v", cs.Step, cs.Frontier, snap.frontier)
		}
		for k := range cs.Frontier {
			if k < len(snap.frontier) && int32(cs.Frontier[k]) != snap.frontier[k] {
				t.Errorf("step %d: frontier %v, resume %v", cs.Step, cs.Frontier, snap.frontier)
			}
		}
		if len(cs.Interrupts) != len(snap.waiting) {
			t.Errorf("step %d: %d interrupts, resume %d", cs.Step, len(cs.Interrupts), len(snap.waiting))
		}
		for k, in := range cs.Interrupts {
			if w := snap.waiting[k]; in.ID != w.it.ID || in.Prompt != w.it.Prompt || int32(in.Node) != w.node {
				t.Errorf("step %d: interrupt %+v, resume %+v", cs.Step, in, w)
			}
		}
	}
	if deltas == 0 {
		t.Fatal("the run wrote no delta records")
	}
	if _, err := StateAt(m.Program(), 0, recs[1:]); err == nil && !recs[1].Full {
		t.Error("a chain starting with a delta was accepted")
	}
	if _, err := StateAt(m.Program(), 0, nil); err == nil {
		t.Error("an empty chain was accepted")
	}
	if _, err := StateAt(m.Program(), 5, recs); err == nil {
		t.Error("a graph out of range was accepted")
	}
}

// FuzzDecodeCheckpoint: a damaged record read from disk is an error, never
// a panic, whichever decoder reads it.
func FuzzDecodeCheckpoint(f *testing.F) {
	m := fullGraph(f)
	store := NewMemStore()
	mustRun(f, m, Options{RunID: "r", Host: randomHost(m, 3), Checkpointer: store, Clock: newFakeClock(true), Entropy: &seqEntropy{}, SnapshotEvery: 2})
	for _, r := range store.Records("r") {
		f.Add(r.State, r.Frontier, r.Interrupts, r.Full)
	}
	p := m.Program()
	g := &p.Graphs[0]
	nfields := len(p.States[g.State].Fields)
	recs := store.Records("r")
	f.Fuzz(func(t *testing.T, state, frontier, interrupts []byte, full bool) {
		if full {
			_, _ = DecodeState(state, nfields)
		} else if ds, err := DecodeDelta(state, nfields); err == nil {
			s := make([]types.Value, nfields)
			for _, d := range ds {
				d.Apply(s)
			}
		}
		_, _ = DecodeFrontier(g, frontier)
		_, _ = DecodeInterrupts(p, 0, interrupts)
		chain := append([]StepRecord(nil), recs[0])
		chain = append(chain, StepRecord{Run: "r", Step: recs[0].Step + 1, Full: full, State: state,
			Frontier: frontier, Interrupts: interrupts, ProgramHash: recs[0].ProgramHash, SchemaHash: recs[0].SchemaHash})
		_, _ = StateAt(p, 0, chain)
		_, _ = m.restoreChain(0, chain)
	})
}

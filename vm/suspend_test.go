package vm

import (
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// parkedRecord encodes an Interrupts record holding a map node's parked
// item (its sub-run waiting at the interrupt ask, with a timeout), a
// finished item, and a host-paused call — the three entry shapes of
// spec/vm.md, "Suspended calls".
func parkedRecord(t testing.TB, m *Machine) []byte {
	t.Helper()
	res := mustRun(t, m, Options{RunID: "r", Host: randomHost(m, 3), Clock: newFakeClock(true), Entropy: &seqEntropy{}})
	if res.Status != StatusInterrupted || res.Snapshot == nil {
		t.Fatalf("the run did not stop at its interrupt: %s", res.Status)
	}
	sub := *res.Snapshot
	sub.waiting = append([]waitingInterrupt(nil), sub.waiting...)
	sub.waiting[0].due = time.Unix(1_800_000_000, 0).UTC() // as if ask had a timeout
	mi := int32(-1)
	for i, nd := range m.graphs[0].g.Nodes {
		if nd.Name == "m" {
			mi = int32(i)
		}
	}
	r := &run{parked: []*parkedNode{{node: mi, tasks: []parkedTask{
		{id: "g/m/0", item: 0, local: vi(1), sub: &sub, its: sub.interrupts()},
		{id: "g/m/1", item: 1, local: vi(2), done: true, writes: []write{{field: 1, one: true, value: vi(7)}}},
		{id: "g/m/2", item: 2, local: vi(3), host: types.MakeString(`{"turn":1}`),
			its: []Interrupt{{ID: "g/m/2/confirm/1/0", Prompt: "Allow?", Confirm: true, Tool: 0}}},
	}}}}
	vals, err := r.interruptValues()
	if err != nil {
		t.Fatal(err)
	}
	b, err := types.AppendValue(nil, types.MakeList(vals))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParkedRecordRoundTrip(t *testing.T) {
	m := fullGraph(t)
	b := parkedRecord(t, m)
	v, err := decodeList(b)
	if err != nil {
		t.Fatal(err)
	}
	waiting, parked, err := m.decodeWaiting(0, "r", v, 0)
	if err != nil || len(waiting) != 0 || len(parked) != 1 || len(parked[0].tasks) != 3 {
		t.Fatalf("decoded %v %v %v", waiting, parked, err)
	}
	ts := parked[0].tasks
	if ts[0].sub == nil || ts[0].sub.step == 0 || !ts[1].done || ts[1].writes[0].value.Int() != 7 || ts[2].host.Str() != `{"turn":1}` {
		t.Fatalf("tasks %+v", ts)
	}
	r := &run{parked: parked}
	its := r.pendingInterrupts()
	if len(its) != 2 || its[0].ID != "g/ask" || its[1].ID != "g/m/2/confirm/1/0" || !its[1].Confirm || its[1].Type == nil {
		t.Fatalf("pending %+v", its)
	}
	if tm := r.timers(); len(tm) != 1 || tm[0].ID != "g/ask" || tm[0].Wait || tm[0].Due.Unix() != 1_800_000_000 {
		t.Fatalf("timers %+v", tm)
	}
	all, err := DecodeWaits(m.Program(), 0, b)
	if err != nil || len(all) != 2 || all[0].Due.IsZero() || !all[1].Confirm {
		t.Fatalf("DecodeWaits %+v %v", all, err)
	}
	if got, err := DecodeInterrupts(m.Program(), 0, b); err != nil || len(got) != 2 || InterruptType(m.Program(), got[1]) == nil {
		t.Fatalf("DecodeInterrupts %+v %v", got, err)
	}
}

// FuzzDecodeWaits: a damaged interrupts record (nested sub-runs, timers,
// host state) is an error, never a panic, for every reader.
func FuzzDecodeWaits(f *testing.F) {
	m := fullGraph(f)
	f.Add(parkedRecord(f, m))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeWaits(m.Program(), 0, b)
		_, _ = DecodeInterrupts(m.Program(), 0, b)
		if v, err := decodeList(b); err == nil {
			if _, parked, err := m.decodeWaiting(0, "r", v, 0); err == nil {
				r := &run{parked: parked}
				_ = r.pendingInterrupts()
				_ = r.timers()
			}
		}
	})
}

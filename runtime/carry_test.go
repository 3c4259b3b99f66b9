package runtime

import (
	"bytes"
	"slices"
	"testing"
)

func TestCarryEnvelope(t *testing.T) {
	vmBytes := []byte{0x08, 0x02, 0x01, 0x03} // a canonical list value
	for _, tc := range []struct {
		name   string
		vm     []byte
		events [][]byte
	}{
		{"no events: the VM's bytes unchanged", vmBytes, nil},
		{"one event", vmBytes, [][]byte{[]byte(`{"v":1}`)}},
		{"several, one empty", vmBytes, [][]byte{[]byte(`{"v":1,"id":"a"}`), {}, []byte(`{"v":1,"id":"b"}`)}},
		{"empty VM bytes", nil, [][]byte{[]byte(`{}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := wrapCarry(tc.vm, tc.events)
			if len(tc.events) == 0 && !bytes.Equal(b, tc.vm) {
				t.Fatalf("wrapped without events: %x", b)
			}
			vm, evs, err := unwrapCarry(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(vm, tc.vm) || !slices.EqualFunc(evs, tc.events, bytes.Equal) {
				t.Fatalf("round trip: %x %q", vm, evs)
			}
		})
	}
	full := wrapCarry(vmBytes, [][]byte{[]byte(`{"v":1}`), []byte(`{"v":1,"id":"x"}`)})
	for _, bad := range [][]byte{
		{carryTag},
		{carryTag, 0x05, 0x01},
		full[:len(full)-1],
		append(slices.Clone(full), 0x00),
		{carryTag, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F},
	} {
		if _, _, err := unwrapCarry(bad); err == nil {
			t.Errorf("unwrapCarry(%x) accepted a malformed envelope", bad)
		}
	}
}

func FuzzUnwrapCarry(f *testing.F) {
	f.Add(wrapCarry([]byte{0x01}, [][]byte{[]byte("e")}))
	f.Add([]byte{carryTag, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		vm, evs, err := unwrapCarry(b)
		if err != nil {
			return
		}
		vm2, evs2, err := unwrapCarry(wrapCarry(vm, evs))
		if err != nil || !bytes.Equal(vm2, vm) || !slices.EqualFunc(evs2, evs, bytes.Equal) {
			t.Fatalf("re-wrap of %x: %v", b, err)
		}
	})
}

package store

import (
	"errors"
	"testing"
)

func TestFrame(t *testing.T) {
	k := NewKey(KindRun).Str("run_1")
	v := Frame([]byte("payload"))
	p, err := Payload(k, v)
	if err != nil || string(p) != "payload" {
		t.Fatalf("Payload = %q %v", p, err)
	}
	for i := range v {
		bad := append([]byte(nil), v...)
		bad[i] ^= 1
		if _, err := Payload(k, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bit flip at %d: %v", i, err)
		}
	}
	for n := range len(v) {
		if _, err := Payload(k, v[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
	newer := BeginValue(0)
	newer[0] = CodecVersion + 1
	if _, err := Payload(k, EndValue(append(newer, 'x'))); !errors.Is(err, ErrLayoutVersion) {
		t.Errorf("newer codec: %v", err)
	}
	zero := BeginValue(0)
	zero[0] = 0
	if _, err := Payload(k, EndValue(zero)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("codec version 0: %v", err)
	}
}

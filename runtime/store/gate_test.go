package store

import (
	"context"
	"errors"
	"testing"
)

// TestGate: an operation runs while the gate is open, fails with its
// context's error or ErrClosed otherwise, and costs no allocation of the
// gate's (Op is on the path of every store call).
func TestGate(t *testing.T) {
	var g Gate
	ctx := context.Background()
	ran := 0
	op := func() (int, error) { ran++; return 7, nil }
	if v, err := Op(ctx, &g, nil, op); v != 7 || err != nil || ran != 1 {
		t.Fatalf("Op = %d, %v (ran %d)", v, err, ran)
	}
	bad := errors.New("bad argument")
	if _, err := Op(ctx, &g, bad, op); err != bad || ran != 1 {
		t.Fatalf("Op with a failed check = %v (ran %d)", err, ran)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Op(canceled, &g, nil, op); !errors.Is(err, context.Canceled) || ran != 1 {
		t.Fatalf("Op on a canceled context = %v (ran %d)", err, ran)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Op(ctx, &g, nil, op) }); n != 0 {
		t.Errorf("Op allocates %.0f times per call, want 0", n)
	}
	exit, err := g.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shut := make(chan error)
	go func() { shut <- g.Shut(func() error { return nil }) }() // waits for the operation in flight
	exit()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if _, err := Op(ctx, &g, nil, op); !errors.Is(err, ErrClosed) {
		t.Fatalf("Op after Shut = %v, want ErrClosed", err)
	}
	if _, err := g.Enter(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Enter after Shut = %v, want ErrClosed", err)
	}
}

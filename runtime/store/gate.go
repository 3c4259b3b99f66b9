package store

import (
	"context"
	"fmt"
	"sync"
)

// Gate is a backend's open or closed state. Every operation of the backend
// passes it (Op, Op0, Enter): an operation fails with its context's error
// when the context is done, and with ErrClosed once the backend is closed;
// Shut waits for the operations in flight.
type Gate struct {
	mu     sync.RWMutex // held shared by operations, exclusively by Shut
	closed bool
}

// Enter starts an operation and returns the function that ends it.
func (g *Gate) Enter(ctx context.Context) (exit func(), err error) {
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	return g.mu.RUnlock, nil
}

// enter is Enter for a caller that ends the operation with g.mu.RUnlock
// itself: Op2, on every store call, which so allocates no exit func.
func (g *Gate) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Shut closes the gate once the operations in flight have ended and runs
// release, exclusively; a second Shut returns nil and runs nothing.
func (g *Gate) Shut(release func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return release()
}

// Op runs fn as one operation of g. check is the call's argument check
// (nil: it passed): a failed one is returned without entering.
func Op[T any](ctx context.Context, g *Gate, check error, fn func() (T, error)) (T, error) {
	v, _, err := Op2(ctx, g, check, func() (T, struct{}, error) {
		v, err := fn()
		return v, struct{}{}, err
	})
	return v, err
}

// Op2 is Op for an operation that returns two values.
func Op2[A, B any](ctx context.Context, g *Gate, check error, fn func() (A, B, error)) (A, B, error) {
	var (
		a A
		b B
	)
	if check != nil {
		return a, b, check
	}
	if err := g.enter(ctx); err != nil {
		return a, b, err
	}
	defer g.mu.RUnlock()
	return fn()
}

// Op0 is Op for an operation that returns only an error.
func Op0(ctx context.Context, g *Gate, check error, fn func() error) error {
	_, err := Op(ctx, g, check, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// Wrapf is fmt.Errorf(format+": %w", args..., err) when err is set, and nil
// when it is not: what a call was doing, around a failed check.
func Wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

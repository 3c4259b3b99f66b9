package store

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestKeyedMutex: holders of one key take turns, other keys do not wait,
// and no entry outlives its holders.
func TestKeyedMutex(t *testing.T) {
	var l KeyedMutex[string]
	var wg sync.WaitGroup
	counts := map[string]*int{"a": new(int), "b": new(int)} // read only: each key its own counter
	for i := range 64 {
		key := []string{"a", "b"}[i%2]
		wg.Go(func() {
			defer l.Lock(key)()
			*counts[key]++ // racy unless the key's holders take turns
		})
	}
	wg.Wait()
	if *counts["a"] != 32 || *counts["b"] != 32 {
		t.Errorf("counts %d %d", *counts["a"], *counts["b"])
	}
	unlockA := l.Lock("a")
	done := make(chan struct{})
	go func() { defer close(done); l.Lock("b")() }()
	<-done // b does not wait for a
	unlockA()
	if len(l.m) != 0 {
		t.Errorf("entries left: %d", len(l.m))
	}
}

// TestKeyedMutexReusesEntries: a Lock of a key nobody holds reuses a
// released entry and its unlock (no allocation), and a recycled entry
// serializes its new key's holders like a new one.
func TestKeyedMutexReusesEntries(t *testing.T) {
	var l KeyedMutex[string]
	l.Lock("warm")()
	if n := testing.AllocsPerRun(100, func() { l.Lock("k")() }); n != 0 {
		t.Errorf("%v allocations per Lock and unlock, want 0", n)
	}
	if len(l.m) != 0 || len(l.free) != 1 {
		t.Errorf("entries %d, kept %d; want 0, 1", len(l.m), len(l.free))
	}
	var wg sync.WaitGroup
	n := 0
	for range 32 {
		wg.Go(func() {
			defer l.Lock("shared")()
			n++ // racy unless the recycled entry serializes
		})
	}
	wg.Wait()
	if n != 32 || len(l.m) != 0 || len(l.free) > keptEntries {
		t.Errorf("n %d, entries %d, kept %d", n, len(l.m), len(l.free))
	}
}

// TestKeyedMutexContextAndTry: LockContext and TryLock give up on a held
// key (ctx's error; false) holding nothing, and take a free one; a
// LockContext waiter gets the key when its holder unlocks.
func TestKeyedMutexContextAndTry(t *testing.T) {
	var l KeyedMutex[string]
	unlock := l.Lock("k")
	if _, ok := l.TryLock("k"); ok {
		t.Fatal("TryLock took a held key")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.LockContext(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext on a held key with a done ctx: %v", err)
	}
	other, ok := l.TryLock("other")
	if !ok {
		t.Fatal("TryLock of a free key failed")
	}
	other()
	got := make(chan func())
	go func() {
		u, err := l.LockContext(context.Background(), "k")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlock()
	(<-got)()
	if len(l.m) != 0 {
		t.Errorf("entries left: %d", len(l.m))
	}
}

package store

import (
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

package keylock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestOneHolderPerKey(t *testing.T) {
	var l Locks[string]
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holding = map[string]int{}
		most    int
	)
	for i := range 40 {
		key := []string{"a", "b"}[i%2]
		wg.Go(func() {
			unlock := l.Lock(key)
			mu.Lock()
			holding[key]++
			most = max(most, holding[key])
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			holding[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d holders of one key at once, want 1", most)
	}
	if len(l.m) != 0 {
		t.Errorf("%d entries left after every unlock, want 0", len(l.m))
	}
}

func TestOtherKeysProceed(t *testing.T) {
	var l Locks[int]
	unlock := l.Lock(1)
	defer unlock()
	done := make(chan struct{})
	go func() { l.Lock(2)(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("key 2 waited for key 1")
	}
}

func TestLockContextGivesUp(t *testing.T) {
	var l Locks[string]
	unlock := l.Lock("k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if u, err := l.LockContext(ctx, "k"); !errors.Is(err, context.Canceled) || u != nil {
		t.Fatalf("LockContext on a held key with a canceled context = %v, %v; want nil, context.Canceled", u != nil, err)
	}
	unlock()
	if len(l.m) != 0 {
		t.Errorf("the waiter that gave up left %d entries, want 0", len(l.m))
	}
	u, err := l.LockContext(context.Background(), "k")
	if err != nil {
		t.Fatalf("LockContext on a free key: %v", err)
	}
	u()
}

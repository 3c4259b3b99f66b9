// Package keylock is a lock per key: holders of one key take turns while
// holders of different keys proceed in parallel. A key's entry lives only
// while someone holds or waits for it.
package keylock

import (
	"context"
	"sync"
)

// Locks is a lock per key of type K; the zero value is ready.
type Locks[K comparable] struct {
	mu sync.Mutex
	m  map[K]*entry
}

type entry struct {
	token chan struct{} // holds one token while the key is locked
	refs  int           // holders and waiters; the entry is dropped at 0
}

// Lock waits for key and returns its unlock, to be called once.
func (l *Locks[K]) Lock(key K) (unlock func()) {
	unlock, _ = l.LockContext(context.Background(), key)
	return unlock
}

// LockContext waits for key until ctx ends (then it returns ctx's error
// and holds nothing); else it returns key's unlock, to be called once.
func (l *Locks[K]) LockContext(ctx context.Context, key K) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*entry{}
	}
	e := l.m[key]
	if e == nil {
		e = &entry{token: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case e.token <- struct{}{}:
		return func() { <-e.token; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

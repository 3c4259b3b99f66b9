package pebble

import "sync"

// keyLocks serializes writers of one key (a run, a session, a lease…) while
// writers of different keys proceed in parallel, so their synced batches share
// fsyncs through Pebble's group commit.
//
// Lock order, to stay free of deadlocks: run, then session, then task index.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry is dropped at 0
}

// lock locks key and returns its unlock.
func (l *keyLocks) lock(key []byte) (unlock func()) {
	k := string(key)
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	e := l.m[k]
	if e == nil {
		e = &keyLock{}
		l.m[k] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
}

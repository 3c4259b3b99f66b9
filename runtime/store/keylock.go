package store

import "sync"

// KeyedMutex serializes the holders of one key while holders of different
// keys proceed in parallel (one run's writers in a backend, one session's
// index catch-ups in recall). The zero value is ready; an entry lives only
// while the key is held or awaited.
//
// Entries are recycled (a few are kept once released) together with their
// unlock func, so that a Lock in steady state allocates nothing: the store
// takes one or two per write.
type KeyedMutex[K comparable] struct {
	mu   sync.Mutex
	m    map[K]*keyLock[K]
	free []*keyLock[K]
}

// keptEntries bounds the released entries a KeyedMutex keeps for reuse.
const keptEntries = 64

type keyLock[K comparable] struct {
	mu     sync.Mutex
	refs   int // holders and waiters; the entry is dropped at 0
	key    K
	owner  *KeyedMutex[K]
	unlock func() // e.release, made once per entry
}

// Lock locks key and returns its unlock, which must be called once.
func (l *KeyedMutex[K]) Lock(key K) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*keyLock[K]{}
	}
	e := l.m[key]
	if e == nil {
		if n := len(l.free); n > 0 {
			e, l.free = l.free[n-1], l.free[:n-1]
		} else {
			e = &keyLock[K]{owner: l}
			e.unlock = e.release
		}
		e.key = key
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return e.unlock
}

// release is the unlock of one holder of e.
func (e *keyLock[K]) release() {
	e.mu.Unlock()
	l := e.owner
	l.mu.Lock()
	if e.refs--; e.refs == 0 {
		delete(l.m, e.key)
		if len(l.free) < keptEntries {
			var zero K
			e.key = zero // keep no key alive
			l.free = append(l.free, e)
		}
	}
	l.mu.Unlock()
}

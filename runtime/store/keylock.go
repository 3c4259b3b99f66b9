package store

import "sync"

// KeyedMutex serializes the holders of one key while holders of different
// keys proceed in parallel (one run's writers in a backend, one session's
// index catch-ups in recall). The zero value is ready; an entry lives only
// while the key is held or awaited.
type KeyedMutex[K comparable] struct {
	mu sync.Mutex
	m  map[K]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry is dropped at 0
}

// Lock locks key and returns its unlock.
func (l *KeyedMutex[K]) Lock(key K) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*keyLock{}
	}
	e := l.m[key]
	if e == nil {
		e = &keyLock{}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

package store

import (
	"context"
	"sync"
)

// KeyedMutex serializes the holders of one key while holders of different
// keys proceed in parallel (one run's writers in a backend, one session's
// runs in the Runner, one session's index catch-ups in recall). The zero
// value is ready; an entry lives only while the key is held or awaited.
// Waiters of one key take it in turn, first come first served.
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
	token  chan struct{} // capacity one: a send takes the key, a receive gives it back
	refs   int           // holders and waiters; the entry is dropped at 0
	key    K
	owner  *KeyedMutex[K]
	unlock func() // e.release, made once per entry
}

// Lock locks key and returns its unlock, which must be called once.
func (l *KeyedMutex[K]) Lock(key K) (unlock func()) {
	e := l.ref(key)
	e.token <- struct{}{}
	return e.unlock
}

// LockContext is Lock unless ctx is done before key is free: then it
// returns ctx's error and holds nothing.
func (l *KeyedMutex[K]) LockContext(ctx context.Context, key K) (unlock func(), err error) {
	e := l.ref(key)
	select {
	case e.token <- struct{}{}:
		return e.unlock, nil
	case <-ctx.Done():
		l.unref(e)
		return nil, ctx.Err()
	}
}

// TryLock locks key when no one holds it; ok is false (and nothing held)
// when someone does.
func (l *KeyedMutex[K]) TryLock(key K) (unlock func(), ok bool) {
	e := l.ref(key)
	select {
	case e.token <- struct{}{}:
		return e.unlock, true
	default:
		l.unref(e)
		return nil, false
	}
}

// ref returns key's entry, counting one more holder or waiter.
func (l *KeyedMutex[K]) ref(key K) *keyLock[K] {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*keyLock[K]{}
	}
	e := l.m[key]
	if e == nil {
		if n := len(l.free); n > 0 {
			e, l.free = l.free[n-1], l.free[:n-1]
		} else {
			e = &keyLock[K]{owner: l, token: make(chan struct{}, 1)}
			e.unlock = e.release
		}
		e.key = key
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	return e
}

// unref counts one holder or waiter of e less, dropping (and keeping for
// reuse) the entry of a key no one holds or awaits.
func (l *KeyedMutex[K]) unref(e *keyLock[K]) {
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

// release is the unlock of one holder of e.
func (e *keyLock[K]) release() {
	<-e.token
	e.owner.unref(e)
}

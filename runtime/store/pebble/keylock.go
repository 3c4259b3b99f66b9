package pebble

import "github.com/agentc/agentc/runtime/store"

// keyLocks serializes writers of one key (a run, a session, a lease…) while
// writers of different keys proceed in parallel, so their synced batches share
// fsyncs through Pebble's group commit.
//
// Lock order, to stay free of deadlocks: run, then session, then task index.
type keyLocks struct{ m store.KeyedMutex[string] }

// lock locks key and returns its unlock.
func (l *keyLocks) lock(key []byte) (unlock func()) { return l.m.Lock(string(key)) }

// tryLock locks key when no one holds it; ok is false (and nothing held)
// when someone does.
func (l *keyLocks) tryLock(key []byte) (unlock func(), ok bool) { return l.m.TryLock(string(key)) }

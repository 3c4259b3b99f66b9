package pebble

import "github.com/agentc/agentc/runtime/store"

// Keys of spec/storage.md, built with store.Key.

func programKey(hash string) store.Key { return store.NewKey(store.KindProgram).Str(hash) }
func runKey(run string) store.Key      { return store.NewKey(store.KindRun).Str(run) }

func checkpointPrefix(run string) store.Key { return store.NewKey(store.KindCheckpoint).Str(run) }
func checkpointKey(run string, step uint64) store.Key {
	return checkpointPrefix(run).U64(step)
}

func pendingPrefix(run string) store.Key { return store.NewKey(store.KindPending).Str(run) }
func pendingKey(run string, step uint64, node string, attempt uint32) store.Key {
	return pendingPrefix(run).U64(step).Str(node).U64(uint64(attempt))
}

func intentPrefix(run string) store.Key { return store.NewKey(store.KindIntent).Str(run) }
func effectPrefix(run string) store.Key { return store.NewKey(store.KindEffect).Str(run) }
func journalPrefix(run string) store.Key {
	return store.NewKey(store.KindJournal).Str(run)
}
func runTaskPrefix(run string) store.Key { return store.NewKey(store.KindRunTask).Str(run) }

// runOwned are the prefixes of everything a run owns; DeleteRun drops them.
func runOwned(run string) []store.Key {
	return []store.Key{checkpointPrefix(run), pendingPrefix(run), intentPrefix(run), effectPrefix(run), journalPrefix(run), runTaskPrefix(run)}
}

func sessionPart(kind store.Kind, k store.SessionKey) store.Key {
	return store.SessionRecordKey(kind, k)
}
func sessionKey(k store.SessionKey) store.Key { return sessionPart(store.KindSession, k) }
func stateKey(k store.SessionKey) store.Key   { return sessionPart(store.KindSessionState, k) }
func eventPrefix(k store.SessionKey) store.Key {
	return sessionPart(store.KindEvent, k)
}
func summaryKey(k store.SessionKey, filterKey string) store.Key {
	return sessionPart(store.KindSummary, k).Str(filterKey)
}

// sessionOwned are the prefixes of a session's ledger and summaries (its
// record and state are single keys); DeleteSession drops them.
func sessionOwned(k store.SessionKey) []store.Key {
	return []store.Key{eventPrefix(k), sessionPart(store.KindSummary, k)}
}

func leaseKey(key string) store.Key { return store.NewKey(store.KindLease).Str(key) }
func taskKey(user, task string) store.Key {
	return store.NewKey(store.KindTask).Str(user).Str(task)
}

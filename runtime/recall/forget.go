package recall

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/agentc/agentc/runtime/store"
)

// Collections of index layout 1, no longer read or written; Forget still
// deletes a session's documents from them.
const (
	legacyPostings = "recall.post"
	legacySessions = "recall.session"
)

// Forget deletes a session's documents from the index: its posting blocks
// (found by scanning the user's blocks, which are keyed by bucket first,
// for the session part), its claims, its event, tool-call and recall-run
// references and its statistics record, so that the user's corpus
// statistics and searches no longer count it. Retention calls it after
// deleting the session (spec/recall.md, "Deleted sessions").
func Forget(ctx context.Context, docs store.Docs, key store.SessionKey) error {
	user := store.DocPath(key.App, key.User)
	_, err := store.DeleteDocs(ctx, docs, CollBlocks, user, func(d store.Doc) bool {
		parts, ok := store.SplitDocPath(d.Key[len(user):])
		return ok && len(parts) == 3 && parts[1] == key.Session // bucket, session, block
	})
	if err == nil {
		_, err = store.DeleteDocs(ctx, docs, CollClaims, store.DocPath(key.App, key.User, key.Session), nil)
	}
	if err == nil {
		events := store.DocPath(key.App, key.User, "event")
		_, err = store.DeleteDocs(ctx, docs, CollRefs, events, func(d store.Doc) bool {
			_, n := binary.Uvarint(d.Value)
			return n > 0 && string(d.Value[n:]) == key.Session
		})
	}
	for _, kind := range []string{"call", "recallrun"} {
		if err == nil {
			_, err = store.DeleteDocs(ctx, docs, CollRefs, store.DocPath(key.App, key.User, kind, key.Session), nil)
		}
	}
	if err == nil {
		// Layout 1's documents of the session, if the store still has any:
		// postings keyed term first, and the session record.
		_, err = store.DeleteDocs(ctx, docs, legacyPostings, user, func(d store.Doc) bool {
			parts, ok := store.SplitDocPath(d.Key[len(user):])
			return ok && len(parts) == 3 && parts[1] == key.Session // term, session, seq·passage
		})
	}
	if err == nil {
		err = docs.ApplyDocs(ctx, store.DocOp{Coll: CollSessions, Key: store.DocPath(key.App, key.User, key.Session), Delete: true},
			store.DocOp{Coll: legacySessions, Key: store.DocPath(key.App, key.User, key.Session), Delete: true})
	}
	if err != nil {
		return fmt.Errorf("recall: forget %s: %w", key, err)
	}
	return nil
}

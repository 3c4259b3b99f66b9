package recall

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/agentc/agentc/runtime/store"
)

// Forget deletes a session's documents from the index: its postings (found
// by scanning the user's postings, which are keyed by term first), its
// event and tool-call references and its statistics record, so that the
// user's corpus statistics and searches no longer count it. Retention calls
// it after deleting the session (spec/recall.md, "Deleted sessions").
func Forget(ctx context.Context, docs store.Docs, key store.SessionKey) error {
	user := store.DocPath(key.App, key.User)
	_, err := store.DeleteDocs(ctx, docs, CollPostings, user, func(d store.Doc) bool {
		parts, ok := store.SplitDocPath(d.Key[len(user):])
		return ok && len(parts) == 3 && parts[1] == key.Session // term, session, seq·passage
	})
	if err == nil {
		events := store.DocPath(key.App, key.User, "event")
		_, err = store.DeleteDocs(ctx, docs, CollRefs, events, func(d store.Doc) bool {
			_, n := binary.Uvarint(d.Value)
			return n > 0 && string(d.Value[n:]) == key.Session
		})
	}
	if err == nil {
		_, err = store.DeleteDocs(ctx, docs, CollRefs, store.DocPath(key.App, key.User, "call", key.Session), nil)
	}
	if err == nil {
		err = docs.ApplyDocs(ctx, store.DocOp{Coll: CollSessions, Key: store.DocPath(key.App, key.User, key.Session), Delete: true})
	}
	if err != nil {
		return fmt.Errorf("recall: forget %s: %w", key, err)
	}
	return nil
}

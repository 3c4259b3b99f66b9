package store

import (
	"context"
	"fmt"
	"strings"
)

// Docs is a small ordered keyspace shared by the services that keep records
// next to the ledger: memories, artifacts, the recall index, skill revisions,
// evolution cursors and queues, protocol tasks. A document is (collection,
// key) → bytes. Keys sort bytewise inside a collection; services that need
// hierarchical keys build them with DocPath so that a prefix of complete parts
// selects exactly the documents under it.
type Docs interface {
	// ApplyDocs applies ops in one synced batch: all of them or none. An op
	// with IfAbsent makes the whole batch ErrConflict when its key exists at
	// the time of the write (checked atomically with it); deleting a missing
	// key is a no-op. The ops of one batch name distinct keys (else
	// ErrInvalid). A batch whose every op is Deferred may return before it
	// is durable (see DocOp.Deferred).
	ApplyDocs(ctx context.Context, ops ...DocOp) error
	// GetDoc returns the document's value, or ErrNotFound.
	GetDoc(ctx context.Context, coll, key string) ([]byte, error)
	// ListDocs returns the documents of coll whose key starts with prefix and
	// sorts after after ("" = from the first), in key order, at most limit of
	// them (limit ≤ 0: all).
	ListDocs(ctx context.Context, coll, prefix, after string, limit int) ([]Doc, error)
}

// DocOp is one write of ApplyDocs: a put of Value, or a deletion.
type DocOp struct {
	Coll, Key string
	Value     []byte
	Delete    bool
	IfAbsent  bool // put only: fail the batch when the key exists
	// Deferred lets a store whose log orders every write (Pebble) apply a
	// batch of only Deferred ops without a sync of its own: it is visible
	// at once and durable once a later synced write of the same store
	// returns (the log is synced in order), and a crash before that may
	// lose it. Only a write whose loss in a crash is harmless may be
	// Deferred. A store whose every write is its own transaction
	// (PostgreSQL, memory) ignores it.
	Deferred bool
}

// Doc is one stored document.
type Doc struct {
	Key   string
	Value []byte
}

// Check validates an op: a non-empty collection and key, and IfAbsent only on
// a put.
func (op DocOp) Check() error {
	if op.Coll == "" || op.Key == "" {
		return fmt.Errorf("doc %q/%q: empty collection or key: %w", op.Coll, op.Key, ErrInvalid)
	}
	if op.Delete && op.IfAbsent {
		return fmt.Errorf("doc %s/%s: IfAbsent on a deletion: %w", op.Coll, op.Key, ErrInvalid)
	}
	return nil
}

// CheckDocOps validates a batch: every op, and distinct keys.
func CheckDocOps(ops []DocOp) error {
	seen := make(map[[2]string]bool, len(ops))
	for _, op := range ops {
		if err := op.Check(); err != nil {
			return err
		}
		k := [2]string{op.Coll, op.Key}
		if seen[k] {
			return fmt.Errorf("doc %s/%s: named twice in one batch: %w", op.Coll, op.Key, ErrInvalid)
		}
		seen[k] = true
	}
	return nil
}

// DocPath joins parts into one document key that sorts part by part: each
// part is its bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01. A DocPath
// of the first parts of another is its prefix, and only of keys under it.
func DocPath(parts ...string) string {
	var b strings.Builder
	n := 0
	for _, p := range parts {
		n += len(p) + 2
	}
	b.Grow(n) // one allocation when no part holds 0x00
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if p[i] == 0 {
				b.WriteString("\x00\xff")
				continue
			}
			b.WriteByte(p[i])
		}
		b.WriteString("\x00\x01")
	}
	return b.String()
}

// SplitDocPath reverses DocPath; ok is false when key is not a DocPath.
func SplitDocPath(key string) (parts []string, ok bool) {
	rest := []byte(key)
	for len(rest) > 0 {
		s, n, ok := decodeStr(rest)
		if !ok {
			return nil, false
		}
		parts = append(parts, s)
		rest = rest[n:]
	}
	return parts, true
}

// deletePage is how many documents one read of DeleteDocs takes.
const deletePage = 1024

// DeleteDocs deletes the documents of coll whose key starts with prefix and
// that match accepts (nil: all), one synced batch per page read, and
// returns how many it deleted. It is not atomic: an error leaves the pages
// before it deleted.
func DeleteDocs(ctx context.Context, docs Docs, coll, prefix string, match func(Doc) bool) (int, error) {
	n := 0
	for after := ""; ; {
		ds, err := docs.ListDocs(ctx, coll, prefix, after, deletePage)
		if err != nil || len(ds) == 0 {
			return n, err
		}
		after = ds[len(ds)-1].Key
		var ops []DocOp
		for _, d := range ds {
			if match == nil || match(d) {
				ops = append(ops, DocOp{Coll: coll, Key: d.Key, Delete: true})
			}
		}
		if len(ops) > 0 {
			if err := docs.ApplyDocs(ctx, ops...); err != nil {
				return n, err
			}
		}
		n += len(ops)
	}
}

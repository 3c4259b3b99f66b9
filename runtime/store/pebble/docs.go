package pebble

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

func docKey(coll, key string) store.Key { return store.NewKey(store.KindDoc).Str(coll).Str(key) }

// docPrefix is the encoded prefix of the keys of coll that start with the raw
// string prefix: the string part's escaping without its terminator.
func docPrefix(coll, prefix string) []byte {
	k := store.Key(store.NewKey(store.KindDoc).Str(coll))
	for i := 0; i < len(prefix); i++ {
		if prefix[i] == 0 {
			k = append(k, 0, 0xFF)
			continue
		}
		k = append(k, prefix[i])
	}
	return k
}

// ApplyDocs implements store.Docs. The batch's keys are locked in key order
// (so two batches never deadlock) across the existence checks and the
// write, synced unless every op is Deferred: the WAL is one ordered log, so
// the next synced commit (whoever makes it) makes the batch durable too.
func (s *Store) ApplyDocs(ctx context.Context, ops ...store.DocOp) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(store.CheckDocOps(ops), "apply docs"), func() error {
		keys, unlock := s.lockDocs(ops)
		defer unlock()
		if err := s.checkAbsent(ops, keys); err != nil {
			return fmt.Errorf("apply docs: %w", err)
		}
		b := s.db.NewBatch()
		deferred := true
		for _, op := range ops {
			deferred = deferred && op.Deferred
		}
		putDocs(b, ops, keys)
		apply := s.apply
		if deferred {
			apply = s.applyDeferred
		}
		if err := apply(b); err != nil {
			return fmt.Errorf("apply docs: %w", err)
		}
		return nil
	})
}

// lockDocs takes the keyed locks of ops' keys in key order (so two
// batches never wait on each other) and returns the keys, in ops' order,
// and the release of the locks.
func (s *Store) lockDocs(ops []store.DocOp) ([]store.Key, func()) {
	if len(ops) == 1 { // a run's admission with its record: nothing to order
		keys := []store.Key{docKey(ops[0].Coll, ops[0].Key)}
		return keys, s.locks.lock(keys[0])
	}
	keys := make([]store.Key, len(ops))
	order := make([]int, len(ops))
	for i, op := range ops {
		keys[i] = docKey(op.Coll, op.Key)
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	unlocks := make([]func(), len(order))
	for j, i := range order {
		unlocks[j] = s.locks.lock(keys[i])
	}
	return keys, func() {
		for j := len(unlocks) - 1; j >= 0; j-- {
			unlocks[j]()
		}
	}
}

// checkAbsent returns ErrDocExists for the first IfAbsent op whose key
// (keys, in ops' order) exists; the caller holds their locks.
func (s *Store) checkAbsent(ops []store.DocOp, keys []store.Key) error {
	for i, op := range ops {
		if !op.IfAbsent {
			continue
		}
		ok, err := s.has(keys[i])
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s/%q: %w", op.Coll, op.Key, store.ErrDocExists)
		}
	}
	return nil
}

// putDocs adds ops (their keys in keys) to b.
func putDocs(b *pebble.Batch, ops []store.DocOp, keys []store.Key) {
	for i, op := range ops {
		if op.Delete {
			b.Delete(keys[i], nil)
			continue
		}
		b.Set(keys[i], store.Frame(op.Value), nil)
	}
}

// GetDoc implements store.Docs.
func (s *Store) GetDoc(ctx context.Context, coll, key string) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		v, err := s.get(docKey(coll, key))
		if err != nil {
			return nil, fmt.Errorf("get doc %s/%q: %w", coll, key, err)
		}
		return v, nil
	})
}

// ListDocs implements store.Docs.
func (s *Store) ListDocs(ctx context.Context, coll, prefix, after string, limit int) ([]store.Doc, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckName("collection", coll), "list docs"), func() ([]store.Doc, error) {
		var from []byte
		if after != "" {
			from = docKey(coll, after)
		}
		ds, err := scan(ctx, s, docPrefix(coll, prefix), from, limit, func(parts []store.Part, it iter) (store.Doc, bool, error) {
			v, err := it.payload()
			return store.Doc{Key: parts[1].Str, Value: bytes.Clone(v)}, err == nil, err
		})
		if err != nil {
			return nil, fmt.Errorf("list docs %s: %w", coll, err)
		}
		return ds, nil
	})
}

package pebble

import (
	"bytes"
	"context"
	"fmt"
	"slices"

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
		keys := make([]store.Key, len(ops))
		order := make([]int, len(ops))
		for i, op := range ops {
			keys[i] = docKey(op.Coll, op.Key)
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		for _, i := range order {
			defer s.locks.lock(keys[i])()
		}
		for i, op := range ops {
			if !op.IfAbsent {
				continue
			}
			ok, err := s.has(keys[i])
			if err != nil {
				return fmt.Errorf("apply docs: %w", err)
			}
			if ok {
				return fmt.Errorf("apply docs: %s/%q exists: %w", op.Coll, op.Key, store.ErrConflict)
			}
		}
		b := s.db.NewBatch()
		deferred := true
		for i, op := range ops {
			deferred = deferred && op.Deferred
			if op.Delete {
				b.Delete(keys[i], nil)
				continue
			}
			b.Set(keys[i], store.Frame(op.Value), nil)
		}
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

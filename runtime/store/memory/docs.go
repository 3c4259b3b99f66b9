package memory

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentc/agentc/runtime/store"
)

type docKey struct{ coll, key string }

// ApplyDocs implements store.Docs.
func (s *Store) ApplyDocs(ctx context.Context, ops ...store.DocOp) error {
	if err := store.CheckDocOps(ops); err != nil {
		return fmt.Errorf("apply docs: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkAbsent(ops); err != nil {
		return fmt.Errorf("apply docs: %w", err)
	}
	s.putDocs(ops)
	return nil
}

// checkAbsent returns ErrDocExists for the first IfAbsent op whose key
// exists; s.mu is held.
func (s *Store) checkAbsent(ops []store.DocOp) error {
	for _, op := range ops {
		if _, ok := s.docs[docKey{op.Coll, op.Key}]; ok && op.IfAbsent {
			return fmt.Errorf("%s/%q: %w", op.Coll, op.Key, store.ErrDocExists)
		}
	}
	return nil
}

// putDocs applies ops; s.mu is held.
func (s *Store) putDocs(ops []store.DocOp) {
	for _, op := range ops {
		if op.Delete {
			delete(s.docs, docKey{op.Coll, op.Key})
			continue
		}
		v := bytes.Clone(op.Value)
		if v == nil {
			v = []byte{}
		}
		s.docs[docKey{op.Coll, op.Key}] = v
	}
}

// GetDoc implements store.Docs.
func (s *Store) GetDoc(ctx context.Context, coll, key string) ([]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	v, ok := s.docs[docKey{coll, key}]
	if !ok {
		return nil, fmt.Errorf("get doc %s/%q: %w", coll, key, store.ErrNotFound)
	}
	return bytes.Clone(v), nil
}

// ListDocs implements store.Docs.
func (s *Store) ListDocs(ctx context.Context, coll, prefix, after string, limit int) ([]store.Doc, error) {
	if coll == "" {
		return nil, fmt.Errorf("list docs: empty collection: %w", store.ErrInvalid)
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Doc
	for k, v := range s.docs {
		if k.coll == coll && strings.HasPrefix(k.key, prefix) && k.key > after {
			out = append(out, store.Doc{Key: k.key, Value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		out[i].Value = bytes.Clone(out[i].Value)
	}
	return out, nil
}

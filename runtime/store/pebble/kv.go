package pebble

import (
	"bytes"
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// get returns the verified payload of key, copied out of Pebble;
// store.ErrNotFound when the key is absent.
func (s *Store) get(key []byte) (out []byte, err error) {
	err = guard(s.dir, "read", func() error {
		out, err = s.getUnguarded(key)
		return err
	})
	return out, err
}

func (s *Store) getUnguarded(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, namePebbleError(s.dir, "read", err)
	}
	defer closer.Close()
	payload, err := store.Payload(key, v)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), payload...), nil
}

// has reports whether key exists.
func (s *Store) has(key []byte) (ok bool, err error) {
	err = guard(s.dir, "read", func() error {
		_, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return namePebbleError(s.dir, "read", err)
		}
		ok = true
		return closer.Close()
	})
	return ok, err
}

// iter is a Pebble iterator over [lower, upper).
type iter struct {
	*pebble.Iterator
	dir string
}

func (s *Store) iter(lower, upper []byte) (iter, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return iter{}, namePebbleError(s.dir, "read", err)
	}
	return iter{it, s.dir}, nil
}

// prefix returns an iterator over the keys starting with p.
func (s *Store) prefix(p []byte) (iter, error) { return s.iter(p, store.PrefixEnd(p)) }

// payload returns the verified payload at the iterator, aliasing Pebble's
// buffer until the iterator moves.
func (it iter) payload() ([]byte, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	return store.Payload(it.Key(), v)
}

// close closes the iterator and joins its error with err; an error from
// the engine names the file it is about.
func (it iter) close(err error) error {
	if ierr := errors.Join(it.Error(), it.Close()); ierr != nil {
		err = errors.Join(err, namePebbleError(it.dir, "read", ierr))
	}
	return err
}

// scan reads the keys under prefix after the key after (nil: from the
// first) with read, given the key's decoded parts, which also says whether
// the key's item is one to keep, until max items are kept (0: all) or ctx
// ends.
func scan[T any](ctx context.Context, s *Store, prefix, after []byte, max int, read func(parts []store.Part, it iter) (T, bool, error)) ([]T, error) {
	it, err := s.prefix(prefix)
	if err != nil {
		return nil, err
	}
	ok := it.First()
	// after is a whole key: no key extends it, and the next one is at or
	// past its PrefixEnd.
	if seek := store.PrefixEnd(after); after != nil && bytes.Compare(seek, prefix) > 0 {
		ok = it.SeekGE(seek)
	}
	return collect(ctx, it, ok, it.Next, max, read)
}

// scanBack is scan in descending key order, from the last key under prefix
// before before (nil: the last key under prefix).
func scanBack[T any](ctx context.Context, s *Store, prefix, before []byte, max int, read func(parts []store.Part, it iter) (T, bool, error)) ([]T, error) {
	it, err := s.prefix(prefix)
	if err != nil {
		return nil, err
	}
	var ok bool
	if before != nil {
		ok = it.SeekLT(before)
	} else {
		ok = it.Last()
	}
	return collect(ctx, it, ok, it.Prev, max, read)
}

// collect reads the keys of it from its position (ok: it has one) on, each
// move by step, into at most max items (0: all), and closes it.
func collect[T any](ctx context.Context, it iter, ok bool, step func() bool, max int, read func(parts []store.Part, it iter) (T, bool, error)) ([]T, error) {
	var out []T
	var err error
	for ; ok && (max <= 0 || len(out) < max); ok = step() {
		if err = ctx.Err(); err != nil {
			break
		}
		var parts []store.Part
		if _, parts, err = store.DecodeKey(it.Key()); err != nil {
			break
		}
		v, keep, rerr := read(parts, it)
		if err = rerr; err != nil {
			break
		}
		if keep {
			out = append(out, v)
		}
	}
	return out, it.close(err)
}

// lastNum returns the number part ending the last key under p (a step or a
// sequence), and whether there is one.
func (s *Store) lastNum(p []byte) (uint64, bool, error) {
	it, err := s.prefix(p)
	if err != nil {
		return 0, false, err
	}
	if !it.Last() {
		return 0, false, it.close(nil)
	}
	n, err := tailNum(it.Key())
	return n, true, it.close(err)
}

// tailNum decodes the 8-byte number ending key.
func tailNum(key []byte) (uint64, error) {
	_, parts, err := store.DecodeKey(key)
	if err != nil {
		return 0, err
	}
	last := parts[len(parts)-1]
	if !last.IsNum {
		return 0, store.CorruptRecord(key, "key does not end in a number")
	}
	return last.Num, nil
}

// applyDeferred commits b without a sync: visible at once, durable with
// the next synced commit (the WAL is written in commit order). The WAL
// mark is left to that commit: it records only what a sync covered.
func (s *Store) applyDeferred(b *pebble.Batch) error {
	err := guard(s.dir, "commit", func() error { return b.Commit(pebble.NoSync) })
	err = errors.Join(err, b.Close())
	if err != nil {
		return namePebbleError(s.dir, "commit", err)
	}
	return nil
}

// apply commits b synced and closes it, then records the WAL mark. An
// error from the engine names the file it is about.
func (s *Store) apply(b *pebble.Batch) error {
	s.group.committing.Add(1)
	err := guard(s.dir, "commit", func() error { return b.Commit(pebble.Sync) })
	s.group.committing.Add(-1)
	err = errors.Join(err, b.Close())
	if err != nil {
		return namePebbleError(s.dir, "commit", err)
	}
	return s.mark.update()
}

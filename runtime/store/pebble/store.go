// Package pebble is the durable store.Store on Pebble, agentc's embedded
// default, and the only package that imports Pebble.
//
// Layout, framing and durability follow spec/storage.md: every value is
// framed with a codec version and a CRC32C; every write that the runtime
// relies on after a crash is a synced batch; writers of one run or one
// session are serialized in-process while different runs commit in parallel
// and share fsyncs through Pebble's group commit. A directory is opened by
// one process at a time; a second open fails with store.ErrLocked naming the
// holder.
package pebble

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// Options tune a Store. The zero value is a good default.
type Options struct {
	// CacheSize is the block cache in bytes (0: Pebble's default, 8 MiB).
	CacheSize int64
	// Logger receives Pebble's log lines (nil: errors only, to stderr).
	Logger pebble.Logger
}

// Store is a store.Store in a Pebble directory.
type Store struct {
	dir  string
	db   *pebble.DB
	lock *pebble.Lock

	// mu guards closed: operations hold it shared, Close exclusively, so
	// Close waits for operations in flight and later ones see ErrClosed.
	mu     sync.RWMutex
	closed bool

	locks keyLocks
	heads heads
}

var _ store.Store = (*Store)(nil)

// formatVersion pins Pebble's on-disk format so that upgrading the library
// never ratchets it silently.
const formatVersion = pebble.FormatTableFormatV6

// Open opens (creating if needed) the store in dir. It fails with
// store.ErrLocked when another process or another Open holds dir, and with
// store.ErrLayoutVersion when dir holds data of another layout version.
func Open(dir string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	po := &pebble.Options{
		Lock:               lock,
		FormatMajorVersion: formatVersion,
		Logger:             opts.Logger,
	}
	if po.Logger == nil {
		po.Logger = quietLogger{}
	}
	if opts.CacheSize > 0 {
		cache := pebble.NewCache(opts.CacheSize)
		defer cache.Unref()
		po.Cache = cache
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", dir, err), unlockDir(dir, lock))
	}
	s := &Store{dir: dir, db: db, lock: lock}
	if err := s.checkLayout(); err != nil {
		return nil, errors.Join(err, db.Close(), unlockDir(dir, lock))
	}
	return s, nil
}

// checkLayout reads the meta key; an empty directory gets one.
func (s *Store) checkLayout() error {
	key := store.MetaKey()
	payload, err := s.get(key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		empty, err := s.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("open store %s: data without a layout marker (not an agentc store?): %w", s.dir, store.ErrLayoutVersion)
		}
		if err := s.db.Set(key, metaValue(), pebble.Sync); err != nil {
			return fmt.Errorf("open store %s: write layout marker: %w", s.dir, err)
		}
		return nil
	case errors.Is(err, store.ErrLayoutVersion):
		return fmt.Errorf("open store %s: %w", s.dir, err)
	case err != nil:
		return fmt.Errorf("open store %s: %w", s.dir, err)
	}
	v, err := decodeMeta(key, payload)
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.dir, err)
	}
	if v != store.LayoutVersion {
		return fmt.Errorf("open store %s: layout version %d, this build reads %d: %w", s.dir, v, store.LayoutVersion, store.ErrLayoutVersion)
	}
	return nil
}

// isEmpty reports whether the database holds no key at all.
func (s *Store) isEmpty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, errors.Join(it.Error(), it.Close())
}

// Close closes the database and releases the directory. It waits for
// operations in flight; later calls return store.ErrClosed, and a second
// Close returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.db.Close(), unlockDir(s.dir, s.lock))
}

// enter starts an operation: it fails when ctx is done or the store closed,
// and otherwise returns the function that ends the operation.
func (s *Store) enter(ctx context.Context) (exit func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, store.ErrClosed
	}
	return s.mu.RUnlock, nil
}

// quietLogger drops Pebble's informational lines and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

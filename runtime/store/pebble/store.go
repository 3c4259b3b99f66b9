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
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/agentc/agentc/runtime/store"
)

// Options tune a Store. The zero value is a good default.
type Options struct {
	// CacheSize is the block cache in bytes (0: DefaultCacheSize). It is a
	// bound: blocks are cached as they are read.
	CacheSize int64
	// Logger receives Pebble's log lines (nil: errors only, to stderr).
	Logger pebble.Logger

	// engine changes the engine's options before the store opens (this
	// package's benchmarks: Pebble's default LSM shape, for comparison).
	engine func(*pebble.Options)
}

// DefaultCacheSize is the block cache of a Store opened without
// Options.CacheSize: the index and data blocks of a server's recent
// sessions (Pebble's own default, 8 MiB, keeps evicting them under
// load, and each new session's first reads go to disk: spec/storage.md).
const DefaultCacheSize = 64 << 20

// bloomBitsPerKey sizes the tables' Bloom filters: about 1% false
// positives for 1.25 bytes a key.
const bloomBitsPerKey = 10

// memTableSize and flushTableSize shape the LSM for agentc's writes
// (spec/storage.md, "Engine tuning"). A run appends to half a dozen key
// ranges at once (its run record, session, checkpoints, journal, events),
// each at its range's end, so a flush with Pebble's defaults (4 MiB
// memtables, 2 MiB L0 tables) writes tables that span every range, and
// each L0 compaction rewrites the Lbase tables between their ends: most
// of the level, again and again. Small flushed tables (256 KiB, so that a
// flush is split where Lbase's tables begin) and larger memtables (more
// of each range per flush) keep a compaction to the tables at the ranges'
// ends.
const (
	memTableSize   = 16 << 20
	flushTableSize = 256 << 10
)

// maxOpenFiles bounds the engine's table cache (the tables it keeps open)
// for a process allowed limit open files: half of them, the rest for a
// server's connections, its WAL and its other files; at least 256 and at
// most 16,384. Where the limit is unknown, Pebble's default, 1,000. The
// small flushed tables (flushTableSize) make a store's tables many (about
// 2 a MiB), and a table the cache does not hold is opened again, its index
// read, on every read that needs it.
func maxOpenFiles(limit uint64) int {
	if limit == 0 {
		return 1000
	}
	return int(min(max(limit/2, 256), 16384))
}

// engineOptions are the Pebble options every store is opened, checked and
// repaired with (the OPTIONS file a store writes, which check compares):
// the pinned format, the LSM's shape (memTableSize), and a Bloom filter
// in every table, so that a point read of a key a table does not hold (a
// new session's record, a new run id's conflict probe, a reservation) is
// answered by the filter, not the table's index and data blocks
// (spec/storage.md).
func engineOptions() *pebble.Options {
	po := &pebble.Options{FormatMajorVersion: formatVersion, MemTableSize: memTableSize, MaxOpenFiles: maxOpenFiles(fileLimit())}
	po.TargetFileSizes[0] = flushTableSize // Lbase and below: twice the level above, as Pebble derives them
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	return po
}

// Store is a store.Store in a Pebble directory.
type Store struct {
	dir  string
	db   *pebble.DB
	lock *pebble.Lock
	// readOnly: opened for checking; nothing is written, the seal is kept.
	readOnly bool
	mark     *walMark
	group    *groupCommit

	// gate: operations pass it, Close shuts it, so Close waits for
	// operations in flight and later ones see ErrClosed.
	gate store.Gate

	locks            keyLocks
	heads            headCache[string, runHead]
	sessions         headCache[store.SessionKey, sessionRecord]
	store.LeaseRules // AcquireLease, RenewLease, ReleaseLease over stepLease
}

var _ store.Store = (*Store)(nil)

// formatVersion pins Pebble's on-disk format so that upgrading the library
// never ratchets it silently.
const formatVersion = pebble.FormatTableFormatV6

// Open opens (creating if needed) the store in dir. It fails with
// store.ErrLocked when another process or another Open holds dir, with
// store.ErrLayoutVersion when dir holds data of another layout version, and
// with a *DamageError (store.ErrCorrupt) naming the file when the store is
// damaged: before the engine may create or delete anything, the directory
// must be empty or a complete store, a store closed cleanly must match its
// seal, and no WAL may hold damage that is not a torn tail (spec/storage.md,
// "Durability").
func Open(dir string, opts *Options) (*Store, error) {
	return open(dir, opts, false)
}

func open(dir string, opts *Options, readOnly bool) (*Store, error) {
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
	mark := &walMark{dir: dir}
	gc := &groupCommit{}
	db, st, err := openDB(dir, opts, lock, readOnly, mark, gc)
	if err != nil {
		return nil, errors.Join(err, unlockDir(dir, lock))
	}
	s := &Store{dir: dir, db: db, lock: lock, readOnly: readOnly, mark: mark, group: gc}
	s.LeaseRules.Step = s.stepLease
	err = guard(dir, "open store", func() error { return s.checkLayout(st.exists) })
	if err == nil && !readOnly {
		err = mark.start()
	}
	if err != nil {
		return nil, errors.Join(err, mark.close(), guard(dir, "close store", db.Close), unlockDir(dir, lock))
	}
	return s, nil
}

// openDB checks dir and opens Pebble on it.
func openDB(dir string, opts *Options, lock *pebble.Lock, readOnly bool, mark *walMark, gc *groupCommit) (*pebble.DB, dirState, error) {
	st, err := preflight(dir)
	if err != nil {
		return nil, st, err
	}
	if readOnly && !st.exists {
		return nil, st, fmt.Errorf("open store %s: no store in the directory", dir)
	}
	if st.sealed {
		if err := verifySeal(dir); err != nil {
			return nil, st, err
		}
	}
	if err := checkWALs(dir, st.logs); err != nil {
		return nil, st, err
	}
	if err := checkMark(dir); err != nil {
		return nil, st, err
	}
	if st.exists {
		if err := checkManifest(dir, st.manifest); err != nil {
			return nil, st, err
		}
	}
	if !readOnly {
		// The seal and the mark describe the files as they are now; the
		// engine is about to change them. Open writes a new mark.
		if err := breakSeal(dir); err != nil {
			return nil, st, err
		}
	}
	po := engineOptions()
	if opts.engine != nil {
		opts.engine(po)
	}
	po.Lock, po.Logger, po.ErrorIfNotExists, po.ReadOnly = lock, opts.Logger, st.exists, readOnly
	if po.Logger == nil {
		po.Logger = quietLogger{}
	}
	po.EventListener = events(po.Logger, mark)
	if mark != nil {
		// Under Pebble's own middleware (disk-health checks), as when
		// no FS is given.
		po.FS = walFS{FS: vfs.Default, mark: mark}
		po.WithFSDefaults()
	}
	if gc != nil {
		po.WALMinSyncInterval = gc.minSyncInterval
	}
	size := opts.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	cache := pebble.NewCache(size)
	defer cache.Unref()
	po.Cache = cache
	var db *pebble.DB
	err = guard(dir, "open store", func() error {
		var err error
		db, err = pebble.Open(dir, po)
		return err
	})
	if err != nil {
		err = namePebbleError(dir, "open store", err)
		var de *DamageError
		if errors.As(err, &de) && de.File == "" && strings.Contains(de.Error(), "key=value") {
			de.File = st.options // the engine does not name the OPTIONS file it failed to parse
		}
		return nil, st, err
	}
	return db, st, nil
}

// checkLayout reads the meta key. A new store gets one; an existing store
// without one is refused, never re-initialised.
func (s *Store) checkLayout(existed bool) error {
	key := store.MetaKey()
	payload, err := s.get(key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		empty, err := s.isEmpty()
		if err != nil {
			return namePebbleError(s.dir, "open store", err)
		}
		if existed && empty {
			return damage(s.dir, "", "the store's files hold no data, not even its layout key (tables or WAL lost?)", nil)
		}
		if !empty {
			return fmt.Errorf("open store %s: data without a layout marker (not an agentc store?): %w", s.dir, store.ErrLayoutVersion)
		}
		if s.readOnly {
			return nil
		}
		if err := s.db.Set(key, metaCodec.value(store.LayoutVersion), pebble.Sync); err != nil {
			return fmt.Errorf("open store %s: write layout marker: %w", s.dir, err)
		}
		return nil
	case errors.Is(err, store.ErrLayoutVersion):
		return fmt.Errorf("open store %s: %w", s.dir, err)
	case err != nil:
		return namePebbleError(s.dir, "open store", err)
	}
	v, err := metaCodec.decode(key, payload, 0)
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
	return s.gate.Shut(func() error {
		err := errors.Join(s.mark.close(), guard(s.dir, "close store", s.db.Close))
		if err == nil && !s.readOnly {
			err = writeSeal(s.dir)
		}
		return errors.Join(err, unlockDir(s.dir, s.lock))
	})
}

// Flush writes what the engine holds in memory to tables and returns when
// they are written (the WAL already holds it: this is not for durability).
// Benchmarks call it to charge a round for the flush of its own writes,
// not the round that happens to fill the memtable.
func (s *Store) Flush(ctx context.Context) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		return namePebbleError(s.dir, "flush", guard(s.dir, "flush", s.db.Flush))
	})
}

// Background is the number of memtable flushes and compactions the engine
// runs now: work earlier writes caused that has not ended (0 once closed).
func (s *Store) Background() int {
	n, _ := store.Op(context.Background(), &s.gate, nil, func() (int, error) {
		m := s.db.Metrics()
		return int(m.Compact.NumInProgress + m.Flush.NumInProgress), nil
	})
	return n
}

// events is the engine's event listener: WAL creation feeds the mark (nil:
// none); damage the engine finds in the background is logged in one line
// naming the file instead of stopping the process (Pebble's default), and
// the read that meets it fails with an error naming the file.
func events(logger pebble.Logger, mark *walMark) *pebble.EventListener {
	l := &pebble.EventListener{}
	if mark != nil {
		l = mark.listener()
	}
	l.DataCorruption = func(info pebble.DataCorruptionInfo) {
		logger.Errorf("store: %s is damaged (%s); run `agentc store check`", info.Path, firstLine(fmt.Sprint(info.Details)))
	}
	l.BackgroundError = func(err error) {
		logger.Errorf("store: background error: %s", firstLine(err.Error()))
	}
	return l
}

// quietLogger drops Pebble's informational lines and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf("%s", firstLine(fmt.Sprintf(format, args...)))
}

// Fatalf panics instead of exiting, so that guard turns an inconsistency the
// engine finds while opening or reading into an error naming the file.
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Errorf("pebble: "+format, args...))
}

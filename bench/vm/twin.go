package main

// The durable figure's baseline: each commit's own batch, byte for byte,
// replayed as a raw synced Pebble batch beside it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rawpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/cockroachdb/pebble/v2/record"

	"github.com/agentc/agentc/runtime/store"
)

// twin replays the batches a store commits on a raw Pebble database with
// the store's engine options (format version, default memtable, cache and
// WAL settings), synced: the same keys, values and batch shape, so that
// the difference to a commit is what the store and the Runner add around
// the write. It reads each batch back from the store's live WAL after the
// commit returned (outside the commit's time).
//
// Order alternates: the batch of an even step is replayed right after its
// commit, that of an odd step right before the next commit, so neither
// side always follows the other's fsync.
type twin struct {
	db       *rawpebble.DB
	wal      walTail
	deferred []byte // an odd step's batch, replayed before the next commit
}

func openTwin(dir, storeDir string) (*twin, error) {
	db, err := rawpebble.Open(dir, &rawpebble.Options{FormatMajorVersion: rawpebble.FormatTableFormatV6, Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	return &twin{db: db, wal: walTail{dir: storeDir}}, nil
}

func (t *twin) close() error { return errors.Join(t.wal.close(), t.db.Close()) }

// replay applies repr as one synced batch and returns its time.
func (t *twin) replay(repr []byte) (time.Duration, error) {
	start := time.Now()
	b := t.db.NewBatch()
	if err := b.SetRepr(repr); err != nil {
		b.Close()
		return 0, err
	}
	err := t.db.Apply(b, rawpebble.Sync)
	b.Close()
	return time.Since(start), err
}

// before replays the deferred batch, if any.
func (t *twin) before() (time.Duration, bool, error) {
	if t.deferred == nil {
		return 0, false, nil
	}
	d, err := t.replay(t.deferred)
	t.deferred = nil
	return d, true, err
}

// after finds the batch that committed run's step in the WAL, and replays
// it now (even steps) or defers it. It returns the bytes of the batch and,
// when replayed now, its time.
func (t *twin) after(run string, step uint64) (size int, raw time.Duration, replayed bool, err error) {
	repr, err := t.wal.batchWith(store.NewKey(store.KindCheckpoint).Str(run).U64(step))
	if err != nil {
		return 0, 0, false, fmt.Errorf("twin of %s/%d: %w", run, step, err)
	}
	if step%2 == 1 {
		t.deferred = repr
		return len(repr), 0, false, nil
	}
	raw, err = t.replay(repr)
	return len(repr), raw, true, err
}

// walTail reads the batches appended to a Pebble directory's live WAL.
type walTail struct {
	dir string
	num uint64
	f   *os.File
	off int64 // end of the last record read
	buf []byte
}

const (
	walBlock   = 32 << 10
	maxStepWAL = 1 << 20
)

func (w *walTail) close() error {
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// batchWith returns the first batch since the last call whose keys
// include key; the batches before it are skipped.
func (w *walTail) batchWith(key []byte) ([]byte, error) {
	for range 2 { // the live log, then a newer one if the log rotated
		reprs, err := w.next()
		if err != nil {
			return nil, err
		}
		for _, repr := range reprs {
			r := batchrepr.Read(repr)
			for {
				_, k, _, ok, err := r.Next()
				if err != nil || !ok {
					break
				}
				if bytes.Equal(k, key) {
					return repr, nil
				}
			}
		}
		if err := w.follow(); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("no batch in the WAL holds the checkpoint")
}

// follow opens the highest-numbered log if it is not the one read.
func (w *walTail) follow() error {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	var num uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 64); err == nil && n > num {
			num = n
		}
	}
	if num == 0 || num == w.num {
		return nil
	}
	f, err := os.Open(filepath.Join(w.dir, fmt.Sprintf("%06d.log", num)))
	if err != nil {
		return err
	}
	w.close()
	w.f, w.num, w.off = f, num, 0
	return nil
}

// next returns the records written to the log since the last call.
func (w *walTail) next() ([][]byte, error) {
	if w.f == nil {
		if err := w.follow(); err != nil || w.f == nil {
			return nil, err
		}
	}
	fi, err := w.f.Stat()
	if err != nil {
		return nil, err
	}
	start := w.off &^ (walBlock - 1)
	if fi.Size() <= w.off {
		return nil, nil
	}
	// A recycled log keeps an older log's bytes past what is written: read
	// a bounded window (a step writes a few KiB), not the whole file.
	end := min(fi.Size(), w.off+maxStepWAL)
	w.buf = append(w.buf[:0], make([]byte, end-start)...)
	n, err := w.f.ReadAt(w.buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	logNum := rawpebble.WALCreateInfo{}.FileNum
	setNum(&logNum, w.num)
	r := record.NewReader(bytes.NewReader(w.buf[:n]), logNum)
	var out [][]byte
	for {
		rr, err := r.Next()
		if err != nil {
			break // the end of what is written (or an older log's bytes past it)
		}
		b, err := io.ReadAll(rr)
		if err != nil {
			break
		}
		// A record is new when it ends past the last one read (the
		// offset before Next does not see a continuation chunk skipped).
		if end := start + r.Offset(); end > w.off {
			out = append(out, b)
			w.off = end
		}
	}
	return out, nil
}

// setNum sets a file number of the engine's own (unexported) type.
func setNum[T ~uint64](p *T, v uint64) { *p = T(v) }

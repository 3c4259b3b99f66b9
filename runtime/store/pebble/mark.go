package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// markFile records, after every synced commit, the live WAL and its size:
// how much of the log had been committed. A crash leaves no seal, and a WAL
// cut or damaged in its last records reads to the engine as a torn write;
// the mark tells the two apart: on open the WAL it names must hold valid
// records through the recorded size. It is written in place without an
// fsync (a process crash keeps it; after a power loss it may lag, which only
// weakens the check), at open with an fsync, and it is checksummed so a torn
// mark is ignored rather than trusted.
const markFile = "agentc.wal-mark"

const markMagic = 0x61676d31 // "agm1"

const markSize = 24

// walMark tracks the live WAL and writes the mark. Where the platform
// allows (mark_unix.go), the mark file is mapped shared, so that a commit
// records its mark with a store to memory rather than a write call (the
// page cache is the file's: a process crash keeps it).
//
// What it records of the live WAL is how many bytes Pebble wrote to it,
// counted by the engine's file system (walFS), not the file's size: a
// recycled log keeps the length of the log it was until the new one has
// written past it, so its size would claim records it does not hold yet
// (and a crash then would read as a WAL cut short). The count costs a
// commit no system call.
type walMark struct {
	dir string

	mu      sync.Mutex
	f       *os.File
	mem     []byte // the mark file, mapped (nil: written with pwrite)
	num     uint32 // live WAL number (0: unknown)
	written *atomic.Int64
	last    int64 // size last written
	// created are the counts of the logs walFS opened for writing that
	// no WALCreated has named yet, by path.
	created map[string]*atomic.Int64
}

// listener reports WAL creation to the mark.
func (m *walMark) listener() *pebble.EventListener {
	return &pebble.EventListener{
		WALCreated: func(info pebble.WALCreateInfo) {
			m.mu.Lock()
			defer m.mu.Unlock()
			// A log walFS did not see (none: every WAL is created
			// through it) is recorded as holding nothing: a weaker
			// check, never a wrong one.
			m.num, m.written, m.last = uint32(info.FileNum), m.created[info.Path], -1
			clear(m.created)
		},
	}
}

// opened is walFS's report of a log it opened for writing at path.
func (m *walMark) opened(path string, n *atomic.Int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.created == nil {
		m.created = make(map[string]*atomic.Int64, 1)
	}
	m.created[path] = n
}

// start opens the mark file and records the live WAL, synced.
func (m *walMark) start() error {
	f, err := os.OpenFile(filepath.Join(m.dir, markFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("open store %s: %w", m.dir, err)
	}
	m.f = f
	if err := m.update(); err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() < markSize {
		// No WAL yet: a zeroed mark, which reads as none, to map.
		if err := f.Truncate(markSize); err != nil {
			return fmt.Errorf("open store %s: %w", m.dir, err)
		}
	}
	if err := errors.Join(f.Sync(), syncDir(m.dir)); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mem = mapMark(f)
	return nil
}

// update records how much of the live WAL was written. Called after a
// synced commit returns, so every byte it counts was written before the
// commit's sync finished or belongs to a commit in the same group.
func (m *walMark) update() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil || m.num == 0 {
		return nil
	}
	var size int64
	if m.written != nil {
		size = m.written.Load()
	}
	if size == m.last {
		return nil
	}
	var b [markSize]byte
	binary.BigEndian.PutUint32(b[0:], markMagic)
	binary.BigEndian.PutUint32(b[4:], m.num)
	binary.BigEndian.PutUint64(b[8:], uint64(size))
	binary.BigEndian.PutUint32(b[16:], 0)
	binary.BigEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	if m.mem != nil {
		copy(m.mem, b[:])
	} else if _, err := m.f.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("store %s: record the WAL mark: %w", m.dir, err)
	}
	m.last = size
	return nil
}

// walFS is the engine's file system: the default one, except that the
// logs Pebble opens for writing (created, or recycled from an obsolete log)
// count the bytes written to them, for the mark.
type walFS struct {
	vfs.FS
	mark *walMark
}

func (fs walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.counted(name, f, err)
}

func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.counted(newname, f, err)
}

// counted wraps a log's file opened for writing at name; any other file
// goes as it is.
func (fs walFS) counted(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || classify(fs.PathBase(name)) != kindLog {
		return f, err
	}
	c := &countedFile{File: f}
	fs.mark.opened(name, &c.n)
	return c, nil
}

// countedFile counts the bytes written to a log. Pebble writes a log in
// order from its start, with Write only.
type countedFile struct {
	vfs.File
	n atomic.Int64
}

func (f *countedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.n.Add(int64(n))
	return n, err
}

// close closes the mark file; the seal then supersedes it.
func (m *walMark) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	if m.mem != nil {
		err = errors.Join(err, unmapMark(m.mem))
		m.mem = nil
	}
	if m.f != nil {
		err = errors.Join(err, m.f.Close())
		m.f = nil
	}
	return err
}

// readMark returns the recorded WAL number and size; ok is false when there
// is no usable mark.
func readMark(dir string) (num uint32, size int64, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, markFile))
	if err != nil || len(b) < markSize {
		return 0, 0, false
	}
	if binary.BigEndian.Uint32(b[0:]) != markMagic || crc32.Checksum(b[:20], castagnoli) != binary.BigEndian.Uint32(b[20:]) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b[4:]), int64(binary.BigEndian.Uint64(b[8:])), true
}

// recycledTail reports whether the bytes of a log past end, where its
// valid records stop, are those of an earlier log it was recycled from: at
// the first block boundary from end (every block of a log starts with a
// chunk) a valid chunk of a log numbered below num. The records then end
// at end. A mark of a recycled log may claim more than that: one written
// before stop 36 recorded the file's length (its fstat), and one written
// since may count bytes a power loss took back to the old log's. Bytes
// that are no log's chunks (cut, zeroed, damaged) are not such a tail.
func recycledTail(data []byte, end int, num uint32) bool {
	b := (end + walBlockSize - 1) / walBlockSize * walBlockSize
	if b+walRecycledHeader > len(data) {
		return false
	}
	switch enc := data[b+6]; {
	case enc >= 5 && enc <= 12: // recycled and WAL-sync chunks carry their log number
	default:
		return false
	}
	prev := binary.LittleEndian.Uint32(data[b+7:])
	if prev == 0 || prev >= num {
		return false
	}
	_, _, _, ok := chunkAt(data, b, prev)
	return ok
}

// checkMark refuses a store whose live WAL holds fewer valid records than
// the mark says were committed. A sealed store is checked by its seal.
func checkMark(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, sealFile)); err == nil {
		return nil
	}
	num, size, ok := readMark(dir)
	if !ok {
		return nil
	}
	name := fmt.Sprintf("%06d.log", num)
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return damage(dir, name, fmt.Sprintf("the live WAL is missing (%d bytes of it had been committed, says %s)", size, markFile), nil)
	}
	if err != nil {
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	if f := scanWAL(data, num); int64(f.end) < size && !recycledTail(data, f.end, num) {
		return damage(dir, name, fmt.Sprintf("the WAL holds valid records through offset %d, but %d bytes had been committed (says %s): committed records would be dropped", f.end, size, markFile), nil)
	}
	return nil
}

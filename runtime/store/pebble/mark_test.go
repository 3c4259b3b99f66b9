package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// TestMarkOfRecycledWAL: Pebble recycles an obsolete log as the next live
// one, so the live WAL's file is as long as the old log until the new one
// has written past it. The mark must record what was written to the new
// log, not the file's length: a store that crashes then (its files copied
// as a crash leaves them) opens, with every write it acknowledged.
func TestMarkOfRecycledWAL(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	src := filepath.Join(base, "src")
	s := mustOpen(t, src)
	defer s.Close()
	val := bytes.Repeat([]byte("x"), 16000) // logs rotate with the memtables (memTableSize)
	crashes, live := 0, uint32(0)
	for i := 0; i < 8000 && crashes < 2; i++ {
		key := fmt.Sprintf("k%06d", i)
		must(t, s.ApplyDocs(ctx, store.DocOp{Coll: "c", Key: key, Value: val}))
		num, _, ok := readMark(src)
		if !ok {
			t.Fatalf("after write %d: no mark", i)
		}
		if num == live {
			continue
		}
		live = num // the first write to a new log
		name := fmt.Sprintf("%06d.log", num)
		data, err := os.ReadFile(filepath.Join(src, name))
		must(t, err)
		if end := scanWAL(data, num).end; len(data) <= end {
			continue // a log created afresh, or already written past the old one's length
		}
		// A recycled log the new one has not filled yet: crash here.
		crashes++
		dst := filepath.Join(base, fmt.Sprintf("crash-%d", crashes))
		crashCopy(t, src, dst)
		copyDir(t, dst, dst+"-src") // as crashed, for the cases below
		c, err := Open(dst, nil)
		if err != nil {
			t.Fatalf("after write %d (live WAL %s, %d bytes long): a crash leaves a store that does not open: %v", i, name, len(data), err)
		}
		got, err := c.GetDoc(ctx, "c", key)
		if err != nil || !bytes.Equal(got, val) {
			t.Errorf("after write %d: the crashed store lost the last acknowledged write: %v", i, err)
		}
		must(t, c.Close())

		// The same crash under a build before stop 36, whose mark
		// recorded the recycled file's length, opens too.
		legacy := filepath.Join(base, fmt.Sprintf("legacy-%d", crashes))
		copyDir(t, dst+"-src", legacy)
		putMark(t, legacy, num, int64(len(data)))
		c, err = Open(legacy, nil)
		if err != nil {
			t.Fatalf("after write %d: a crash with a mark of the file's length leaves a store that does not open: %v", i, err)
		}
		if got, err := c.GetDoc(ctx, "c", key); err != nil || !bytes.Equal(got, val) {
			t.Errorf("after write %d: the legacy crashed store lost the last acknowledged write: %v", i, err)
		}
		must(t, c.Close())

		// But a tail that is no earlier log's records is refused.
		zeroed := filepath.Join(base, fmt.Sprintf("zeroed-%d", crashes))
		copyDir(t, dst+"-src", zeroed)
		putMark(t, zeroed, num, int64(len(data)))
		end := scanWAL(data, num).end
		from := (end + walBlockSize - 1) / walBlockSize * walBlockSize
		tail := append(append([]byte(nil), data[:from]...), make([]byte, len(data)-from)...)
		must(t, os.WriteFile(filepath.Join(zeroed, name), tail, 0o644))
		if _, err := Open(zeroed, nil); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("after write %d: a mark past the log's records over zeroed bytes: %v, want ErrCorrupt", i, err)
		}
		// Nor one whose first block starts with the header of an
		// earlier log's chunk that does not check out.
		copy(tail[from:], []byte{0xaa, 0xaa, 0xaa, 0xaa, 16, 0, 5, 1, 0, 0, 0})
		must(t, os.WriteFile(filepath.Join(zeroed, name), tail, 0o644))
		putMark(t, zeroed, num, int64(len(data)))
		if _, err := Open(zeroed, nil); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("after write %d: a mark past the log's records over a forged chunk header: %v, want ErrCorrupt", i, err)
		}
	}
	if crashes == 0 {
		t.Fatal("no WAL was recycled: the test did not reach the case it is for")
	}
}

// putMark writes dir's WAL mark as walMark.update does: log num, size
// bytes committed.
func putMark(t *testing.T, dir string, num uint32, size int64) {
	t.Helper()
	var b [markSize]byte
	binary.BigEndian.PutUint32(b[0:], markMagic)
	binary.BigEndian.PutUint32(b[4:], num)
	binary.BigEndian.PutUint64(b[8:], uint64(size))
	binary.BigEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	must(t, os.WriteFile(filepath.Join(dir, markFile), b[:], 0o644))
	if n, got, ok := readMark(dir); !ok || n != num || got != size {
		t.Fatalf("putMark: read back %d, %d, %v", n, got, ok)
	}
}

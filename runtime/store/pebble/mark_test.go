package pebble

import (
	"bytes"
	"context"
	"fmt"
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
	val := bytes.Repeat([]byte("x"), 4000)
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
		copyDir(t, src, dst)
		c, err := Open(dst, nil)
		if err != nil {
			t.Fatalf("after write %d (live WAL %s, %d bytes long): a crash leaves a store that does not open: %v", i, name, len(data), err)
		}
		got, err := c.GetDoc(ctx, "c", key)
		if err != nil || !bytes.Equal(got, val) {
			t.Errorf("after write %d: the crashed store lost the last acknowledged write: %v", i, err)
		}
		must(t, c.Close())
	}
	if crashes == 0 {
		t.Fatal("no WAL was recycled: the test did not reach the case it is for")
	}
}

package recall

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

type countingStore struct {
	*memory.Store
	bytes, ops int
}

func (c *countingStore) ApplyDocs(ctx context.Context, ops ...store.DocOp) error {
	for _, o := range ops {
		c.bytes += len(o.Value) + len(o.Key)
		c.ops++
	}
	return c.Store.ApplyDocs(ctx, ops...)
}

// TestIncrementalWriteAmplification indexes a session the way a live one
// is, a catch-up after every run of a few events (one a ~12 KB tool
// result), and bounds what the index writes against the ledger's bytes:
// every catch-up rewrites the tails of the buckets it touches, so a tail's
// seal size bounds the amplification (over these 60 runs 16 KiB tails
// wrote 4.1× the ledger, 2 KiB ones 2.8×; over 300 runs 15× and 3.9×).
func TestIncrementalWriteAmplification(t *testing.T) {
	st := &countingStore{Store: memory.New()}
	l := newLedger(t, st)
	x := NewIndex(st, nil)
	k := key("ana", "amp")
	ctx := context.Background()
	in := 0
	for run := range 60 {
		var evs []ev
		for i := range 10 {
			evs = append(evs, user(fmt.Sprintf("About host-%d: the deploy of build %d on node-%04d went fine %s", run, i, run*7+i, strings.Repeat("word ", 20))))
			if i%3 == 0 {
				evs = append(evs, toolRes(fmt.Sprintf("c%d_%d", run, i), "inventory", bigResult(fmt.Sprintf("asset AT-%05d", run*13+i), 12<<10)))
			}
		}
		l.add(k, evs...)
		if _, err := x.CatchUp(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := st.ListEvents(ctx, k, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		in += len(e.Data)
	}
	ratio := float64(st.bytes) / float64(in)
	t.Logf("%d events, %.1f MB of ledger, 60 catch-ups: %d writes, %.1f MB (%.1f×)", len(entries), float64(in)/1e6, st.ops, float64(st.bytes)/1e6, ratio)
	if ratio > 3.5 {
		t.Errorf("the index wrote %.1f× the ledger's bytes", ratio)
	}
}

package runtime

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

// TestDocCache: entries survive the cache value (a second docCache over
// the same store hits), expire by the clock (and are then deleted), and a
// damaged entry is a miss, dropped.
func TestDocCache(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := &testClock{}
	c := &docCache{st: st, clock: clock, log: slog.New(slog.DiscardHandler)}
	forever, soon, bad := [32]byte{1}, [32]byte{2}, [32]byte{3}
	c.Put(ctx, forever, vm.CacheEntry{Value: types.MakeString("kept")})
	c.Put(ctx, soon, vm.CacheEntry{Value: types.MakeInt(7), Expires: clockBase.Add(time.Millisecond)})
	again := &docCache{st: st, clock: clock, log: c.log}
	if e, ok := again.Get(ctx, forever); !ok || e.Value.Str() != "kept" || !e.Expires.IsZero() {
		t.Fatalf("Get(forever) = %+v %v", e, ok)
	}
	if e, ok := again.Get(ctx, soon); !ok || e.Value.Int() != 7 || !e.Expires.Equal(clockBase.Add(time.Millisecond)) {
		t.Fatalf("Get(soon) = %+v %v", e, ok)
	}
	clock.n.Store(int64(time.Millisecond / time.Microsecond))
	if _, ok := again.Get(ctx, soon); ok {
		t.Fatal("an expired entry hit")
	}
	if _, err := st.GetDoc(ctx, cacheColl, hexKey(soon)); !isNotFound(err) {
		t.Errorf("the expired entry is still stored: %v", err)
	}
	if err := st.ApplyDocs(ctx, store.DocOp{Coll: cacheColl, Key: hexKey(bad), Value: []byte{0xff}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get(ctx, bad); ok {
		t.Fatal("a damaged entry hit")
	}
	if _, err := st.GetDoc(ctx, cacheColl, hexKey(bad)); !isNotFound(err) {
		t.Errorf("the damaged entry is still stored: %v", err)
	}
}

func hexKey(k [32]byte) string { return hex.EncodeToString(k[:]) }

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

package runtime

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// cacheColl is the store collection of the node cache (spec/vm.md,
// "Policies": cache): one document per entry, keyed by the hex of the VM's
// cache key — SHA-256 of the program hash, node path, callee and canonical
// arguments — so an entry is never shared between programs.
const cacheColl = "runtime.cache"

// docCache is the durable node cache: `cache ttl …` entries kept in the
// store's documents, so that a later process (a second agentc run, a
// restarted server) does not call a cached tool again within its TTL. An
// entry is the canonical encoding of list(value, expiry in Unix
// nanoseconds, 0 for none). A store error is a miss (Get) or a lost entry
// (Put), logged: caching never fails a run. An expired entry is deleted
// when it is read.
type docCache struct {
	st    store.Docs
	clock vm.Clock
	log   *slog.Logger
}

// Get implements vm.Cache.
func (c *docCache) Get(ctx context.Context, key [32]byte) (vm.CacheEntry, bool) {
	k := hex.EncodeToString(key[:])
	b, err := c.st.GetDoc(ctx, cacheColl, k)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("runtime: node cache unreadable; calling", "err", err)
		}
		return vm.CacheEntry{}, false
	}
	v, n, err := types.DecodeValue(b)
	if err != nil || n != len(b) || v.Kind() != types.ValList || v.Len() != 2 || v.Elem(1).Kind() != types.ValInt {
		c.log.Warn("runtime: damaged node cache entry dropped", "key", k)
		_ = c.st.ApplyDocs(context.WithoutCancel(ctx), store.DocOp{Coll: cacheColl, Key: k, Delete: true})
		return vm.CacheEntry{}, false
	}
	e := vm.CacheEntry{Value: v.Elem(0)}
	if ns := v.Elem(1).Int(); ns != 0 {
		e.Expires = time.Unix(0, ns)
		if !c.clock.Now().Before(e.Expires) {
			_ = c.st.ApplyDocs(context.WithoutCancel(ctx), store.DocOp{Coll: cacheColl, Key: k, Delete: true})
			return vm.CacheEntry{}, false
		}
	}
	return e, true
}

// Put implements vm.Cache.
func (c *docCache) Put(ctx context.Context, key [32]byte, e vm.CacheEntry) {
	var ns int64
	if !e.Expires.IsZero() {
		ns = e.Expires.UnixNano()
	}
	b, err := types.AppendValue(nil, types.MakeList([]types.Value{e.Value, types.MakeInt(ns)}))
	if err == nil {
		err = c.st.ApplyDocs(context.WithoutCancel(ctx), store.DocOp{Coll: cacheColl, Key: hex.EncodeToString(key[:]), Value: b})
	}
	if err != nil {
		c.log.Warn("runtime: node cache entry not kept", "err", err)
	}
}

package pebble

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// TestGroupCommitPolicy: a sync is delayed only past commitSiblings synced
// commits in progress.
func TestGroupCommitPolicy(t *testing.T) {
	var g groupCommit
	for n := int32(0); n <= commitSiblings+2; n++ {
		g.committing.Store(n)
		want := commitDelay
		if n <= commitSiblings {
			want = 0
		}
		if got := g.minSyncInterval(); got != want {
			t.Errorf("%d commits in progress: interval %v, want %v", n, got, want)
		}
	}
}

// TestGroupCommitCount: a synced commit is counted while it is in progress
// and no longer once it returned, with many at once.
func TestGroupCommitCount(t *testing.T) {
	s := mustOpen(t, t.TempDir())
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				must(t, s.ApplyDocs(context.Background(), store.DocOp{Coll: "c", Key: fmt.Sprintf("w%d-%d", w, i), Value: []byte("v")}))
			}
		})
	}
	wg.Wait()
	if n := s.group.committing.Load(); n != 0 {
		t.Fatalf("%d commits counted in progress after all returned", n)
	}
}

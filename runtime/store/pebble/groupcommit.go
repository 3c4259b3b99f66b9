package pebble

import (
	"sync/atomic"
	"time"
)

// groupCommit delays a WAL sync while other synced commits are in
// progress, so that more of them share it (spec/storage.md, "Group
// commit"), as PostgreSQL's commit_delay does when commit_siblings
// transactions are active. A lone committer's sync is never delayed.
type groupCommit struct {
	committing atomic.Int32 // synced commits in progress (Store.apply)
}

// Past commitSiblings synced commits in progress, the WAL's next sync
// waits until commitDelay has passed since the last one ended.
const (
	commitSiblings = 4
	commitDelay    = 100 * time.Microsecond
)

// minSyncInterval is Pebble's WALMinSyncInterval, asked after every sync.
func (g *groupCommit) minSyncInterval() time.Duration {
	if g.committing.Load() > commitSiblings {
		return commitDelay
	}
	return 0
}

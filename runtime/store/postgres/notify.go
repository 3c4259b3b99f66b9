package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentc/agentc/runtime/store"
)

// Wake-ups between processes sharing a store: PostgreSQL's LISTEN/NOTIFY,
// namespaced by the store's schema so that stores sharing a database do not
// hear one another. A notification carries a short payload (under 8000
// bytes) and is delivered to every listener connected when it is sent, at
// most once, and not at all to one that is not connected: a listener reads
// the state it waits on after Listen returns and after every reconnection,
// and treats a notification as a hint to read again.

// channelName is the PostgreSQL channel of name in s's schema:
// "agentc.<schema>.<name>", or "agentc.<hash>" when that is longer than the
// 63 bytes PostgreSQL keeps of a channel's name.
func (s *Store) channelName(name string) string {
	ch := "agentc." + s.schema + "." + name
	if len(ch) <= 63 {
		return ch
	}
	sum := sha256.Sum256([]byte(s.schema + "\x00" + name))
	return "agentc." + hex.EncodeToString(sum[:16])
}

// noticeSQL sends a notification ($1 the channel, $2 the payload).
const noticeSQL = `SELECT pg_notify($1, $2)`

// Commit notices (store.CommitNotice on store.RunsChannel) are sent after
// the commit they announce, by a goroutine of the Store, never inside the
// commit's transaction: PostgreSQL queues a transaction's notifications at
// its commit under one lock per database, held through the commit's WAL
// flush, so committing transactions that notify take turns and lose group
// commit (measured: eight concurrent committers went from 0.7 ms to
// 2–3 ms per commit, the single committer's figure). A transaction that
// only notifies writes no WAL and is not flushed: the announcer's cost is
// one short statement per noticeWindow at most, off the commit's path,
// for all the commits of that window.

// announcer sends the commit notices of a Store.
type announcer struct {
	mu      sync.Mutex
	pending []string            // payloads not sent yet, in commit order
	queued  map[string]struct{} // the set of pending
	closed  bool

	wake chan struct{} // capacity 1: pending is not empty
	stop context.CancelFunc
	done chan struct{}
}

// maxPending bounds the notices waiting to be sent; beyond it they
// collapse into one notice of a commit of any run.
const maxPending = 4096

// noticeWindow is how long the announcer gathers notices before it sends
// them: at most one statement per window, whatever the commit rate (a
// notice per commit cost a fifth of a commit on a loaded machine); a
// follower hears of a commit that much later.
const noticeWindow = 10 * time.Millisecond

// noticeTimeout bounds one send of notices.
const noticeTimeout = 5 * time.Second

// startAnnouncer starts s's announcer; Close stops it.
func (s *Store) startAnnouncer() {
	a := &announcer{queued: map[string]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	var ctx context.Context
	ctx, a.stop = context.WithCancel(context.Background())
	s.ann = a
	go func() { // owned by the Store: Close cancels ctx and waits for done
		defer close(a.done)
		ch := s.channelName(store.RunsChannel)
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.wake:
			}
			// The commits of the next moments go out with this one.
			t := time.NewTimer(noticeWindow)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			a.mu.Lock()
			batch := a.pending
			a.pending, a.queued = nil, map[string]struct{}{}
			a.mu.Unlock()
			if len(batch) == 0 {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, noticeTimeout)
			// Lost notices only delay followers: each also reads on a
			// timer (spec/storage.md, "Wake-ups").
			_, _ = s.pool.Exec(sctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, ch, batch)
			cancel()
		}
	}()
}

// announce queues the notice of a commit of run.
func (s *Store) announce(run string) {
	a := s.ann
	p := store.CommitNotice(run)
	a.mu.Lock()
	if _, ok := a.queued[p]; !ok && !a.closed {
		if len(a.pending) >= maxPending {
			p = store.CommitNotice("")
			a.pending, a.queued = a.pending[:0], map[string]struct{}{}
		}
		a.pending = append(a.pending, p)
		a.queued[p] = struct{}{}
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// close stops the announcer (the notices not sent yet are dropped) and
// waits for it.
func (a *announcer) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.stop()
	<-a.done
}

// Notify sends payload to the listeners of channel name. Sent outside a
// transaction, it is delivered at once.
func (s *Store) Notify(ctx context.Context, name, payload string) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		if _, err := s.pool.Exec(ctx, noticeSQL, s.channelName(name), payload); err != nil {
			return fmt.Errorf("notify %s: %w", name, err)
		}
		return nil
	})
}

// Listener receives the notifications of one channel on a connection of its
// own (outside the pool). It is not safe for concurrent use.
type Listener struct {
	conn *pgx.Conn
	name string
}

// Listen subscribes to channel name; notifications sent after it returns
// are delivered to the Listener. Close it when done.
func (s *Store) Listen(ctx context.Context, name string) (*Listener, error) {
	return store.Op(ctx, &s.gate, nil, func() (*Listener, error) {
		conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", name, err)
		}
		if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channelName(name)}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return nil, fmt.Errorf("listen %s: %w", name, err)
		}
		return &Listener{conn: conn, name: name}, nil
	})
}

// Wait blocks until a notification arrives or ctx is done, and returns its
// payload. After an error other than ctx's the connection is lost: Close
// the Listener, Listen again and re-read the state waited on.
func (l *Listener) Wait(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("wait for %s: %w", l.name, err)
	}
	return n.Payload, nil
}

// Close ends the subscription and its connection.
func (l *Listener) Close() error {
	return l.conn.Close(context.Background())
}

package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

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

// Notify sends payload to the listeners of channel name. Sent outside a
// transaction, it is delivered at once.
func (s *Store) Notify(ctx context.Context, name, payload string) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channelName(name), payload); err != nil {
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

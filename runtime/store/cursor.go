package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
)

// Listing pages: ListRuns walks the run index and ListSessions the session
// records, each in key order. A page's cursor is the base64url of the last
// key it returned, so it is the same on every backend.

// RunIndexKey is the key of run's entry in the run index: runs sort by (app,
// user, session, run id), and ListRuns pages in that order.
func RunIndexKey(r Run) Key {
	return SessionRecordKey(KindRunIndex, r.Session).Str(r.ID)
}

// SessionRecordKey is the key of kind that names session k: (app, user,
// session) under kind. KindSession's is the key ListSessions pages by.
func SessionRecordKey(kind Kind, k SessionKey) Key {
	return NewKey(kind).Str(k.App).Str(k.User).Str(k.Session)
}

// tuplePrefix is kind's prefix narrowed by parts up to the first empty one.
func tuplePrefix(kind Kind, parts ...string) Key {
	k := NewKey(kind)
	for _, p := range parts {
		if p == "" {
			break
		}
		k = k.Str(p)
	}
	return k
}

// RunIndexPrefix is the prefix of the run index entries f selects.
func RunIndexPrefix(f RunFilter) Key { return tuplePrefix(KindRunIndex, f.App, f.User, f.Session) }

// SessionPrefix is the prefix of the session records f selects.
func SessionPrefix(f SessionFilter) Key { return tuplePrefix(KindSession, f.App, f.User) }

// RunCursor is the cursor of the page that starts after r.
func RunCursor(r Run) string { return cursorOf(RunIndexKey(r)) }

// SessionCursor is the cursor of the page that starts after the session k.
func SessionCursor(k SessionKey) string { return cursorOf(SessionRecordKey(KindSession, k)) }

func cursorOf(k Key) string { return base64.RawURLEncoding.EncodeToString(k) }

// parseCursor returns the key cursor names (nil for ""). A cursor that is
// not a key of kind under prefix is ErrInvalid.
func parseCursor(cursor string, kind Kind, prefix Key) ([]byte, error) {
	if cursor == "" {
		return nil, nil
	}
	k, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		var got Kind
		got, _, err = DecodeKey(k)
		if err == nil && (got != kind || !bytes.HasPrefix(k, prefix)) {
			err = fmt.Errorf("outside the filter")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s cursor %q: %v: %w", kind, cursor, err, ErrInvalid)
	}
	return k, nil
}

// ListStart validates f for ListRuns and returns the run index key its page
// starts after (Newest: before; nil: from the first run f selects).
func (f RunFilter) ListStart() ([]byte, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	after, err := parseCursor(f.Cursor, KindRunIndex, RunIndexPrefix(f))
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return after, nil
}

// ListStart validates f for ListSessions and returns the session key its
// page starts after (nil: from the first session f selects).
func (f SessionFilter) ListStart() ([]byte, error) {
	if f.User != "" && f.App == "" {
		return nil, fmt.Errorf("list sessions: user %q without an app: %w", f.User, ErrInvalid)
	}
	after, err := parseCursor(f.Cursor, KindSession, SessionPrefix(f))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return after, nil
}

// Selects reports whether f's status filter lets r through.
func (f RunFilter) Selects(r Run) bool { return f.Status == "" || r.Status == f.Status }

// Page cuts runs, the runs f selects after its cursor in index order, to f's
// page and returns the cursor of the next page ("" when runs fit in it). A
// backend reads at most f.Limit+1 runs: the one past the page says another
// page exists.
func (f RunFilter) Page(runs []Run) (page []Run, next string) { return cut(runs, f.Limit, RunCursor) }

// Page is RunFilter.Page for sessions.
func (f SessionFilter) Page(ss []Session) (page []Session, next string) {
	return cut(ss, f.Limit, func(s Session) string { return SessionCursor(s.Key) })
}

func cut[T any](items []T, limit int, cursor func(T) string) ([]T, string) {
	if limit > 0 && len(items) > limit {
		items = items[:limit]
		return items, cursor(items[len(items)-1])
	}
	return items, ""
}

// pageFilter is a listing's filter: RunFilter or SessionFilter.
type pageFilter[T any] interface {
	ListStart() ([]byte, error)
	Page([]T) ([]T, string)
	pageLimit() int
}

func (f RunFilter) pageLimit() int     { return f.Limit }
func (f SessionFilter) pageLimit() int { return f.Limit }

// List runs one page of a listing as one operation (enter starts it: a
// Gate's Enter, or a backend's lock): it checks f, calls
// read with the key the page starts after (nil: from the first) and the
// number of matches to read (f's limit plus the one that tells whether a
// next page exists; 0: all), and cuts what read found to the page. what
// names the listing in errors ("list runs").
func List[T any, F pageFilter[T]](ctx context.Context, enter func(context.Context) (func(), error), what string, f F, read func(after []byte, max int) ([]T, error)) ([]T, string, error) {
	after, err := f.ListStart()
	if err != nil {
		return nil, "", err
	}
	max := 0
	if f.pageLimit() > 0 {
		max = f.pageLimit() + 1
	}
	exit, err := enter(ctx)
	if err != nil {
		return nil, "", err
	}
	defer exit()
	items, err := read(after, max)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", what, err)
	}
	page, next := f.Page(items)
	return page, next, nil
}

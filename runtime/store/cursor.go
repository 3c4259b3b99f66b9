package store

import (
	"bytes"
	"encoding/base64"
	"fmt"
)

// RunIndexKey is the key of run's entry in the run index: runs sort by (app,
// user, session, run id), and ListRuns pages in that order.
func RunIndexKey(r Run) Key {
	return NewKey(KindRunIndex).Str(r.Session.App).Str(r.Session.User).Str(r.Session.Session).Str(r.ID)
}

// RunIndexPrefix is the prefix of the run index entries f selects.
func RunIndexPrefix(f RunFilter) Key {
	k := NewKey(KindRunIndex)
	if f.App == "" {
		return k
	}
	k = k.Str(f.App)
	if f.User == "" {
		return k
	}
	k = k.Str(f.User)
	if f.Session == "" {
		return k
	}
	return k.Str(f.Session)
}

// RunCursor is the cursor of the page that starts after r. Every backend
// makes the same cursors, so a cursor stays valid across backends.
func RunCursor(r Run) string {
	return base64.RawURLEncoding.EncodeToString(RunIndexKey(r))
}

// ParseRunCursor returns the run index key f.Cursor names (nil for ""). A
// cursor that is not one, or that lies outside what f selects, is ErrInvalid.
func ParseRunCursor(f RunFilter) ([]byte, error) {
	if f.Cursor == "" {
		return nil, nil
	}
	k, err := base64.RawURLEncoding.DecodeString(f.Cursor)
	if err == nil {
		var kind Kind
		kind, _, err = DecodeKey(k)
		if err == nil && (kind != KindRunIndex || !bytes.HasPrefix(k, RunIndexPrefix(f))) {
			err = fmt.Errorf("outside the filter")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run cursor %q: %v: %w", f.Cursor, err, ErrInvalid)
	}
	return k, nil
}

// ListStart validates f for ListRuns and returns the run index key its page
// starts after (nil: from the first run f selects).
func (f RunFilter) ListStart() ([]byte, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	after, err := ParseRunCursor(f)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return after, nil
}

// Selects reports whether f's status filter lets r through.
func (f RunFilter) Selects(r Run) bool { return f.Status == "" || r.Status == f.Status }

// Page cuts runs, the runs f selects after its cursor in index order, to f's
// page and returns the cursor of the next page ("" when runs fit in it). A
// backend reads at most f.Limit+1 runs: the one past the page says another
// page exists.
func (f RunFilter) Page(runs []Run) (page []Run, next string) {
	if f.Limit > 0 && len(runs) > f.Limit {
		runs = runs[:f.Limit]
		next = RunCursor(runs[len(runs)-1])
	}
	return runs, next
}

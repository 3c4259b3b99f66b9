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

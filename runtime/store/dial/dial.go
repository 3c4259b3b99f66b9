// Package dial opens the store a command or a server names: a PostgreSQL
// URL (postgres:// or postgresql://) or, for anything without a scheme, the
// embedded Pebble store in that directory (spec/storage.md, "Selecting a
// store").
package dial

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/runtime/store/postgres"
)

// Kind is the backend a target names.
type Kind string

// The backends.
const (
	Pebble   Kind = "pebble"
	Postgres Kind = "postgres"
)

// Parse tells which backend target names. A target with a URL scheme other
// than postgres:// or postgresql:// is refused rather than taken for a
// directory called "mysql:" or the like.
func Parse(target string) (Kind, error) {
	if target == "" {
		return "", fmt.Errorf("store: no store given")
	}
	scheme, _, ok := strings.Cut(target, "://")
	if !ok {
		return Pebble, nil
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return Postgres, nil
	}
	return "", fmt.Errorf("store: %q is not a store this build knows: give a directory (Pebble) or a postgres:// URL", scheme+"://…")
}

// Open opens target: a PostgreSQL store (its schema created or migrated) or
// a Pebble directory.
func Open(ctx context.Context, target string) (store.Store, error) {
	kind, err := Parse(target)
	if err != nil {
		return nil, err
	}
	if kind == Postgres {
		st, err := postgres.Open(ctx, target, nil)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := pebble.Open(target, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Display is target as it may be printed: a URL's password shown as
// "xxxxx" (url.URL.Redacted); a directory unchanged. A URL that does not
// parse is shown by its scheme alone, since where its password ends is not
// known.
func Display(target string) string {
	scheme, _, ok := strings.Cut(target, "://")
	if !ok {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return scheme + "://…"
	}
	return u.Redacted()
}

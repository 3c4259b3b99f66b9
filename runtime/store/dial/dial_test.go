package dial_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   dial.Kind
		bad    bool
	}{
		{target: ".agentc", want: dial.Pebble},
		{target: "/var/lib/agentc", want: dial.Pebble},
		{target: "postgres://u@127.0.0.1:5432/db", want: dial.Postgres},
		{target: "PostgreSQL://u@127.0.0.1/db?sslmode=disable", want: dial.Postgres},
		{target: "mysql://u@127.0.0.1/db", bad: true},
		{target: "", bad: true},
	} {
		got, err := dial.Parse(tc.target)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("Parse(%q) = %q, %v", tc.target, got, err)
		}
	}
}

// TestOpen opens a Pebble directory and, where the test server is given, a
// PostgreSQL URL, and writes and reads a session through each.
func TestOpen(t *testing.T) {
	targets := []string{filepath.Join(t.TempDir(), "data"), pgtest.WithSchema(t, pgtest.URL(t))}
	ctx := context.Background()
	for _, target := range targets {
		st, err := dial.Open(ctx, target)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		key := store.SessionKey{App: "dial", User: "u", Session: t.Name()}
		if _, _, err := st.GetOrCreateSession(ctx, key, time.Unix(1700000000, 0)); err != nil {
			t.Errorf("%s: session: %v", target, err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	if _, err := dial.Open(ctx, "postgres://%zz"); err == nil {
		t.Error("a malformed URL opened")
	}
}

// TestDisplay: a URL's password never reaches a printed target.
func TestDisplay(t *testing.T) {
	for target, want := range map[string]string{
		".agentc":                   ".agentc",
		"postgres://u@127.0.0.1/db": "postgres://u@127.0.0.1/db",
		"postgres://u:s3cret@127.0.0.1:5432/db?x=1": "postgres://u:xxxxx@127.0.0.1:5432/db?x=1",
		"postgres://u:s3cret@[::1/db":               "postgres://…",
		"mysql://u:s3cret@h/db":                     "mysql://u:xxxxx@h/db",
	} {
		if got := dial.Display(target); got != want {
			t.Errorf("Display(%q) = %q, want %q", target, got, want)
		}
	}
}

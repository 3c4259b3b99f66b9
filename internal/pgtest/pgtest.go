// Package pgtest gives tests the PostgreSQL server test/all.sh starts: its
// URL (AGENTC_TEST_POSTGRES) and throwaway schemas in it. In CI a missing
// server fails the test; elsewhere it skips, naming the variable.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env is the variable naming the test server.
const Env = "AGENTC_TEST_POSTGRES"

// URL returns the test server's URL, from AGENTC_TEST_POSTGRES.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(Env + " is not set: CI must provide a PostgreSQL server (test/all.sh starts one)")
		}
		t.Skip(Env + " is not set (a postgres:// URL); test/all.sh starts a throwaway server and sets it")
	}
	return u
}

// FreshSchema returns the name of a schema that does not exist yet in the
// server at url, and drops it, with everything in it, when the test ends.
// The name is mixed-case, so that code which forgets to quote it fails.
func FreshSchema(t testing.TB, url string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "agentc_Test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// WithSchema is the server URL with its schema= parameter set to a fresh
// schema (FreshSchema): a store target of its own for one test.
func WithSchema(t testing.TB, server string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	q := u.Query()
	q.Set("schema", FreshSchema(t, server))
	u.RawQuery = q.Encode()
	return u.String()
}

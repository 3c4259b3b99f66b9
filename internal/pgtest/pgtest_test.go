package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestWithSchema: the schema a test gets is new, named in the URL, and gone
// after the test.
func TestWithSchema(t *testing.T) {
	server := URL(t)
	var target, schema string
	t.Run("use", func(t *testing.T) {
		target = WithSchema(t, server)
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		if schema = u.Query().Get("schema"); schema == "" || schema == WithSchema(t, server) {
			t.Fatalf("schema %q in %s", schema, target)
		}
		if n := schemas(t, server, schema); n != 0 {
			t.Fatalf("schema %s exists before use", schema)
		}
		conn, err := pgx.Connect(context.Background(), server)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	})
	if n := schemas(t, server, schema); n != 0 {
		t.Fatalf("schema %s outlived its test", schema)
	}
}

func schemas(t *testing.T, server, name string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/pgtest"
)

// TestStoreSelection runs the real binary on a PostgreSQL store chosen by
// --store, AGENTC_STORE and store: in agentc.yaml in turn (spec/storage.md,
// "Selecting a store"): each sees the runs of the others, no Pebble
// directory appears, a password never reaches the output, and store
// check/repair refuse a PostgreSQL target.
func TestStoreSelection(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "slow.agent"), []byte(slowSource), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) result {
		t.Helper()
		r := runAgentc(t, root, env, args...)
		if r.code != 0 {
			t.Fatalf("agentc %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	run(cleanEnv(), "run", "slow.agent", "--input", "go", "--session", "by-flag", "--store", target)
	run(cleanEnv("AGENTC_STORE="+target), "run", "slow.agent", "--input", "go", "--session", "by-env")
	if err := os.WriteFile(filepath.Join(root, "agentc.yaml"), []byte("store: "+target+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(cleanEnv(), "run", "slow.agent", "--input", "go", "--session", "by-yaml")
	r := run(cleanEnv(), "sessions", "list", "--app", "slow", "--user", "cli")
	for _, s := range []string{"by-flag", "by-env", "by-yaml"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("sessions list does not show %s:\n%s", s, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".agentc")); !os.IsNotExist(err) {
		t.Errorf("a Pebble directory was made beside a PostgreSQL store (%v)", err)
	}

	// A flag over agentc.yaml: an empty Pebble store has no sessions.
	r = run(cleanEnv(), "sessions", "list", "--app", "slow", "--user", "cli", "--store", filepath.Join(root, "pebble"))
	if strings.Contains(r.stdout, "by-flag") {
		t.Errorf("--store did not win over agentc.yaml:\n%s", r.stdout)
	}

	for _, sub := range []string{"check", "repair"} {
		r = runAgentc(t, root, cleanEnv(), "store", sub)
		if r.code != 2 || !strings.Contains(r.stderr, "Pebble directory") {
			t.Errorf("store %s on PostgreSQL: exit %d\n%s", sub, r.code, r.stderr)
		}
	}
	r = runAgentc(t, root, cleanEnv(), "sessions", "list", "--app", "slow", "--store", "mysql://u:hunter2@127.0.0.1/db")
	if r.code != 2 || !strings.Contains(r.stderr, "--store") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("an unknown scheme: exit %d\n%s", r.code, r.stderr)
	}
}

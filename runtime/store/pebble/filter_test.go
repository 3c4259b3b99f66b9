package pebble

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// TestTablesHaveFilters: every table a store writes, L0's included, has
// the Bloom filter engineOptions sets, and the store checks clean.
func TestTablesHaveFilters(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 50 {
		k := store.SessionKey{App: "a", User: "u", Session: fmt.Sprint("s", i)}
		if _, _, err := s.GetOrCreateSession(ctx, k, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for l, ts := range levels {
		for _, ti := range ts {
			tables++
			if ti.Properties == nil || ti.Properties.FilterPolicyName != "rocksdb.BuiltinBloomFilter" {
				t.Errorf("a table of L%d has no Bloom filter (properties %+v)", l, ti.Properties)
			}
		}
	}
	if tables == 0 {
		t.Fatal("the flush wrote no table")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, dir)
	if err != nil || !r.OK() {
		t.Fatalf("check: %v, %+v", err, r)
	}
}

// TestCheckAcceptsUnfilteredOptions: the OPTIONS file of a store an older
// agentc wrote (no filters) checks clean; a damaged filter_policy does not.
func TestCheckAcceptsUnfilteredOptions(t *testing.T) {
	cur := []byte(engineOptionsText())
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"rocksdb.BuiltinBloomFilter", true}, {"none", true}, {"rocksdb.BuiltinBloomFiltex", false}} {
		dir := t.TempDir()
		b := bytes.ReplaceAll(cur, []byte("filter_policy=rocksdb.BuiltinBloomFilter"), []byte("filter_policy="+tc.value))
		if !bytes.Contains(cur, []byte("filter_policy=rocksdb.BuiltinBloomFilter")) {
			t.Fatalf("the options name no Bloom filter:\n%s", cur)
		}
		if err := os.WriteFile(filepath.Join(dir, "OPTIONS-000001"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := &Report{}
		checkOptions(dir, "OPTIONS-000001", r)
		if r.OK() != tc.ok {
			t.Errorf("filter_policy=%s: check ok %v, want %v (%+v)", tc.value, r.OK(), tc.ok, r.Problems)
		}
	}
}

func engineOptionsText() string {
	po := engineOptions()
	po.EnsureDefaults()
	return po.String()
}

package pebble

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

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

// TestCheckAcceptsEarlierOptions: the OPTIONS file of a store an earlier
// agentc wrote (no filters; Pebble's default memtables and table sizes)
// checks clean; a damaged value of the same keys does not.
func TestCheckAcceptsEarlierOptions(t *testing.T) {
	text := func(po *pebble.Options) string {
		po.EnsureDefaults()
		return po.String()
	}
	unfiltered := text(&pebble.Options{FormatMajorVersion: formatVersion})
	filtered := &pebble.Options{FormatMajorVersion: formatVersion}
	for i := range filtered.Levels {
		filtered.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	cur := engineOptionsText()
	for _, want := range []string{"filter_policy=rocksdb.BuiltinBloomFilter", "mem_table_size=16777216", "flush_split_bytes=524288", "target_file_size=262144"} {
		if !strings.Contains(cur, want) {
			t.Fatalf("the options do not hold %s:\n%s", want, cur)
		}
	}
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"this build's", cur, true},
		{"without filters", unfiltered, true},
		{"with filters, Pebble's default shape", text(filtered), true},
		{"another machine's bound on open files", regexp.MustCompile(`max_open_files=\d+`).ReplaceAllString(cur, "max_open_files=777"), true},
		{"a damaged filter", strings.ReplaceAll(cur, "filter_policy=rocksdb.BuiltinBloomFilter", "filter_policy=rocksdb.BuiltinBloomFiltex"), false},
		{"a damaged memtable size", strings.Replace(cur, "mem_table_size=16777216", "mem_table_size=16777217", 1), false},
		{"an earlier table size at the wrong level", strings.Replace(cur, "target_file_size=262144", "target_file_size=4194304", 1), false},
		{"a damaged table size", strings.Replace(unfiltered, "target_file_size=2097152", "target_file_size=2097153", 1), false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "OPTIONS-000001"), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &Report{}
		checkOptions(dir, "OPTIONS-000001", r)
		if r.OK() != tc.ok {
			t.Errorf("%s: check ok %v, want %v (%+v)", tc.name, r.OK(), tc.ok, r.Problems)
		}
	}
}

func engineOptionsText() string {
	po := engineOptions()
	po.EnsureDefaults()
	return po.String()
}

// TestMaxOpenFiles: the table cache takes half the process's open files,
// within its bounds.
func TestMaxOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int
	}{{0, 1000}, {100, 256}, {1024, 512}, {8192, 4096}, {1 << 20, 16384}} {
		if got := maxOpenFiles(tc.limit); got != tc.want {
			t.Errorf("maxOpenFiles(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
	if lim := fileLimit(); lim > 0 && engineOptions().MaxOpenFiles != maxOpenFiles(lim) {
		t.Errorf("the engine keeps %d tables open, want %d for a limit of %d files", engineOptions().MaxOpenFiles, maxOpenFiles(lim), lim)
	}
}

package pebble

import "testing"

// TestReportString: a sound store's one line, else a line per problem.
func TestReportString(t *testing.T) {
	ok := &Report{Dir: "d", WALs: 1, Tables: 2, Keys: 3, Sessions: 4, Events: 5, Runs: 6, Checkpoints: 7, Journal: 8}
	if got, want := ok.String(), "store d: ok (1 WALs, 2 tables, 3 keys: 4 sessions, 5 events, 6 runs, 7 checkpoints, 8 journal entries)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bad := &Report{Dir: "d"}
	bad.add("000001.log", "torn")
	if got, want := bad.String(), "store d: 1 problems\n  "+bad.Problems[0].String()+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

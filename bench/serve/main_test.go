package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMain lets the test binary play the benchmark's server child: parent
// re-executes its own executable with -child.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-floor") {
		if err := floorChild(); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if slices.Contains(os.Args[1:], "-child") {
		observe := "off"
		if i := slices.Index(os.Args, "-observe"); i > 0 && i+1 < len(os.Args) {
			observe = os.Args[i+1]
		}
		if err := serveChild(observe); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHarnessRuns drives every scenario with a handful of requests against
// a real server child and the transport floor, so that the harness cannot
// rot; it checks that the report covers every scenario, its baseline and
// its floor, that no request failed, that every protocol and floor row
// has a ratio, and that every row but the floors saw runs in flight.
// Times are not checked.
func TestHarnessRuns(t *testing.T) {
	names := map[string]bool{}
	for _, r := range runHarness(t, 4, 24, 4, "", "off") {
		name := strings.TrimSpace(r.Name)
		names[name] = true
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors", r.Name, r.Requests, r.Errors)
		}
		if !strings.HasPrefix(name, "baseline") && r.Ratio <= 0 {
			t.Errorf("%s: no ratio to its baseline", r.Name)
		}
		// Runs were in flight in every round but the floor's, which
		// runs none.
		if !strings.Contains(name, "floor") && r.RunsInFlight <= 0 {
			t.Errorf("%s: %.2f runs in flight", r.Name, r.RunsInFlight)
		}
		// Every response takes a write to its connection; the
		// baseline's child serves no request.
		switch {
		case strings.HasPrefix(name, "baseline") && r.Socket != 0:
			t.Errorf("%s: %.2f socket writes per request, want none", r.Name, r.Socket)
		case !strings.Contains(name, "baseline") && !strings.Contains(name, "floor") && r.Socket < 1:
			t.Errorf("%s: %.2f socket writes per request, want at least one", r.Name, r.Socket)
		}
	}
	for _, sc := range []string{"openai", "openai-stream", "agui"} {
		for _, name := range []string{sc, "baseline for " + sc, "floor for " + sc} {
			if !names[name] {
				t.Errorf("no row %q (rows %v)", name, names)
			}
		}
	}
	if names["null"] {
		t.Error("the null row ran without -only naming it")
	}
}

// The server without a protocol runs when -only names it, with its
// baseline and floor, and its requests complete their runs.
func TestHarnessRunsNull(t *testing.T) {
	names := map[string]bool{}
	for _, r := range runHarness(t, 2, 8, 2, "null", "off") {
		names[strings.TrimSpace(r.Name)] = true
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors", r.Name, r.Requests, r.Errors)
		}
	}
	for _, name := range []string{"null", "baseline for null", "floor for null"} {
		if !names[name] {
			t.Errorf("no row %q (rows %v)", name, names)
		}
	}
}

// With tracing on, the server exports every run's spans to the OTLP
// receiver benchobs starts; no request fails.
func TestHarnessRunsTraced(t *testing.T) {
	for _, r := range runHarness(t, 2, 8, 2, "openai", "traces") {
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors", r.Name, r.Requests, r.Errors)
		}
	}
}

// runHarness runs the harness against a server child and returns its
// report's rows.
func runHarness(t *testing.T, clients, requests, warmup int, only, observe string) []row {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AGENTC_BENCH_DIR", filepath.Join(dir, "store"))
	out := filepath.Join(dir, "report.json")
	if err := parent(clients, requests, warmup, only, out, "", observe); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Rows []row }
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Rows
}

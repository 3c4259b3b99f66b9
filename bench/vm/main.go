// Command vm measures the VM and the durable runtime against the issue-4
// targets, each beside a baseline measured in the same process (so that a
// loaded machine moves both), and prints a table and one JSON document.
//
//	go run ./bench/vm [-only NAME,...] [-rounds 5] [-resume-runs 30] [-cpuprofile FILE] [-json FILE]
//
// Figures (names for -only):
//
//	chain      in-memory step of a 100-node chain of set nodes; baseline: 100
//	           Go closures through a table, each copying the state
//	fanout     fan-out of 8 tool nodes + join all, per superstep; baseline: 8
//	           goroutines started and joined with a WaitGroup
//	durable    superstep of a run through the Runner, its checkpointer and the
//	           Pebble store; baseline: the commit's own batch, read back from
//	           the store's WAL and replayed byte for byte as a raw synced
//	           Pebble batch beside each commit (twin.go)
//	concurrent durable steps/s of 8 concurrent runs vs 1
//	bytes      checkpoint bytes per step, 10 KiB field + 200 messages, one
//	           200-byte message appended per step; baseline: the bytes the
//	           step changed (the appended message's canonical JSON)
//	resume     `agentc run --resume` in a new process until the first resumed
//	           node starts (p50 over N runs); baseline: `agentc version`
//	suspended  live heap per run parked at an interrupt, 10,000 runs
//
// Stores live under $AGENTC_BENCH_DIR (default: a temporary directory in
// the working directory, so that fsyncs hit the same disk as real runs).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentc/agentc/bench/internal/benchobs"
)

// figure is one measured line of the report.
type figure struct {
	Name     string  `json:"name"`
	What     string  `json:"what"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline,omitempty"`
	BaseWhat string  `json:"baseline_what,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"` // value / baseline
	Target   string  `json:"target"`
	Met      *bool   `json:"met,omitempty"`
	Note     string  `json:"note,omitempty"`
}

func met(ok bool) *bool { return &ok }

type harness struct {
	rounds     int
	resumeRuns int
	dir        string
	figures    []figure
}

func main() { os.Exit(run()) }

func run() int {
	only := flag.String("only", "", "comma-separated figures to measure (default all)")
	rounds := flag.Int("rounds", 5, "repetitions per figure; the median is reported")
	resumeRuns := flag.Int("resume-runs", 30, "resumptions timed by the resume figure")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the harness to this file")
	jsonOut := flag.String("json", "", "also write the JSON report to this file")
	observe := flag.String("observe", "off", "the Runner's instrumentation in durable, concurrent and resume: "+benchobs.Modes+" (spec/telemetry.md)")
	flag.Parse()
	obs, err := benchobs.New(context.Background(), *observe, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer obs.Close(context.Background())
	observer = obs.Observer

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/vm:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench/vm:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	root := os.Getenv("AGENTC_BENCH_DIR")
	dir, err := os.MkdirTemp(root, "agentc-bench-vm-")
	if root == "" {
		dir, err = os.MkdirTemp(".", ".agentc-bench-vm-")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/vm:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.Abs(dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/vm:", err)
		return 1
	}

	h := &harness{rounds: max(1, *rounds), resumeRuns: max(1, *resumeRuns), dir: dir}
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{"chain", h.chain},
		{"fanout", h.fanout},
		{"durable", h.durable},
		{"concurrent", h.concurrent},
		{"bytes", h.bytes},
		{"resume", h.resume},
		{"suspended", h.suspended},
	}
	want := strings.Split(*only, ",")
	ctx := context.Background()
	failed := false
	for _, s := range steps {
		if *only != "" && !slices.Contains(want, s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench/vm: %s ...\n", s.name)
		if err := s.f(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "bench/vm: %s: %v\n", s.name, err)
			failed = true
		}
	}
	os.RemoveAll(dir) // before printing: a reader that stops early must not leave it behind
	h.print()
	b, _ := json.MarshalIndent(map[string]any{"observe": *observe, "figures": h.figures}, "", "  ")
	fmt.Printf("\n%s\n", b)
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench/vm:", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

func (h *harness) add(f figure) {
	if f.Baseline > 0 {
		f.Ratio = f.Value / f.Baseline
	}
	h.figures = append(h.figures, f)
}

func (h *harness) print() {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tvalue\tbaseline\tratio\ttarget\tmet")
	for _, f := range h.figures {
		base, ratio, ok := "-", "-", "-"
		if f.Baseline > 0 {
			base = fmt.Sprintf("%s %s", num(f.Baseline), f.Unit)
			ratio = fmt.Sprintf("%.2f×", f.Ratio)
		}
		if f.Met != nil {
			ok = map[bool]string{true: "yes", false: "NO"}[*f.Met]
		}
		fmt.Fprintf(w, "%s\t%s %s\t%s\t%s\t%s\t%s\n", f.What, num(f.Value), f.Unit, base, ratio, f.Target, ok)
	}
	w.Flush()
	for _, f := range h.figures {
		switch {
		case f.BaseWhat != "":
			fmt.Printf("  %s: baseline = %s. %s\n", f.Name, f.BaseWhat, f.Note)
		case f.Note != "":
			fmt.Printf("  %s: %s\n", f.Name, f.Note)
		}
	}
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

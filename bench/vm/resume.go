package main

// Whole-process resume: the real agentc binary, built here.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentc/agentc/bench/internal/benchsrc"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/store/pebble"
)

type eventLine struct {
	Kind   string `json:"kind"`
	Run    string `json:"run"`
	Node   string `json:"node"`
	Status string `json:"status"`
}

func (h *harness) resume(ctx context.Context) error {
	mod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" || strings.TrimSpace(string(mod)) == os.DevNull {
		return fmt.Errorf("run from inside the agentc module: go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	bin := filepath.Join(h.dir, "agentc")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentc")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build agentc: %w", err)
	}
	proj, err := filepath.Abs(filepath.Join(h.dir, "proj"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(proj, "park.agent"), []byte(parkSource), 0o644); err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "AGENTC_DATA=" + filepath.Join(proj, ".agentc")}
	agentc := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, bin, args...)
		c.Dir, c.Env = proj, env
		return c
	}
	if out, err := agentc("compile", "park.agent", "-o", "park.agb").CombinedOutput(); err != nil {
		return fmt.Errorf("agentc compile: %v\n%s", err, out)
	}

	// Park 2N runs (N resumed from source, N from bytecode).
	runs := make([]string, 2*h.resumeRuns)
	for i := range runs {
		c := agentc("run", "park.agent", "--input", fmt.Sprint("question ", i), "--session", fmt.Sprint("s", i), "--json")
		out, err := c.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			return fmt.Errorf("park run %d: want exit 3 (interrupted), got %v", i, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var fin eventLine
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fin); err != nil || fin.Kind != "run_finished" {
			return fmt.Errorf("park run %d: last line %q", i, lines[len(lines)-1])
		}
		runs[i] = fin.Run
	}

	// Time from exec to the resumed run's first node_started line.
	first := func(file, run string) (float64, error) {
		c := agentc("run", file, "--resume", run, "--value", "true", "--json")
		out, err := c.StdoutPipe()
		if err != nil {
			return 0, err
		}
		start := time.Now()
		if err := c.Start(); err != nil {
			return 0, err
		}
		var took time.Duration
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e eventLine
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == "node_started" && took == 0 {
				took = time.Since(start)
			}
		}
		if err := c.Wait(); err != nil {
			return 0, fmt.Errorf("resume %s: %w", run, err)
		}
		if took == 0 {
			return 0, fmt.Errorf("resume %s: no node started", run)
		}
		return float64(took.Microseconds()) / 1000, nil
	}
	var src, agb, starts []float64
	for i := range h.resumeRuns {
		ms, err := first("park.agent", runs[i])
		if err != nil {
			return err
		}
		src = append(src, ms)
		if ms, err = first("park.agb", runs[h.resumeRuns+i]); err != nil {
			return err
		}
		agb = append(agb, ms)
		start := time.Now()
		if err := agentc("version").Run(); err != nil {
			return fmt.Errorf("agentc version: %w", err)
		}
		starts = append(starts, float64(time.Since(start).Microseconds())/1000)
	}
	compile, open, cleanOpen, resume, err := h.resumePhases(ctx)
	if err != nil {
		return err
	}
	p50, p50agb, start := median(src), median(agb), median(starts)
	h.add(figure{Name: "resume", What: "`agentc run --resume` to the first resumed node (p50)", Value: p50, Unit: "ms", Baseline: start,
		BaseWhat: "`agentc version` (process start and package init, no store)", Target: "≤ 50 ms", Met: met(p50 <= 50),
		Note: fmt.Sprintf("From park.agent (compiled on every start); from park.agb: %.1f ms. %d runs each. "+
			"In-process phases (p50): compile %.1f ms, Pebble open %.1f ms (%.1f ms with no WAL to recover), Runner + resume to the first node %.1f ms. Anchor: LangGraph.js 688 ms.",
			p50agb, h.resumeRuns, compile, open, cleanOpen, resume)})
	return nil
}

// resumePhases times, in this process, what a resuming agentc does after
// it starts: compile the source, open the store, and resume a parked run
// until its first node starts (medians, ms).
func (h *harness) resumePhases(ctx context.Context) (compile, open, cleanOpen, resume float64, err error) {
	dir := filepath.Join(h.dir, "inproc")
	var cs, os_, clean, rs []float64
	for i := range h.resumeRuns {
		t0 := time.Now()
		prog, enc, err := benchsrc.CompileBytes("park.agent", parkSource)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		cs = append(cs, ms(time.Since(t0)))

		// Park a run, then close everything.
		session := fmt.Sprint("s", i)
		st, err := pebble.Open(dir, nil)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		r, err := assemble.New(st, benchOptions(prog, enc))
		if err != nil {
			st.Close()
			return 0, 0, 0, 0, err
		}
		var fin *runtime.Event
		ch, err := r.Run(ctx, runtime.Invocation{User: "u", Session: session, Input: "q"})
		if err == nil {
			for e := range ch {
				if e.Kind == runtime.EventRunFinished {
					fin = e
				}
			}
		}
		r.Close(ctx)
		st.Close()
		if err != nil || fin == nil || fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) == 0 {
			return 0, 0, 0, 0, fmt.Errorf("park in-process run: %v %+v", err, fin)
		}

		t1 := time.Now()
		st, err = pebble.Open(dir, nil)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		os_ = append(os_, ms(time.Since(t1)))
		t2 := time.Now()
		r, err = assemble.New(st, benchOptions(prog, enc))
		if err != nil {
			st.Close()
			return 0, 0, 0, 0, err
		}
		req := &runtime.ResumeRequest{Run: fin.Run, Values: map[string]json.RawMessage{fin.Interrupts[0].ID: json.RawMessage("true")}}
		ch, err = r.Run(ctx, runtime.Invocation{User: "u", Session: session, Resume: req})
		started := false
		if err == nil {
			for e := range ch {
				if e.Kind == runtime.EventNodeStarted && !started {
					started = true
					rs = append(rs, ms(time.Since(t2)))
				}
			}
		}
		r.Close(ctx)
		st.Close()
		if err != nil || !started {
			return 0, 0, 0, 0, fmt.Errorf("in-process resume: %v (started %v)", err, started)
		}
		// Open again with nothing written since the last open flushed
		// the WAL it recovered: the cost of an open without a replay.
		if st, err = pebble.Open(dir, nil); err != nil {
			return 0, 0, 0, 0, err
		}
		st.Close()
		t3 := time.Now()
		if st, err = pebble.Open(dir, nil); err != nil {
			return 0, 0, 0, 0, err
		}
		clean = append(clean, ms(time.Since(t3)))
		st.Close()
	}
	return median(cs), median(os_), median(clean), median(rs), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package test

// The crash test of issue 4: a child process (this test binary, re-executed
// in helper mode) runs a long workflow of side-effect tool nodes on a Pebble
// store; the parent SIGKILLs it at random points and restarts children that
// resume the same run until it completes. Afterwards the test checks that
// the run ended in the state an uninterrupted run reaches, that every
// logical side effect happened exactly once, and that the session ledger is
// sound and equal to the uninterrupted run's (spec/events.md, "After a
// crash": the comparable ledger, lifecycle events of resumptions left out),
// counting missing and duplicated events.
//
// Dedupe rule: the side-effect tool appends "run\tlogical\tkey" to a journal
// file (O_APPEND + fsync) before returning, where logical is node/item (the
// tool's k argument) and key is the idempotency key the runtime passes. A
// call whose key is already in the journal is a re-run of the same attempt
// (the documented "rerun" decision keeps the key): it returns the same
// result without appending. So a correct runtime leaves exactly one journal
// line, and one distinct key, per logical call.
//
// Timers (issue 16 item 3): the workflows include `wait` nodes, so a run
// stops waiting on a durable timer; the driver resumes it without values
// once the deadline passed (a child killed before then finds the deadline
// in the ledger's last run_finished and waits for it), and kills land
// around deadlines. The timer fires exactly once: the wait node finishes
// once in the comparable ledger, as in the uninterrupted run.
//
// CRASH_TRIALS sets the number of trials of the long workflow (default 30);
// CRASH_PROPERTY_TRIALS those of random graphs (default 10); CRASH_SEED fixes
// the seed (default: the time, logged).

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/stdlib"
)

const (
	crashHelperEnv = "AGENTC_CRASH_HELPER" // set: this process is a child
	crashApp       = "crash"
	crashUser      = "u"
	crashSession   = "s"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// --- workflows -------------------------------------------------------------

// wfSpec describes a workflow: a sequence of segments, each a chain node,
// a fan-out of width n joined by a join all, or a map over n items.
type wfSeg struct {
	kind byte // 'c' chain, 'f' fan-out + join, 'm' map, 'w' a wait of n ms
	n    int
}

func longWorkflow() []wfSeg {
	var s []wfSeg
	for range 8 {
		s = append(s, wfSeg{'c', 1})
	}
	s = append(s, wfSeg{'f', 3}, wfSeg{'w', 250}, wfSeg{'m', 5}) // a wait longer than a child's start: kills land before, around and after its deadline
	for range 8 {
		s = append(s, wfSeg{'c', 1})
	}
	return s
}

func randomWorkflow(rng *rand.Rand) []wfSeg {
	var s []wfSeg
	for range 1 + rng.IntN(6) {
		switch rng.IntN(4) {
		case 3:
			s = append(s, wfSeg{'w', 5 + rng.IntN(30)})
		case 0:
			s = append(s, wfSeg{'c', 1})
		case 1:
			s = append(s, wfSeg{'f', 2 + rng.IntN(3)})
		case 2:
			s = append(s, wfSeg{'m', rng.IntN(5)})
		}
	}
	return s
}

// source renders the workflow as an .agent program and returns it with the
// logical calls it makes (the tool's k argument of each).
func source(segs []wfSeg) (string, []string) {
	var b strings.Builder
	b.WriteString("tool fx \"Records one side effect\" { input { k: string } output string run = builtin.http_fetch effect = side_effect }\n\n")
	b.WriteString("state S {\n  q   : string\n  log : list<string> = [] reduce append\n")
	for i, sg := range segs {
		if sg.kind == 'm' {
			items := make([]string, sg.n)
			for j := range items {
				items[j] = strconv.Quote(fmt.Sprintf("i%d", j))
			}
			fmt.Fprintf(&b, "  items%d : list<string> = [%s]\n", i, strings.Join(items, ", "))
		}
	}
	b.WriteString("}\n\ngraph g(S) input q output log {\n")
	var nodes, edges, logical []string
	prev := []string{"start"}
	link := func(to string) {
		for _, p := range prev {
			edges = append(edges, fmt.Sprintf("  %s -> %s", p, to))
		}
	}
	for i, sg := range segs {
		switch sg.kind {
		case 'c':
			n := fmt.Sprintf("c%d", i)
			nodes = append(nodes, fmt.Sprintf("  node %s = tool fx { k = %q } into log", n, n))
			logical = append(logical, n)
			link(n)
			prev = []string{n}
		case 'f':
			var branch []string
			for j := range sg.n {
				n := fmt.Sprintf("f%d_%d", i, j)
				nodes = append(nodes, fmt.Sprintf("  node %s = tool fx { k = %q } into log", n, n))
				logical = append(logical, n)
				link(n)
				branch = append(branch, n)
			}
			j := fmt.Sprintf("j%d", i)
			nodes = append(nodes, fmt.Sprintf("  node %s = join all", j))
			prev = branch
			link(j)
			prev = []string{j}
		case 'w':
			n := fmt.Sprintf("w%d", i)
			nodes = append(nodes, fmt.Sprintf("  node %s = wait %dms", n, sg.n))
			link(n)
			prev = []string{n}
		case 'm':
			n := fmt.Sprintf("m%d", i)
			nodes = append(nodes, fmt.Sprintf("  node %s = map x in items%d concurrency 3 { tool fx { k = \"%s/{x}\" } } into log", n, i, n))
			for j := range sg.n {
				logical = append(logical, fmt.Sprintf("%s/i%d", n, j))
			}
			link(n)
			prev = []string{n}
		}
	}
	link("end")
	b.WriteString(strings.Join(nodes, "\n"))
	b.WriteString("\n\n")
	b.WriteString(strings.Join(edges, "\n"))
	b.WriteString("\n}\n")
	slices.Sort(logical)
	return b.String(), logical
}

func compileSource(src string) (*bytecode.Program, error) {
	cfg := compiler.Config{FS: fstest.MapFS{"wf.agent": {Data: []byte(src)}}, Root: ".", Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, "wf.agent")
	if n, _ := diag.CountErrors(ds); n > 0 {
		return nil, fmt.Errorf("load: %v", ds)
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	if prog == nil {
		return nil, fmt.Errorf("compile: %v", ds)
	}
	return prog, nil
}

// --- the side-effect tool and the runner -------------------------------------

type realClock struct{}

func (realClock) Now() time.Time { return time.Now().UTC() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

type cryptoEntropy struct{}

func (cryptoEntropy) Uint64() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// journalTool is the side-effect tool fx. It records every real execution
// in the journal file before returning.
type journalTool struct {
	path  string
	sleep time.Duration
	mu    sync.Mutex
}

func (t *journalTool) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: "fx"} }
func (t *journalTool) Effect() runtime.Effect { return runtime.SideEffect }

func (t *journalTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var in struct{ K string }
	if err := json.Unmarshal(req.Args, &in); err != nil {
		return nil, err
	}
	if req.IdempotencyKey == "" {
		return nil, errors.New("fx: no idempotency key")
	}
	out, _ := json.Marshal("done " + in.K)
	time.Sleep(t.sleep)
	t.mu.Lock()
	defer t.mu.Unlock()
	lines, err := readJournal(t.path)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if l.key == req.IdempotencyKey {
			// A re-run of a recorded attempt: deduped.
			if f, err := os.OpenFile(t.path+".dedup", os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
				fmt.Fprintln(f, req.IdempotencyKey)
				f.Close()
			}
			return out, nil
		}
	}
	run, _, _, _ := store.ParseIdempotencyKey(req.IdempotencyKey)
	f, err := os.OpenFile(t.path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s\t%s\t%s\n", run, in.K, req.IdempotencyKey); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	time.Sleep(t.sleep)
	return out, nil
}

type journalLine struct{ run, logical, key string }

func readJournal(path string) ([]journalLine, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []journalLine
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("journal: torn line %q", sc.Text())
		}
		out = append(out, journalLine{f[0], f[1], f[2]})
	}
	return out, nil
}

func newCrashRunner(st store.Store, prog *bytecode.Program, journal string, sleep time.Duration) (*runtime.Runner, error) {
	tool := &journalTool{path: journal, sleep: sleep}
	return runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, App: crashApp,
		Tools: map[string]runtime.Tool{"fx": tool}, Clock: realClock{}, Entropy: cryptoEntropy{}})
}

// drive runs (or resumes) the run to completion, answering needs_decision
// with rerun, and returns the final output. onRun is told the run id as
// soon as it is known.
func drive(ctx context.Context, r *runtime.Runner, st store.Store, runID string, onRun func(string) error, onDecisions func(int), onEarly func()) (json.RawMessage, int, error) {
	var decisions map[string]runtime.DecisionRequest
	resumes := 0
	for {
		inv := runtime.Invocation{User: crashUser, Session: crashSession, Input: "go"}
		if runID != "" {
			inv.Resume = &runtime.ResumeRequest{Run: runID, Decisions: decisions}
			resumes++
		}
		ch, err := r.Run(ctx, inv)
		if errors.Is(err, runtime.ErrInvalidResume) && runID != "" {
			// Waiting on a timer not due yet (this process started after
			// the run stopped): wait for the deadline its last
			// run_finished names.
			due, derr := nextDue(st, runID)
			if derr != nil {
				return nil, resumes, fmt.Errorf("%w (%v)", err, derr)
			}
			if onEarly != nil {
				onEarly()
			}
			time.Sleep(time.Until(due) + time.Millisecond)
			continue
		}
		if err != nil {
			return nil, resumes, err
		}
		var fin *runtime.Event
		var runErr *runtime.ErrorInfo
		for e := range ch {
			if runID == "" && e.Run != "" {
				runID = e.Run
				if err := onRun(runID); err != nil {
					return nil, resumes, err
				}
			}
			if e.Kind == runtime.EventRunError {
				runErr = e.Error
			}
			if e.Kind == runtime.EventRunFinished {
				fin = e
			}
		}
		if fin == nil {
			return nil, resumes, errors.New("no run_finished")
		}
		switch fin.Status {
		case runtime.StatusCompleted:
			return fin.Output, resumes, nil
		case runtime.StatusInterrupted:
			if len(fin.Timers) == 0 {
				return nil, resumes, fmt.Errorf("run %s waits on interrupts %+v", runID, fin.Interrupts)
			}
			// A wait: resume once its deadline passed (it fires then).
			time.Sleep(time.Until(fin.Timers[0].Due) + time.Millisecond)
			decisions = nil
		case runtime.StatusNeedsDecision:
			if onDecisions != nil {
				onDecisions(len(fin.Decisions))
			}
			decisions = map[string]runtime.DecisionRequest{}
			for _, d := range fin.Decisions {
				decisions[d.ID] = runtime.DecisionRequest{Action: "rerun"}
			}
		default:
			return nil, resumes, fmt.Errorf("run %s ended %s: %+v", runID, fin.Status, runErr)
		}
	}
}

// --- the child -------------------------------------------------------------

// crashChild runs in the child process: dir holds wf.agent, the store, the
// journal and the run id file.
func crashChild(dir string) error {
	src, err := os.ReadFile(filepath.Join(dir, "wf.agent"))
	if err != nil {
		return err
	}
	prog, err := compileSource(string(src))
	if err != nil {
		return err
	}
	st, err := pebble.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	sleep, _ := time.ParseDuration(os.Getenv("AGENTC_CRASH_SLEEP"))
	r, err := newCrashRunner(st, prog, filepath.Join(dir, "journal"), sleep)
	if err != nil {
		return err
	}
	defer r.Close(context.Background())
	// Tell the parent the run is about to start: its kill timer starts now.
	fmt.Println("ready")
	idFile := filepath.Join(dir, "run_id")
	runID := ""
	if b, err := os.ReadFile(idFile); err == nil {
		runID = string(b)
	} else {
		// A kill can land after the run was created (and its first side
		// effect happened) but before the id file was written: the store
		// is the authority on which run exists, as for `agentc run
		// --resume latest`. The session only ever holds this trial's run.
		runs, _, err := st.ListRuns(context.Background(), store.RunFilter{App: crashApp, User: crashUser, Session: crashSession})
		if err != nil {
			return err
		}
		if len(runs) > 1 {
			return fmt.Errorf("session holds %d runs, want at most 1", len(runs))
		}
		if len(runs) == 1 {
			runID = runs[0].ID
			if err := writeFileSync(idFile, []byte(runID)); err != nil {
				return err
			}
		}
	}
	if runID != "" {
		// A kill after the run completed but before the output file was
		// written: the output is the completed run_finished's.
		if run, err := st.GetRun(context.Background(), runID); err == nil && run.Status == store.RunCompleted {
			out, err := completedOutput(st, runID)
			if err != nil {
				return err
			}
			return writeFileSync(filepath.Join(dir, "output"), out)
		}
	}
	out, _, err := drive(context.Background(), r, st, runID, func(id string) error {
		return writeFileSync(idFile, []byte(id))
	}, func(n int) {
		if f, err := os.OpenFile(filepath.Join(dir, "decisions"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(f, n)
			f.Close()
		}
	}, func() {
		// This child started while the run waited on a timer not due yet
		// (its predecessor was killed before the deadline).
		if f, err := os.OpenFile(filepath.Join(dir, "early"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(f, 1)
			f.Close()
		}
	})
	if err != nil {
		return err
	}
	return writeFileSync(filepath.Join(dir, "output"), out)
}

// nextDue is the first deadline of the run's last run_finished.
func nextDue(st store.Store, runID string) (time.Time, error) {
	entries, err := st.ListEvents(context.Background(), store.SessionKey{App: crashApp, User: crashUser, Session: crashSession}, 0, 0)
	if err != nil {
		return time.Time{}, err
	}
	for _, en := range slices.Backward(entries) {
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			return time.Time{}, err
		}
		if e.Kind == runtime.EventRunFinished && e.Run == runID {
			if len(e.Timers) == 0 {
				return time.Time{}, fmt.Errorf("run %s's last run_finished has no timer", runID)
			}
			return e.Timers[0].Due, nil
		}
	}
	return time.Time{}, fmt.Errorf("run %s has no run_finished", runID)
}

func completedOutput(st store.Store, runID string) (json.RawMessage, error) {
	entries, err := st.ListEvents(context.Background(), store.SessionKey{App: crashApp, User: crashUser, Session: crashSession}, 0, 0)
	if err != nil {
		return nil, err
	}
	for _, en := range slices.Backward(entries) {
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			return nil, err
		}
		if e.Kind == runtime.EventRunFinished && e.Run == runID && e.Status == runtime.StatusCompleted {
			return e.Output, nil
		}
	}
	return nil, fmt.Errorf("run %s is completed but its ledger has no completed run_finished", runID)
}

func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// --- the parent ------------------------------------------------------------

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

func crashSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (CRASH_SEED=%d reproduces)", seed, seed)
	return seed
}

const toolSleep = 2 * time.Millisecond

// reference runs the workflow in process without kills and returns its
// output, its comparable ledger (ledgerView) and how long it took.
func reference(t *testing.T, src string) (json.RawMessage, []string, time.Duration) {
	t.Helper()
	prog, err := compileSource(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := newCrashRunner(st, prog, filepath.Join(dir, "journal"), toolSleep)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	start := time.Now()
	out, _, err := drive(context.Background(), r, st, "", func(string) error { return nil }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	view, _, err := ledgerView(st)
	if err != nil {
		t.Fatal(err)
	}
	return out, view, took
}

type trialStats struct {
	children, kills, decisions, dedups int
	waiting                            int // children that started while the run waited on a timer not due yet
	events, missing, duplicated        int // ledger events compared, and those missing or extra against the reference
}

// crashTrial runs one trial of src, killing each child a random delay in
// [0, window) after it says it is ready to run (the window widening by a
// quarter with every child), and checks the outcome.
func crashTrial(t *testing.T, rng *rand.Rand, src string, logical []string, want json.RawMessage, wantLedger []string, window time.Duration) trialStats {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wf.agent"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stats trialStats
	const maxChildren = 200
	for {
		stats.children++
		if stats.children > maxChildren {
			t.Fatalf("the run did not complete after %d children", maxChildren)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, "AGENTC_CRASH_SLEEP="+toolSleep.String())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = pw
		err = cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			t.Fatal(err)
		}
		// ready is closed when the child says it is about to run (or its
		// stdout closes); the reader ends with the child.
		ready := make(chan struct{})
		go func() {
			defer pr.Close()
			sc := bufio.NewScanner(pr)
			sc.Scan()
			close(ready)
			for sc.Scan() {
			}
		}()
		// The child is reaped by this goroutine; the cleanup makes sure it
		// is dead and reaped whatever way the test leaves.
		done := make(chan error, 1)
		waited := make(chan struct{})
		go func() { done <- cmd.Wait(); close(waited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-waited })
		// After many kills, let the child finish, so a trial always ends.
		var kill <-chan time.Time
		exited := false // a child may finish without saying it is ready
		if stats.children < maxChildren/2 {
			// The window widens with every kill, so that a resume whose
			// overhead exceeds it still ends up making progress.
			delay := time.Duration(rng.Int64N(int64(window)))
			window += window / 4
			select {
			case <-ready:
				kill = time.After(delay)
			case err = <-done:
				exited = true
			}
		}
		killed := false
		if !exited {
			select {
			case err = <-done:
			case <-kill:
				_ = cmd.Process.Kill()
				err = <-done
				killed = true
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("child %d hung; stderr:\n%s", stats.children, stderr.String())
			}
		}
		if killed {
			stats.kills++
			if _, e := os.Stat(filepath.Join(dir, "output")); e == nil {
				break // it had finished anyway
			}
			continue
		}
		if err != nil {
			t.Fatalf("child %d failed: %v\n%s", stats.children, err, stderr.String())
		}
		break
	}
	if b, err := os.ReadFile(filepath.Join(dir, "decisions")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(l)
			stats.decisions += n
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "early")); err == nil {
		stats.waiting = len(strings.Fields(string(b)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "journal.dedup")); err == nil {
		stats.dedups = len(strings.Fields(string(b)))
	}
	got, err := os.ReadFile(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("final output\n got %s\nwant %s", got, want)
	}
	checkJournal(t, filepath.Join(dir, "journal"), logical)
	stats.events, stats.missing, stats.duplicated = checkLedger(t, filepath.Join(dir, "store"), wantLedger)
	return stats
}

func checkJournal(t *testing.T, path string, logical []string) {
	t.Helper()
	lines, err := readJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	runs := map[string]bool{}
	for _, l := range lines {
		keys[l.logical] = append(keys[l.logical], l.key)
		runs[l.run] = true
	}
	for _, k := range logical {
		switch n := len(keys[k]); {
		case n == 0:
			t.Errorf("side effect %s never happened", k)
		case n > 1:
			t.Errorf("side effect %s happened %d times: keys %v", k, n, keys[k])
		}
		delete(keys, k)
	}
	for k := range keys {
		t.Errorf("unexpected side effect %s", k)
	}
	if len(runs) > 1 {
		t.Errorf("side effects of %d runs: %v", len(runs), runs)
	}
}

// checkLedger checks the session ledger of the trial's store: sequence
// numbers from 1 without gaps, unique event ids, the input first, and the
// ledger equal to the uninterrupted run's (spec/events.md, "After a
// crash"). It returns how many events it compared and how many were
// missing or duplicated.
func checkLedger(t *testing.T, dir string, want []string) (events, missing, duplicated int) {
	t.Helper()
	st, err := pebble.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.ListEvents(context.Background(), store.SessionKey{App: crashApp, User: crashUser, Session: crashSession}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty ledger")
	}
	ids := map[string]uint64{}
	for i, en := range entries {
		if i > 0 && en.Seq != entries[i-1].Seq+1 {
			t.Errorf("ledger gap: seq %d after %d", en.Seq, entries[i-1].Seq)
		}
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			t.Fatalf("event %d: %v", en.Seq, err)
		}
		if i == 0 && e.Kind != runtime.EventInput {
			t.Errorf("first event is %s, want input", e.Kind)
		}
		if prev, dup := ids[e.ID]; dup {
			t.Errorf("event %s at seqs %d and %d", e.ID, prev, en.Seq)
		}
		ids[e.ID] = en.Seq
	}
	if entries[0].Seq != 1 {
		t.Errorf("ledger starts at seq %d", entries[0].Seq)
	}
	got, lifecycle, err := ledgerView(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lifecycle {
		t.Error(p)
	}
	missing, duplicated = diffLedgers(got, want)
	if missing > 0 || duplicated > 0 || !slices.Equal(got, want) {
		t.Errorf("ledger differs from the uninterrupted run's: %d missing, %d duplicated\n%s", missing, duplicated, ledgerDiff(got, want))
	}
	return len(got), missing, duplicated
}

// ledgerView returns the comparable ledger of the trial's session
// (spec/events.md, "After a crash"): one line per event, in ledger order,
// the event without its identity (id, time, run, invocation), leaving out
// the lifecycle events a resumption adds: the input of a resumption, the
// run_started of every invocation but the first, and the run_error and
// run_finished of an invocation that did not end the run. problems lists
// lifecycle events out of place.
func ledgerView(st store.Store) (view, problems []string, err error) {
	entries, err := st.ListEvents(context.Background(), store.SessionKey{App: crashApp, User: crashUser, Session: crashSession}, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	evs := make([]*runtime.Event, len(entries))
	for i, en := range entries {
		if evs[i], err = runtime.DecodeEvent(en.Data); err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", en.Seq, err)
		}
	}
	// The invocation whose run_finished is the ledger's last ended the run.
	last := ""
	if n := len(evs); n > 0 && evs[n-1].Kind == runtime.EventRunFinished {
		last = evs[n-1].Invocation
	} else {
		problems = append(problems, "the ledger does not end with run_finished")
	}
	started := false
	state := map[string]map[string]json.RawMessage{} // author/node → field → value
	for i, e := range evs {
		switch {
		case e.Kind == runtime.EventInput && e.Resume != nil:
			continue
		case e.Kind == runtime.EventInput:
			if _, err := st.GetRun(context.Background(), e.Run); errors.Is(err, store.ErrNotFound) {
				continue // the process died between persisting the input and creating its run
			}
		case e.Kind == runtime.EventRunStarted && started:
			if i == 0 || evs[i-1].Kind != runtime.EventInput || evs[i-1].Invocation != e.Invocation {
				problems = append(problems, fmt.Sprintf("run_started of %s at %d does not follow its input", e.Invocation, i+1))
			}
			continue
		case (e.Kind == runtime.EventRunFinished || e.Kind == runtime.EventRunError) && e.Invocation != last:
			if e.Status == runtime.StatusCompleted {
				problems = append(problems, fmt.Sprintf("a completed run_finished at %d is not the last event", i+1))
			}
			continue
		case e.Kind == runtime.EventRunStarted:
			started = true
		}
		c := *e
		c.ID, c.Time, c.Run, c.Invocation, c.Seq = "", time.Time{}, "", "", 0
		if e.Kind == runtime.EventStateDelta {
			if c.Changes, err = foldChanges(state, e); err != nil {
				return nil, nil, fmt.Errorf("event %d: %w", i+1, err)
			}
		}
		b, err := json.Marshal(&c)
		if err != nil {
			return nil, nil, err
		}
		view = append(view, string(b))
	}
	return view, problems, nil
}

// foldChanges applies a state_delta to state and returns its changes as
// the values the fields hold afterwards (op "="): a step's change is
// reported as the appended elements or, when its checkpoint is a full
// snapshot (as the first after a resumption is), as the whole value; both
// mean the same state.
func foldChanges(state map[string]map[string]json.RawMessage, e *runtime.Event) ([]runtime.StateChange, error) {
	key := e.Author + "/" + e.Node
	fields := state[key]
	if fields == nil {
		fields = map[string]json.RawMessage{}
		state[key] = fields
	}
	out := make([]runtime.StateChange, len(e.Changes))
	for i, ch := range e.Changes {
		v := ch.Value
		switch ch.Op {
		case "set":
		case "append":
			var old, add []json.RawMessage
			if prev := fields[ch.Field]; prev != nil {
				if err := json.Unmarshal(prev, &old); err != nil {
					return nil, fmt.Errorf("append to %s: %w", ch.Field, err)
				}
			}
			if err := json.Unmarshal(ch.Value, &add); err != nil {
				return nil, fmt.Errorf("append to %s: %w", ch.Field, err)
			}
			b, err := json.Marshal(append(old, add...))
			if err != nil {
				return nil, err
			}
			v = b
		case "merge":
			m := map[string]json.RawMessage{}
			if prev := fields[ch.Field]; prev != nil {
				if err := json.Unmarshal(prev, &m); err != nil {
					return nil, fmt.Errorf("merge into %s: %w", ch.Field, err)
				}
			}
			var add map[string]json.RawMessage
			if err := json.Unmarshal(ch.Value, &add); err != nil {
				return nil, fmt.Errorf("merge into %s: %w", ch.Field, err)
			}
			maps.Copy(m, add)
			b, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			v = b
		default:
			return nil, fmt.Errorf("change of %s: op %q", ch.Field, ch.Op)
		}
		fields[ch.Field] = v
		out[i] = runtime.StateChange{Field: ch.Field, Op: "=", Value: v}
	}
	return out, nil
}

// diffLedgers counts the events of want that got lacks and those got holds
// more often than want.
func diffLedgers(got, want []string) (missing, duplicated int) {
	n := map[string]int{}
	for _, w := range want {
		n[w]++
	}
	for _, g := range got {
		n[g]--
	}
	for _, c := range n {
		if c > 0 {
			missing += c
		} else {
			duplicated -= c
		}
	}
	return missing, duplicated
}

// ledgerDiff shows the first place the ledgers part.
func ledgerDiff(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at comparable event %d (got %d events, want %d)\n", i+1, len(got), len(want))
	for j := i; j < i+4; j++ {
		if j < len(got) {
			fmt.Fprintf(&b, " got  %s\n", got[j])
		}
		if j < len(want) {
			fmt.Fprintf(&b, " want %s\n", want[j])
		}
	}
	return b.String()
}

func runCrashTrials(t *testing.T, trials int, seed uint64, pick func(*rand.Rand) []wfSeg) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var total trialStats
	start := time.Now()
	for i := range trials {
		segs := pick(rng)
		src, logical := source(segs)
		want, wantLedger, took := reference(t, src)
		// A child dies on average a quarter of the uninterrupted run
		// after it starts running, so a trial takes several children.
		window := max(took/2, 5*time.Millisecond)
		ok := t.Run(fmt.Sprint(i), func(t *testing.T) {
			s := crashTrial(t, rng, src, logical, want, wantLedger, window)
			total.events += s.events
			total.missing += s.missing
			total.duplicated += s.duplicated
			total.children += s.children
			total.kills += s.kills
			total.decisions += s.decisions
			total.dedups += s.dedups
			total.waiting += s.waiting
		})
		if !ok {
			t.Logf("workflow of the failed trial:\n%s", src)
			break
		}
	}
	t.Logf("%d trials, %d children, %d kills (%d children started while a timer was not due yet), %d needs_decision answered with rerun (%d deduped by key); ledgers: %d events compared, %d missing, %d duplicated; %v",
		trials, total.children, total.kills, total.waiting, total.decisions, total.dedups, total.events, total.missing, total.duplicated, time.Since(start).Round(time.Millisecond))
}

func TestCrashLongWorkflow(t *testing.T) {
	trials := envInt("CRASH_TRIALS", 30)
	if testing.Short() {
		trials = min(trials, 5)
	}
	runCrashTrials(t, trials, crashSeed(t), func(*rand.Rand) []wfSeg { return longWorkflow() })
}

func TestCrashRandomGraphs(t *testing.T) {
	trials := envInt("CRASH_PROPERTY_TRIALS", 10)
	if testing.Short() {
		trials = min(trials, 3)
	}
	runCrashTrials(t, trials, crashSeed(t), randomWorkflow)
}

package pebble

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	key = store.SessionKey{App: "app", User: "alice", Session: "s1"}
)

func mustOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seed creates a session and run_1 with a full checkpoint at step 0.
func seed(t *testing.T, s *Store) {
	t.Helper()
	_, _, err := s.GetOrCreateSession(ctx, key, t0)
	must(t, err)
	must(t, s.CreateRun(ctx, store.Run{ID: "run_1", Session: key, Status: store.RunRunning, Created: t0}))
	_, err = s.CommitStep(ctx, store.StepCommit{
		Checkpoint: store.Checkpoint{Run: "run_1", Step: 0, Kind: store.Full, State: []byte("state zero"), Time: t0},
		Events:     [][]byte{[]byte("e1")}, Journal: [][]byte{[]byte("j1")},
	})
	must(t, err)
}

// rawDB opens dir with Pebble alone, for tests that write behind the store.
// It removes the seal first, as writing behind the store changes its files.
func rawDB(t *testing.T, dir string) *pebble.DB {
	t.Helper()
	must(t, breakSeal(dir))
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: formatVersion, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	seed(t, s)
	must(t, s.PutProgram(ctx, "h", []byte("bytecode")))
	ik, err := s.PutIntent(ctx, "run_1", "pay", 0)
	must(t, err)
	must(t, s.PutEffectResult(ctx, ik, []byte("paid")))
	must(t, s.PutPendingWrite(ctx, "run_1", 1, "n", 0, []byte("w")))
	l, err := s.AcquireLease(ctx, "lease", "A", time.Minute, t0)
	must(t, err)
	must(t, s.Close())

	s = mustOpen(t, dir)
	defer s.Close()
	if p, err := s.GetProgram(ctx, "h"); err != nil || string(p) != "bytecode" {
		t.Errorf("program after reopen: %q %v", p, err)
	}
	if c, err := s.LatestCheckpoint(ctx, "run_1"); err != nil || string(c.State) != "state zero" || c.JournalNext != 2 {
		t.Errorf("checkpoint after reopen: %+v %v", c, err)
	}
	if r, err := s.GetEffectResult(ctx, ik); err != nil || string(r) != "paid" {
		t.Errorf("effect after reopen: %q %v", r, err)
	}
	if ws, err := s.ListPendingWrites(ctx, "run_1", 1); err != nil || len(ws) != 1 {
		t.Errorf("pending writes after reopen: %v %v", ws, err)
	}
	// Sequences continue where they were.
	first, err := s.AppendEvents(ctx, key, [][]byte{[]byte("e2")}, t0)
	must(t, err)
	done, err := s.CommitStep(ctx, store.StepCommit{
		Checkpoint: store.Checkpoint{Run: "run_1", Step: 1, Kind: store.Delta, Time: t0},
		Journal:    [][]byte{[]byte("j2")},
	})
	must(t, err)
	if first != 2 || done.FirstJournal != 2 {
		t.Errorf("after reopen: next event %d, next journal %d; want 2 and 2", first, done.FirstJournal)
	}
	// Lease records survive (unsynced writes reach disk on a clean Close),
	// and fencing tokens keep increasing.
	l2, err := s.AcquireLease(ctx, "lease", "B", time.Minute, t0.Add(time.Hour))
	must(t, err)
	if l2.Token <= l.Token {
		t.Errorf("token after reopen %d, want > %d", l2.Token, l.Token)
	}
}

func TestLayoutVersionRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		write      func(db *pebble.DB) error
	}{
		{"newer layout", "layout version 2, this build reads 1", func(db *pebble.DB) error {
			return db.Set(store.MetaKey(), store.Frame([]byte{2}), pebble.Sync)
		}},
		{"newer codec", "codec version 9", func(db *pebble.DB) error {
			v := store.Frame([]byte{1})
			v[0] = 9
			return db.Set(store.MetaKey(), store.EndValue(v[:len(v)-4]), pebble.Sync)
		}},
		{"foreign data", "without a layout marker", func(db *pebble.DB) error {
			if err := db.Delete(store.MetaKey(), pebble.Sync); err != nil {
				return err
			}
			return db.Set([]byte("someone else's key"), []byte("v"), pebble.Sync)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, mustOpen(t, dir).Close())
			db := rawDB(t, dir)
			must(t, tc.write(db))
			must(t, db.Close())
			_, err := Open(dir, nil)
			if !errors.Is(err, store.ErrLayoutVersion) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open = %v, want ErrLayoutVersion saying %q and naming %s", err, tc.want, dir)
			}
			// The refused open released the directory.
			must(t, rawDB(t, dir).Close())
		})
	}
}

func TestCorruptValueDetected(t *testing.T) {
	s := mustOpen(t, t.TempDir())
	defer s.Close()
	seed(t, s)
	ck := checkpointKey("run_1", 0)
	good, closer, err := s.db.Get(ck)
	must(t, err)
	good = append([]byte(nil), good...)
	must(t, closer.Close())

	reads := map[string]func() error{
		"GetCheckpoint":    func() error { _, err := s.GetCheckpoint(ctx, "run_1", 0); return err },
		"LatestCheckpoint": func() error { _, err := s.LatestCheckpoint(ctx, "run_1"); return err },
		"ListCheckpoints": func() error {
			_, err := s.ListCheckpoints(ctx, "run_1", store.CheckpointFilter{})
			return err
		},
		"CheckpointChain": func() error { _, err := s.CheckpointChain(ctx, "run_1", 0); return err },
	}
	check := func(what string, v []byte, want error) {
		t.Helper()
		must(t, s.db.Set(ck, v, pebble.Sync))
		for name, read := range reads {
			err := read()
			if !errors.Is(err, want) || !strings.Contains(err.Error(), "checkpoint/run_1/0") {
				t.Errorf("%s with %s: %v, want %v naming checkpoint/run_1/0", name, what, err, want)
			}
		}
	}
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0xFF
		check(fmt.Sprintf("byte %d flipped", i), bad, store.ErrCorrupt)
	}
	for n := range len(good) {
		check(fmt.Sprintf("truncated to %d bytes", n), good[:n], store.ErrCorrupt)
	}
	newer := append([]byte(nil), good[:len(good)-4]...)
	newer[0] = store.CodecVersion + 1
	check("a newer codec version", store.EndValue(newer), store.ErrLayoutVersion)
	check("a sound frame over a garbage record", store.Frame([]byte{1, 200, 200, 200}), store.ErrCorrupt)

	// A corrupt run record fails the commit that reads it, naming the key.
	must(t, s.CreateRun(ctx, store.Run{ID: "run_2", Session: key, Status: store.RunRunning}))
	must(t, s.db.Set(runKey("run_2"), []byte{1, 2, 3}, pebble.Sync))
	s.heads.drop("run_2") // read from disk, as by a process that opens the store
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_2", Step: 1, Kind: store.Full}})
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "run/run_2") {
		t.Errorf("commit over a corrupt run record: %v", err)
	}
}

func TestLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	_, err := Open(dir, nil)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second Open = %v, want ErrLocked naming %s and pid %d", err, dir, os.Getpid())
	}
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); !os.IsNotExist(err) {
		t.Errorf("%s left after Close: %v", ownerFile, err)
	}
	must(t, mustOpen(t, dir).Close())
}

// TestLockedByAnotherProcess holds the directory in a child process (this
// test binary, re-run as TestHoldDirectory) and checks that the refusal names
// the child's pid.
func TestLockedByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldDirectory$")
	cmd.Env = append(os.Environ(), "AGENTC_STORE_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("child: %q %v", line, err)
	}
	_, err = Open(dir, nil)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("Open of a directory held by pid %d = %v", cmd.Process.Pid, err)
	}
	stdin.Close()
	must(t, cmd.Wait())
	must(t, mustOpen(t, dir).Close())
}

// TestHoldDirectory is the child of TestLockedByAnotherProcess: it opens the
// store, says so, and holds it until its stdin closes.
func TestHoldDirectory(t *testing.T) {
	dir := os.Getenv("AGENTC_STORE_HOLD")
	if dir == "" {
		t.Skip("helper process only")
	}
	s := mustOpen(t, dir)
	fmt.Println("holding")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	must(t, s.Close())
}

// FuzzRecords feeds arbitrary bytes to every decoder: they fail with
// ErrCorrupt or ErrLayoutVersion, never panic.
func FuzzRecords(f *testing.F) {
	f.Add(checkpointCodec.value(store.Checkpoint{Kind: store.Full, State: []byte("s"), Time: t0}))
	f.Add(runCodec.value(store.Run{ID: "r", Session: key, Status: store.RunRunning}))
	f.Add(runCodec.value(store.Run{ID: "r", Session: key, Status: store.RunCompleted,
		Usage: store.RunUsage{ModelCalls: 3, InputTokens: 1 << 40, OutputTokens: 7, CachedTokens: 5, Cost: 0.125, Priced: true}, FirstEvent: 1 << 33}))
	f.Add(sessionCodec.value(sessionRecord{created: t0, lastSeq: 3}))
	f.Add([]byte{1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})
	k := checkpointKey("r", 1)
	f.Fuzz(func(t *testing.T, v []byte) {
		p, err := store.Payload(k, v)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrLayoutVersion) {
				t.Fatalf("Payload: %v", err)
			}
			p = v
		}
		for _, err := range []error{
			func() error { _, err := decodeCheckpoint(k, p, "r", 1); return err }(),
			func() error { _, err := runCodec.decode(k, p, store.Run{}); return err }(),
			func() error { _, err := sessionCodec.decode(k, p, sessionRecord{}); return err }(),
			func() error { _, err := summaryCodec.decode(k, p, store.Summary{}); return err }(),
			func() error { _, err := leaseCodec.decode(k, p, store.Lease{}); return err }(),
			func() error { _, err := metaCodec.decode(k, p, 0); return err }(),
		} {
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("decode: %v", err)
			}
		}
		_, _, _ = store.DecodeKey(v)
		_ = store.FormatKey(v)
	})
}

// Background counts the engine's flushes and compactions: none on a store
// that has nothing to do, none (and no panic) once it is closed.
func TestBackgroundIdle(t *testing.T) {
	s := mustOpen(t, t.TempDir())
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.Background() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an idle store runs %d flushes and compactions after 10 s", s.Background())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.Background(); n != 0 {
		t.Fatalf("a closed store runs %d flushes and compactions", n)
	}
}

// TestFlush: Flush writes the memtable to a table before it returns; a
// closed store refuses it.
func TestFlush(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.ApplyDocs(ctx, store.DocOp{Coll: "c", Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	before := s.db.Metrics().Flush.Count
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if m := s.db.Metrics(); m.Flush.Count <= before || m.Levels[0].TablesCount == 0 {
		t.Errorf("after Flush: %d flushes (before %d), %d tables in L0", m.Flush.Count, before, m.Levels[0].TablesCount)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Flush on a closed store: %v, want ErrClosed", err)
	}
}

//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(script string) *exec.Cmd { return exec.Command("/bin/sh", "-c", script) }

func TestOutputsAndExit(t *testing.T) {
	var out, errOut bytes.Buffer
	stop, waitErr, err := Run(context.Background(), sh(`cat; echo oops >&2; exit 3`), []byte("hello"), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if stop != Exited || !errors.As(waitErr, &ee) || ee.ExitCode() != 3 {
		t.Errorf("stop %v, wait %v; want Exited with exit status 3", stop, waitErr)
	}
	if out.String() != "hello" || errOut.String() != "oops\n" {
		t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errOut.String(), "hello", "oops\n")
	}
}

func TestStartFailure(t *testing.T) {
	var out bytes.Buffer
	if _, _, err := Run(context.Background(), exec.Command("/nonexistent/agentc-proc-test"), nil, &out, &out); err == nil {
		t.Error("a missing command started")
	}
}

// overflowAt refuses more than n bytes.
type overflowAt struct{ n, got int }

func (o *overflowAt) Write(p []byte) (int, error) {
	if o.got += len(p); o.got > o.n {
		return 0, ErrOverflow
	}
	return len(p), nil
}

func TestOverflowKillsTheGroup(t *testing.T) {
	var errOut bytes.Buffer
	start := time.Now()
	stop, _, err := Run(context.Background(), sh(`yes`), nil, &overflowAt{n: 1 << 16}, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if stop != Overflowed {
		t.Errorf("stop %v, want Overflowed", stop)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("an endless writer ran %s after its output overflowed", d)
	}
}

// TestContextKillsTheGroup: the command and a child it left in the
// background are both gone when Run returns on a canceled context.
func TestContextKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			// The shell creates the file before it writes the pid: wait
			// for the whole line.
			if b, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out bytes.Buffer
	stop, _, err := Run(ctx, sh(`sleep 600 & echo $! > `+pidFile+`; wait`), nil, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if stop != Interrupted {
		t.Errorf("stop %v, want Interrupted", stop)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond) // reaped by init a moment later
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the background child %d outlived its group", pid)
	}
}

// TestExitKillsBackgroundChildren: a child left running when the command
// exits goes with its group.
func TestExitKillsBackgroundChildren(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	stop, waitErr, err := Run(context.Background(), sh(`sleep 600 & echo started`), nil, &out, &out)
	if err != nil || stop != Exited || waitErr != nil {
		t.Fatalf("stop %v, wait %v, err %v", stop, waitErr, err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Run waited %s for a background child", d)
	}
	if out.String() != "started\n" {
		t.Errorf("stdout %q", out.String())
	}
}

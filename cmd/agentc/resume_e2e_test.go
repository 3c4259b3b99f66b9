package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

// TestResumeLatestAfterKill: `agentc run` killed (SIGKILL) while a node
// runs leaves its run `running`; `--resume latest`, without --value, finds
// and finishes it (issue 13, problem 11).
func TestResumeLatestAfterKill(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "slow.agent"), []byte(slowSource), 0o644); err != nil {
		t.Fatal(err)
	}
	data := "AGENTC_DATA=" + filepath.Join(root, ".agentc")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentcBin(t), "run", "slow.agent", "--input", "go", "--session", "s", "--json")
	cmd.Dir, cmd.Env = root, cleanEnv(data, "LONG_NAP=30")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var runID string
	for sc.Scan() {
		e, err := runtime.DecodeEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("event %s: %v", sc.Text(), err)
		}
		runID = e.Run
		if e.Kind == runtime.EventToolCall && e.Node == "b" {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	r := runAgentc(t, root, cleanEnv(data), "sessions", "show", "s", "--app", "slow")
	if r.code != 0 || !strings.Contains(r.stdout, runID) || !strings.Contains(r.stdout, "running") {
		t.Fatalf("after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runAgentc(t, root, cleanEnv(data, "LONG_NAP=0"), "run", "slow.agent", "--resume", "latest", "--session", "s", "--json")
	if r.code != 0 {
		t.Fatalf("--resume latest: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fin, err := runtime.DecodeEvent([]byte(lines[len(lines)-1]))
	if err != nil || fin.Run != runID || fin.Status != runtime.StatusCompleted {
		t.Fatalf("resumed run finished %+v (%v)", fin, err)
	}
	// Nothing is left to resume.
	r = runAgentc(t, root, cleanEnv(data), "run", "slow.agent", "--resume", "latest", "--session", "s")
	if r.code != 2 || !strings.Contains(r.stderr, "no run to resume") {
		t.Fatalf("--resume latest with nothing to resume: exit %d\n%s", r.code, r.stderr)
	}
}

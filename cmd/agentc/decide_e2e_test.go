package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDecideAfterKill: `agentc run` SIGKILLed inside a side-effect call
// leaves its outcome unknown; `--resume latest` ends in needs_decision
// (exit 3, naming the decision) without calling again; `--decide
// a=done:JSON` settles it with the recorded result and the run finishes,
// the side effect having been attempted once (issue 16 item 4).
func TestDecideAfterKill(t *testing.T) {
	var marks atomic.Int32
	called := make(chan struct{}, 1)
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mark":
			if marks.Add(1) == 1 {
				_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the caller go
				called <- struct{}{}
				select { // the first call never answers: its caller dies
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			io.WriteString(w, "marked again")
		case "/wait":
			io.WriteString(w, "waited")
		}
	}))
	defer tools.Close()
	root, env := orphanProject(t, tools)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentcBin(t), "run", "orphan.agent", "--input", "go", "--session", "s")
	cmd.Dir, cmd.Env = root, env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-called:
	case <-ctx.Done():
		t.Fatal("the side effect was never called")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	r := runAgentc(t, root, env, "run", "orphan.agent", "--resume", "latest", "--session", "s")
	if r.code != exitInterrupted || !strings.Contains(r.stderr, "needs decisions") || !strings.Contains(r.stderr, "node a") {
		t.Fatalf("resume after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := marks.Load(); n != 1 {
		t.Fatalf("the side effect was called %d times before a decision", n)
	}
	r = runAgentc(t, root, env, "run", "orphan.agent", "--resume", "latest", "--session", "s", "--decide", `a=done:"marked by hand"`)
	if r.code != 0 || !strings.Contains(r.stdout, "marked by hand") || !strings.Contains(r.stdout, "waited") {
		t.Fatalf("after --decide: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := marks.Load(); n != 1 {
		t.Errorf("the side effect was called %d times, want once", n)
	}
}

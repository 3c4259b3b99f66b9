package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

const napSource = `workflow naps

state S { q: string, out: string = "" }

graph g(S) input q output out {
  node nap  = wait 3s
  node mark = set { out = q + " woke" }
  start -> nap
  nap   -> mark
  mark  -> end
}

serve { run = g }
`

// TestServeFiresTimersAfterRestart (issue 16 item 3): a run started by
// agentc run waits on a durable timer; a server started and SIGKILLed
// before the deadline fires nothing; the next server fires it on time by
// itself, exactly once.
func TestServeFiresTimersAfterRestart(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "naps.agent"), []byte(napSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, ".agentc"))
	r := runAgentc(t, root, env, "run", "naps.agent", "--input", "cat", "--session", "s", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fin, err := runtime.DecodeEvent([]byte(lines[len(lines)-1]))
	if r.code != 3 || err != nil || len(fin.Timers) != 1 || !fin.Timers[0].Wait {
		t.Fatalf("agentc run: exit %d %+v %v\n%s", r.code, fin, err, r.stderr)
	}
	due := fin.Timers[0].Due

	srv1, _, _ := startServeArgs(t, root, env, "naps.agent", "--open")
	if err := srv1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = srv1.Wait()
	if time.Now().After(due) {
		t.Log("the first server lived past the deadline: the restart is not what fired the timer")
	}

	srv2, _, banner := startServeArgs(t, root, env, "naps.agent", "--open")
	time.Sleep(time.Until(due) + 1500*time.Millisecond)
	if err := srv2.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = srv2.Wait()

	evs := events(t, root, env, "naps", "s")
	naps, finished := 0, 0
	var last *runtime.Event
	for _, e := range evs {
		if e.Kind == runtime.EventNodeFinished && e.Node == "nap" {
			naps++
			if e.Time.Before(due) {
				t.Errorf("the wait finished at %v, before its deadline %v", e.Time, due)
			}
		}
		if e.Kind == runtime.EventRunFinished {
			finished++
			last = e
		}
	}
	if naps != 1 || finished != 2 || last.Status != runtime.StatusCompleted || string(last.Output) != `"cat woke"` {
		t.Fatalf("wait finished %d times, %d run_finished, last %+v\nserver:\n%s", naps, finished, last, banner())
	}
}

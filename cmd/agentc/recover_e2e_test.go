package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const orphanSource = `workflow orphan "Marks, waits, finishes"

tool mark "Counts one side effect" {
  input  {}
  output string
  run    = http { url = "{env("MARK_URL")}/mark", method = POST }
  effect = side_effect
}

tool wait "Waits until the test lets it go" {
  input  {}
  output string
  run    = http { url = "{env("MARK_URL")}/wait" }
  effect = read_only
}

state S { q: string, log: list<string> = [] reduce append }

graph g(S) input q output log {
  node a = tool mark {} into log
  node b = tool wait {} into log
  start -> a
  a -> b
  b -> end
}
`

// TestServeResumesOrphansAfterKill: `agentc serve` on Pebble SIGKILLed
// while a run waits in its second node leaves that run running; the next
// `agentc serve` on the same data directory resumes it at start and
// finishes it, and the side effect of the first node ran once (issue 14,
// "the same on one node").
func TestServeResumesOrphansAfterKill(t *testing.T) {
	var marks, waits atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	waiting := make(chan struct{}, 4)
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mark":
			marks.Add(1)
			io.WriteString(w, "marked")
		case "/wait":
			if waits.Add(1) == 1 {
				waiting <- struct{}{}
				select { // the first call hangs until the server under test dies
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "waited")
		default:
			http.NotFound(w, r)
		}
	}))
	defer tools.Close()

	root, env := orphanProject(t, tools)

	// First server: start a run, kill the server while node b waits.
	srv1, addr1, _ := startServe(t, root, env)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr1+"/v1/chat/completions",
			strings.NewReader(`{"model":"orphan","messages":[{"role":"user","content":"go"}]}`))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-waiting:
	case <-time.After(time.Minute):
		t.Fatal("node b never called the wait tool")
	}
	if err := srv1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = srv1.Wait()
	releaseOnce.Do(func() { close(release) })

	// Second server: it resumes the run at start.
	srv2, addr2, banner := startServe(t, root, env)
	defer func() { _ = srv2.Process.Kill(); _ = srv2.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(metrics(t, addr2), `agentc_runs_finished_total{protocol="recover",status="completed"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphaned run did not finish after the restart; stderr so far:\n%s\nmetrics:\n%s", banner(), metrics(t, addr2))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(banner(), "resuming 1 run(s) the last shutdown cut off") {
		t.Errorf("the restart did not say it resumed the run:\n%s", banner())
	}
	if err := srv2.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = srv2.Wait()

	if n := marks.Load(); n != 1 {
		t.Errorf("the side effect ran %d times, want once", n)
	}
	if n := waits.Load(); n != 2 {
		t.Errorf("the wait tool was called %d times, want 2 (cut off, then again)", n)
	}
	r := runAgentc(t, root, env, "sessions", "list", "--app", "orphan", "--user", "u", "--json")
	if r.code != 0 {
		t.Fatalf("sessions list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sess := regexp.MustCompile(`"session":"([^"]+)"`).FindStringSubmatch(r.stdout)
	if sess == nil {
		t.Fatalf("no session in %s", r.stdout)
	}
	r = runAgentc(t, root, env, "sessions", "show", sess[1], "--app", "orphan", "--user", "u")
	if r.code != 0 || !strings.Contains(r.stdout, "completed") || strings.Contains(r.stdout, "running") {
		t.Errorf("after the restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The ledger: each node finished once (node a's step was not redone),
	// the run ended once as completed, and no event is lost or doubled.
	r = runAgentc(t, root, env, "sessions", "events", sess[1], "--app", "orphan", "--user", "u", "--json")
	if r.code != 0 {
		t.Fatalf("sessions events: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	count := map[string]int{}
	var seqs []int
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Kind, Node, Status string
			Seq                int
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		count[e.Kind+" "+e.Node+e.Status]++
		seqs = append(seqs, e.Seq)
	}
	for k, want := range map[string]int{"node_finished a": 1, "node_finished b": 1, "run_finished completed": 1, "tool_result a": 1} {
		if count[k] != want {
			t.Errorf("ledger has %d %q, want %d (all: %v)", count[k], k, want, count)
		}
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("ledger sequence %v has a gap or repeat at %d", seqs, i)
		}
	}
}

// orphanProject is a project folder holding orphan.agent, whose tools call
// the test server tools, and the environment to run agentc in it.
func orphanProject(t *testing.T, tools *httptest.Server) (root string, env []string) {
	t.Helper()
	root = newProject(t, "orphan.agent", orphanSource)
	return root, cleanEnv("MARK_URL="+tools.URL, "AGENTC_ALLOW_HOSTS="+tools.Listener.Addr().String(), "AGENTC_DATA="+filepath.Join(root, "data"))
}

// startServe starts `agentc serve orphan.agent` on a kernel-chosen port
// with token tok for user u, and returns it, its address, and its standard
// error so far.
func startServe(t *testing.T, root string, env []string) (*exec.Cmd, string, func() string) {
	t.Helper()
	return startServeFile(t, root, env, "orphan.agent")
}

// startServeFile is startServe for the program file in root.
func startServeFile(t *testing.T, root string, env []string, file string) (*exec.Cmd, string, func() string) {
	t.Helper()
	return startServeArgs(t, root, env, file, "--token", "tok=u")
}

// startServeArgs is startServe of `agentc serve ARGS --addr 127.0.0.1:0
// --log off`.
func startServeArgs(t *testing.T, root string, env []string, args ...string) (*exec.Cmd, string, func() string) {
	t.Helper()
	cmd := exec.Command(agentcBin(t), append(append([]string{"serve"}, args...), "--addr", "127.0.0.1:0", "--log", "off")...)
	cmd.Dir, cmd.Env = root, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var text strings.Builder
	addrC := make(chan string, 1)
	go func() { // ends when the server's stderr closes
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			text.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := regexp.MustCompile(`on http://(\S+) \(`).FindStringSubmatch(sc.Text()); m != nil {
				addrC <- m[1]
			}
		}
		close(addrC)
	}()
	banner := func() string { mu.Lock(); defer mu.Unlock(); return text.String() }
	select {
	case addr, ok := <-addrC:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("agentc serve exited:\n%s", banner())
		}
		return cmd, addr, banner
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("agentc serve did not start:\n%s", banner())
	}
	return nil, "", nil
}

func metrics(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "metrics: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

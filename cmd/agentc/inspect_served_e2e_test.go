package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const heldSource = `workflow held "A run that waits while agentc serve holds the store"

state S { q: string, a: string = "", ok: bool = false }

graph g(S) input q output a {
  node echo = set { a = "got {q}" }
  node ask  = interrupt "OK?" returns bool into ok
  start -> echo
  echo  -> ask
  ask   -> end
}
`

// TestInspectionWhileServing: while agentc serve holds a Pebble data
// directory, agentc sessions, checkpoints, artifacts and skills read it
// through the server's inspector API with the admin token serve wrote
// (0600) into the directory; once serve stops, the file is gone and they
// read the store directly (issue 14 item 5, spec/inspector.md).
func TestInspectionWhileServing(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "held.agent"), []byte(heldSource), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	env := cleanEnv("AGENTC_DATA=" + data)

	srv := exec.Command(agentcBin(t), "serve", "held.agent", "--addr", "127.0.0.1:0", "--token", "tok=u", "--log", "off")
	srv.Dir, srv.Env = root, env
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addrC := make(chan string, 1)
	go func() { // ends when the server's stderr closes
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`on http://(\S+) \(`).FindStringSubmatch(sc.Text()); m != nil {
				addrC <- m[1]
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrC:
	case <-time.After(time.Minute):
		t.Fatal("agentc serve did not start")
	}

	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"held","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentc-Session", "s1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	run := res.Header.Get("X-Agentc-Run")
	if res.StatusCode != 200 || res.Header.Get("X-Agentc-Status") != "interrupted" || run == "" {
		t.Fatalf("the run: %d %v", res.StatusCode, res.Header)
	}

	fi, err := os.Stat(filepath.Join(data, "serve.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("serve.json: %v %v; want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(filepath.Join(data, "serve.json"))
	var info struct {
		PID         int
		Addr, Token string
	}
	if json.Unmarshal(b, &info) != nil || info.PID != srv.Process.Pid || info.Addr != addr || len(info.Token) < 32 {
		t.Fatalf("serve.json = %s", b)
	}

	served := "held by agentc serve (pid "
	checks := []struct {
		args []string
		code int
		out  string // a substring of stdout
	}{
		{[]string{"sessions", "list", "--app", "held"}, 0, "u\ts1\t"},
		{[]string{"sessions", "show", "s1", "--app", "held", "--user", "u"}, 0, run + "\tg\tinterrupted"},
		{[]string{"sessions", "events", "s1", "--app", "held", "--user", "u", "--kind", "interrupt"}, 0, "\tinterrupt\t"},
		{[]string{"sessions", "show", "nope", "--app", "held", "--user", "u"}, 1, ""},
		{[]string{"checkpoints", "list", run}, 0, "\techo\t"},
		{[]string{"checkpoints", "show", run, "--json"}, 0, `"state":{"q":"hi","a":"got hi","ok":false}`},
		{[]string{"checkpoints", "show", run, "--step", "0", "--json"}, 0, `"frontier":["echo"]`},
		{[]string{"checkpoints", "fork", run, "--step", "1", "--set", `a="edited"`}, 0, "run_"},
		{[]string{"checkpoints", "fork", run, "--step", "1", "--set", `a=5`}, 2, ""},
		{[]string{"checkpoints", "list", "run_nope"}, 1, ""},
		{[]string{"artifacts", "list", "--app", "held", "--user", "u"}, 0, ""},
		{[]string{"skills", "pending"}, 0, ""},
		{[]string{"skills", "approve", "cand_nope"}, 1, ""},
	}
	for _, c := range checks {
		r := runAgentc(t, root, env, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout, c.out) || !strings.Contains(r.stderr, served) {
			t.Errorf("agentc %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), r.code, c.code, r.stdout, r.stderr)
		}
	}
	// The fork is in the session, as the server sees it.
	if r := runAgentc(t, root, env, "sessions", "show", "s1", "--app", "held", "--user", "u"); strings.Count(r.stdout, "\tg\tinterrupted") != 2 {
		t.Errorf("after the fork: %s", r.stdout)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve exited: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "serve.json")); !os.IsNotExist(err) {
		t.Errorf("serve.json after shutdown: %v", err)
	}
	r := runAgentc(t, root, env, "sessions", "show", "s1", "--app", "held", "--user", "u")
	if r.code != 0 || strings.Contains(r.stderr, served) || strings.Count(r.stdout, "\tg\tinterrupted") != 2 {
		t.Errorf("the store read directly after shutdown: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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

	srv, addr, _ := startServeFile(t, root, env, "held.agent")
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()

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

// TestUICommand: agentc ui serves a local store on a loopback address with
// the token it prints; it refuses other addresses (exit 2).
func TestUICommand(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "held.agent"), []byte(heldSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, "data"))
	if r := runAgentc(t, root, env, "run", "held.agent", "--input", "hi"); !strings.Contains(r.stderr, "is waiting") {
		t.Fatalf("agentc run: %d\n%s", r.code, r.stderr)
	}
	if r := runAgentc(t, root, env, "ui", "--addr", "0.0.0.0:0"); r.code != 2 || !strings.Contains(r.stderr, "loopback addresses only") {
		t.Errorf("agentc ui on 0.0.0.0: exit %d\n%s", r.code, r.stderr)
	}
	cmd := exec.Command(agentcBin(t), "ui")
	cmd.Dir, cmd.Env = root, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base, token, ok := strings.Cut(strings.TrimSpace(line), "/ui/#token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(token) < 32 {
		t.Fatalf("agentc ui printed %q", line)
	}
	get := func(tok, host string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/ui/api/v1/runs", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(res.Body).WriteTo(&b)
		return res.StatusCode, b.String()
	}
	if st, body := get(token, ""); st != 200 || !strings.Contains(body, `"app":"held","user":"cli"`) || !strings.Contains(body, `"status":"interrupted"`) {
		t.Errorf("runs with the token: %d %s", st, body)
	}
	if st, _ := get("", ""); st != 401 {
		t.Errorf("runs without the token: %d", st)
	}
	if st, _ := get(token, "evil.example:80"); st != 403 {
		t.Errorf("runs for another Host: %d", st)
	}
	if res, err := http.Get(base + "/ui/"); err != nil || res.StatusCode != 200 {
		t.Errorf("the page: %v %v", res, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("agentc ui after SIGTERM: %v", err)
	}
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/vm"
)

// declaredTools compiles src (as tools/t.agent, so that exec folders are
// relative to "tools") and binds its http and exec tools over cfg. env is
// the environment of env() in templates and of cfg.LookupEnv.
func declaredTools(t *testing.T, src string, cfg Config, env map[string]string) map[string]runtime.Tool {
	t.Helper()
	tools, err := bindSource(t, src, cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func bindSource(t *testing.T, src string, cfg Config, env map[string]string) (map[string]runtime.Tool, error) {
	t.Helper()
	prog := runtimetest.Compile(t, fstest.MapFS{"tools/t.agent": {Data: []byte(src)}}, "tools/t.agent")
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	funcs := vm.Builtins()
	funcs["env"] = func(args []types.Value) (types.Value, error) {
		if v, ok := lookup(args[0].Str()); ok {
			return types.MakeString(v), nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return types.MakeString(""), nil
	}
	m, err := vm.New(prog, funcs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LookupEnv = lookup
	into := map[string]runtime.Tool{}
	return into, BindDeclared(into, m, cfg)
}

func callTool(t *testing.T, tl runtime.Tool, args string) (json.RawMessage, error) {
	t.Helper()
	if tl == nil {
		t.Fatal("tool not bound")
	}
	return tl.Call(context.Background(), runtime.ToolRequest{CallID: "c1", Args: json.RawMessage(args)})
}

const httpSrc = `
type Status { service: string, up: bool, tags: list<string> }

tool status "Reads a service's status" {
  input  { service: string, verbose: bool = false }
  output Status
  run    = http {
    url     = "%[1]s/v1/status/{input.service}"
    headers = { Authorization: "Bearer {env("LOGS_TOKEN")}", "X-Api-Key": env("API_KEY"), "X-Verbose": "{input.verbose}" }
    query   = { fields: "all", q: "{input.service}" }
  }
  effect = read_only
}

tool text "Reads a text" {
  input  { path: string }
  run    = http { url = "%[1]s/{input.path}" }
  effect = read_only
}

tool restart "Restarts a service" {
  input  { service: string, force: bool = true }
  output json
  run    = http { method = "POST", url = "%[1]s/v1/restart/{input.service}" }
}

tool notify "Posts a note" {
  input  { service: string }
  output json
  run    = http { method = PUT, url = "%[1]s/v1/note", body = { text: "restarted {input.service}", n: 2 } }
  effect = idempotent
}

tool slow "Waits for a slow server" {
  input  { path: string }
  run    = http { url = "%[1]s/{input.path}", timeout = 150ms }
  effect = read_only
}

tool elsewhere "Reaches a host off the list" {
  input  { q: string }
  run    = http { url = "http://not-allowed.example/{input.q}" }
  effect = read_only
}
`

type seen struct {
	method, path, query, body string
	header                    http.Header
}

func TestHTTPTool(t *testing.T) {
	got := make(chan seen, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()}
		switch {
		case r.URL.Path == "/v1/status/wrongshape":
			io.WriteString(w, `{"service": "x", "up": "yes", "tags": []}`)
		case strings.HasPrefix(r.URL.Path, "/v1/status/"):
			fmt.Fprintf(w, `{"service": %q, "up": true, "tags": ["a"], "extra": 1}`, strings.TrimPrefix(r.URL.Path, "/v1/status/"))
		case r.URL.Path == "/plain":
			io.WriteString(w, "line one\nline two\n")
		case r.URL.Path == "/huge":
			w.Write([]byte(strings.Repeat("x", 5000)))
		case r.URL.Path == "/notjson":
			io.WriteString(w, "<html>oops</html>")
		case r.URL.Path == "/boom":
			http.Error(w, "database on fire", http.StatusInternalServerError)
		case r.URL.Path == "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case r.URL.Path == "/busy":
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case r.URL.Path == "/hang":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "http://not-allowed.example/x", http.StatusFound)
		default:
			io.WriteString(w, `{"ok": true}`)
		}
	}))
	defer srv.Close()
	env := map[string]string{"LOGS_TOKEN": "tok-SECRET-1", "API_KEY": "key-SECRET-2"}
	cfg := Config{AllowHosts: []string{"127.0.0.1:*"}, MaxBytes: 4096}
	tools := declaredTools(t, fmt.Sprintf(httpSrc, srv.URL), cfg, env)
	if len(tools) != 6 {
		t.Fatalf("bound %d tools", len(tools))
	}

	t.Run("get decodes the output type", func(t *testing.T) {
		out, err := callTool(t, tools["status"], `{"service": "billing"}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `{"service":"billing","up":true,"tags":["a"]}` {
			t.Errorf("out = %s", out)
		}
		s := <-got
		if s.method != "GET" || s.path != "/v1/status/billing" || s.body != "" {
			t.Errorf("request %+v", s)
		}
		if s.query != "fields=all&q=billing" {
			t.Errorf("query %q", s.query)
		}
		if s.header.Get("Authorization") != "Bearer tok-SECRET-1" || s.header.Get("X-Api-Key") != "key-SECRET-2" || s.header.Get("X-Verbose") != "false" {
			t.Errorf("headers %v", s.header)
		}
		if s.header.Get("Idempotency-Key") != "" {
			t.Errorf("read_only call sent an idempotency key")
		}
		if spec := tools["status"].Spec(); spec.Name != "status" || spec.Description != "Reads a service's status" || spec.InputSchema["type"] != "object" {
			t.Errorf("spec %+v", spec)
		}
		if tools["status"].Effect() != runtime.ReadOnly || tools["restart"].Effect() != runtime.SideEffect {
			t.Errorf("effects %v %v", tools["status"].Effect(), tools["restart"].Effect())
		}
	})
	t.Run("string output takes the body as is", func(t *testing.T) {
		out, err := callTool(t, tools["text"], `{"path": "plain"}`)
		<-got
		if err != nil || string(out) != `"line one\nline two\n"` {
			t.Fatalf("out = %s, %v", out, err)
		}
	})
	t.Run("post sends the input record with the idempotency key", func(t *testing.T) {
		out, err := tools["restart"].Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{"service":"api"}`), IdempotencyKey: "run_1/n/1"})
		if err != nil || string(out) != `{"ok":true}` {
			t.Fatalf("out = %s, %v", out, err)
		}
		s := <-got
		if s.method != "POST" || s.path != "/v1/restart/api" || s.body != `{"service":"api","force":true}` ||
			s.header.Get("Content-Type") != "application/json" || s.header.Get("Idempotency-Key") != "run_1/n/1" {
			t.Errorf("request %+v", s)
		}
	})
	t.Run("a body template", func(t *testing.T) {
		if _, err := callTool(t, tools["notify"], `{"service":"api"}`); err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.method != "PUT" || s.body != `{"n":2,"text":"restarted api"}` {
			t.Errorf("request %+v", s)
		}
	})
	t.Run("bad input is a tool_error before any request", func(t *testing.T) {
		_, err := callTool(t, tools["status"], `{"verbose": true}`)
		wantKind(t, err, vm.KindToolError, "invalid arguments")
		wantKind(t, err, vm.KindToolError, "service")
		_, err = callTool(t, tools["status"], `{"service": 3}`)
		wantKind(t, err, vm.KindToolError, "invalid arguments")
		if len(got) != 0 {
			t.Errorf("a request was sent")
		}
	})
	t.Run("statuses", func(t *testing.T) {
		for _, c := range []struct {
			path string
			kind vm.ErrorKind
			sub  string
		}{
			{"boom", vm.KindUnavailable, "HTTP 500: database on fire"},
			{"missing", vm.KindToolError, "HTTP 404: no such thing"},
			{"busy", vm.KindRateLimit, "HTTP 429"},
			{"huge", vm.KindToolError, "exceeds the 4096-byte cap"},
			{"redirect", vm.KindToolError, `redirect to host "not-allowed.example" is not allowed`},
		} {
			_, err := callTool(t, tools["text"], `{"path": "`+c.path+`"}`)
			<-got
			wantKind(t, err, c.kind, c.sub)
		}
		_, err := callTool(t, tools["status"], `{"service": "wrongshape"}`)
		<-got
		wantKind(t, err, vm.KindInvalidOutput, "response does not fit Status: $.up: want bool")
		// a record output needs JSON
		tl := declaredTools(t, fmt.Sprintf(`tool j "j" { input { p: string } output json run = http { url = "%s/{input.p}" } effect = read_only }`, srv.URL), cfg, nil)
		_, err = callTool(t, tl["j"], `{"p": "notjson"}`)
		<-got
		wantKind(t, err, vm.KindInvalidOutput, "invalid JSON")
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := callTool(t, tools["slow"], `{"path": "hang"}`)
		<-got
		wantKind(t, err, vm.KindTimeout, "no response within 150ms")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("host allowlist", func(t *testing.T) {
		_, err := callTool(t, tools["elsewhere"], `{"q": "x"}`)
		wantKind(t, err, vm.KindToolError, `host "not-allowed.example" is not allowed`)
		none := declaredTools(t, fmt.Sprintf(httpSrc, srv.URL), Config{}, env)
		_, err = callTool(t, none["status"], `{"service": "billing"}`)
		wantKind(t, err, vm.KindToolError, `host "127.0.0.1" is not allowed`)
	})
	t.Run("secrets stay out of errors", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		src := `tool leak "l" { input { p: string } run = http { url = "` + dead + `/{input.p}?key={env("API_KEY")}" headers = { "X-Api-Key": env("API_KEY") } } effect = read_only }`
		tl := declaredTools(t, src, cfg, env)
		_, err = callTool(t, tl["leak"], `{"p": "x"}`)
		wantKind(t, err, vm.KindUnavailable, "127.0.0.1")
		for _, e := range []error{err} {
			if strings.Contains(e.Error(), "SECRET") {
				t.Errorf("error leaks a secret: %v", e)
			}
		}
	})
	t.Run("an unset env() header fails the load", func(t *testing.T) {
		_, err := bindSource(t, fmt.Sprintf(httpSrc, srv.URL), cfg, map[string]string{"LOGS_TOKEN": "t"})
		if err == nil || !strings.Contains(err.Error(), "tool status") || !strings.Contains(err.Error(), "API_KEY is not set") {
			t.Errorf("err = %v", err)
		}
	})
}

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

const execSrc = `
type Count { name: string, n: int }

tool count "Counts" {
  input  { name: string, n: int = 2 }
  output Count
  run    = exec { command = ["./count.sh", "{input.name}", "{input.n}"], dir = "bin" }
  effect = read_only
}

tool upper "Upper-cases standard input" {
  input  { text: string }
  run    = exec { command = ["tr", "a-z", "A-Z"], stdin = "{input.text}" }
  effect = read_only
}

tool envdump "Prints its environment" {
  input  {}
  run    = exec { command = ["env"], env = { TOKEN: env("DEPLOY_TOKEN"), REGION: "eu-west-1" } }
  effect = read_only
}

tool fail "Fails" {
  input  {}
  run    = exec { command = ["./bin/fail.sh"] }
}

tool deploy "Deploys once per key" {
  input  {}
  run    = exec { command = ["env"], env = { AGENTC_IDEMPOTENCY_KEY: "forged" } }
  effect = side_effect
}

tool hang "Hangs" {
  input  {}
  run    = exec { command = ["./bin/hang.sh"], timeout = 300ms }
}

tool forker "Forks a child that keeps standard output open" {
  input  { pidfile: string }
  run    = exec { command = ["./bin/fork.sh", "{input.pidfile}"] }
}

tool flood "Writes without end" {
  input  {}
  run    = exec { command = ["yes"] }
  effect = read_only
}

tool escape "Leaves the workspace" {
  input  { d: string }
  run    = exec { command = ["pwd"], dir = "{input.d}" }
  effect = read_only
}

tool nothing "Runs a missing program" {
  input  {}
  run    = exec { command = ["./bin/no-such-program"] }
}
`

func TestExecTool(t *testing.T) {
	ws := t.TempDir()
	bin := filepath.Join(ws, "tools", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, bin, "count.sh", `printf '{"name": "%s", "n": %s}' "$1" "$2"`+"\n")
	writeScript(t, bin, "fail.sh", "echo 'some detail' >&2\necho 'the real reason' >&2\nexit 3\n")
	writeScript(t, bin, "hang.sh", "sleep 30\n")
	// The child sleeps with standard output still open, and outlives the script.
	writeScript(t, bin, "fork.sh", "sleep 30 &\necho $! > \"$1\"\necho started\n")
	env := map[string]string{"DEPLOY_TOKEN": "dt-SECRET", "PATH": os.Getenv("PATH"), "HOME": "/root", "LEAK": "x"}
	cfg := Config{Workspace: ws, MaxBytes: 1 << 16}
	tools := declaredTools(t, execSrc, cfg, env)

	t.Run("argv and JSON output", func(t *testing.T) {
		out, err := callTool(t, tools["count"], `{"name": "a b; rm -rf /"}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `{"name":"a b; rm -rf /","n":2}` {
			t.Errorf("out = %s", out)
		}
	})
	t.Run("stdin and text output", func(t *testing.T) {
		out, err := callTool(t, tools["upper"], `{"text": "hello"}`)
		if err != nil || string(out) != `"HELLO"` {
			t.Fatalf("out = %s, %v", out, err)
		}
	})
	t.Run("scrubbed environment", func(t *testing.T) {
		out, err := callTool(t, tools["envdump"], `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		json.Unmarshal(out, &s)
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			k, v, _ := strings.Cut(l, "=")
			names = append(names, k)
			if k == "TOKEN" && v != "dt-SECRET" {
				t.Errorf("TOKEN = %q", v)
			}
		}
		if strings.Join(names, ",") != "PATH,REGION,TOKEN" && strings.Join(names, ",") != "PATH,PWD,REGION,TOKEN" {
			t.Errorf("environment %q", s)
		}
	})
	t.Run("idempotency key in the environment", func(t *testing.T) {
		envOf := func(tl runtime.Tool, key string) map[string]string {
			out, err := tl.Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{}`), IdempotencyKey: key})
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(jsonString(out)), "\n") {
				k, v, _ := strings.Cut(l, "=")
				vars[k] = v
			}
			return vars
		}
		if got := envOf(tools["deploy"], "run_1/deploy/1")[IdempotencyEnv]; got != "run_1/deploy/1" {
			t.Errorf("%s = %q, want the runtime's key (a declared entry must not forge it)", IdempotencyEnv, got)
		}
		if got, ok := envOf(tools["deploy"], "")[IdempotencyEnv]; ok {
			t.Errorf("%s = %q for a call without a key", IdempotencyEnv, got)
		}
		if got, ok := envOf(tools["envdump"], "")[IdempotencyEnv]; ok {
			t.Errorf("read-only call: %s = %q", IdempotencyEnv, got)
		}
	})
	t.Run("non-zero exit quotes standard error", func(t *testing.T) {
		_, err := callTool(t, tools["fail"], `{}`)
		wantKind(t, err, vm.KindToolError, "exit status 3: some detail the real reason")
	})
	t.Run("a hanging command is killed at its timeout", func(t *testing.T) {
		start := time.Now()
		_, err := callTool(t, tools["hang"], `{}`)
		wantKind(t, err, vm.KindTimeout, "no result within 300ms (process group killed)")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("a forked child does not outlive the call", func(t *testing.T) {
		// Unconfined: the pid file is outside the project, and this checks
		// the process-group kill (confined commands also get a PID
		// namespace: exectool_test.go).
		unconfined := declaredTools(t, execSrc, Config{Workspace: ws, MaxBytes: 1 << 16, UnconfinedExec: true}, env)
		pidfile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		out, err := callTool(t, unconfined["forker"], `{"pidfile": "`+pidfile+`"}`)
		if err != nil || string(out) != `"started\n"` {
			t.Fatalf("out = %s, %v", out, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s", d)
		}
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("child %d still running", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		start := time.Now()
		_, err := callTool(t, tools["flood"], `{}`)
		wantKind(t, err, vm.KindToolError, "standard output exceeds the 65536-byte cap")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("working folder is confined", func(t *testing.T) {
		out, err := callTool(t, tools["escape"], `{"d": "bin"}`)
		if err != nil || !strings.HasSuffix(strings.TrimSpace(jsonString(out)), filepath.Join("tools", "bin")) {
			t.Errorf("pwd = %s, %v", out, err)
		}
		_, err = callTool(t, tools["escape"], `{"d": "../.."}`)
		wantKind(t, err, vm.KindToolError, "leaves the workspace")
		_, err = callTool(t, tools["escape"], `{"d": "/etc"}`)
		wantKind(t, err, vm.KindToolError, "absolute folders are refused")
		none := declaredTools(t, execSrc, Config{}, env)
		_, err = callTool(t, none["escape"], `{"d": "."}`)
		wantKind(t, err, vm.KindToolError, "no workspace configured")
	})
	t.Run("missing program", func(t *testing.T) {
		_, err := callTool(t, tools["nothing"], `{}`)
		wantKind(t, err, vm.KindToolError, "not found")
	})
	t.Run("bad input", func(t *testing.T) {
		_, err := callTool(t, tools["count"], `{"n": "x"}`)
		wantKind(t, err, vm.KindToolError, "invalid arguments")
	})
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func jsonString(b []byte) string {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return string(b)
	}
	return s
}

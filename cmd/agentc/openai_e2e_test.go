package main

// End-to-end tests of the agentc binary (the test binary re-executed as
// "agentc" by testscript.Main, with its real exit codes and signals):
// examples/support through the OpenAI-compatible provider against a fake
// endpoint, with its builtin and declared tools running for real against
// local servers; and Ctrl-C of a slow run, then its resumption.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/openaitest"
	"github.com/agentc/agentc/runtime"
)

// agentcBin is the agentc command testscript.Main put on PATH.
func agentcBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("agentc")
	if err != nil {
		t.Fatalf("agentc is not on PATH (testscript.Main sets it up): %v", err)
	}
	return p
}

// cleanEnv is a minimal environment (PATH, HOME) plus extra: nothing of the
// developer's OPENAI_* or AGENTC_* reaches the child.
func cleanEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return append(env, extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

func runAgentc(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentcBin(t), args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentc %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// events reads a session's ledger through `agentc sessions events --json`.
func events(t *testing.T, dir string, env []string, app, session string) []*runtime.Event {
	t.Helper()
	r := runAgentc(t, dir, env, "sessions", "events", session, "--app", app, "--json")
	if r.code != 0 {
		t.Fatalf("sessions events: exit %d\n%s", r.code, r.stderr)
	}
	var out []*runtime.Event
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		e, err := runtime.DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// supportProject copies examples/support and examples/common into a fresh
// project, points log_dump at logsURL and drops the test blocks (whose
// replays would otherwise stand in for the tools).
func supportProject(t *testing.T, logsURL string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyTree(t, "../../examples/support", filepath.Join(root, "support"))
	copyTree(t, "../../examples/common", filepath.Join(root, "common"))
	file := filepath.Join(root, "support", "support.agent")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if i := strings.Index(src, "\ntest \""); i >= 0 {
		src = src[:i+1]
	}
	if !strings.Contains(src, "https://logs.internal") {
		t.Fatal("support.agent no longer calls https://logs.internal")
	}
	src = strings.ReplaceAll(src, "https://logs.internal", logsURL)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// afterLastUser is the messages of a request after its last user message:
// the current agent call's turns.
func afterLastUser(r openaitest.Request) []openaitest.Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i+1:]
		}
	}
	return r.Messages
}

// TestSupportThroughOpenAI runs examples/support's investigate graph with
// the OpenAI provider against a fake endpoint. The triage agent takes two
// tool-call rounds: first cert_scan (builtin tls_chain, against a local TLS
// server) and log_dump with arguments that do not fit its input (the model
// gets a tool error back), then log_dump again (the declared http tool,
// against a local server, with its bearer token from the environment).
// Then a second run continues the session.
func TestSupportThroughOpenAI(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	_, portText, _ := net.SplitHostPort(tlsSrv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)

	logAuth := make(chan string, 4)
	logs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logAuth <- r.Header.Get("Authorization")
		if r.URL.Path != "/v1/frontend/errors" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "03:12:09 x509: certificate signed by unknown authority (host 127.0.0.1)\n")
	}))
	defer logs.Close()

	const (
		first  = "127.0.0.1 fails with x509: certificate signed by unknown authority"
		second = "Is it fixed now?"
		answer = `{"verdict": "network", "hosts": []}`
	)
	fake := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		user := r.Last("user").Content
		if !strings.HasPrefix(user, "Triage: ") {
			return openaitest.Reply{Text: "ok"}
		}
		if strings.Contains(user, second) {
			return openaitest.Reply{Text: answer}
		}
		switch n := len(afterLastUser(r)); {
		case n == 0: // round 1
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{
				{ID: "call_scan", Name: "cert_scan", Arguments: fmt.Sprintf(`{"host": "127.0.0.1", "port": %d}`, port)},
				{ID: "call_logs_bad", Name: "log_dump", Arguments: `{"svc": "frontend"}`},
			}}
		case n == 3: // assistant + two tool results: round 2
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{
				{ID: "call_logs", Name: "log_dump", Arguments: `{"service": "frontend"}`},
			}}
		default:
			return openaitest.Reply{Text: answer, Chunks: 3}
		}
	})
	defer fake.Close()

	root := supportProject(t, logs.URL)
	env := cleanEnv("OPENAI_API_KEY=sk-fake-0123456789", "OPENAI_BASE_URL="+fake.BaseURL,
		"AGENTC_ALLOW_HOSTS="+strings.TrimPrefix(logs.URL, "http://"), "AGENTC_DATA="+filepath.Join(root, ".agentc"), "LOGS_TOKEN=logs-token-1")

	r := runAgentc(t, root, env, "run", "support/support.agent", "--session", "s1", "--input", first)
	if r.code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stderr, "\n") {
		if (strings.Contains(line, "no implementation") || strings.Contains(line, "replay")) &&
			(strings.Contains(line, "cert_scan") || strings.Contains(line, "log_dump")) {
			t.Errorf("tools did not run for real: %s", line)
		}
	}
	if got := <-logAuth; got != "Bearer logs-token-1" {
		t.Errorf("log_dump sent Authorization %q", got)
	}

	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for _, q := range reqs {
		if q.Header.Get("Authorization") != "Bearer sk-fake-0123456789" || !q.Stream || q.Model != "gpt-4o-mini" {
			t.Errorf("request %d: auth %q stream %v model %q", q.N, q.Header.Get("Authorization"), q.Stream, q.Model)
		}
		// The user's first session hides nothing: the recall tools are
		// left out of its requests (spec/context.md, "Recall tools").
		if tools := strings.Join(q.Tools, ","); !strings.HasPrefix(tools, "cert_scan,log_dump") || strings.Contains(tools, "session_") {
			t.Errorf("request %d offers tools %v", q.N, q.Tools)
		}
	}
	if u := reqs[0].Last("user").Content; u != "Triage: "+first {
		t.Errorf("first prompt %q", u)
	}
	// Round 2 sees both results: the chain, and the invalid arguments as a
	// tool error (the runtime validates a model's arguments before Call).
	results := map[string]string{}
	for _, m := range afterLastUser(reqs[1]) {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	leaf := tlsSrv.Certificate()
	if !strings.Contains(results["call_scan"], leaf.Subject.String()) || !strings.Contains(results["call_scan"], leaf.NotAfter.UTC().Format(time.RFC3339)) {
		t.Errorf("cert_scan result %q, leaf %s", results["call_scan"], leaf.Subject)
	}
	if bad := results["call_logs_bad"]; !strings.HasPrefix(bad, "error (tool_error): invalid arguments for tool log_dump") || !strings.Contains(bad, "svc") {
		t.Errorf("bad log_dump call answered %q", bad)
	}
	var logText string
	for _, m := range afterLastUser(reqs[2]) {
		if m.Role == "tool" && m.ToolCallID == "call_logs" {
			logText = m.Content
		}
	}
	if !strings.Contains(logText, "x509: certificate signed by unknown authority") {
		t.Errorf("log_dump result %q", logText)
	}

	// The ledger: input, the calls and their results, the answer.
	evs := events(t, root, env, "support", "s1")
	var kinds []string
	var toolResults []*runtime.Event
	var input, finalText string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
		switch e.Kind {
		case runtime.EventInput:
			input = e.Text
		case runtime.EventToolResult:
			toolResults = append(toolResults, e)
		case runtime.EventModelResponse:
			if len(e.ToolCalls) == 0 {
				finalText = e.Text
			}
		}
	}
	if input != first {
		t.Errorf("input event %q", input)
	}
	if finalText != answer {
		t.Errorf("final answer %q", finalText)
	}
	if len(toolResults) != 3 {
		t.Fatalf("%d tool results in the ledger: %v", len(toolResults), kinds)
	}
	byID := map[string]*runtime.Event{}
	for _, e := range toolResults {
		byID[e.ToolCall.ID] = e
	}
	if e := byID["call_logs_bad"]; e == nil || e.Error == nil || e.Error.Kind != "tool_error" {
		t.Errorf("bad call's result %+v", e)
	}
	if e := byID["call_scan"]; e == nil || e.Error != nil || !strings.Contains(string(e.Result), leaf.Subject.String()) {
		t.Errorf("cert_scan's result %+v", e)
	}
	if e := byID["call_logs"]; e == nil || e.Error != nil || !strings.Contains(string(e.Result), "x509") {
		t.Errorf("log_dump's result %+v", e)
	}
	if last := evs[len(evs)-1]; last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusCompleted {
		t.Errorf("last event %s %s", last.Kind, last.Status)
	}

	// A second run continues the session: its request carries the first
	// exchange (the session's history) before the new prompt.
	r = runAgentc(t, root, env, "run", "support/support.agent", "--session", "s1", "--input", second)
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	reqs = fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	next := reqs[3]
	if next.Last("user").Content != "Triage: "+second {
		t.Fatalf("second prompt %q", next.Last("user").Content)
	}
	var history strings.Builder
	for _, m := range next.Messages {
		fmt.Fprintf(&history, "%s: %s\n", m.Role, m.Content)
	}
	if !strings.Contains(history.String(), first) || !strings.Contains(history.String(), answer) {
		t.Errorf("the second run's request does not carry the first exchange:\n%s", history.String())
	}
	if n := len(events(t, root, env, "support", "s1")); n <= len(evs) {
		t.Errorf("ledger has %d events after the second run, %d before", n, len(evs))
	}
}

const slowSource = `workflow slow "Three naps"

tool nap "Sleeps" {
  input  { s: string }
  run    = exec { command = ["sleep", "{input.s}"] }
  effect = read_only
}

tool long_nap "Sleeps for $LONG_NAP seconds" {
  input  {}
  run    = exec { command = ["sleep", "{env("LONG_NAP", "0")}"] }
  effect = read_only
}

state S { q: string, log: list<string> = [] reduce append }

graph naps(S) input q output log {
  node a = tool nap { s = "0" } into log
  node b = tool long_nap {} into log
  node c = tool nap { s = "0" } into log
  start -> a
  a -> b
  b -> c
  c -> end
}
`

// TestCtrlC interrupts `agentc run` with SIGINT while a node runs: exit
// 130, the session records the run as canceled with the first node's step
// committed, and `--resume` finishes it.
func TestCtrlC(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "slow.agent"), []byte(slowSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("AGENTC_DATA="+filepath.Join(root, ".agentc"), "LONG_NAP=30")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentcBin(t), "run", "slow.agent", "--input", "go", "--session", "s", "--json")
	cmd.Dir, cmd.Env = root, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until node b's tool runs, then press Ctrl-C.
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
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The live stream may stop short of run_finished: the Runner stops
	// delivering to a caller whose context is done, and the CLI cancels the
	// context it passed to Run (see the report); the ledger is checked below.
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Ctrl-C took %s: the 30s nap was not killed", d)
	}
	// The session is consistent: the run is canceled, node a's step is in
	// the ledger, node b's is not, and the ledger ends with run_finished.
	r := runAgentc(t, root, env, "sessions", "show", "s", "--app", "slow")
	if r.code != 0 || !strings.Contains(r.stdout, runID) || !strings.Contains(r.stdout, "canceled") {
		t.Fatalf("sessions show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	evs := events(t, root, env, "slow", "s")
	finishedA, finishedB := false, false
	for _, e := range evs {
		if e.Kind == runtime.EventNodeFinished {
			finishedA = finishedA || e.Node == "a"
			finishedB = finishedB || e.Node == "b"
		}
	}
	if !finishedA || finishedB {
		t.Errorf("ledger after Ctrl-C: a finished %v, b finished %v", finishedA, finishedB)
	}
	if last := evs[len(evs)-1]; last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusCanceled {
		t.Errorf("ledger ends with %s %s", last.Kind, last.Status)
	}

	// Resume with a short nap (the same program: only the environment of
	// the exec tool changes): b re-runs (read_only) and the run completes.
	r = runAgentc(t, root, cleanEnv("AGENTC_DATA="+filepath.Join(root, ".agentc"), "LONG_NAP=0"), "run", "slow.agent", "--resume", runID, "--value", "null", "--json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fin, err := runtime.DecodeEvent([]byte(lines[len(lines)-1]))
	if err != nil || fin.Status != runtime.StatusCompleted || string(fin.Output) != `["","",""]` {
		t.Fatalf("resumed run finished %+v (%v)", fin, err)
	}
}

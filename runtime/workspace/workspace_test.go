package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

var ctx = context.Background()

func newWS(t *testing.T) *Workspace {
	t.Helper()
	ws, err := Open(filepath.Join(t.TempDir(), "ws"))
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestConfineRefusesTraversal(t *testing.T) {
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", `a\b`, "a/..", "x\x00y"} {
		if _, err := Confine(p); !errors.Is(err, ErrOutside) {
			t.Errorf("Confine(%q) = %v, want ErrOutside", p, err)
		}
	}
	for p, want := range map[string]string{"": ".", ".": ".", "a/b": "a/b", "a//b/": "a/b", "./a": "a"} {
		if got, err := Confine(p); err != nil || got != want {
			t.Errorf("Confine(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestFilesStayInside(t *testing.T) {
	ws := newWS(t)
	outside := filepath.Join(filepath.Dir(ws.Root), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteFile("notes/a.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	b, size, err := ws.ReadFile("notes/a.txt", 3)
	if err != nil || string(b) != "hel" || size != 5 {
		t.Fatalf("read = %q %d %v", b, size, err)
	}
	ents, err := ws.List("notes")
	if err != nil || len(ents) != 1 || ents[0].Name != "a.txt" || ents[0].Size != 5 {
		t.Fatalf("list = %+v, %v", ents, err)
	}
	// A symlink out of the workspace (as a command could create) is refused
	// for reading, listing and as a working directory; writing replaces it.
	if err := os.Symlink(outside, filepath.Join(ws.Root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(ws.Root), filepath.Join(ws.Root, "up")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadFile("link.txt", 100); !errors.Is(err, ErrOutside) {
		t.Errorf("read through symlink: %v", err)
	}
	if _, err := ws.List("up"); !errors.Is(err, ErrOutside) {
		t.Errorf("list through symlink: %v", err)
	}
	if _, err := ws.Dir("up"); !errors.Is(err, ErrOutside) {
		t.Errorf("dir through symlink: %v", err)
	}
	if err := ws.WriteFile("up/secret.txt", []byte("x")); !errors.Is(err, ErrOutside) {
		t.Errorf("write through symlinked dir: %v", err)
	}
	if err := ws.WriteFile("link.txt", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("the file outside was changed: %q", b)
	}
	for _, p := range []string{"../secret.txt", "/etc/passwd"} {
		if _, _, err := ws.ReadFile(p, 10); !errors.Is(err, ErrOutside) {
			t.Errorf("read %q: %v", p, err)
		}
		if err := ws.WriteFile(p, nil); !errors.Is(err, ErrOutside) {
			t.Errorf("write %q: %v", p, err)
		}
	}
	if _, err := (&Manager{Base: t.TempDir()}).ForRun("../run"); err == nil {
		t.Error("a run id with .. was accepted")
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestTimeoutKillsTheWholeTree(t *testing.T) {
	ws := newWS(t)
	// The script forks a sleeping child, records its pid, and hangs.
	script := "sleep 300 & echo $! > child.pid; echo started; sleep 300\n"
	if err := ws.WriteFile("hang.sh", []byte(script)); err != nil {
		t.Fatal(err)
	}
	// Unconfined, so that $! is a pid of this PID namespace: the process
	// group kill is under test (isolation_test.go has the confined case).
	ex := &Local{NoConfinement: true}
	start := time.Now()
	res, err := ex.Run(ctx, ws, Command{Argv: []string{"sh", "hang.sh"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode == 0 || !strings.Contains(res.Stdout, "started") {
		t.Errorf("result = %+v", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	b, _, err := ws.ReadFile("child.pid", 100)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // reaped by init after SIGKILL
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the forked child %d survived the timeout", pid)
	}
}

func TestExitKillsBackgroundChildren(t *testing.T) {
	ws := newWS(t)
	res, err := (&Local{NoConfinement: true}).Run(ctx, ws, Command{Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid"}, Timeout: 5 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	b, _, _ := ws.ReadFile("bg.pid", 100)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for pid > 0 && alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 || alive(pid) {
		t.Errorf("background child %d outlived the command", pid)
	}
}

func TestOutputFloodIsCapped(t *testing.T) {
	ws := newWS(t)
	ex := &Local{MaxBytes: 1000}
	res, err := ex.Run(ctx, ws, Command{Argv: []string{"sh", "-c", "yes flood | head -c 5000000; yes err | head -c 300000 >&2"}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.StdoutTruncated || !res.StderrTruncated || len(res.Stdout) > 1100 || len(res.Stderr) > 1100 {
		t.Errorf("stdout %d bytes (truncated %v), stderr %d (truncated %v)", len(res.Stdout), res.StdoutTruncated, len(res.Stderr), res.StderrTruncated)
	}
	if !strings.HasPrefix(res.Stdout, "flood\nflood") || !strings.Contains(res.Stdout, "[output truncated: 4999000 more bytes]") {
		t.Errorf("stdout = %q", res.Stdout[max(0, len(res.Stdout)-80):])
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("AGENTC_TEST_SECRET", "hunter2")
	ws := newWS(t)
	res, err := (&Local{}).Run(ctx, ws, Command{Argv: []string{"env"}, Env: map[string]string{"GREETING": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "hunter2") || !strings.Contains(res.Stdout, "GREETING=hi") || !strings.Contains(res.Stdout, "HOME="+ws.Root) {
		t.Errorf("env = %s", res.Stdout)
	}
	if _, err := (&Local{}).Run(ctx, ws, Command{Argv: []string{"env"}, Env: map[string]string{"LD_PRELOAD": "x"}}); err == nil {
		t.Error("LD_PRELOAD accepted")
	}
	if _, err := (&Local{}).Run(ctx, ws, Command{Argv: []string{"true"}, Dir: "../"}); !errors.Is(err, ErrOutside) {
		t.Errorf("cwd outside: %v", err)
	}
}

func TestNetworkIsolationWhenAvailable(t *testing.T) {
	// Unconfined: Landlock would refuse /proc (isolation_test.go checks
	// the confined command's network).
	ex := &Local{NoConfinement: true}
	ws := newWS(t)
	res, err := ex.Run(ctx, ws, Command{Argv: []string{"cat", "/proc/net/dev"}})
	if err != nil {
		t.Fatal(err)
	}
	devices := 0
	for _, line := range strings.Split(res.Stdout, "\n") {
		if strings.Contains(line, ":") {
			devices++
		}
	}
	// With a network namespace only loopback is there; without one the
	// executor must say so.
	if ex.Isolation().Network && devices != 1 {
		t.Errorf("isolated, but %d devices:\n%s", devices, res.Stdout)
	}
	if off := (&Local{NoNetworkIsolation: true}); off.Isolation().Network {
		t.Error("NoNetworkIsolation still reports isolation")
	}
}

func TestToolsMatchTheUniverse(t *testing.T) {
	u := stdlib.Universe()
	for name, tl := range (&Tools{}).All() {
		bt := u.Tool(name)
		if bt == nil {
			t.Fatalf("%s is not a universe tool", name)
		}
		if int(tl.Effect()) != int(bt.Effect) || tl.Spec().Description != bt.Doc {
			t.Errorf("%s: effect %d / universe %d", name, tl.Effect(), bt.Effect)
		}
	}
}

func call(t *testing.T, tl runtime.Tool, req runtime.ToolRequest, args string) (json.RawMessage, error) {
	t.Helper()
	req.Args = json.RawMessage(args)
	return tl.Call(ctx, req)
}

func TestWorkspaceTools(t *testing.T) {
	st := memory.New()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	arts := artifact.New(st, func() time.Time { return now })
	tools := (&Tools{Workspaces: &Manager{Base: t.TempDir()}, Exec: &Local{}, Artifacts: arts}).All()
	req := runtime.ToolRequest{Run: "run_1", Session: store.SessionKey{App: "app", User: "ann", Session: "s1"}}
	if _, err := call(t, tools["workspace_write"], req, `{"path":"out/report.md","content":"# Report\n"}`); err != nil {
		t.Fatal(err)
	}
	out, err := call(t, tools["workspace_exec"], req, `{"command":["sh","-c","cat report.md; echo done >&2; exit 3"],"cwd":"out","timeout":"5s"}`)
	if err != nil {
		t.Fatal(err)
	}
	var ex ExecOutput
	if err := json.Unmarshal(out, &ex); err != nil || ex.ExitCode != 3 || ex.Stdout != "# Report\n" || ex.Stderr != "done\n" || ex.TimedOut {
		t.Errorf("exec = %s, %v", out, err)
	}
	if out, err := call(t, tools["workspace_read"], req, `{"path":"out/report.md","limit":3}`); err != nil || !strings.HasPrefix(string(out), `"# R\n[truncated`) {
		t.Errorf("read = %s, %v", out, err)
	}
	if out, err := call(t, tools["workspace_list"], req, `{}`); err != nil || string(out) != `[{"name":"out","dir":true,"size":0}]` {
		t.Errorf("list = %s, %v", out, err)
	}
	for i := 1; i <= 2; i++ {
		out, err := call(t, tools["workspace_save_artifact"], req, `{"path":"out/report.md","name":"report.md"}`)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"name":"report.md","revision":` + strconv.Itoa(i) + `,"size":9}`; string(out) != want {
			t.Errorf("save %d = %s, want %s", i, out, want)
		}
	}
	a, err := arts.Get(ctx, artifact.Key{App: "app", User: "ann", Session: "s1", Name: "report.md"}, 2)
	if err != nil || string(a.Data) != "# Report\n" || a.MimeType != "text/markdown" || a.Run != "run_1" {
		t.Errorf("artifact = %+v, %v", a, err)
	}
	// Traversal is a tool error the model sees.
	for name, args := range map[string]string{
		"workspace_read":          `{"path":"../../etc/passwd"}`,
		"workspace_write":         `{"path":"/tmp/x","content":"x"}`,
		"workspace_exec":          `{"command":["true"],"cwd":".."}`,
		"workspace_save_artifact": `{"path":"../x"}`,
	} {
		_, err := call(t, tools[name], req, args)
		var ve *vm.Error
		if !errors.As(err, &ve) || ve.Kind != vm.KindToolError || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s %s: %v", name, args, err)
		}
	}
}

// A run's workspace is removed when the run ends for good, kept while it
// may continue; the workspace tools hand the Runner their Manager.
func TestRemovedWhenTheRunEnds(t *testing.T) {
	m := &Manager{Base: t.TempDir()}
	for _, tc := range []struct {
		status runtime.RunStatus
		kept   bool
	}{
		{runtime.StatusCompleted, false}, {runtime.StatusFailed, false}, {runtime.StatusCanceled, false},
		{runtime.StatusInterrupted, true}, {runtime.StatusNeedsDecision, true}, {runtime.StatusRunning, true},
	} {
		run := "run_" + string(tc.status)
		ws, err := m.ForRun(run)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteFile("a/b/c.txt", []byte("x")); err != nil {
			t.Fatal(err)
		}
		// A command may leave a directory the owner cannot write or enter.
		if err := os.Chmod(filepath.Join(ws.Root, "a", "b"), 0o500); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws.Root, "a"), 0o000); err != nil {
			t.Fatal(err)
		}
		if err := m.RunEnded(ctx, run, tc.status); err != nil {
			t.Fatalf("%s: %v", tc.status, err)
		}
		_, err = os.Lstat(ws.Root)
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s: workspace kept = %v, want %v (%v)", tc.status, kept, tc.kept, err)
		}
		os.Chmod(filepath.Join(ws.Root, "a"), 0o700) // let TempDir clean up
	}
	if err := m.RunEnded(ctx, "../x", runtime.StatusCompleted); err == nil {
		t.Error("a bad run id was accepted")
	}
	// Removing a workspace that was never made is no error.
	if err := m.RunEnded(ctx, "run_none", runtime.StatusCompleted); err != nil {
		t.Error(err)
	}
	for name, tool := range (&Tools{Workspaces: m, Exec: &Local{}}).All() {
		rs, ok := tool.(runtime.RunScoped)
		if !ok || rs.RunEndObserver() != runtime.RunEndObserver(m) {
			t.Errorf("%s does not hand the Runner its Manager", name)
		}
	}
	for name, tool := range (&Tools{Exec: &Local{}}).All() {
		if o := tool.(runtime.RunScoped).RunEndObserver(); o != nil {
			t.Errorf("%s without a Manager: observer %v", name, o)
		}
	}
}

// At start, the workspaces of runs that ended for good while nobody
// observed them are swept; those of runs that may continue stay, and so do
// those of runs the store does not have unless the base is the store's
// alone.
func TestSweepRuns(t *testing.T) {
	runs := map[string]runtime.RunStatus{
		"run_done": runtime.StatusCompleted, "run_failed": runtime.StatusFailed, "run_canceled": runtime.StatusCanceled,
		"run_waiting": runtime.StatusInterrupted, "run_deciding": runtime.StatusNeedsDecision, "run_cut": runtime.StatusRunning,
	}
	lookup := func(_ context.Context, run string) (runtime.RunStatus, bool, error) {
		if run == "run_broken" {
			return "", false, errors.New("store down")
		}
		s, ok := runs[run]
		return s, ok, nil
	}
	for _, exclusive := range []bool{false, true} {
		m := &Manager{Base: t.TempDir(), Exclusive: exclusive}
		all := []string{"run_done", "run_failed", "run_canceled", "run_waiting", "run_deciding", "run_cut", "run_other_store", "run_broken"}
		for _, run := range all {
			if _, err := m.ForRun(run); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(m.Base, "not_a_workspace"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := m.SweepRuns(ctx, lookup)
		if err == nil || !strings.Contains(err.Error(), "run_broken") || !strings.Contains(err.Error(), "store down") {
			t.Errorf("exclusive=%v: sweep error %v, want the failed lookup", exclusive, err)
		}
		var left []string
		ents, _ := os.ReadDir(m.Base)
		for _, e := range ents {
			left = append(left, e.Name())
		}
		want := []string{"not_a_workspace", "run_broken", "run_cut", "run_deciding", "run_other_store", "run_waiting"}
		if exclusive {
			want = []string{"not_a_workspace", "run_broken", "run_cut", "run_deciding", "run_waiting"}
		}
		if strings.Join(left, ",") != strings.Join(want, ",") {
			t.Errorf("exclusive=%v: left %v, want %v", exclusive, left, want)
		}
	}
	// A base that does not exist yet is not created.
	m := &Manager{Base: filepath.Join(t.TempDir(), "none")}
	if err := m.SweepRuns(ctx, lookup); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(m.Base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sweep made the base: %v", err)
	}
}

package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/workspace/jail"
)

// confinement returns the machine's confinement, failing the test when
// AGENTC_REQUIRE_CONFINEMENT is set (CI: .ci/run) and something is missing.
// Without it, a test that needs confinement checks the honest report
// instead and says so.
func confinement(t *testing.T) jail.Report {
	t.Helper()
	r := Confinement()
	t.Logf("confinement: %s", r)
	full := r.Confined() && r.Namespaces && (os.Geteuid() != 0 || r.UnprivilegedUID)
	if !full && os.Getenv("AGENTC_REQUIRE_CONFINEMENT") != "" {
		t.Fatalf("AGENTC_REQUIRE_CONFINEMENT is set, but confinement is incomplete: %s", r)
	}
	return r
}

// tenancy is a served setup: a workspace base under the system temp folder
// (as DefaultBase), a data directory elsewhere with a store file, and the
// workspace tools over both.
type tenancy struct {
	mgr   *Manager
	data  string
	tools map[string]runtime.Tool
}

func newTenancy(t *testing.T) *tenancy {
	t.Helper()
	base, err := os.MkdirTemp("", "agentc-ws-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "000005.sst"), []byte("STORE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	mgr := &Manager{Base: base}
	arts := artifact.New(memory.New(), func() time.Time { return time.Unix(0, 0) })
	return &tenancy{mgr: mgr, data: data, tools: (&Tools{Workspaces: mgr, Exec: &Local{}, Artifacts: arts}).All()}
}

func (tn *tenancy) call(t *testing.T, run, tool string, args any) (json.RawMessage, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return tn.tools[tool].Call(ctx, runtime.ToolRequest{Run: run, Args: b,
		Session: store.SessionKey{App: "app", User: run, Session: "s"}})
}

func (tn *tenancy) exec(t *testing.T, run string, script string) ExecOutput {
	t.Helper()
	out, err := tn.call(t, run, "workspace_exec", map[string]any{"command": []string{"sh", "-c", script}})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	var res ExecOutput
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTenancyWorkspaceExec(t *testing.T) {
	r := confinement(t)
	tn := newTenancy(t)
	if _, err := tn.call(t, "alice", "workspace_write", map[string]any{"path": "alice.txt", "content": "ALICE-SECRET"}); err != nil {
		t.Fatal(err)
	}
	if res := tn.exec(t, "alice", "cat alice.txt; echo mine > own.txt; cat own.txt"); res.ExitCode != 0 || res.Stdout != "ALICE-SECRET"+"mine\n" {
		t.Fatalf("alice in her own workspace: %+v", res)
	}
	aliceWS, _ := tn.mgr.ForRun("alice")
	environ := fmt.Sprintf("/proc/%d/environ", os.Getpid())
	attacks := map[string]string{
		"another run's workspace, relative": "cat ../alice/alice.txt",
		"another run's workspace, glob":     "cat ../*/alice.txt",
		"another run's workspace, absolute": "cat " + filepath.Join(aliceWS.Root, "alice.txt"),
		"the workspace base":                "ls -a ..",
		"the data directory":                "cat " + filepath.Join(tn.data, "000005.sst"),
		"the server's environment":          "cat " + environ,
		"the server's command line":         fmt.Sprintf("cat /proc/%d/cmdline", os.Getpid()),
		"a hard link to a store file":       "ln " + filepath.Join(tn.data, "000005.sst") + " h && cat h",
		"a hard link to another run's file": "ln " + filepath.Join(aliceWS.Root, "alice.txt") + " h && cat h",
		"a symlink to another run's file":   "ln -s " + filepath.Join(aliceWS.Root, "alice.txt") + " s; cat s",
		"a symlink to the data directory":   "ln -s " + tn.data + " d; cat d/000005.sst",
		"the server's root folder":          "ls /root",
		"another process's files via /proc": "cat /proc/1/environ",
	}
	if !r.Confined() {
		// The refusal path: an unconfined executor must say so, and
		// serve refuses it for several users (cmd/agentc).
		if (&Local{}).Isolation().Filesystem {
			t.Fatal("Isolation().Filesystem is true without Landlock")
		}
		t.Skipf("no Landlock here (%s): only the honest report is checked", r)
	}
	if !(&Local{}).Isolation().Filesystem || (&Local{NoConfinement: true}).Isolation().Filesystem {
		t.Error("Isolation().Filesystem does not follow the confinement")
	}
	for name, script := range attacks {
		res := tn.exec(t, "bob", script)
		leak := strings.Contains(res.Stdout, "ALICE-SECRET") || strings.Contains(res.Stdout, "STORE-SECRET") ||
			strings.Contains(res.Stdout, "PATH=") || strings.Contains(res.Stdout, "alice") || strings.Contains(res.Stdout, os.Args[0])
		if leak || (res.ExitCode == 0 && name != "a symlink to another run's file" && name != "a symlink to the data directory") {
			t.Errorf("%s: %q got exit %d, stdout %q", name, script, res.ExitCode, res.Stdout)
		}
	}
	// What bob's commands left behind does not get past the file tools.
	for _, p := range []string{"s", "d/000005.sst"} {
		if _, err := tn.call(t, "bob", "workspace_read", map[string]any{"path": p}); err == nil {
			t.Errorf("workspace_read %s: no error", p)
		}
	}
}

func TestConfinedNetworkAndProcessTree(t *testing.T) {
	r := confinement(t)
	if !r.Confined() || !r.Namespaces {
		t.Skipf("no Landlock or namespaces here (%s)", r)
	}
	tn := newTenancy(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if _, err := os.Stat("/bin/bash"); err == nil {
		out, err := tn.call(t, "bob", "workspace_exec", map[string]any{"command": []string{"bash", "-c", "echo hi > /dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && echo connected"}})
		if err != nil || strings.Contains(string(out), "connected") {
			t.Errorf("reached the host's loopback: %s, %v", out, err)
		}
	}
	// A child that leaves the process group (setsid) still dies with the
	// command: the PID namespace ends with it. No process is left with its
	// working folder in the workspace.
	res := tn.exec(t, "bob", "setsid sleep 300 >/dev/null 2>&1 < /dev/null & sleep 300 >/dev/null 2>&1 & echo started")
	if res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Fatalf("%+v", res)
	}
	ws, _ := tn.mgr.ForRun("bob")
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := inWorkspace(ws.Root)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived the command: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.UnprivilegedUID {
		res := tn.exec(t, "bob", "id -u")
		if strings.TrimSpace(res.Stdout) == "0" || strings.TrimSpace(res.Stdout) != strconv.Itoa(jail.SandboxUID(ws.Root)) {
			t.Errorf("uid = %q, want %d", res.Stdout, jail.SandboxUID(ws.Root))
		}
	}
}

// inWorkspace lists the live processes whose working folder is dir.
func inWorkspace(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && cwd == dir {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
				s := string(b)
				if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] == 'Z' {
					continue
				}
			}
			out = append(out, pid)
		}
	}
	return out
}

// Hard links and symlinks made in a workspace by anyone (an unconfined
// command, another process) do not get past the file tools.
func TestFileToolsRefuseLinks(t *testing.T) {
	tn := newTenancy(t)
	ws, err := tn.mgr.ForRun("bob")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(tn.data, "000005.sst")
	if err := os.Link(secret, filepath.Join(ws.Root, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws.Root, "soft.txt")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hard.txt", "soft.txt"} {
		for _, tool := range []string{"workspace_read", "workspace_save_artifact"} {
			out, err := tn.call(t, "bob", tool, map[string]any{"path": p})
			if err == nil || strings.Contains(string(out), "STORE-SECRET") {
				t.Errorf("%s %s = %s, %v", tool, p, out, err)
			}
		}
	}
	if _, _, err := ws.ReadFile("hard.txt", 100); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("ReadFile of a hard link: %v", err)
	}
}

// A folder swapped with a symlink to an outside folder, and a file swapped
// with a symlink to an outside file, while workspace_read runs never yield
// the outside files.
func TestWorkspaceReadSymlinkSwapRace(t *testing.T) {
	tn := newTenancy(t)
	ws, _ := tn.mgr.ForRun("bob")
	for _, p := range []string{"inside.txt", "d/000005.sst"} {
		if err := ws.WriteFile(p, []byte("inside")); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // owned: stopped by cancel, waited on through done
		defer close(done)
		d, real, tmp := filepath.Join(ws.Root, "d"), filepath.Join(ws.Root, "d.real"), filepath.Join(ws.Root, "tmp")
		for i := 0; cctx.Err() == nil; i++ {
			_ = os.Remove(tmp)
			if i%2 == 0 {
				_ = os.Rename(d, real)
				_ = os.Symlink(tn.data, tmp)
				_ = os.Rename(tmp, d)
				_ = os.Symlink(filepath.Join(tn.data, "000005.sst"), tmp)
			} else {
				_ = os.Remove(d)
				_ = os.Rename(real, d)
				_ = os.Symlink("inside.txt", tmp)
			}
			_ = os.Rename(tmp, filepath.Join(ws.Root, "x"))
		}
	}()
	inside, refused := 0, 0
	for i := 0; i < 10000; i++ {
		path := "d/000005.sst"
		if i%2 == 1 {
			path = "x"
		}
		out, err := tn.call(t, "bob", "workspace_read", map[string]any{"path": path})
		switch {
		case err != nil:
			refused++
		case strings.Contains(string(out), "STORE-SECRET"):
			cancel()
			<-done
			t.Fatalf("iteration %d: workspace_read %s read the outside file", i, path)
		default:
			inside++
		}
	}
	cancel()
	<-done
	t.Logf("10000 reads during swaps: %d inside, %d refused, 0 outside", inside, refused)
}

func TestWorkspacesAreOutsideTheDataDir(t *testing.T) {
	m := &Manager{}
	ws, err := m.ForRun("run_test_default_base")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Remove("run_test_default_base")
	if want := DefaultBase(); filepath.Dir(ws.Root) != want {
		t.Errorf("workspace %s is not under %s", ws.Root, want)
	}
	st, err := os.Stat(filepath.Dir(ws.Root))
	if err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("base mode %v, %v", st.Mode(), err)
	}
	st, err = os.Stat(ws.Root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("workspace mode %v, %v", st.Mode(), err)
	}
	if err := m.Remove("run_test_default_base"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace still there after Remove: %v", err)
	}
	// A base that is a symlink (another user's trap in /tmp) is refused.
	dir := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "base")); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Manager{Base: filepath.Join(dir, "base")}).ForRun("r"); err == nil {
		t.Error("a symlinked base was accepted")
	}
}

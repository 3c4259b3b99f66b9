package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/workspace/jail"
	"github.com/agentc/agentc/vm"
)

const peekSrc = `
tool peek "Prints a file" {
  input  { path: string }
  run    = exec { command = ["cat", "{input.path}"] }
  effect = read_only
}

tool touch "Creates a file" {
  input  { path: string }
  run    = exec { command = ["touch", "{input.path}"] }
}
`

// A confined exec tool reads the project, but not the data directory in
// it, nor files outside it, nor this process's environment.
func TestExecToolTenancy(t *testing.T) {
	r := jail.Probe()
	t.Logf("confinement: %s", r)
	if !r.Confined() && os.Getenv("AGENTC_REQUIRE_CONFINEMENT") != "" {
		t.Fatalf("AGENTC_REQUIRE_CONFINEMENT is set, but exec tools cannot be confined: %s", r)
	}
	project := t.TempDir()
	outside := t.TempDir()
	for path, body := range map[string]string{
		"tools/readme.txt":    "project file",
		"notes.txt":           "next to the data dir",
		".agentc/000005.sst":  "STORE-SECRET",
		"state/data/MANIFEST": "HIDDEN-SECRET",
	} {
		p := filepath.Join(project, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "other.txt"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/usr/bin:/bin"}
	cfg := Config{Workspace: project, MaxBytes: 1 << 16, ExecHide: []string{filepath.Join(project, "state", "data")}}
	tools := declaredTools(t, peekSrc, cfg, env)

	for path, want := range map[string]string{"readme.txt": "project file", "../notes.txt": "next to the data dir"} {
		out, err := callTool(t, tools["peek"], fmt.Sprintf(`{"path": %q}`, path))
		if err != nil || jsonString(out) != want {
			t.Errorf("peek %s = %s, %v", path, out, err)
		}
	}
	if !r.Confined() {
		t.Skipf("no Landlock here (%s): exec tools run unconfined, which agentc serve refuses for several users", r)
	}
	for _, path := range []string{
		"../.agentc/000005.sst",
		filepath.Join(project, "state", "data", "MANIFEST"),
		filepath.Join(outside, "other.txt"),
		fmt.Sprintf("/proc/%d/environ", os.Getpid()),
		"/proc/self/environ",
		"/root/.bashrc",
	} {
		out, err := callTool(t, tools["peek"], fmt.Sprintf(`{"path": %q}`, path))
		if err == nil || strings.Contains(string(out), "SECRET") {
			t.Errorf("peek %s = %s, %v", path, out, err)
			continue
		}
		wantKind(t, err, vm.KindToolError, "exit status")
	}
	// The tool writes in the project (git apply does), nowhere else.
	if _, err := callTool(t, tools["touch"], `{"path": "new.txt"}`); err != nil {
		t.Errorf("touch in the project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(project, "tools", "new.txt")); err != nil {
		t.Error(err)
	}
	for _, p := range []string{filepath.Join(outside, "new.txt"), "../.agentc/new.sst", filepath.Join(project, "state", "data", "new")} {
		if _, err := callTool(t, tools["touch"], fmt.Sprintf(`{"path": %q}`, p)); err == nil {
			t.Errorf("touch %s: no error", p)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a confined exec tool wrote outside the project")
	}
	// Opting out runs the old way.
	cfg.UnconfinedExec = true
	loose := declaredTools(t, peekSrc, cfg, env)
	if out, err := callTool(t, loose["peek"], fmt.Sprintf(`{"path": %q}`, filepath.Join(outside, "other.txt"))); err != nil || jsonString(out) != "OUTSIDE-SECRET" {
		t.Errorf("unconfined peek = %s, %v", out, err)
	}
}

// A folder swapped with a symlink to an outside folder, and a file
// swapped with a symlink to an outside file, while read_file runs never
// yield the outside files (os.Root resolves every component at the moment
// of the access; resolving first and opening the resolved path later, the
// old way, leaked).
func TestReadFileSymlinkSwapRace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	for p, body := range map[string]string{
		filepath.Join(outside, "f"): "OUTSIDE-SECRET", filepath.Join(ws, "d", "f"): "inside", filepath.Join(ws, "inside.txt"): "inside",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Workspace: ws}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned: stopped by cancel, waited on through done
		defer close(done)
		swapper(ctx, ws, outside)
	}()
	inside, refused := 0, 0
	for i := 0; i < 10000; i++ {
		path := "d/f"
		if i%2 == 1 {
			path = "x"
		}
		out, err := call(t, cfg, "read_file", map[string]any{"path": path})
		switch {
		case err != nil:
			refused++
		case strings.Contains(string(out), "OUTSIDE"):
			cancel()
			<-done
			t.Fatalf("iteration %d: read_file %s read the outside file", i, path)
		default:
			inside++
		}
	}
	cancel()
	<-done
	t.Logf("10000 reads during swaps: %d inside, %d refused, 0 outside", inside, refused)
}

// swapper flips ws/d between the real folder and a symlink to outside, and
// ws/x between a symlink to inside.txt and one to outside/f, until ctx ends.
func swapper(ctx context.Context, ws, outside string) {
	d, real, tmp := filepath.Join(ws, "d"), filepath.Join(ws, "d.real"), filepath.Join(ws, "tmp")
	for i := 0; ctx.Err() == nil; i++ {
		_ = os.Remove(tmp)
		if i%2 == 0 {
			_ = os.Rename(d, real)
			_ = os.Symlink(outside, tmp)
			_ = os.Rename(tmp, d)
			_ = os.Symlink(filepath.Join(outside, "f"), tmp)
		} else {
			_ = os.Remove(d)
			_ = os.Rename(real, d)
			_ = os.Symlink("inside.txt", tmp)
		}
		_ = os.Rename(tmp, filepath.Join(ws, "x"))
	}
	if _, err := os.Lstat(real); err == nil {
		_ = os.Remove(d)
		_ = os.Rename(real, d)
	}
}

func TestReadFileRefusesHardLinks(t *testing.T) {
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(ws, "h.txt")); err != nil {
		t.Fatal(err)
	}
	out, err := call(t, Config{Workspace: ws}, "read_file", map[string]any{"path": "h.txt"})
	if strings.Contains(string(out), "SECRET") {
		t.Fatalf("read %s", out)
	}
	wantKind(t, err, vm.KindToolError, "2 hard links: refused")
	var s string
	_ = json.Unmarshal(out, &s)
}

package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// report returns Probe's report; AGENTC_REQUIRE_CONFINEMENT (CI) makes
// anything missing a failure.
func report(t *testing.T) Report {
	t.Helper()
	r := Probe()
	t.Logf("confinement: %s", r)
	if os.Getenv("AGENTC_REQUIRE_CONFINEMENT") != "" && (!r.Confined() || !r.Namespaces || os.Geteuid() == 0 && !r.UnprivilegedUID) {
		t.Fatalf("AGENTC_REQUIRE_CONFINEMENT is set, but confinement is incomplete: %s", r)
	}
	return r
}

func run(t *testing.T, s Spec, dir string, script string) (string, error) {
	t.Helper()
	c := exec.Command("/bin/sh", "-c", script)
	c.Env = []string{"PATH=/usr/bin:/bin"}
	c.Dir = dir
	if err := Wrap(c, s); err != nil {
		t.Fatal(err)
	}
	out, err := c.CombinedOutput()
	return string(out), err
}

func TestWrapConfines(t *testing.T) {
	r := report(t)
	if !r.Confined() {
		c := exec.Command("/bin/true")
		if err := Wrap(c, Spec{}); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Wrap without Landlock = %v, want ErrUnavailable", err)
		}
		t.Skipf("no Landlock here (%s): only the refusal is checked", r)
	}
	base, err := os.MkdirTemp("", "agentc-jail-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	ws, project, outside := filepath.Join(base, "ws"), filepath.Join(base, "project"), filepath.Join(base, "outside")
	for p, body := range map[string]string{
		filepath.Join(project, "tool.txt"):              "PROJECT",
		filepath.Join(project, "data", "store.sst"):     "STORE-SECRET",
		filepath.Join(project, "sub", "x", "keep.txt"):  "KEEP",
		filepath.Join(project, "sub", "hidden", "h.db"): "HIDDEN-SECRET",
		filepath.Join(outside, "secret.txt"):            "OUTSIDE-SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	s := Spec{RW: []string{ws}, RO: []string{project}, Hide: []string{filepath.Join(project, "data"), filepath.Join(project, "sub", "hidden")}}
	if r.UnprivilegedUID {
		s.UID = SandboxUID(ws)
		if err := os.Chown(ws, s.UID, s.UID); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		script string
		ok     bool
		want   string
	}{
		{"echo hi > f && cat f", true, "hi"},
		{"cat " + filepath.Join(project, "tool.txt"), true, "PROJECT"},
		{"cat " + filepath.Join(project, "sub", "x", "keep.txt"), true, "KEEP"},
		{"echo x > " + filepath.Join(project, "new.txt"), false, ""},
		{"cat " + filepath.Join(project, "data", "store.sst"), false, ""},
		{"cat " + filepath.Join(project, "sub", "hidden", "h.db"), false, ""},
		{"cat " + filepath.Join(outside, "secret.txt"), false, ""},
		{"ln " + filepath.Join(outside, "secret.txt") + " l && cat l", false, ""},
		{fmt.Sprintf("cat /proc/%d/environ", os.Getpid()), false, ""},
		{"ls /proc", false, ""},
		{fmt.Sprintf("kill -0 %d", os.Getpid()), false, ""},
		{"ls " + base, false, ""},
	} {
		out, err := run(t, s, ws, tc.script)
		if tc.ok != (err == nil) || !strings.Contains(out, tc.want) || strings.Contains(out, "SECRET") || strings.Contains(out, "PATH=") {
			t.Errorf("%s: %q, %v", tc.script, out, err)
		}
	}
	if r.UnprivilegedUID {
		if out, err := run(t, s, ws, "id -u"); err != nil || strings.TrimSpace(out) != fmt.Sprint(s.UID) {
			t.Errorf("id -u = %q, %v; want %d", out, err, s.UID)
		}
	}
}

func TestSandboxUIDRange(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 100; i++ {
		u := SandboxUID(fmt.Sprintf("/tmp/agentc-ws-0/run_%d", i))
		if u < 1<<20 || u >= 1<<20+1<<16 {
			t.Fatalf("uid %d out of range", u)
		}
		seen[u] = true
	}
	if len(seen) < 95 {
		t.Errorf("only %d distinct uids for 100 workspaces", len(seen))
	}
}

package jail

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, s Spec, dir string, argv ...string) (string, error) {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = []string{"PATH=/usr/bin:/bin"}
	c.Dir = dir
	if err := Wrap(c, s); err != nil {
		t.Fatal(err)
	}
	out, err := c.CombinedOutput()
	return string(out), err
}

func TestSmoke(t *testing.T) {
	r := Probe()
	t.Logf("confinement: %s", r)
	if !r.Confined() {
		t.Skip("no landlock")
	}
	ws := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644)
	if r.UnprivilegedUID {
		os.Chmod(filepath.Dir(ws), 0o711)
		os.Chmod(ws, 0o777)
	}
	out, err := run(t, Spec{RW: []string{ws}, UID: SandboxUID(ws)}, ws, "sh", "-c", "id; echo hi > f; cat f; cat "+filepath.Join(outside, "secret")+"; cat /proc/1/environ | head -c 20; ls /proc | head -3")
	t.Logf("%s %v", out, err)
	if strings.Contains(out, "s3cret") {
		t.Fatal("leak")
	}
}

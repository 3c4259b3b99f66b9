package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/stdlib"
)

// TestCheck: the files of a directory checked together, an error
// positioned in its file; no .agent file, and one that does not read, are
// the command's errors.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(filepath.Join(dir, "w", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"w/hello.agent": hello, "w/broken.agent": broken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Run{Open: func(file string) (*project.Project, error) { return project.OpenFor(file, stdlib.Universe()) }}
	ds, srcs, err := r.Check([]string{"w"})
	if err != nil || len(ds) == 0 || len(srcs) == 0 {
		t.Fatalf("check w: %d diagnostics, %d sources, %v", len(ds), len(srcs), err)
	}
	for _, d := range ds {
		if !strings.HasSuffix(d.Subject.File, "broken.agent") {
			t.Errorf("diagnostic outside broken.agent: %v", d)
		}
	}
	if _, _, err := r.Check([]string{"w/empty"}); err == nil || !strings.Contains(err.Error(), "no .agent files in [w/empty]") {
		t.Errorf("empty directory: %v", err)
	}
	if _, _, err := r.Check([]string{"missing.agent"}); err == nil {
		t.Error("a file that does not read: no error")
	}
}

package compiler

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
)

// goldenDir holds the disassembly of every example root, one file per root
// (testdata/golden/support/support.disasm for examples/support/support.agent);
// `go test ./compiler -run TestDisasmGolden -update` rewrites them.
const goldenDir = "testdata/golden"

func goldenPath(root string) string {
	return filepath.Join(goldenDir, filepath.FromSlash(strings.TrimSuffix(strings.TrimPrefix(root, "examples/"), ".agent")+".disasm"))
}

func TestDisasmGolden(t *testing.T) {
	want := map[string]bool{}
	for _, root := range exampleRoots(t) {
		path := goldenPath(root)
		want[path] = true
		prog, _, _ := compileFiles(t, repoFS, root)
		got := bytecode.Disasm(prog)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./compiler -run TestDisasmGolden -update)", root, err)
			continue
		}
		if string(old) != got {
			t.Errorf("%s is stale; run go test ./compiler -run TestDisasmGolden -update and review the diff", path)
		}
	}
	// A golden file without an example is left over from a removed one.
	err := filepath.WalkDir(goldenDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || want[p] {
			return err
		}
		if *update {
			return os.Remove(p)
		}
		t.Errorf("%s belongs to no example root; run with -update to remove it", p)
		return nil
	})
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Error(err)
	}
}

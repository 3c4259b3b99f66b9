package assemble

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteLocks: new and changed locks are written, equal ones left,
// ones already written for another file skipped, in name order.
func TestWriteLocks(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "same.mcp.lock"), []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{"done.mcp.lock": true}
	got, err := WriteLocks(root, map[string][]byte{"same.mcp.lock": []byte("same"), "b.mcp.lock": []byte("new"), "done.mcp.lock": []byte("x")}, done)
	if err != nil {
		t.Fatal(err)
	}
	want := []LockWrite{{Name: "b.mcp.lock", Changed: true}, {Name: "same.mcp.lock"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || !done["b.mcp.lock"] {
		t.Fatalf("writes %+v, done %v", got, done)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.mcp.lock")); string(b) != "new" {
		t.Errorf("b.mcp.lock = %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "done.mcp.lock")); !os.IsNotExist(err) {
		t.Errorf("a lock already written was written again: %v", err)
	}
}

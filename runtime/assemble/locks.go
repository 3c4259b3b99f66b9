package assemble

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// LockWrite is one lock file WriteLocks kept: its name (relative to the
// root) and whether its bytes changed.
type LockWrite struct {
	Name    string
	Changed bool
}

// WriteLocks writes the lock files LockMCP returned under root, in name
// order, and records them in done: one already in done (written for
// another file of the same run) is skipped, and one whose bytes are
// already on disk is left as it is (Changed false). It stops at the first
// file it cannot write.
func WriteLocks(root string, locks map[string][]byte, done map[string]bool) ([]LockWrite, error) {
	var out []LockWrite
	for _, name := range slices.Sorted(maps.Keys(locks)) {
		if done[name] {
			continue
		}
		done[name] = true
		path := filepath.Join(root, filepath.FromSlash(name))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, locks[name]) {
			out = append(out, LockWrite{Name: name})
			continue
		}
		if err := os.WriteFile(path, locks[name], 0o644); err != nil {
			return out, fmt.Errorf("write %s: %w", name, err)
		}
		out = append(out, LockWrite{Name: name, Changed: true})
	}
	return out, nil
}

package pebble

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/agentc/agentc/runtime/store"
)

// ownerFile sits beside Pebble's LOCK and names the process holding it, so
// that a refused open can say who holds the directory.
const ownerFile = "LOCK.owner"

// lockDir takes Pebble's directory lock and records this process as its
// owner. A held directory is store.ErrLocked naming the directory and, when
// LOCK.owner is readable, the holder.
func lockDir(dir string) (*pebble.Lock, error) {
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) { // the lock file could not be created: not a conflict
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err != nil {
		holder := "another process"
		if pid, host, ok := readOwner(dir); ok {
			holder = fmt.Sprintf("pid %d on host %s", pid, host)
		}
		return nil, fmt.Errorf("open store: data directory %s is locked by %s (%v): %w", dir, holder, err, store.ErrLocked)
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("pid=%d\nhost=%s\n", os.Getpid(), host)
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: record the lock owner: %w", dir, err), lock.Close())
	}
	return lock, nil
}

// unlockDir removes the owner record, then releases the lock.
func unlockDir(dir string, lock *pebble.Lock) error {
	err := os.Remove(filepath.Join(dir, ownerFile))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, lock.Close())
}

// readOwner reads LOCK.owner.
func readOwner(dir string) (pid int, host string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, "", false
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "pid":
			pid, _ = strconv.Atoi(v)
		case "host":
			host = v
		}
	}
	return pid, host, pid > 0
}

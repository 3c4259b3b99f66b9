// Package workspace gives each run a private working directory outside the
// data dir (DefaultBase) and runs commands in it through an Executor,
// confined to it where the kernel allows (package jail; spec/skills.md,
// "Workspaces and the executor").
//
// Every path a caller names is relative to the workspace root. Confine
// refuses absolute paths and ".." outright, and every file access goes
// through an os.Root, which refuses symlinks that lead out of the
// workspace at the time of the access. This is the one path-confinement
// rule of the runtime's file tools; builtin tools that confine paths to a
// root can use Confine and Open too.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/workspace/jail"
)

// ErrOutside is wrapped by every refusal of a path that leaves the workspace.
var ErrOutside = errors.New("path leaves the workspace")

// Confine checks a workspace-relative, slash-separated path and returns it
// cleaned ("." for the root). Absolute paths, volume names, backslashes and
// ".." parts are refused with ErrOutside.
func Confine(rel string) (string, error) {
	if rel == "" || rel == "." {
		return ".", nil
	}
	if strings.HasPrefix(rel, "/") || strings.Contains(rel, `\`) || filepath.VolumeName(rel) != "" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%q: absolute paths are refused: %w", rel, ErrOutside)
	}
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q: NUL in path: %w", rel, ErrOutside)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: \"..\" is refused: %w", rel, ErrOutside)
		}
	}
	return path.Clean(rel), nil
}

// Workspace is one directory that commands and file tools are confined to.
type Workspace struct {
	Root string // absolute
}

// Open returns the workspace at dir, creating it.
func Open(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Workspace{Root: abs}, nil
}

// root opens the workspace as an os.Root; every access through it refuses
// to leave the directory, symlinks included.
func (w *Workspace) root() (*os.Root, error) {
	r, err := os.OpenRoot(w.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", w.Root, err)
	}
	return r, nil
}

// open confines rel (Confine) and opens the workspace's root: every access
// to p goes through r, which the caller closes.
func (w *Workspace) open(rel string) (r *os.Root, p string, err error) {
	if p, err = Confine(rel); err != nil {
		return nil, "", err
	}
	if r, err = w.root(); err != nil {
		return nil, "", err
	}
	return r, p, nil
}

// wrapRootErr marks os.Root's escape refusals with ErrOutside.
func wrapRootErr(rel string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes") {
		return fmt.Errorf("%q: %w", rel, ErrOutside)
	}
	return fmt.Errorf("%q: %w", rel, err)
}

// WriteFile writes data to rel, creating parent directories.
func (w *Workspace) WriteFile(rel string, data []byte) error {
	r, p, err := w.open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	if p == "." {
		return fmt.Errorf("%q: not a file name", rel)
	}
	if dir := path.Dir(p); dir != "." {
		if err := r.MkdirAll(dir, 0o700); err != nil {
			return wrapRootErr(rel, err)
		}
	}
	// A symlink at the target is replaced, never followed.
	if st, err := r.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if err := r.Remove(p); err != nil {
			return wrapRootErr(rel, err)
		}
	}
	return wrapRootErr(rel, r.WriteFile(p, data, 0o600))
}

// ReadFile reads at most max bytes of rel; truncated reports whether the
// file is longer.
func (w *Workspace) ReadFile(rel string, max int64) (data []byte, size int64, err error) {
	r, p, err := w.open(rel)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	f, err := r.Open(p)
	if err != nil {
		return nil, 0, wrapRootErr(rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, wrapRootErr(rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%q is not a regular file", rel)
	}
	if n := jail.Links(st); n > 1 {
		// A hard link names a file that may live anywhere on the device
		// (the store's, another run's): refused, whatever its content.
		return nil, 0, fmt.Errorf("%q has %d hard links: refused: %w", rel, n, ErrOutside)
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, 0, wrapRootErr(rel, err)
	}
	return b, st.Size(), nil
}

// Entry is one directory entry of List.
type Entry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
}

// MaxEntries caps List.
const MaxEntries = 1000

// List lists the directory rel (ReadEntries).
func (w *Workspace) List(rel string) ([]Entry, error) {
	r, p, err := w.open(rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(p)
	if err != nil {
		return nil, wrapRootErr(rel, err)
	}
	defer f.Close()
	out, err := ReadEntries(f)
	if err != nil {
		return nil, wrapRootErr(rel, err)
	}
	return out, nil
}

// ReadEntries reads the entries of the open directory d, sorted by name
// (at most MaxEntries); a size is given for a regular file only.
func ReadEntries(d *os.File) ([]Entry, error) {
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	out := []Entry{}
	for _, e := range ents[:min(len(ents), MaxEntries)] {
		en := Entry{Name: e.Name(), Dir: e.IsDir()}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			en.Size = info.Size()
		}
		out = append(out, en)
	}
	return out, nil
}

// Dir resolves rel to a directory inside the workspace and returns its
// absolute path (for a command's working directory).
func (w *Workspace) Dir(rel string) (string, error) {
	r, p, err := w.open(rel)
	if err != nil {
		return "", err
	}
	defer r.Close()
	st, err := r.Stat(p)
	if err != nil {
		return "", wrapRootErr(rel, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%q is not a directory", rel)
	}
	// Stat through the root refused symlinks out; the real path is inside.
	real, err := filepath.EvalSymlinks(filepath.Join(w.Root, filepath.FromSlash(p)))
	if err != nil {
		return "", wrapRootErr(rel, err)
	}
	return real, nil
}

// CopyDir copies the regular files and directories under src (a directory
// outside the workspace, such as a skill folder) to rel inside it,
// replacing what is there. Symlinks in src are skipped. Modes keep their
// executable bits. It copies at most maxBytes in all.
func (w *Workspace) CopyDir(src, rel string, maxBytes int64) error {
	r, p, err := w.open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	if p != "." {
		if err := r.RemoveAll(p); err != nil {
			return wrapRootErr(rel, err)
		}
	}
	var total int64
	return filepath.WalkDir(src, func(sp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		relSrc, err := filepath.Rel(src, sp)
		if err != nil {
			return err
		}
		dst := path.Join(p, filepath.ToSlash(relSrc))
		switch {
		case d.IsDir():
			return wrapRootErr(rel, r.MkdirAll(dst, 0o700))
		case !d.Type().IsRegular():
			return nil // symlinks and devices are not copied
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > maxBytes {
			return fmt.Errorf("copy %s: more than %d bytes", src, maxBytes)
		}
		b, err := os.ReadFile(sp)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if info.Mode()&0o100 != 0 {
			mode = 0o700
		}
		return wrapRootErr(rel, r.WriteFile(dst, b, mode))
	})
}

// Manager hands out one workspace per run under a base directory, which
// must not be inside the data directory (DefaultBase when empty).
//
// A Manager is a runtime.RunEndObserver: a run's workspace is removed when
// the run ends for good (completed, failed, canceled), and kept while it
// may continue (interrupted, needs_decision, cut off while running). It is
// a runtime.RunSweeper too: when a Runner starts, the workspaces of runs
// its store records as ended for good are removed (a process killed
// between a run's end and its removal), and, when Exclusive, those of runs
// the store does not have.
type Manager struct {
	Base string
	// Exclusive says the base belongs to one store: a workspace whose run
	// that store does not have is stale. Off (the default, where the base
	// is shared by every data directory of this user), such a workspace
	// may be another store's and is kept.
	Exclusive bool
}

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// DefaultBase is where workspaces live unless configured:
// <os.TempDir()>/agentc-ws-<uid>, outside every data directory.
func DefaultBase() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentc-ws-%d", os.Getuid()))
}

// base creates the base directory: owned by this user, not a symlink, mode
// 0711 (commands running as an unprivileged uid can reach their own
// workspace but not list the others).
func (m *Manager) base() (string, error) {
	b := DefaultBase()
	if m != nil && m.Base != "" {
		b = m.Base
	}
	b, err := filepath.Abs(b)
	if err != nil {
		return "", fmt.Errorf("workspace base %s: %w", b, err)
	}
	if err := os.MkdirAll(b, 0o711); err != nil {
		return "", fmt.Errorf("workspace base %s: %w", b, err)
	}
	st, err := os.Lstat(b)
	if err != nil {
		return "", fmt.Errorf("workspace base %s: %w", b, err)
	}
	if !st.IsDir() || !ownedByMe(st) {
		return "", fmt.Errorf("workspace base %s: not a directory owned by this user (uid %d)", b, os.Getuid())
	}
	if st.Mode().Perm() != 0o711 {
		if err := os.Chmod(b, 0o711); err != nil {
			return "", fmt.Errorf("workspace base %s: %w", b, err)
		}
	}
	return b, nil
}

// ForRun returns the workspace of run, creating it.
func (m *Manager) ForRun(run string) (*Workspace, error) {
	if !runIDRE.MatchString(run) || run == "." || run == ".." {
		return nil, fmt.Errorf("workspace: bad run id %q", run)
	}
	b, err := m.base()
	if err != nil {
		return nil, err
	}
	return Open(filepath.Join(b, run))
}

// Remove deletes the workspace of run (when the run has ended: what must
// last is saved as artifacts).
func (m *Manager) Remove(run string) error {
	if !runIDRE.MatchString(run) || run == "." || run == ".." {
		return fmt.Errorf("workspace: bad run id %q", run)
	}
	b, err := m.base()
	if err != nil {
		return err
	}
	if err := removeTree(filepath.Join(b, run)); err != nil {
		return fmt.Errorf("workspace: remove %s: %w", run, err)
	}
	return nil
}

// removeTree removes dir and everything in it. A first failure (a command
// left a directory without write or search permission) is retried after
// giving every directory inside back its owner's permissions, through an
// os.Root on dir: a symlink swapped in meanwhile is never followed out.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	r, rerr := os.OpenRoot(dir)
	if rerr != nil {
		return err
	}
	defer r.Close()
	r.Chmod(".", 0o700)
	fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, werr error) error {
		if werr == nil && d.IsDir() {
			r.Chmod(p, 0o700)
		} else if werr != nil && p != "." {
			// Unreadable until its parent was fixed: fix it and walk on.
			r.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// RunEnded implements runtime.RunEndObserver: the workspace of a run that
// ended for good is removed (the Runner tells only of those).
func (m *Manager) RunEnded(ctx context.Context, run string, status runtime.RunStatus) error {
	if !status.Ended() {
		return nil
	}
	return m.Remove(run)
}

// SweepRuns implements runtime.RunSweeper: every workspace under the base
// whose run lookup reports as ended for good is removed, and, when
// Exclusive, every one whose run is unknown. A base that does not exist yet
// is left alone; a lookup error keeps that workspace and is returned (the
// first).
func (m *Manager) SweepRuns(ctx context.Context, lookup func(ctx context.Context, run string) (runtime.RunStatus, bool, error)) error {
	b := DefaultBase()
	if m != nil && m.Base != "" {
		b = m.Base
	}
	ents, err := os.ReadDir(b)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace: sweep %s: %w", b, err)
	}
	var first error
	for _, e := range ents {
		run := e.Name()
		if !e.IsDir() || !runIDRE.MatchString(run) || run == "." || run == ".." {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		status, known, err := lookup(ctx, run)
		switch {
		case err != nil:
			if first == nil {
				first = fmt.Errorf("workspace: sweep: run %s: %w", run, err)
			}
			continue
		case known && !status.Ended(), !known && (m == nil || !m.Exclusive):
			continue
		}
		if err := m.Remove(run); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// chownAll gives the workspace and everything in it to uid (the
// unprivileged uid its commands run as), through the root: symlinks are
// changed themselves, never followed.
func (w *Workspace) chownAll(uid int) error {
	r, err := w.root()
	if err != nil {
		return err
	}
	defer r.Close()
	return fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := r.Lchown(p, uid, uid); err != nil {
			return wrapRootErr(p, err)
		}
		return nil
	})
}

// MakeExecutable sets rel's mode to 0700 (a staged script).
func (w *Workspace) MakeExecutable(rel string) error {
	r, p, err := w.open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return wrapRootErr(rel, r.Chmod(p, 0o700))
}

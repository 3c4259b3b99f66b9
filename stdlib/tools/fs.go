package tools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/runtime/workspace/jail"
	"github.com/agentc/agentc/vm"
)

// resolve maps a workspace-relative path to a real path inside the
// workspace, refusing absolute paths, ".." escapes and symlinks that lead
// outside (after filepath.EvalSymlinks of both ends). It names a folder
// for exec's working directory; file contents are read through openIn.
func (c Config) resolve(tool, rel string) (string, error) {
	if c.Workspace == "" {
		return "", runtime.Errorf(vm.KindToolError, "%s: no workspace configured", tool)
	}
	if rel == "" {
		rel = "."
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		return "", runtime.Errorf(vm.KindToolError, "%s: %q: absolute paths are refused", tool, rel)
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) && filepath.Clean(rel) != "." {
		return "", runtime.Errorf(vm.KindToolError, "%s: %q leaves the workspace", tool, rel)
	}
	root, err := filepath.EvalSymlinks(c.Workspace)
	if err != nil {
		return "", runtime.Errorf(vm.KindUnavailable, "%s: workspace: %v", tool, err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", runtime.Errorf(vm.KindUnavailable, "%s: workspace: %v", tool, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", runtime.Errorf(vm.KindToolError, "%s: %q does not exist", tool, rel)
		}
		return "", runtime.Errorf(vm.KindToolError, "%s: %q: %v", tool, rel, err)
	}
	if r, err := filepath.Rel(root, real); err != nil || !(r == "." || filepath.IsLocal(r)) {
		return "", runtime.Errorf(vm.KindToolError, "%s: %q leaves the workspace", tool, rel)
	}
	return real, nil
}

// openIn opens the workspace-relative rel through an os.Root on the
// workspace: absolute paths and ".." escapes are refused first, and the
// root refuses, at the moment of each access, every symlink that leads
// out (so a link swapped while the call runs cannot redirect it).
func (c Config) openIn(tool, rel string) (*os.File, error) {
	if c.Workspace == "" {
		return nil, runtime.Errorf(vm.KindToolError, "%s: no workspace configured", tool)
	}
	if rel == "" {
		rel = "."
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		return nil, runtime.Errorf(vm.KindToolError, "%s: %q: absolute paths are refused", tool, rel)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if !filepath.IsLocal(clean) && clean != "." {
		return nil, runtime.Errorf(vm.KindToolError, "%s: %q leaves the workspace", tool, rel)
	}
	root, err := os.OpenRoot(c.Workspace)
	if err != nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "%s: workspace: %v", tool, err)
	}
	defer root.Close()
	f, err := root.Open(clean)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, runtime.Errorf(vm.KindToolError, "%s: %q does not exist", tool, rel)
	case strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes"):
		return nil, runtime.Errorf(vm.KindToolError, "%s: %q leaves the workspace", tool, rel)
	}
	return nil, runtime.Errorf(vm.KindToolError, "%s: %q: %v", tool, rel, err)
}

// readFileIn is read_file's input.
type readFileIn struct {
	Path string `json:"path"`
}

func readFile(cfg Config, _ context.Context, in readFileIn) (any, error) {
	f, err := cfg.openIn("read_file", in.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q: %v", in.Path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q is not a regular file", in.Path)
	}
	if n := jail.Links(st); n > 1 {
		// Another name of the same file may be anywhere on the device.
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q has %d hard links: refused", in.Path, n)
	}
	max := cfg.maxBytes()
	if st.Size() > max {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q is %d bytes, over the %d-byte cap", in.Path, st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q: %v", in.Path, err)
	}
	if int64(len(b)) > max {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q is over the %d-byte cap", in.Path, max)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// listDirIn is list_dir's input.
type listDirIn struct {
	Path *string `json:"path"`
}

func listDir(cfg Config, _ context.Context, in listDirIn) (any, error) {
	rel := "."
	if in.Path != nil && *in.Path != "" {
		rel = *in.Path
	}
	d, err := cfg.openIn("list_dir", rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out, err := workspace.ReadEntries(d)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "list_dir: %q: %v", rel, err)
	}
	return out, nil
}

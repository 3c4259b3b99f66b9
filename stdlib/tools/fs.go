package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// resolve maps a workspace-relative path to a real path inside the
// workspace, refusing absolute paths, ".." escapes and symlinks that lead
// outside (after filepath.EvalSymlinks of both ends).
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

func readFile(cfg Config, _ context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := decode("read_file", args, &in); err != nil {
		return nil, err
	}
	p, err := cfg.resolve("read_file", in.Path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q: %v", in.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q: %v", in.Path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, runtime.Errorf(vm.KindToolError, "read_file: %q is not a regular file", in.Path)
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

type dirEntry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
}

// maxEntries caps list_dir's result.
const maxEntries = 1000

func listDir(cfg Config, _ context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Path *string `json:"path"`
	}
	if err := decode("list_dir", args, &in); err != nil {
		return nil, err
	}
	rel := "."
	if in.Path != nil && *in.Path != "" {
		rel = *in.Path
	}
	p, err := cfg.resolve("list_dir", rel)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "list_dir: %q: %v", rel, err)
	}
	out := []dirEntry{}
	for _, e := range ents {
		if len(out) == maxEntries {
			break
		}
		d := dirEntry{Name: e.Name(), Dir: e.IsDir()}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			d.Size = info.Size()
		}
		out = append(out, d)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

package project

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// Files expands FILES|DIRS into .agent files. Directories are walked
// recursively, skipping testdata, node_modules and hidden folders (as the
// go tool does); files named explicitly are always included. The result is
// sorted, de-duplicated, and relative to the working directory when
// possible, with forward slashes.
func Files(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", arg, err)
		}
		if !info.IsDir() {
			out = append(out, displayPath(arg))
			continue
		}
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				name := d.Name()
				if path != arg && (name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && name != ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".agent") {
				out = append(out, displayPath(path))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", arg, err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// TestFiles is Files keeping, of the files found in directories, only
// those declaring a test block (a line starting with "test ").
func TestFiles(args []string) ([]string, error) {
	named := map[string]bool{}
	for _, arg := range args {
		if st, err := os.Stat(arg); err == nil && !st.IsDir() {
			named[displayPath(arg)] = true
		}
	}
	all, err := Files(args)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range all {
		if named[f] {
			out = append(out, f)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "test ") {
				out = append(out, f)
				break
			}
		}
	}
	return out, nil
}

// displayPath makes path relative to the working directory when it lies
// below it, and slash-separated.
func displayPath(path string) string {
	if filepath.IsAbs(path) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
				path = rel
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(path))
}

// TestBlocks is how many test blocks file declares, as far as it parses;
// at least 1 (what a file that does not compile counts as failed).
func TestBlocks(file string) int {
	src, err := os.ReadFile(file)
	if err != nil {
		return 1
	}
	f, _ := syntax.Parse(file, src)
	n := 0
	for _, d := range f.Decls {
		if _, ok := d.(*syntax.Test); ok {
			n++
		}
	}
	return max(n, 1)
}

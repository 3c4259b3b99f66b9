// Package skill is the skill repository and the skill tools (spec/skills.md).
//
// A skill is a folder holding SKILL.md (YAML front matter: name,
// description, version, tags, tools, shell, when_to_use; then Markdown
// instructions), optional documents under docs/ and scripts under
// scripts/. The Repository loads folders on first access and checks on
// every later access whether any file changed (names, sizes and
// modification times); a changed folder is read again. There is no
// background goroutine. A SKILL.md whose front matter is invalid is an
// error naming file:line:col, never skipped silently.
package skill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentc/agentc/compiler/skillmd"
)

// Limits of one skill folder.
const (
	MaxFiles   = 200
	MaxDocSize = 256 << 10
	MaxBytes   = 8 << 20 // all files of a folder together
)

// Skill is a loaded skill folder.
type Skill struct {
	Dir     string // absolute folder
	Front   skillmd.Front
	Body    string   // SKILL.md's instructions
	Docs    []string // documents: docs/** and other .md/.txt files beside SKILL.md, relative, sorted
	Scripts []string // scripts/**, relative, sorted
	Hash    string   // sha256 of every file's name and content: the skill's revision
}

// Name is the skill's front-matter name.
func (s *Skill) Name() string { return s.Front.Name }

// LoadError is a SKILL.md whose front matter has problems.
type LoadError struct {
	Problems []skillmd.Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Repository loads skill folders and keeps them fresh.
type Repository struct {
	mu      sync.Mutex
	entries map[string]*entry // by absolute folder
}

type entry struct {
	sig   string
	skill *Skill
	err   error
}

// NewRepository returns an empty repository.
func NewRepository() *Repository { return &Repository{entries: map[string]*entry{}} }

// Load returns the skill in dir, reading it again when a file changed since
// the last Load.
func (r *Repository) Load(dir string) (*Skill, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", dir, err)
	}
	files, sig, err := signature(abs)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", dir, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entries[abs]; e != nil && e.sig == sig {
		return e.skill, e.err
	}
	s, err := read(abs, files)
	r.entries[abs] = &entry{sig: sig, skill: s, err: err}
	return s, err
}

// Scan loads every skill folder directly under root (folders holding a
// SKILL.md), sorted by name. Folders that fail to load are returned as
// errors beside the skills that loaded; a missing root has no skills.
func (r *Repository) Scan(root string) ([]*Skill, []error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("skills under %s: %w", root, err)}
	}
	var out []*Skill
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err != nil {
			continue
		}
		s, err := r.Load(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, errs
}

type fileInfo struct {
	rel  string
	size int64
}

// signature lists the folder's regular files and summarizes names, sizes
// and modification times.
func signature(dir string) ([]fileInfo, string, error) {
	var files []fileInfo
	h := sha256.New()
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil // symlinks are not followed
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if len(files) == MaxFiles {
			return fmt.Errorf("more than %d files", MaxFiles)
		}
		if total += info.Size(); total > MaxBytes {
			return fmt.Errorf("more than %d bytes", MaxBytes)
		}
		files = append(files, fileInfo{rel: rel, size: info.Size()})
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%o\n", rel, info.Size(), info.ModTime().UnixNano(), info.Mode())
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// read parses SKILL.md and indexes documents and scripts.
func read(dir string, files []fileInfo) (*Skill, error) {
	src, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", dir, err)
	}
	f, probs := skillmd.Parse(filepath.ToSlash(filepath.Join(dir, "SKILL.md")), src)
	if len(probs) > 0 {
		return nil, &LoadError{Problems: probs}
	}
	s := &Skill{Dir: dir, Front: f.Front, Body: f.Body}
	h := sha256.New()
	for _, fi := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(fi.rel)))
		if err != nil {
			return nil, fmt.Errorf("skill %s: %w", dir, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", fi.rel, len(b))
		h.Write(b)
		switch ext := path.Ext(fi.rel); {
		case strings.HasPrefix(fi.rel, "scripts/"):
			s.Scripts = append(s.Scripts, fi.rel)
		case fi.rel == "SKILL.md":
		case strings.HasPrefix(fi.rel, "docs/") || ext == ".md" || ext == ".txt":
			s.Docs = append(s.Docs, fi.rel)
		}
	}
	s.Hash = hex.EncodeToString(h.Sum(nil))
	sort.Strings(s.Docs)
	sort.Strings(s.Scripts)
	return s, nil
}

// Doc reads one document of s (a name from s.Docs).
func (s *Skill) Doc(name string) (string, error) {
	found := false
	for _, d := range s.Docs {
		found = found || d == name
	}
	if !found {
		return "", fmt.Errorf("skill %s has no document %q (documents: %s)", s.Name(), name, strings.Join(s.Docs, ", "))
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(name)))
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", s.Name(), err)
	}
	if len(b) > MaxDocSize {
		return string(b[:MaxDocSize]) + fmt.Sprintf("\n[truncated: %d bytes]", len(b)), nil
	}
	return string(b), nil
}

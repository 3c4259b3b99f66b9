// Package artifact is the artifact service: files that runs produce, kept
// by (app, user, session, name) with revisions 1, 2, … and stored in the
// store's Docs keyspace (spec/skills.md, "Artifacts").
//
// Layout (collection "artifact"):
//
//	DocPath(app, user, session, name, rev)   → JSON {meta, data}
//
// rev is the revision as a zero-padded 10-digit decimal so that keys sort
// in revision order. Save finds the next revision by listing and writes it
// with IfAbsent; a concurrent writer that took the same revision makes the
// batch ErrConflict and Save retries with the next one, so revisions are
// gap-free and never overwritten.
package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime/store"
)

// Coll is the Docs collection of artifacts.
const Coll = "artifact"

// MaxSize is the default cap of one artifact's bytes. Artifacts live in
// the Docs keyspace (one synced document each), so they are meant for
// reports and small outputs, not bulk data.
const MaxSize = 4 << 20

// ErrNotFound is returned for an artifact or revision that does not exist.
var ErrNotFound = errors.New("artifact: not found")

// ErrTooLarge is returned by Save for data over the service's cap.
var ErrTooLarge = errors.New("artifact: too large")

// Key names an artifact: the session it belongs to and its file name.
type Key struct {
	App, User, Session string
	Name               string // a relative slash-separated name, e.g. "reports/summary.md"
}

func (k Key) String() string { return k.App + "/" + k.User + "/" + k.Session + "/" + k.Name }

// Meta describes one revision.
type Meta struct {
	App      string    `json:"app"`
	User     string    `json:"user"`
	Session  string    `json:"session"`
	Name     string    `json:"name"`
	Revision int       `json:"revision"`
	MimeType string    `json:"mime_type,omitempty"`
	Size     int       `json:"size"`
	Run      string    `json:"run,omitempty"` // the run that saved it
	Created  time.Time `json:"created"`
}

// Artifact is one revision with its bytes.
type Artifact struct {
	Meta
	Data []byte `json:"data"`
}

// Service saves and reads artifacts in a store's Docs.
type Service struct {
	docs    store.Docs
	now     func() time.Time
	maxSize int
}

// Option configures a Service.
type Option func(*Service)

// WithMaxSize sets the cap of one artifact's bytes (default MaxSize).
func WithMaxSize(n int) Option { return func(s *Service) { s.maxSize = n } }

// New returns the service over docs; now stamps revisions (injected).
func New(docs store.Docs, now func() time.Time, opts ...Option) *Service {
	s := &Service{docs: docs, now: now, maxSize: MaxSize}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CheckName validates an artifact name: non-empty, relative, slash
// separated, no "." or ".." parts, valid UTF-8, at most 256 bytes.
func CheckName(name string) error {
	switch {
	case name == "" || len(name) > 256 || !utf8.ValidString(name):
		return fmt.Errorf("artifact name %q: must be 1 to 256 bytes of UTF-8", name)
	case strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0):
		return fmt.Errorf("artifact name %q: must be relative and slash-separated", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("artifact name %q: empty, \".\" or \"..\" part", name)
		}
	}
	return nil
}

func (k Key) check() error {
	if k.App == "" || k.User == "" || k.Session == "" {
		return fmt.Errorf("artifact %s: app, user and session are required", k)
	}
	return CheckName(k.Name)
}

func revKey(k Key, rev int) string {
	return store.DocPath(k.App, k.User, k.Session, k.Name, fmt.Sprintf("%010d", rev))
}

type record struct {
	Meta Meta   `json:"meta"`
	Data []byte `json:"data"`
}

// Save stores data as the next revision of k and returns its metadata.
func (s *Service) Save(ctx context.Context, k Key, data []byte, mimeType, run string) (Meta, error) {
	if err := k.check(); err != nil {
		return Meta{}, err
	}
	if len(data) > s.maxSize {
		return Meta{}, fmt.Errorf("save artifact %s: %d bytes, over the %d-byte cap: %w", k, len(data), s.maxSize, ErrTooLarge)
	}
	for attempt := 0; attempt < 16; attempt++ {
		revs, err := s.Revisions(ctx, k)
		if err != nil {
			return Meta{}, err
		}
		next := 1
		if len(revs) > 0 {
			next = revs[len(revs)-1].Revision + 1
		}
		m := Meta{App: k.App, User: k.User, Session: k.Session, Name: k.Name, Revision: next,
			MimeType: mimeType, Size: len(data), Run: run, Created: s.now().UTC()}
		b, err := json.Marshal(record{Meta: m, Data: data})
		if err != nil {
			return Meta{}, fmt.Errorf("save artifact %s: %w", k, err)
		}
		err = s.docs.ApplyDocs(ctx, store.DocOp{Coll: Coll, Key: revKey(k, next), Value: b, IfAbsent: true})
		if errors.Is(err, store.ErrConflict) {
			continue // another writer took this revision
		}
		if err != nil {
			return Meta{}, fmt.Errorf("save artifact %s: %w", k, err)
		}
		return m, nil
	}
	return Meta{}, fmt.Errorf("save artifact %s: too many concurrent writers: %w", k, store.ErrConflict)
}

// Revisions lists the revisions of k, oldest first (without data).
func (s *Service) Revisions(ctx context.Context, k Key) ([]Meta, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return s.list(ctx, store.DocPath(k.App, k.User, k.Session, k.Name), func(m Meta) bool { return m.Name == k.Name })
}

// Get returns revision rev of k (rev ≤ 0: the latest), or ErrNotFound.
func (s *Service) Get(ctx context.Context, k Key, rev int) (*Artifact, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	if rev <= 0 {
		revs, err := s.Revisions(ctx, k)
		if err != nil {
			return nil, err
		}
		if len(revs) == 0 {
			return nil, fmt.Errorf("artifact %s: %w", k, ErrNotFound)
		}
		rev = revs[len(revs)-1].Revision
	}
	b, err := s.docs.GetDoc(ctx, Coll, revKey(k, rev))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("artifact %s revision %d: %w", k, rev, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact %s revision %d: %w", k, rev, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("artifact %s revision %d: decode: %w", k, rev, err)
	}
	if r.Data == nil {
		r.Data = []byte{}
	}
	return &Artifact{Meta: r.Meta, Data: r.Data}, nil
}

// Filter selects artifacts for List. App and User are required; Session
// narrows to one session ("" = every session of the user).
type Filter struct {
	App, User, Session string
}

// List returns the latest revision of every artifact matching f (without
// data), ordered by session, then name.
func (s *Service) List(ctx context.Context, f Filter) ([]Meta, error) {
	if f.App == "" || f.User == "" {
		return nil, errors.New("list artifacts: app and user are required")
	}
	parts := []string{f.App, f.User}
	if f.Session != "" {
		parts = append(parts, f.Session)
	}
	all, err := s.list(ctx, store.DocPath(parts...), func(Meta) bool { return true })
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, m := range all {
		if n := len(out); n > 0 && out[n-1].Session == m.Session && out[n-1].Name == m.Name {
			out[n-1] = m // a later revision of the same artifact
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// list reads the records under prefix in key order, keeping metadata.
func (s *Service) list(ctx context.Context, prefix string, keep func(Meta) bool) ([]Meta, error) {
	var out []Meta
	after := ""
	for {
		ds, err := s.docs.ListDocs(ctx, Coll, prefix, after, 256)
		if err != nil {
			return nil, fmt.Errorf("list artifacts: %w", err)
		}
		for _, d := range ds {
			parts, ok := store.SplitDocPath(d.Key)
			if !ok || len(parts) != 5 {
				continue
			}
			rev, err := strconv.Atoi(parts[4])
			if err != nil {
				continue
			}
			var r struct {
				Meta Meta `json:"meta"`
			}
			if err := json.Unmarshal(d.Value, &r); err != nil {
				return nil, fmt.Errorf("list artifacts: %s: decode: %w", strings.Join(parts[:4], "/"), err)
			}
			r.Meta.Revision = rev
			if keep(r.Meta) {
				out = append(out, r.Meta)
			}
		}
		if len(ds) < 256 {
			return out, nil
		}
		after = ds[len(ds)-1].Key
	}
}

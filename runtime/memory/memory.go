// Package memory is the memory service (spec/memory.md): user-scoped facts
// per app and user kept in the store's Docs keyspace — add (idempotent by
// content hash), search (the recall ranker, BM25), list, delete, and
// eviction of the oldest beyond max_memories — with the memory_search and
// memory_add tools, a preloader and the auto extractor (a post-run hook).
package memory

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/store"
)

// Collections (spec/memory.md, "Layout").
const (
	CollItems   = "memory.item"   // app, user, id → record (JSON)
	CollOrder   = "memory.order"  // app, user, created (8 bytes big-endian ns), id → empty
	CollCursors = "memory.cursor" // app, user, session → last extracted sequence (uvarint)
)

// Limits.
const (
	DefaultMaxMemories = 1000
	MaxMemoryBytes     = 2000 // one memory's text
	maxTopics          = 8
)

// Clock supplies the time memories are stored at (vm.Clock satisfies it).
type Clock interface{ Now() time.Time }

// User names whose memories: one user of one app.
type User struct{ App, User string }

func (u User) String() string { return u.App + "/" + u.User }

// Memory is one stored fact.
type Memory struct {
	ID      string    `json:"id"`
	Text    string    `json:"memory"`
	Topics  []string  `json:"topics,omitempty"`
	Created time.Time `json:"created"`
}

// Hit is a search result.
type Hit struct {
	Memory
	Score float64 `json:"score"`
}

// Service stores memories in Docs. It is safe for concurrent use; adds of
// one user are serialized in-process (eviction reads and deletes).
type Service struct {
	docs  store.Docs
	clock Clock

	users store.KeyedMutex[User] // one writer per user's memories at a time
}

// New returns the service over docs.
func New(docs store.Docs, clock Clock) *Service {
	return &Service{docs: docs, clock: clock}
}

func checkUser(u User) error {
	if u.App == "" || u.User == "" {
		return fmt.Errorf("memory: app and user are required: %w", store.ErrInvalid)
	}
	return nil
}

// normalize folds the text a memory is identified by: trimmed, inner
// whitespace collapsed.
func normalize(text string) string { return strings.Join(strings.Fields(text), " ") }

// ID is a memory's identity: the first 16 bytes of SHA-256 over app, user
// and the normalized text, hex. Topics are not part of it.
func ID(u User, text string) string {
	h := sha256.New()
	for _, p := range []string{u.App, u.User, normalize(text)} {
		h.Write(binary.AppendUvarint(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Add stores a memory and returns it with added = false when the same text
// was already stored (the stored one, unchanged). When the user then has
// more than maxMemories (≤ 0: DefaultMaxMemories), the oldest are deleted.
func (s *Service) Add(ctx context.Context, u User, text string, topics []string, maxMemories int) (Memory, bool, error) {
	if err := checkUser(u); err != nil {
		return Memory{}, false, err
	}
	text = normalize(text)
	switch {
	case text == "":
		return Memory{}, false, fmt.Errorf("memory: empty memory: %w", store.ErrInvalid)
	case len(text) > MaxMemoryBytes:
		return Memory{}, false, fmt.Errorf("memory: memory of %d bytes exceeds %d: %w", len(text), MaxMemoryBytes, store.ErrInvalid)
	case !utf8.ValidString(text):
		return Memory{}, false, fmt.Errorf("memory: memory is not UTF-8: %w", store.ErrInvalid)
	}
	var tops []string
	for _, t := range topics {
		if t = normalize(t); t != "" && !slices.Contains(tops, t) && len(tops) < maxTopics {
			tops = append(tops, t)
		}
	}
	m := Memory{ID: ID(u, text), Text: text, Topics: tops, Created: s.clock.Now().UTC()}
	unlock := s.users.Lock(u)
	defer unlock()
	if old, err := s.get(ctx, u, m.ID); err == nil {
		return old, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return Memory{}, false, err
	}
	rec, err := json.Marshal(m)
	if err != nil {
		return Memory{}, false, fmt.Errorf("memory: encode: %w", err)
	}
	err = s.docs.ApplyDocs(ctx,
		store.DocOp{Coll: CollItems, Key: store.DocPath(u.App, u.User, m.ID), Value: rec, IfAbsent: true},
		store.DocOp{Coll: CollOrder, Key: orderKey(u, m.Created, m.ID), Value: []byte{}})
	if errors.Is(err, store.ErrConflict) { // added meanwhile by another process
		old, gerr := s.get(ctx, u, m.ID)
		if gerr != nil {
			return Memory{}, false, gerr
		}
		return old, false, nil
	}
	if err != nil {
		return Memory{}, false, fmt.Errorf("memory: add for %s: %w", u, err)
	}
	if maxMemories <= 0 {
		maxMemories = DefaultMaxMemories
	}
	if err := s.evict(ctx, u, maxMemories); err != nil {
		return m, true, err
	}
	return m, true, nil
}

func orderKey(u User, t time.Time, id string) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return store.DocPath(u.App, u.User, string(b[:]), id)
}

// evict deletes the oldest memories beyond limit.
func (s *Service) evict(ctx context.Context, u User, limit int) error {
	order, err := s.docs.ListDocs(ctx, CollOrder, store.DocPath(u.App, u.User), "", 0)
	if err != nil {
		return fmt.Errorf("memory: list %s: %w", u, err)
	}
	extra := len(order) - limit
	if extra <= 0 {
		return nil
	}
	var ops []store.DocOp
	for _, d := range order[:extra] {
		parts, ok := store.SplitDocPath(d.Key)
		if !ok || len(parts) != 4 {
			continue
		}
		ops = append(ops, store.DocOp{Coll: CollOrder, Key: d.Key, Delete: true},
			store.DocOp{Coll: CollItems, Key: store.DocPath(u.App, u.User, parts[3]), Delete: true})
	}
	if err := s.docs.ApplyDocs(ctx, ops...); err != nil {
		return fmt.Errorf("memory: evict for %s: %w", u, err)
	}
	return nil
}

func (s *Service) get(ctx context.Context, u User, id string) (Memory, error) {
	b, err := s.docs.GetDoc(ctx, CollItems, store.DocPath(u.App, u.User, id))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	if err := json.Unmarshal(b, &m); err != nil {
		return Memory{}, fmt.Errorf("memory %s of %s: %v: %w", id, u, err, store.ErrCorrupt)
	}
	return m, nil
}

// List returns the user's memories, oldest first.
func (s *Service) List(ctx context.Context, u User) ([]Memory, error) {
	if err := checkUser(u); err != nil {
		return nil, err
	}
	docs, err := s.docs.ListDocs(ctx, CollItems, store.DocPath(u.App, u.User), "", 0)
	if err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", u, err)
	}
	out := make([]Memory, 0, len(docs))
	for _, d := range docs {
		var m Memory
		if err := json.Unmarshal(d.Value, &m); err != nil {
			return nil, fmt.Errorf("memory: record of %s: %v: %w", u, err, store.ErrCorrupt)
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b Memory) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Delete removes a memory; deleting a missing one is not an error.
func (s *Service) Delete(ctx context.Context, u User, id string) error {
	if err := checkUser(u); err != nil {
		return err
	}
	unlock := s.users.Lock(u)
	defer unlock()
	m, err := s.get(ctx, u, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.docs.ApplyDocs(ctx,
		store.DocOp{Coll: CollItems, Key: store.DocPath(u.App, u.User, id), Delete: true},
		store.DocOp{Coll: CollOrder, Key: orderKey(u, m.Created, id), Delete: true}); err != nil {
		return fmt.Errorf("memory: delete %s of %s: %w", id, u, err)
	}
	return nil
}

// Search ranks the user's memories against query with the recall ranker
// (text and topics), best first, at most limit (≤ 0: 5).
func (s *Service) Search(ctx context.Context, u User, query string, limit int) ([]Hit, error) {
	all, err := s.List(ctx, u)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 5
	}
	docs := make([]recall.Doc, len(all))
	byID := make(map[string]Memory, len(all))
	for i, m := range all {
		docs[i] = recall.Doc{Key: m.ID, Text: m.Text + "\n" + strings.Join(m.Topics, "\n")}
		byID[m.ID] = m
	}
	ranked := recall.Rank(query, docs, limit, 0)
	out := make([]Hit, len(ranked))
	for i, r := range ranked {
		out[i] = Hit{Memory: byID[r.Key], Score: r.Score}
	}
	return out, nil
}

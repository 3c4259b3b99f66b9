// Package recall is session recall (spec/recall.md): an index of a user's
// session events kept in the store's Docs keyspace (terms → postings, BM25
// statistics), brought up to date from the ledger lazily, and the tools and
// preloader that read it — session_search (index cards), session_load (a
// window of raw events around an anchor, with content paging) and preload
// recall from the user's other sessions.
//
// Retrieval never writes to the ledger: the index lives beside it, and a
// search or load reads events and writes only index documents.
package recall

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Collections of the index (spec/recall.md, "Layout").
const (
	CollPostings = "recall.post"    // app, user, term, session, seq → uvarint tf, uvarint dl
	CollSessions = "recall.session" // app, user, session → cursor, docs, terms
	CollRefs     = "recall.ref"     // app, user, "event", id → session, seq; app, user, "call", session, call id → seq
)

// Store is the part of the store the index reads and writes.
type Store interface {
	store.Sessions
	store.Runs
	store.Docs
}

// Index is the recall index over a store. It is safe for concurrent use.
// Catching up one session is serialized in-process; concurrent catch-ups of
// one session in different processes write the same documents (postings
// are keyed by event, and a session's statistics are a function of its
// cursor), so they are idempotent.
type Index struct {
	st   Store
	sess *session.Service
	log  *slog.Logger

	locks store.KeyedMutex[store.SessionKey] // one catch-up per session
}

// NewIndex returns an index over st; log may be nil (discard).
func NewIndex(st Store, log *slog.Logger) *Index {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Index{st: st, sess: session.New(st), log: log}
}

// sessionStats is a session's index record: the last indexed sequence and
// the number of indexed documents and of their terms.
type sessionStats struct {
	Cursor uint64
	Docs   uint64
	Terms  uint64
}

func (s sessionStats) encode() []byte {
	b := binary.AppendUvarint(nil, s.Cursor)
	b = binary.AppendUvarint(b, s.Docs)
	return binary.AppendUvarint(b, s.Terms)
}

func decodeStats(b []byte) (sessionStats, error) {
	var s sessionStats
	for _, f := range []*uint64{&s.Cursor, &s.Docs, &s.Terms} {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return sessionStats{}, fmt.Errorf("recall: bad session record: %w", store.ErrCorrupt)
		}
		*f, b = v, b[n:]
	}
	if len(b) != 0 {
		return sessionStats{}, fmt.Errorf("recall: bad session record: %w", store.ErrCorrupt)
	}
	return s, nil
}

func seqBytes(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return string(b[:])
}

func (x *Index) stats(ctx context.Context, key store.SessionKey) (sessionStats, error) {
	b, err := x.st.GetDoc(ctx, CollSessions, store.DocPath(key.App, key.User, key.Session))
	if errors.Is(err, store.ErrNotFound) {
		return sessionStats{}, nil
	}
	if err != nil {
		return sessionStats{}, fmt.Errorf("recall: read index of %s: %w", key, err)
	}
	return decodeStats(b)
}

// catchUpPage is how many ledger events one read takes; flushOps bounds the
// documents of one batch.
const (
	catchUpPage = 256
	flushOps    = 20000
)

// CatchUp indexes the session's events after its cursor and returns how
// many events it read. A session that does not exist has nothing to index.
func (x *Index) CatchUp(ctx context.Context, key store.SessionKey) (int, error) {
	rec, err := x.st.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("recall: catch up %s: %w", key, err)
	}
	return x.catchUpTo(ctx, key, rec.LastSeq)
}

func (x *Index) catchUpTo(ctx context.Context, key store.SessionKey, last uint64) (int, error) {
	unlock := x.locks.Lock(key)
	defer unlock()
	st, err := x.stats(ctx, key)
	if err != nil || st.Cursor >= last {
		return 0, err
	}
	read := 0
	var ops []store.DocOp
	calls := map[string]int{}
	flush := func() error {
		ops = append(ops, store.DocOp{Coll: CollSessions, Key: store.DocPath(key.App, key.User, key.Session), Value: st.encode()})
		if err := x.st.ApplyDocs(ctx, ops...); err != nil {
			return fmt.Errorf("recall: index %s through event %d: %w", key, st.Cursor, err)
		}
		ops = ops[:0]
		clear(calls)
		return nil
	}
	for st.Cursor < last {
		entries, err := x.st.ListEvents(ctx, key, st.Cursor, catchUpPage)
		if err != nil {
			return read, fmt.Errorf("recall: catch up %s: %w", key, err)
		}
		if len(entries) == 0 {
			break
		}
		for _, en := range entries {
			read++
			st.Cursor = en.Seq
			e, err := runtime.DecodeEvent(en.Data)
			if err != nil {
				x.log.Warn("recall: event not indexed", "session", key.String(), "seq", en.Seq, "err", err)
				continue
			}
			ops = appendEventDocs(ops, calls, key, en.Seq, e, &st)
			if len(ops) >= flushOps {
				if err := flush(); err != nil {
					return read, err
				}
			}
		}
	}
	return read, flush()
}

// appendEventDocs adds the postings and references of one event.
// calls maps the tool-call references already in ops to their index.
func appendEventDocs(ops []store.DocOp, calls map[string]int, key store.SessionKey, seq uint64, e *runtime.Event, st *sessionStats) []store.DocOp {
	if _, ok := roleOf(e.Kind); !ok {
		return ops
	}
	sq := seqBytes(seq)
	for p, part := range passages(Terms(indexText(e))) {
		st.Docs++
		st.Terms += uint64(len(part))
		tf := map[string]int{}
		for _, t := range part {
			tf[t]++
		}
		ref := sq + string([]byte{byte(p >> 8), byte(p)})
		for t, c := range tf {
			v := binary.AppendUvarint(nil, uint64(c))
			v = binary.AppendUvarint(v, uint64(len(part)))
			ops = append(ops, store.DocOp{Coll: CollPostings, Key: store.DocPath(key.App, key.User, t, key.Session, ref), Value: v})
		}
	}
	ref := binary.AppendUvarint(nil, seq)
	ref = append(ref, key.Session...)
	ops = append(ops, store.DocOp{Coll: CollRefs, Key: store.DocPath(key.App, key.User, "event", e.ID), Value: ref})
	if e.Kind == runtime.EventToolResult && e.ToolCall != nil && e.ToolCall.ID != "" {
		ck := store.DocPath(key.App, key.User, "call", key.Session, e.ToolCall.ID)
		v := binary.AppendUvarint(nil, seq)
		// A repeated call id within one batch keeps the latest result.
		if i, dup := calls[ck]; dup {
			ops[i].Value = v
			return ops
		}
		calls[ck] = len(ops)
		ops = append(ops, store.DocOp{Coll: CollRefs, Key: ck, Value: v})
	}
	return ops
}

// roleOf says whether events of kind k are indexed, and as what.
func roleOf(k runtime.EventKind) (string, bool) {
	switch k {
	case runtime.EventInput:
		return "user", true
	case runtime.EventModelResponse, runtime.EventInterrupt:
		return "assistant", true
	case runtime.EventToolResult:
		return "tool", true
	}
	return "", false
}

// indexText is the searchable text of an event: the input, the model's
// text and the names of the tools it called, a tool's name, arguments and
// result (the keys and scalar values of their JSON) or error, an
// interrupt's prompts.
func indexText(e *runtime.Event) string {
	var b strings.Builder
	b.WriteString(e.Text)
	for _, c := range e.ToolCalls { // the arguments are indexed with the result
		b.WriteString("\n")
		b.WriteString(c.Name)
	}
	if e.ToolCall != nil {
		b.WriteString("\n")
		b.WriteString(e.ToolCall.Name)
		jsonText(&b, e.ToolCall.Args)
	}
	if len(e.Result) > 0 {
		jsonText(&b, e.Result)
	}
	if e.Error != nil {
		b.WriteString("\n")
		b.WriteString(e.Error.Kind + ": " + e.Error.Message)
	}
	for _, in := range e.Interrupts {
		b.WriteString("\n")
		b.WriteString(in.Prompt)
	}
	return b.String()
}

// jsonText writes the keys and scalar values of raw JSON, one per line (the
// raw text when it does not decode).
func jsonText(b *strings.Builder, raw json.RawMessage) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		b.WriteString("\n")
		b.Write(raw)
		return
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				b.WriteString("\n")
				b.WriteString(k)
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			b.WriteString("\n")
			b.WriteString(v)
		case nil:
		default:
			b.WriteString("\n")
			fmt.Fprint(b, v)
		}
	}
	walk(v)
}

// docSource is a user's corpus in the index, read from Docs.
type docSource struct {
	st         Store
	app, user  string
	n          int
	avgdl      float64
	postingErr error
}

func (d *docSource) stats() (int, float64) { return d.n, d.avgdl }

func (d *docSource) postings(ctx context.Context, term string) ([]posting, error) {
	prefix := store.DocPath(d.app, d.user, term)
	docs, err := d.st.ListDocs(ctx, CollPostings, prefix, "", maxPostings)
	if err != nil {
		return nil, fmt.Errorf("recall: read postings: %w", err)
	}
	out := make([]posting, 0, len(docs))
	for _, doc := range docs {
		rest := doc.Key[len(prefix):]
		tf, n := binary.Uvarint(doc.Value)
		if n <= 0 {
			continue
		}
		dl, m := binary.Uvarint(doc.Value[n:])
		if m <= 0 {
			continue
		}
		out = append(out, posting{doc: rest, tf: int(tf), dl: int(dl)})
	}
	return out, nil
}

// Passages: a long event is indexed as passages of passageTerms terms (a
// shorter tail joins the passage before it), each scored on its own; an
// event's score is its best passage's. BM25's length normalization then
// compares a fact inside a 12 KB tool result with a chat message of similar
// length instead of burying it.
const (
	passageTerms = 128
	maxPassages  = 1 << 16
)

func passages(terms []string) [][]string {
	if len(terms) == 0 {
		return [][]string{nil} // an event without terms still counts
	}
	var out [][]string
	for len(terms) > 0 && len(out) < maxPassages {
		n := passageTerms
		if len(terms) < n+passageTerms/2 {
			n = len(terms)
		}
		out = append(out, terms[:n])
		terms = terms[n:]
	}
	return out
}

// parseDocRef reads the (session, seq) a posting's key suffix names
// (session, seq and passage) or an event identity (session, seq).
func parseDocRef(rest string) (sessionID string, seq uint64, ok bool) {
	parts, ok := store.SplitDocPath(rest)
	if !ok || len(parts) != 2 || len(parts[1]) != 10 && len(parts[1]) != 8 {
		return "", 0, false
	}
	return parts[0], binary.BigEndian.Uint64([]byte(parts[1][:8])), true
}

// eventOf maps a posting's document (a passage) to its event's identity.
func eventOf(doc string) string {
	sid, seq, ok := parseDocRef(doc)
	if !ok {
		return doc
	}
	return store.DocPath(sid, seqBytes(seq))
}

// corpus opens the user's corpus: its statistics over every indexed
// session of the user.
func (x *Index) corpus(ctx context.Context, app, user string) (*docSource, error) {
	docs, err := x.st.ListDocs(ctx, CollSessions, store.DocPath(app, user), "", 0)
	if err != nil {
		return nil, fmt.Errorf("recall: read index statistics: %w", err)
	}
	var n, terms uint64
	for _, d := range docs {
		s, err := decodeStats(d.Value)
		if err != nil {
			return nil, err
		}
		n += s.Docs
		terms += s.Terms
	}
	src := &docSource{st: x.st, app: app, user: user, n: int(n)}
	if n > 0 {
		src.avgdl = float64(terms) / float64(n)
	}
	return src, nil
}

// catchUpUser brings every session of the user up to date.
func (x *Index) catchUpUser(ctx context.Context, app, user string) error {
	infos, err := x.sess.List(ctx, session.ListFilter{App: app, User: user})
	if err != nil {
		return fmt.Errorf("recall: list sessions of %s/%s: %w", app, user, err)
	}
	for _, in := range infos {
		if _, err := x.catchUpTo(ctx, in.Key, in.Events); err != nil {
			return err
		}
	}
	return nil
}

// AfterRun indexes the finished run's session, so that later searches
// rarely wait for a catch-up (a runtime.PostRunHook).
func (x *Index) AfterRun(ctx context.Context, job runtime.PostRun) error {
	_, err := x.CatchUp(ctx, job.Session)
	return err
}

// readEvent reads one ledger event.
func (x *Index) readEvent(ctx context.Context, key store.SessionKey, seq uint64) (*runtime.Event, error) {
	if seq == 0 {
		return nil, fmt.Errorf("recall: event 0: %w", store.ErrNotFound)
	}
	entries, err := x.st.ListEvents(ctx, key, seq-1, 1)
	if err != nil {
		return nil, fmt.Errorf("recall: read event %d of %s: %w", seq, key, err)
	}
	if len(entries) == 0 || entries[0].Seq != seq {
		return nil, fmt.Errorf("recall: event %d of %s: %w", seq, key, store.ErrNotFound)
	}
	e, err := runtime.DecodeEvent(entries[0].Data)
	if err != nil {
		return nil, fmt.Errorf("recall: event %d of %s: %w", seq, key, err)
	}
	e.Seq = seq
	return e, nil
}

// resolveEvent finds an indexed event by id among the user's sessions.
func (x *Index) resolveEvent(ctx context.Context, app, user, id string) (string, uint64, bool, error) {
	b, err := x.st.GetDoc(ctx, CollRefs, store.DocPath(app, user, "event", id))
	if errors.Is(err, store.ErrNotFound) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("recall: resolve event %s: %w", id, err)
	}
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return "", 0, false, fmt.Errorf("recall: event reference %s: %w", id, store.ErrCorrupt)
	}
	return string(b[n:]), seq, true, nil
}

// resolveCall finds the tool_result event of a tool call id in a session.
func (x *Index) resolveCall(ctx context.Context, key store.SessionKey, callID string) (uint64, bool, error) {
	b, err := x.st.GetDoc(ctx, CollRefs, store.DocPath(key.App, key.User, "call", key.Session, callID))
	if errors.Is(err, store.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("recall: resolve tool call %s: %w", callID, err)
	}
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, false, fmt.Errorf("recall: tool call reference %s: %w", callID, store.ErrCorrupt)
	}
	return seq, true, nil
}

// timeString formats an event time for cards and windows.
func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

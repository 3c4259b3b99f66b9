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
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Collections of the index (spec/recall.md, "Layout"). Layout version 2;
// the documents of version 1 (recall.post, recall.session) are not read.
const (
	CollBlocks   = "recall.block" // app, user, bucket, session, block → posting block (block.go)
	CollSessions = "recall.stats" // app, user, session → version, cursor, docs, terms
	CollClaims   = "recall.claim" // app, user, session, from-cursor → 1: one catch-up wrote that range
	CollRefs     = "recall.ref"   // app, user, "event", id → session, seq; app, user, "call", session, call id → seq; app, user, "recallrun", session, run → 1
)

// isRecallTool says whether a tool's results are recall's own traffic:
// copies of indexed events (cards, loaded windows), never evidence.
func isRecallTool(name string) bool { return name == SearchToolName || name == LoadToolName }

// recallRunKey names the reference that marks a run of a session as one
// that called a recall tool (its question and answers are echoes).
func recallRunKey(key store.SessionKey, run string) string {
	return store.DocPath(key.App, key.User, "recallrun", key.Session, run)
}

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
	obs  runtime.Observer // nil: no spans

	locks store.KeyedMutex[store.SessionKey] // one catch-up per session
}

// NewIndex returns an index over st; log may be nil (discard).
func NewIndex(st Store, log *slog.Logger) *Index {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Index{st: st, sess: session.New(st), log: log}
}

// Observe makes x open a span per search and load under o
// (spec/telemetry.md; nil: none, at no cost) and returns x. Call it before
// x is used.
func (x *Index) Observe(o runtime.Observer) *Index {
	x.obs = o
	return x
}

// span opens a span of kind for a search or load of the session key under
// the filter key.
func (x *Index) span(ctx context.Context, kind runtime.SpanKind, key store.SessionKey, run, filterKey string) (context.Context, runtime.Span) {
	return x.obs.Start(ctx, &runtime.SpanStart{Kind: kind, App: key.App, User: key.User, Session: key.Session, Run: run,
		FilterKey: filterKey, MapIndex: -1})
}

// spanError describes a failure for a span (nil: none).
func spanError(err error) *runtime.ErrorInfo {
	if err == nil {
		return nil
	}
	return &runtime.ErrorInfo{Kind: string(vm.KindInternal), Message: err.Error()}
}

// sessionStats is a session's index record: the last indexed sequence and,
// per length class, the number of indexed passages and of their terms.
type sessionStats struct {
	Cursor uint64
	Docs   [numClasses]uint64
	Terms  [numClasses]uint64
}

// statsVersion leads a session record.
const statsVersion = 3

func (s sessionStats) encode() []byte {
	b := binary.AppendUvarint([]byte{statsVersion}, s.Cursor)
	for c := range numClasses {
		b = binary.AppendUvarint(b, s.Docs[c])
		b = binary.AppendUvarint(b, s.Terms[c])
	}
	return b
}

func decodeStats(b []byte) (sessionStats, error) {
	var s sessionStats
	if len(b) == 0 || b[0] != statsVersion {
		return sessionStats{}, fmt.Errorf("recall: bad session record version: %w", store.ErrCorrupt)
	}
	b = b[1:]
	for _, f := range []*uint64{&s.Cursor, &s.Docs[0], &s.Terms[0], &s.Docs[1], &s.Terms[1]} {
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

// catchUpPage is how many ledger events one read takes; flushPostings
// bounds the postings held in memory before they are written.
const (
	catchUpPage   = 256
	flushPostings = 400_000
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

// catchUpTo indexes the session up to last. A damaged index document of
// the session (its record, a block) makes it rebuild the session's index
// from the ledger, once.
func (x *Index) catchUpTo(ctx context.Context, key store.SessionKey, last uint64) (int, error) {
	unlock := x.locks.Lock(key)
	defer unlock()
	n, err := x.catchUpLocked(ctx, key, last)
	if errors.Is(err, store.ErrCorrupt) {
		x.log.Warn("recall: damaged index; rebuilding the session's index", "session", key.String(), "err", err)
		if err := x.dropLocked(ctx, key); err != nil {
			return 0, err
		}
		return x.catchUpLocked(ctx, key, last)
	}
	return n, err
}

// catchUpLocked is catchUpTo under the session's lock. Each write is a
// batch of the blocks it merged into, the references, the session record
// and a claim on the range's starting cursor: a second process that read
// the same cursor finds the claim taken (store.ErrConflict), reads the
// record again and goes on from there, so no range is merged twice.
func (x *Index) catchUpLocked(ctx context.Context, key store.SessionKey, last uint64) (int, error) {
	read := 0
	for attempt := 0; ; attempt++ {
		st, err := x.stats(ctx, key)
		if err != nil || st.Cursor >= last {
			return read, err
		}
		n, err := x.indexRange(ctx, key, st, last)
		read += n
		if errors.Is(err, store.ErrConflict) && attempt < 8 {
			continue
		}
		return read, err
	}
}

// indexRange indexes events after st.Cursor up to last, writing every
// flushPostings postings.
func (x *Index) indexRange(ctx context.Context, key store.SessionKey, st sessionStats, last uint64) (int, error) {
	read := 0
	from := st.Cursor
	pending := map[uint16]block{}
	var refs []store.DocOp
	calls := map[string]int{}
	npost := 0
	flush := func() error {
		ops, err := x.mergeBlocks(ctx, key, pending)
		if err != nil {
			return err
		}
		ops = append(ops, refs...)
		ops = append(ops,
			store.DocOp{Coll: CollClaims, Key: store.DocPath(key.App, key.User, key.Session, seqBytes(from)), Value: []byte{1}, IfAbsent: true},
			store.DocOp{Coll: CollSessions, Key: store.DocPath(key.App, key.User, key.Session), Value: st.encode()})
		if err := x.st.ApplyDocs(ctx, ops...); err != nil {
			return fmt.Errorf("recall: index %s through event %d: %w", key, st.Cursor, err)
		}
		clear(pending)
		refs = refs[:0]
		clear(calls)
		npost, from = 0, st.Cursor
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
			refs, npost = appendEventDocs(refs, calls, pending, npost, key, en.Seq, e, &st)
		}
		if npost >= flushPostings {
			if err := flush(); err != nil {
				return read, err
			}
		}
	}
	if st.Cursor == from {
		return read, nil
	}
	return read, flush()
}

// mergeBlocks merges new postings into the tails of their buckets and
// returns the writes: a tail that reaches sealBytes is sealed (written
// under its smallest sequence number) and the tail emptied.
func (x *Index) mergeBlocks(ctx context.Context, key store.SessionKey, pending map[uint16]block) ([]store.DocOp, error) {
	buckets := make([]uint16, 0, len(pending))
	for b := range pending {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	ops := make([]store.DocOp, 0, len(buckets)+1)
	for _, b := range buckets {
		tk := blockKey(key, b, tailBlock)
		tail := block{}
		v, err := x.st.GetDoc(ctx, CollBlocks, tk)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("recall: read index of %s: %w", key, err)
		default:
			if tail, err = decodeBlock(v); err != nil {
				return nil, err
			}
		}
		tail.merge(pending[b])
		enc := encodeBlock(tail)
		if len(enc) >= sealBytes {
			ops = append(ops, store.DocOp{Coll: CollBlocks, Key: blockKey(key, b, tail.minSeq()), Value: enc},
				store.DocOp{Coll: CollBlocks, Key: tk, Delete: true})
			continue
		}
		ops = append(ops, store.DocOp{Coll: CollBlocks, Key: tk, Value: enc})
	}
	return ops, nil
}

// dropLocked deletes the session's index documents (blocks, claims, its
// record; references are rewritten as the events are indexed again).
func (x *Index) dropLocked(ctx context.Context, key store.SessionKey) error {
	var ops []store.DocOp
	add := func(coll, prefix string) error {
		docs, err := x.st.ListDocs(ctx, coll, prefix, "", 0)
		if err != nil {
			return fmt.Errorf("recall: drop index of %s: %w", key, err)
		}
		for _, d := range docs {
			ops = append(ops, store.DocOp{Coll: coll, Key: d.Key, Delete: true})
		}
		return nil
	}
	for b := range uint16(numBuckets) {
		if err := add(CollBlocks, store.DocPath(key.App, key.User, bucketPart(b), key.Session)); err != nil {
			return err
		}
	}
	if err := add(CollClaims, store.DocPath(key.App, key.User, key.Session)); err != nil {
		return err
	}
	ops = append(ops, store.DocOp{Coll: CollSessions, Key: store.DocPath(key.App, key.User, key.Session), Delete: true})
	for len(ops) > 0 {
		n := min(len(ops), 20000)
		if err := x.st.ApplyDocs(ctx, ops[:n]...); err != nil {
			return fmt.Errorf("recall: drop index of %s: %w", key, err)
		}
		ops = ops[n:]
	}
	return nil
}

// appendEventDocs adds the postings of one event to pending (by bucket)
// and its references to refs; npost counts the postings pending. calls
// maps the references already in refs to their index.
func appendEventDocs(refs []store.DocOp, calls map[string]int, pending map[uint16]block, npost int, key store.SessionKey, seq uint64, e *runtime.Event, st *sessionStats) ([]store.DocOp, int) {
	if _, ok := roleOf(e.Kind); !ok {
		return refs, npost
	}
	recallTraffic := e.Kind == runtime.EventToolResult && e.ToolCall != nil && isRecallTool(e.ToolCall.Name)
	if recallTraffic && e.Run != "" {
		// The run asked recall: its question and answers are echoes
		// (evidenceWeight), and its recall results are not indexed.
		if rk := recallRunKey(key, e.Run); calls[rk] == 0 {
			calls[rk] = len(refs) + 1
			refs = append(refs, store.DocOp{Coll: CollRefs, Key: rk, Value: []byte{1}})
		}
	}
	var parts [][]string
	if !recallTraffic {
		parts = passages(Terms(indexText(e)))
	}
	class := uint8(classMessage)
	if e.Kind == runtime.EventToolResult {
		class = classTool
	}
	tf := map[string]uint32{}
	for p, part := range parts {
		st.Docs[class]++
		st.Terms[class] += uint64(len(part))
		clear(tf)
		for _, t := range part {
			tf[t]++
		}
		for t, c := range tf {
			b := bucketOf(t)
			blk := pending[b]
			if blk == nil {
				blk = block{}
				pending[b] = blk
			}
			blk[t] = append(blk[t], post{seq: seq, passage: uint32(p), tf: c, dl: uint32(len(part)), class: class})
			npost++
		}
	}
	ref := binary.AppendUvarint(nil, seq)
	ref = append(ref, key.Session...)
	refs = append(refs, store.DocOp{Coll: CollRefs, Key: store.DocPath(key.App, key.User, "event", e.ID), Value: ref})
	if e.Kind == runtime.EventToolResult && e.ToolCall != nil && e.ToolCall.ID != "" {
		ck := store.DocPath(key.App, key.User, "call", key.Session, e.ToolCall.ID)
		v := binary.AppendUvarint(nil, seq)
		// A repeated call id within one batch keeps the latest result.
		if i, dup := calls[ck]; dup {
			refs[i].Value = v
			return refs, npost
		}
		calls[ck] = len(refs)
		refs = append(refs, store.DocOp{Coll: CollRefs, Key: ck, Value: v})
	}
	return refs, npost
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
		if !isRecallTool(c.Name) {
			b.WriteString("\n")
			b.WriteString(c.Name)
		}
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

// docSource is a user's corpus as one search reads it: statistics (N,
// the average passage length, df) over every indexed session of the user,
// postings of the sessions in the search's scope.
type docSource struct {
	st        Store
	app, user string
	// only, when set, is the one session whose postings are returned;
	// else every session's but skip's.
	only, skip string
	n          int
	avgdl      [numClasses]float64
	ids        map[string]uint64 // session → its number in document ids
	names      []string          // by number
	// buckets are the posting blocks read by this search, by bucket (df
	// reads a term's bucket, postings decodes from it).
	buckets map[uint16][]store.Doc
}

// Document ids: a passage is session number (20 bits) · seq (28 bits) ·
// passage (16 bits); an event is the same with passage 0.
const (
	docSessionBits = 20
	docSeqBits     = 28
	docPassageBits = 16
)

func docID(sess uint64, seq uint64, passage uint32) uint64 {
	return sess<<(docSeqBits+docPassageBits) | seq<<docPassageBits | uint64(passage)
}

// eventOf maps a passage's id to its event's.
func eventOf(doc uint64) uint64 { return doc &^ (1<<docPassageBits - 1) }

// docRef is the session and sequence number of a document id.
func (d *docSource) docRef(doc uint64) (string, uint64) {
	si := doc >> (docSeqBits + docPassageBits)
	seq := doc >> docPassageBits & (1<<docSeqBits - 1)
	if si >= uint64(len(d.names)) {
		return "", 0
	}
	return d.names[si], seq
}

func (d *docSource) stats() (int, [numClasses]float64) { return d.n, d.avgdl }

// corruptSession is a damaged index document of one session met during a
// search: the session's index is rebuilt and the search tried again.
type corruptSession struct {
	session string
	err     error
}

func (e *corruptSession) Error() string { return e.err.Error() }
func (e *corruptSession) Unwrap() error { return e.err }

// bucket returns the posting blocks of the term's bucket (read once per
// search) and the key prefix they share.
func (d *docSource) bucket(ctx context.Context, term string) ([]store.Doc, string, error) {
	b := bucketOf(term)
	base := store.DocPath(d.app, d.user, bucketPart(b))
	if docs, ok := d.buckets[b]; ok {
		return docs, base, nil
	}
	docs, err := d.st.ListDocs(ctx, CollBlocks, base, "", 0)
	if err != nil {
		return nil, "", fmt.Errorf("recall: read postings: %w", err)
	}
	if d.buckets == nil {
		d.buckets = map[uint16][]store.Doc{}
	}
	d.buckets[b] = docs
	return docs, base, nil
}

// eachBlock calls fn with every block of the term's bucket that belongs to
// an indexed session, positioned at the term (blocks without it are
// skipped): the session's name and number and the reader.
func (d *docSource) eachBlock(ctx context.Context, term string, fn func(session string, si uint64, r *blockReader) error) error {
	docs, base, err := d.bucket(ctx, term)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		parts, ok := store.SplitDocPath(doc.Key[len(base):])
		if !ok || len(parts) != 2 {
			continue
		}
		si, indexed := d.ids[parts[0]]
		if !indexed {
			continue
		}
		r, err := newBlockReader(doc.Value)
		for err == nil {
			var more bool
			if more, err = r.next(); !more || err != nil {
				break
			}
			if r.termIs(term) {
				err = fn(parts[0], si, r)
				break
			}
		}
		if err != nil {
			return &corruptSession{session: parts[0], err: err}
		}
	}
	return nil
}

// df counts the term's postings over all the user's sessions, from the
// block headers (nothing is decoded).
func (d *docSource) df(ctx context.Context, term string) (int, error) {
	df := 0
	err := d.eachBlock(ctx, term, func(_ string, _ uint64, r *blockReader) error {
		df += int(r.n)
		return nil
	})
	return df, err
}

// postings returns the term's postings in the scope's sessions for which
// want (nil: every one) holds, in document id order.
func (d *docSource) postings(ctx context.Context, term string, want func(doc uint64) bool) ([]posting, error) {
	var out []posting
	err := d.eachBlock(ctx, term, func(session string, si uint64, r *blockReader) error {
		if session == d.skip || d.only != "" && session != d.only {
			return nil
		}
		if want == nil {
			out = slices.Grow(out, int(min(r.n, uint64(len(r.posts)))))
		}
		return r.each(func(p post) {
			if p.seq >= 1<<docSeqBits {
				return
			}
			if doc := docID(si, p.seq, p.passage); want == nil || want(doc) {
				out = append(out, posting{doc: doc, tf: int(p.tf), dl: int(p.dl), class: p.class})
			}
		})
	})
	return out, err
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

// corpus opens the user's corpus for a search of one session (only ≠ "")
// or of every session but skip: statistics over every indexed session of
// the user (the scope filters candidates, not statistics).
func (x *Index) corpus(ctx context.Context, app, user, only, skip string) (*docSource, error) {
	src := &docSource{st: x.st, app: app, user: user, only: only, skip: skip, ids: map[string]uint64{}}
	var docs, terms [numClasses]uint64
	prefix := store.DocPath(app, user)
	recs, err := x.st.ListDocs(ctx, CollSessions, prefix, "", 0)
	if err != nil {
		return nil, fmt.Errorf("recall: read index statistics: %w", err)
	}
	for _, d := range recs {
		parts, ok := store.SplitDocPath(d.Key[len(prefix):])
		if !ok || len(parts) != 1 || len(src.names) >= 1<<docSessionBits {
			continue
		}
		s, err := decodeStats(d.Value)
		if err != nil {
			return nil, &corruptSession{session: parts[0], err: err}
		}
		src.ids[parts[0]] = uint64(len(src.names))
		src.names = append(src.names, parts[0])
		for c := range numClasses {
			docs[c] += s.Docs[c]
			terms[c] += s.Terms[c]
		}
	}
	for c := range numClasses {
		src.n += int(docs[c])
		if docs[c] > 0 {
			src.avgdl[c] = float64(terms[c]) / float64(docs[c])
		}
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

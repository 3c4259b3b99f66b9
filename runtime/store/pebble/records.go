package pebble

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// Records under codec version 1 (spec/storage.md). A record is a fixed
// sequence of fields: uvarints for counts, steps and kinds; a zigzag varint
// of Unix seconds and a uvarint of nanoseconds for times; a uvarint length
// and the bytes for strings and blobs. Blobs that are the whole value
// (bytecode, events, journal entries, pending writes, results, state) are the
// payload itself.

// fields is one direction of the codec: *enc appends each field it is
// handed, *dec overwrites each with what it reads. A record lists its fields
// once, in a function over fields, so that writing and reading it follow one
// order.
type fields interface {
	// more reports whether optional trailing fields follow: always when
	// writing; when reading, whether the payload has bytes left.
	more() bool
	// check fails a read with why unless ok (a write was checked before).
	check(ok bool, why string)
	uint(*uint64)
	str(*string)
	blob(*[]byte)
	time(*time.Time)
}

// encode frames r's fields, with room for n payload bytes.
func encode[T any](n int, r T, list func(fields, *T)) []byte {
	e := &enc{store.BeginValue(n)}
	list(e, &r)
	return store.EndValue(e.b)
}

// decode reads the fields of the record at key into r (which holds what the
// key says), or reports the payload corrupt.
func decode[T any](key, payload []byte, r T, list func(fields, *T)) (T, error) {
	d := &dec{key: key, b: payload}
	list(d, &r)
	return r, d.done()
}

// enc appends fields to a framed value.
type enc struct{ b []byte }

func (e *enc) more() bool         { return true }
func (e *enc) check(bool, string) {}
func (e *enc) uint(v *uint64)     { e.b = binary.AppendUvarint(e.b, *v) }
func (e *enc) str(s *string)      { e.b = append(binary.AppendUvarint(e.b, uint64(len(*s))), *s...) }
func (e *enc) blob(p *[]byte)     { e.b = append(binary.AppendUvarint(e.b, uint64(len(*p))), *p...) }
func (e *enc) time(t *time.Time) {
	e.b = binary.AppendVarint(e.b, t.Unix())
	e.b = binary.AppendUvarint(e.b, uint64(t.Nanosecond()))
}

// dec reads fields from a payload. The first failure sticks; done reports it,
// or trailing bytes, as corruption of key.
type dec struct {
	key []byte
	b   []byte
	bad string
}

func (d *dec) fail(why string) {
	if d.bad == "" {
		d.bad = why
	}
	d.b = nil
}

func (d *dec) num() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// field reads a length-prefixed field, nil when it is bad.
func (d *dec) field() []byte {
	n := d.num()
	if n > uint64(len(d.b)) {
		d.fail("field longer than the value")
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) more() bool { return len(d.b) > 0 }

func (d *dec) check(ok bool, why string) {
	if !ok {
		d.fail(why)
	}
}

func (d *dec) uint(v *uint64) { *v = d.num() }
func (d *dec) str(s *string)  { *s = string(d.field()) }
func (d *dec) blob(p *[]byte) { *p = append([]byte(nil), d.field()...) }

func (d *dec) time(t *time.Time) {
	*t = time.Time{}
	sec, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad time")
		return
	}
	d.b = d.b[n:]
	nsec := d.num()
	if nsec >= 1e9 {
		d.fail("bad time")
		return
	}
	*t = time.Unix(sec, int64(nsec)).UTC()
}

func (d *dec) done() error {
	if d.bad == "" && len(d.b) != 0 {
		d.bad = "trailing bytes"
	}
	if d.bad != "" {
		return store.CorruptRecord(d.key, d.bad)
	}
	return nil
}

// ---- records ----

// codec is one record kind's value format: its fields in order, and a
// guess of its encoded size.
type codec[T any] struct {
	size   func(T) int
	fields func(fields, *T)
}

// value encodes r, framed.
func (c codec[T]) value(r T) []byte { return encode(c.size(r), r, c.fields) }

// decode decodes the payload of key into r, which holds what the key says.
func (c codec[T]) decode(key, payload []byte, r T) (T, error) {
	return decode(key, payload, r, c.fields)
}

// The record kinds of the layout's values (spec/storage.md, "Value framing").
var (
	// metaCodec: the layout version.
	metaCodec = codec[uint64]{func(uint64) int { return 2 }, func(f fields, v *uint64) { f.uint(v) }}
	// runCodec: the strings and meta, and at most 8 length prefixes, 2
	// times, 7 usage numbers and the first event (10 bytes each at most).
	runCodec = codec[store.Run]{func(r store.Run) int {
		return 200 + len(r.ID) + len(r.Session.App) + len(r.Session.User) + len(r.Session.Session) + len(r.Runnable) +
			len(r.ProgramHash) + len(r.Status) + len(r.ParentRun) + len(r.Meta)
	}, runFields}
	// checkpointCodec: read with decodeCheckpoint, which checks the kind.
	checkpointCodec = codec[store.Checkpoint]{func(c store.Checkpoint) int {
		return 64 + len(c.State) + len(c.Frontier) + len(c.Counters) + len(c.Interrupts) + len(c.ProgramHash) + len(c.SchemaHash)
	}, checkpointFields}
	sessionCodec = codec[sessionRecord]{func(sessionRecord) int { return 32 }, func(f fields, r *sessionRecord) {
		f.time(&r.created)
		f.time(&r.updated)
		f.uint(&r.lastSeq)
	}}
	summaryCodec = codec[store.Summary]{func(s store.Summary) int { return 32 + len(s.Text) }, func(f fields, s *store.Summary) {
		f.str(&s.Text)
		f.uint(&s.Boundary)
		f.time(&s.Time)
	}}
	leaseCodec = codec[store.Lease]{func(l store.Lease) int { return 32 + len(l.Owner) }, func(f fields, l *store.Lease) {
		f.str(&l.Owner)
		f.time(&l.Expires)
		f.uint(&l.Token)
	}}
)

func runFields(f fields, r *store.Run) {
	status := string(r.Status)
	f.str(&r.ID)
	f.str(&r.Session.App)
	f.str(&r.Session.User)
	f.str(&r.Session.Session)
	f.str(&r.Runnable)
	f.str(&r.ProgramHash)
	f.str(&status)
	f.str(&r.ParentRun)
	f.uint(&r.ParentStep)
	f.time(&r.Created)
	f.time(&r.Updated)
	f.blob(&r.Meta)
	r.Status = store.RunStatus(status)
	// Codec version 2 appends the usage; a version 1 record ends here and
	// reads as no usage.
	if !f.more() {
		r.Usage = store.RunUsage{}
		return
	}
	u := &r.Usage
	cost, priced := math.Float64bits(u.Cost), uint64(0)
	if u.Priced {
		priced = 1
	}
	f.uint(&u.ModelCalls)
	f.uint(&u.InputTokens)
	f.uint(&u.OutputTokens)
	f.uint(&u.CachedTokens)
	f.uint(&cost)
	f.uint(&priced)
	u.Cost, u.Priced = math.Float64frombits(cost), priced != 0
	f.check(u.Check() == nil && priced <= 1, "bad usage")
	// Codec version 3 appends the run's first event; a version 2 record
	// ends here and reads as an unknown one.
	if !f.more() {
		r.FirstEvent = 0
		return
	}
	f.uint(&r.FirstEvent)
}

// decodeCheckpoint decodes the checkpoint of run at step.
func decodeCheckpoint(key, payload []byte, run string, step uint64) (store.Checkpoint, error) {
	c, err := checkpointCodec.decode(key, payload, store.Checkpoint{Run: run, Step: step})
	if err == nil && c.Kind != store.Full && c.Kind != store.Delta {
		err = store.CorruptRecord(key, "unknown checkpoint kind")
	}
	return c, err
}

func checkpointFields(f fields, c *store.Checkpoint) {
	kind := uint64(c.Kind)
	f.uint(&kind)
	f.blob(&c.State)
	f.blob(&c.Frontier)
	f.blob(&c.Counters)
	f.blob(&c.Interrupts)
	f.str(&c.ProgramHash)
	f.str(&c.SchemaHash)
	f.time(&c.Time)
	f.uint(&c.JournalNext)
	c.Kind = store.CheckpointKind(kind)
}

// sessionRecord is what the session key holds; the ledger, state and
// summaries have keys of their own.
type sessionRecord struct {
	created, updated time.Time
	lastSeq          uint64
	// absent is only ever set in the session cache (heads.go): the key
	// holds no record. Not encoded.
	absent bool
	// bare is only ever set in the session cache: this handle created
	// the session and has put no summary of it since, so it has none
	// (DeleteSession drops a session's summaries with it). Not encoded.
	bare bool
}

// attemptNum decodes an attempt stored as a key's number part.
func attemptNum(key []byte, n uint64) (uint32, error) {
	if n > math.MaxUint32 {
		return 0, store.CorruptRecord(key, "attempt out of range")
	}
	return uint32(n), nil
}

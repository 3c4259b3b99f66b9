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

// enc appends fields to a framed value.
type enc struct{ b []byte }

// newEnc starts a value with room for n payload bytes.
func newEnc(n int) *enc { return &enc{store.BeginValue(n)} }

func (e *enc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) blob(p []byte) { e.uint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) time(t time.Time) {
	e.b = binary.AppendVarint(e.b, t.Unix())
	e.uint(uint64(t.Nanosecond()))
}

// value ends the frame.
func (e *enc) value() []byte { return store.EndValue(e.b) }

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

func (d *dec) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) blob() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail("field longer than the value")
		return nil
	}
	p := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return p
}

func (d *dec) str() string {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail("field longer than the value")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) time() time.Time {
	sec, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad time")
		return time.Time{}
	}
	d.b = d.b[n:]
	nsec := d.uint()
	if nsec >= 1e9 {
		d.fail("bad time")
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
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

// metaValue holds the layout version.
func metaValue() []byte {
	e := newEnc(2)
	e.uint(store.LayoutVersion)
	return e.value()
}

func decodeMeta(key, payload []byte) (uint64, error) {
	d := dec{key: key, b: payload}
	v := d.uint()
	return v, d.done()
}

func runValue(r store.Run) []byte {
	e := newEnc(96 + len(r.ID) + len(r.Meta) + len(r.ProgramHash))
	e.str(r.ID)
	e.str(r.Session.App)
	e.str(r.Session.User)
	e.str(r.Session.Session)
	e.str(r.Runnable)
	e.str(r.ProgramHash)
	e.str(string(r.Status))
	e.str(r.ParentRun)
	e.uint(r.ParentStep)
	e.time(r.Created)
	e.time(r.Updated)
	e.blob(r.Meta)
	return e.value()
}

func decodeRun(key, payload []byte) (store.Run, error) {
	d := dec{key: key, b: payload}
	var r store.Run
	r.ID = d.str()
	r.Session.App = d.str()
	r.Session.User = d.str()
	r.Session.Session = d.str()
	r.Runnable = d.str()
	r.ProgramHash = d.str()
	r.Status = store.RunStatus(d.str())
	r.ParentRun = d.str()
	r.ParentStep = d.uint()
	r.Created = d.time()
	r.Updated = d.time()
	r.Meta = d.blob()
	return r, d.done()
}

func checkpointValue(c store.Checkpoint) []byte {
	e := newEnc(64 + len(c.State) + len(c.Frontier) + len(c.Counters) + len(c.Interrupts) + len(c.ProgramHash) + len(c.SchemaHash))
	e.uint(uint64(c.Kind))
	e.blob(c.State)
	e.blob(c.Frontier)
	e.blob(c.Counters)
	e.blob(c.Interrupts)
	e.str(c.ProgramHash)
	e.str(c.SchemaHash)
	e.time(c.Time)
	e.uint(c.JournalNext)
	return e.value()
}

// decodeCheckpoint decodes the checkpoint of run at step.
func decodeCheckpoint(key, payload []byte, run string, step uint64) (store.Checkpoint, error) {
	d := dec{key: key, b: payload}
	c := store.Checkpoint{Run: run, Step: step}
	kind := d.uint()
	c.State = d.blob()
	c.Frontier = d.blob()
	c.Counters = d.blob()
	c.Interrupts = d.blob()
	c.ProgramHash = d.str()
	c.SchemaHash = d.str()
	c.Time = d.time()
	c.JournalNext = d.uint()
	if kind != uint64(store.Full) && kind != uint64(store.Delta) {
		d.fail("unknown checkpoint kind")
	}
	c.Kind = store.CheckpointKind(kind)
	return c, d.done()
}

// sessionRecord is what the session key holds; the ledger, state and
// summaries have keys of their own.
type sessionRecord struct {
	created, updated time.Time
	lastSeq          uint64
}

func sessionValue(r sessionRecord) []byte {
	e := newEnc(32)
	e.time(r.created)
	e.time(r.updated)
	e.uint(r.lastSeq)
	return e.value()
}

func decodeSession(key, payload []byte) (sessionRecord, error) {
	d := dec{key: key, b: payload}
	var r sessionRecord
	r.created = d.time()
	r.updated = d.time()
	r.lastSeq = d.uint()
	return r, d.done()
}

func summaryValue(s store.Summary) []byte {
	e := newEnc(32 + len(s.Text))
	e.str(s.Text)
	e.uint(s.Boundary)
	e.time(s.Time)
	return e.value()
}

func decodeSummary(key, payload []byte, filterKey string) (store.Summary, error) {
	d := dec{key: key, b: payload}
	s := store.Summary{FilterKey: filterKey}
	s.Text = d.str()
	s.Boundary = d.uint()
	s.Time = d.time()
	return s, d.done()
}

func leaseValue(l store.Lease) []byte {
	e := newEnc(32 + len(l.Owner))
	e.str(l.Owner)
	e.time(l.Expires)
	e.uint(l.Token)
	return e.value()
}

func decodeLease(key, payload []byte, leaseKey string) (store.Lease, error) {
	d := dec{key: key, b: payload}
	l := store.Lease{Key: leaseKey}
	l.Owner = d.str()
	l.Expires = d.time()
	l.Token = d.uint()
	return l, d.done()
}

// attemptNum decodes an attempt stored as a key's number part.
func attemptNum(key []byte, n uint64) (uint32, error) {
	if n > math.MaxUint32 {
		return 0, store.CorruptRecord(key, "attempt out of range")
	}
	return uint32(n), nil
}

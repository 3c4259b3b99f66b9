package store

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// LayoutVersion is the key layout this build writes and reads. It is the
// first byte of every data key and the value of the meta key.
const LayoutVersion = 1

// Kind is the second byte of every data key: what the key holds. Values are
// append-only (spec/storage.md).
type Kind byte

const (
	KindProgram      Kind = 0x01 // hash → bytecode
	KindRun          Kind = 0x02 // run → run record
	KindRunIndex     Kind = 0x03 // app, user, session, run → empty
	KindCheckpoint   Kind = 0x04 // run, step → checkpoint
	KindPending      Kind = 0x05 // run, step, node, attempt → writes
	KindIntent       Kind = 0x06 // run, node, attempt → empty
	KindEffect       Kind = 0x07 // run, node, attempt → result
	KindJournal      Kind = 0x08 // run, seq → entry
	KindRunTask      Kind = 0x09 // run, user, task → empty
	KindSession      Kind = 0x0A // app, user, session → session record
	KindSessionState Kind = 0x0B // app, user, session → state blob
	KindEvent        Kind = 0x0C // app, user, session, seq → event
	KindSummary      Kind = 0x0D // app, user, session, filter key → summary
	KindLease        Kind = 0x0E // lease key → lease
	KindTask         Kind = 0x0F // user, task → run
	KindArtifact     Kind = 0x10 // app, user, session, name, revision (reserved)
	KindMemory       Kind = 0x11 // app, user, id (reserved)
	KindDoc          Kind = 0x12 // collection, key → document (Docs)
)

// part types of a key's tuple.
const (
	pStr = 's'
	pU64 = 'u'
)

// layouts gives, for every kind, its name and the types of its tuple parts.
var layouts = map[Kind]struct {
	name  string
	parts string
}{
	KindProgram:      {"program", "s"},
	KindRun:          {"run", "s"},
	KindRunIndex:     {"run-index", "ssss"},
	KindCheckpoint:   {"checkpoint", "su"},
	KindPending:      {"pending", "susu"},
	KindIntent:       {"intent", "ssu"},
	KindEffect:       {"effect", "ssu"},
	KindJournal:      {"journal", "su"},
	KindRunTask:      {"run-task", "sss"},
	KindSession:      {"session", "sss"},
	KindSessionState: {"session-state", "sss"},
	KindEvent:        {"event", "sssu"},
	KindSummary:      {"summary", "ssss"},
	KindLease:        {"lease", "s"},
	KindTask:         {"task", "ss"},
	KindArtifact:     {"artifact", "ssssu"},
	KindMemory:       {"memory", "sss"},
	KindDoc:          {"doc", "ss"},
}

func (k Kind) String() string {
	if l, ok := layouts[k]; ok {
		return l.name
	}
	return fmt.Sprintf("kind(0x%02x)", byte(k))
}

// MetaKey returns the key of the meta record, which pins the layout version.
// It sorts before every data key and is the same in every layout.
func MetaKey() []byte { return []byte("\x00meta") }

// Key is an encoded data key, built part by part:
//
//	NewKey(KindCheckpoint).Str(run).U64(step)
//
// A key made of the first parts of another is its prefix, and every key under
// a prefix p sorts in [p, PrefixEnd(p)). Str and U64 never modify k's
// backing array, so one prefix can be extended many times.
type Key []byte

// NewKey starts a data key of kind k.
func NewKey(k Kind) Key { return Key{LayoutVersion, byte(k)} }

// Str appends a string part: its bytes with 0x00 escaped as 0x00 0xFF, then
// the terminator 0x00 0x01. The encoding preserves order.
func (k Key) Str(s string) Key {
	out := make(Key, len(k), len(k)+len(s)+2)
	copy(out, k)
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			out = append(out, 0, 0xFF)
			continue
		}
		out = append(out, s[i])
	}
	return append(out, 0, 1)
}

// U64 appends a number part: 8 bytes, big-endian.
func (k Key) U64(v uint64) Key {
	out := make(Key, len(k), len(k)+8)
	copy(out, k)
	return binary.BigEndian.AppendUint64(out, v)
}

// PrefixEnd returns the smallest key greater than every key starting with p
// (nil when there is none: p is all 0xFF).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Part is one decoded part of a key: a string, or a number when IsNum.
type Part struct {
	Str   string
	Num   uint64
	IsNum bool
}

// DecodeKey splits a complete data key into its kind and parts. A key that
// does not follow the layout is ErrCorrupt.
func DecodeKey(b []byte) (Kind, []Part, error) {
	bad := func(why string) (Kind, []Part, error) {
		return 0, nil, fmt.Errorf("key %q: %s: %w", b, why, ErrCorrupt)
	}
	if len(b) < 2 {
		return bad("too short")
	}
	if b[0] != LayoutVersion {
		return bad("layout version " + strconv.Itoa(int(b[0])))
	}
	kind := Kind(b[1])
	l, ok := layouts[kind]
	if !ok {
		return bad("unknown kind")
	}
	parts := make([]Part, 0, len(l.parts))
	rest := b[2:]
	for _, t := range []byte(l.parts) {
		switch t {
		case pU64:
			if len(rest) < 8 {
				return bad("truncated number")
			}
			parts = append(parts, Part{Num: binary.BigEndian.Uint64(rest), IsNum: true})
			rest = rest[8:]
		case pStr:
			s, n, ok := decodeStr(rest)
			if !ok {
				return bad("unterminated string")
			}
			parts = append(parts, Part{Str: s})
			rest = rest[n:]
		}
	}
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	return kind, parts, nil
}

// decodeStr decodes a string part at the start of b and returns how many
// bytes it used.
func decodeStr(b []byte) (string, int, bool) {
	var s []byte
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			s = append(s, b[i])
			continue
		}
		switch b[i+1] {
		case 0x01:
			return string(s), i + 2, true
		case 0xFF:
			s = append(s, 0)
			i++
		default:
			return "", 0, false
		}
	}
	return "", 0, false
}

// FormatKey renders a key for messages: "checkpoint/run_1/12". Strings that
// are not plain printable text are quoted.
func FormatKey(b []byte) string {
	if string(b) == string(MetaKey()) {
		return "meta"
	}
	kind, parts, err := DecodeKey(b)
	if err != nil {
		return strconv.Quote(string(b))
	}
	var sb strings.Builder
	sb.WriteString(kind.String())
	for _, p := range parts {
		sb.WriteByte('/')
		switch {
		case p.IsNum:
			sb.WriteString(strconv.FormatUint(p.Num, 10))
		case p.Str == "" || strings.ContainsAny(p.Str, "/\"") || strconv.Quote(p.Str) != `"`+p.Str+`"`:
			sb.WriteString(strconv.Quote(p.Str))
		default:
			sb.WriteString(p.Str)
		}
	}
	return sb.String()
}

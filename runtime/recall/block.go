package recall

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/agentc/agentc/runtime/store"
)

// Posting blocks (spec/recall.md, "Layout"). A term's postings live in
// the blocks of its bucket (FNV-1a of the term modulo numBuckets): one
// open block per bucket and session (the tail, merged into by every
// catch-up) and sealed blocks, written once the tail reaches sealBytes
// (small: every catch-up rewrites the tails it touches, so the seal size
// bounds the write amplification of a session indexed run by run). A
// catch-up therefore writes at most one document per bucket it touches,
// however many terms and postings it adds, and a search reads a term's
// postings as a few contiguous values per session.
const (
	numBuckets   = 4096
	blockVersion = 2
	sealBytes    = 2 << 10
	tailBlock    = ^uint64(0) // the tail's block key
)

// post is one posting: a term occurs tf times in passage passage of event
// seq, which has dl terms; class is the event's length class (classTool
// for a tool result, else classMessage).
type post struct {
	seq     uint64
	passage uint32
	tf, dl  uint32
	class   uint8
}

// Length classes: BM25 normalizes a passage's length against the average
// of its class, so a tool result's passage is compared with tool results',
// a message with messages'.
const (
	classMessage = 0
	classTool    = 1
	numClasses   = 2
)

// block maps terms to their postings, in (seq, passage) order.
type block map[string][]post

func bucketOf(term string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(term))
	return uint16(h.Sum32() % numBuckets)
}

func bucketPart(b uint16) string { return string([]byte{byte(b >> 8), byte(b)}) }

// blockKey is the key of a block of a session's bucket (tailBlock: the tail).
func blockKey(key store.SessionKey, b uint16, blk uint64) string {
	return store.DocPath(key.App, key.User, bucketPart(b), key.Session, seqBytes(blk))
}

// encodeBlock encodes b: a version byte, the number of terms, then per
// term (in order) its length and bytes, its number of postings, the byte
// length of its postings and the postings (uvarint seq delta, passage, tf,
// dl·2 + class each).
func encodeBlock(b block) []byte {
	terms := make([]string, 0, len(b))
	for t := range b {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	out := []byte{blockVersion}
	out = binary.AppendUvarint(out, uint64(len(terms)))
	var ps []byte
	for _, t := range terms {
		out = binary.AppendUvarint(out, uint64(len(t)))
		out = append(out, t...)
		list := b[t]
		ps = ps[:0]
		prev := uint64(0)
		for _, p := range list {
			ps = binary.AppendUvarint(ps, p.seq-prev)
			ps = binary.AppendUvarint(ps, uint64(p.passage))
			ps = binary.AppendUvarint(ps, uint64(p.tf))
			ps = binary.AppendUvarint(ps, uint64(p.dl)<<1|uint64(p.class&1))
			prev = p.seq
		}
		out = binary.AppendUvarint(out, uint64(len(list)))
		out = binary.AppendUvarint(out, uint64(len(ps)))
		out = append(out, ps...)
	}
	return out
}

// errBlock is a block that does not decode.
func errBlock(what string) error {
	return fmt.Errorf("recall: damaged posting block (%s): %w", what, store.ErrCorrupt)
}

// blockReader walks the terms of an encoded block.
type blockReader struct {
	v     []byte
	left  uint64 // terms not read yet
	term  string
	n     uint64 // postings of term
	posts []byte // encoded postings of term
}

func newBlockReader(v []byte) (*blockReader, error) {
	if len(v) == 0 || v[0] != blockVersion {
		return nil, errBlock("version")
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 {
		return nil, errBlock("term count")
	}
	return &blockReader{v: v[1+k:], left: n}, nil
}

// next reads the next term; false at the end.
func (r *blockReader) next() (bool, error) {
	if r.left == 0 {
		if len(r.v) != 0 {
			return false, errBlock("trailing bytes")
		}
		return false, nil
	}
	r.left--
	l, k := binary.Uvarint(r.v)
	if k <= 0 || l > uint64(len(r.v)-k) {
		return false, errBlock("term")
	}
	r.term = string(r.v[k : k+int(l)])
	r.v = r.v[k+int(l):]
	n, k := binary.Uvarint(r.v)
	if k <= 0 {
		return false, errBlock("posting count")
	}
	r.v = r.v[k:]
	bl, k := binary.Uvarint(r.v)
	if k <= 0 || bl > uint64(len(r.v)-k) || n > bl {
		return false, errBlock("postings")
	}
	r.n, r.posts, r.v = n, r.v[k:k+int(bl)], r.v[k+int(bl):]
	return true, nil
}

// termIs reports whether the current term is t without allocating.
func (r *blockReader) termIs(t string) bool { return r.term == t }

// each decodes the current term's postings.
func (r *blockReader) each(fn func(post)) error {
	b := r.posts
	var seq uint64
	for i := uint64(0); i < r.n; i++ {
		var f [4]uint64
		for j := range f {
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return errBlock("posting")
			}
			f[j], b = v, b[k:]
		}
		if f[0] > ^uint64(0)-seq || f[1] > 1<<16 || f[2] > 1<<20 || f[3] > 1<<21 {
			return errBlock("posting range")
		}
		seq += f[0]
		fn(post{seq: seq, passage: uint32(f[1]), tf: uint32(f[2]), dl: uint32(f[3] >> 1), class: uint8(f[3] & 1)})
	}
	if len(b) != 0 {
		return errBlock("posting bytes")
	}
	return nil
}

// decodeBlock decodes a whole block.
func decodeBlock(v []byte) (block, error) {
	r, err := newBlockReader(v)
	if err != nil {
		return nil, err
	}
	b := block{}
	for {
		ok, err := r.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return b, nil
		}
		if _, dup := b[r.term]; dup {
			return nil, errBlock("repeated term")
		}
		list := make([]post, 0, min(r.n, 1<<16))
		if err := r.each(func(p post) { list = append(list, p) }); err != nil {
			return nil, err
		}
		b[r.term] = list
	}
}

// merge adds postings to b, keeping each term's list in (seq, passage)
// order.
func (b block) merge(add block) {
	for t, ps := range add {
		cur := b[t]
		sorted := len(cur) == 0 || len(ps) == 0 || cur[len(cur)-1].seq < ps[0].seq
		cur = append(cur, ps...)
		if !sorted {
			slices.SortStableFunc(cur, func(a, c post) int {
				if a.seq != c.seq {
					return cmpU64(a.seq, c.seq)
				}
				return int(a.passage) - int(c.passage)
			})
		}
		b[t] = cur
	}
}

// minSeq is the smallest sequence number in b (0 when empty).
func (b block) minSeq() uint64 {
	m := uint64(0)
	for _, ps := range b {
		if len(ps) > 0 && (m == 0 || ps[0].seq < m) {
			m = ps[0].seq
		}
	}
	return m
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

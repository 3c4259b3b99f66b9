package bytecode

import (
	"fmt"
	"math"

	"github.com/agentc/agentc/compiler/types"
)

// List sizes (section 16; spec/bytecode.md "List sizes"): the declared
// `max N` of state fields (spec/language.md §9.1), which the VM holds on
// every input and write. A program without sizes omits the section, so
// files compiled before it existed decode unchanged.
//
//	16 sizes    = list(size) .
//	   size     = uvarint(state) uvarint(field) uvarint(max) .   (state, field) strictly ascending; 1 ≤ max ≤ 2^31−1

// MaxListSize is the largest size a field may declare.
const MaxListSize = math.MaxInt32

// sizesEmpty is the rule by which Encode omits section 16.
func sizesEmpty(p *Program) bool {
	for i := range p.States {
		for j := range p.States[i].Fields {
			if p.States[i].Fields[j].MaxLen != 0 {
				return false
			}
		}
	}
	return true
}

func (w *writer) sizes(p *Program) error {
	n := 0
	for i := range p.States {
		for j := range p.States[i].Fields {
			if p.States[i].Fields[j].MaxLen != 0 {
				n++
			}
		}
	}
	w.u(n)
	for i := range p.States {
		for j, f := range p.States[i].Fields {
			if f.MaxLen == 0 {
				continue
			}
			if f.MaxLen > MaxListSize {
				return fmt.Errorf("state %s: field %s: size %d above %d", p.States[i].Name, f.Name, f.MaxLen, MaxListSize)
			}
			w.u(i)
			w.u(j)
			w.u32(f.MaxLen)
		}
	}
	return nil
}

// sizes decodes section 16 into the fields of the states section (which
// precedes it). Entries out of order, naming no field, or out of range are
// errors: each field has one encoding.
func (r *reader) sizes(p *Program) {
	n := r.count(3)
	prevS, prevF := -1, -1
	for range n {
		start := r.off
		s, f, max := r.uvarint(), r.uvarint(), r.uvarint()
		if r.err != nil {
			return
		}
		switch {
		case s >= uint64(len(p.States)) || f >= uint64(len(p.States[s].Fields)):
			r.off = start
			r.fail("size of field %d of state %d, which does not exist", f, s)
			return
		case int(s) < prevS || int(s) == prevS && int(f) <= prevF:
			r.off = start
			r.fail("sizes out of order")
			return
		case max == 0 || max > MaxListSize:
			r.off = start
			r.fail("size %d out of range", max)
			return
		}
		prevS, prevF = int(s), int(f)
		p.States[s].Fields[f].MaxLen = uint32(max)
	}
}

// sizes checks that every sized field is a list (or an optional list).
func (v verifier) sizes() verifier {
	p := v.p
	for i := range p.States {
		st := &p.States[i]
		for _, f := range st.Fields {
			if f.MaxLen == 0 || int64(f.Type) >= int64(len(p.Types)) {
				continue
			}
			if !Sizable(p.Types[f.Type]) {
				v.errorf("state %s: field %s has a size but is %s, not a list", st.Name, f.Name, p.Types[f.Type])
			}
		}
	}
	return v
}

// Sizable reports whether a field of type t may declare a size: a list,
// messages, or an optional of either.
func Sizable(t *types.Type) bool {
	if t == nil {
		return false
	}
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	return t.Kind() == types.KindList || t.Kind() == types.KindMessages
}

// CheckSize reports a value of field f that holds more elements than f's
// declared size: the one check of a size, for the VM's writes and inputs
// and the Runner's input validation.
func (f *StateField) CheckSize(v types.Value) error {
	if f.MaxLen == 0 || v.Kind() != types.ValList {
		return nil
	}
	return f.CheckLen(v.Len())
}

// CheckLen reports a list of n elements that field f cannot hold.
func (f *StateField) CheckLen(n int) error {
	if f.MaxLen == 0 || n <= int(f.MaxLen) {
		return nil
	}
	return &SizeError{Field: f.Name, Len: n, Max: int(f.MaxLen)}
}

// SizeError is a list longer than its field's size.
type SizeError struct {
	Field    string
	Len, Max int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("field %s: a list of %d elements, past its max of %d", e.Field, e.Len, e.Max)
}

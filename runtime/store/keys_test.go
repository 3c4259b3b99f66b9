package store

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestStrOrder checks that the string encoding sorts like the strings and
// that a complete component is a prefix boundary.
func TestStrOrder(t *testing.T) {
	strs := []string{"", "\x00", "\x00\x00", "\x00\x01", "\x01", "a", "a\x00", "a\x00b", "a\x01", "ab", "b", "\xff", "\xff\xff"}
	for _, a := range strs {
		for _, b := range strs {
			ka, kb := NewKey(KindRun).Str(a), NewKey(KindRun).Str(b)
			if got, want := bytes.Compare(ka, kb), strings.Compare(a, b); got != want {
				t.Errorf("order of %q, %q: keys %d, strings %d", a, b, got, want)
			}
			// A longer tuple under a stays inside a's prefix range only if it
			// starts with a's whole component.
			under := NewKey(KindRun).Str(a).Str(b)
			if !bytes.HasPrefix(under, ka) || bytes.Compare(under, PrefixEnd(ka)) >= 0 {
				t.Errorf("(%q, %q) escapes the prefix of %q", a, b, a)
			}
			if a != b && bytes.HasPrefix(NewKey(KindRun).Str(b).Str("x"), ka) {
				t.Errorf("(%q, x) falls under the prefix of %q", b, a)
			}
		}
	}
}

func TestU64Order(t *testing.T) {
	nums := []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 1}
	var keys []Key
	for _, n := range nums {
		keys = append(keys, NewKey(KindJournal).Str("r").U64(n))
	}
	if !slices.IsSortedFunc(keys, func(a, b Key) int { return bytes.Compare(a, b) }) {
		t.Error("number parts do not sort numerically")
	}
}

func TestDecodeKeyRoundTrip(t *testing.T) {
	k := NewKey(KindPending).Str("run\x00x").U64(12).Str("team/writer").U64(3)
	kind, parts, err := DecodeKey(k)
	if err != nil || kind != KindPending || len(parts) != 4 ||
		parts[0].Str != "run\x00x" || parts[1].Num != 12 || parts[2].Str != "team/writer" || parts[3].Num != 3 {
		t.Fatalf("DecodeKey = %v %+v %v", kind, parts, err)
	}
	if got := FormatKey(NewKey(KindCheckpoint).Str("run_1").U64(12)); got != "checkpoint/run_1/12" {
		t.Errorf("FormatKey = %s", got)
	}
	for _, bad := range [][]byte{nil, {1}, {2, byte(KindRun)}, {1, 0xEE}, NewKey(KindRun), NewKey(KindCheckpoint).Str("r").U64(1)[:12], append(NewKey(KindRun).Str("r"), 0)} {
		if _, _, err := DecodeKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeKey(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestKeyExtensionDoesNotAlias(t *testing.T) {
	p := NewKey(KindEvent).Str("a")
	k1, k2 := p.Str("x"), p.Str("y")
	if bytes.Equal(k1, k2) {
		t.Fatal("extending one prefix twice shared a backing array")
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}}, {[]byte{1, 0xFF}, []byte{2}}, {[]byte{0xFF}, nil},
	} {
		if got := PrefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("PrefixEnd(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestEveryKindHasALayout(t *testing.T) {
	for k := KindProgram; k <= KindMemory; k++ {
		if _, ok := layouts[k]; !ok {
			t.Errorf("kind 0x%02x has no layout", byte(k))
		}
	}
	if bytes.Compare(MetaKey(), NewKey(KindProgram)) >= 0 {
		t.Error("the meta key does not sort before data keys")
	}
}

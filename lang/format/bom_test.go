package format

import (
	"bytes"
	"testing"
)

// TestByteOrderMark: a file that starts with a UTF-8 byte-order mark
// formats (the parser ignores the mark) to the canonical form without it.
func TestByteOrderMark(t *testing.T) {
	src := []byte("workflow w \"A workflow\"\n\nstate S {\n  a : string = \"\"\n}\n")
	want, ds := Bytes("w.agent", src)
	if len(ds) != 0 {
		t.Fatalf("plain file: %v", ds)
	}
	got, ds := Bytes("w.agent", append(append([]byte{}, utf8BOM...), src...))
	if len(ds) != 0 {
		t.Fatalf("with a byte-order mark: %v", ds)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("formatted with a mark:\n%q\nwant\n%q", got, want)
	}
}

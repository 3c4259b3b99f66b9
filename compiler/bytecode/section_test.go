package bytecode

import (
	"bytes"
	"encoding/binary"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// secID is the id of the section named name (tests build files by hand).
func secID(name string) byte {
	for id := range sections {
		if s := sectionOf(id); s != nil && s.name == name {
			return byte(id)
		}
	}
	panic("no section " + name)
}

// The table has an entry for every id from 1 up, each complete, and its
// ids and names are the ones spec/bytecode.md lists: ids are wire values.
func TestSectionTable(t *testing.T) {
	spec, err := os.ReadFile("../../spec/bytecode.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\nSections: (.*?)\.\n`).FindSubmatch(spec)
	if m == nil {
		t.Fatal(`spec/bytecode.md: no "Sections: …." line`)
	}
	want := strings.Join(strings.Fields(string(m[1])), " ")
	var got []string
	for id := range sections {
		s := sectionOf(id)
		if s == nil {
			continue
		}
		got = append(got, strconv.Itoa(id)+" "+s.name)
		if s.name == "" || s.empty == nil || s.encode == nil || s.decode == nil || s.verify == nil {
			t.Errorf("section %d %q: incomplete entry", id, s.name)
		}
	}
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("sections:\n got %s\nspec %s", g, want)
	}
	if sectionOf(0) != nil || sectionOf(len(sections)) != nil || sectionOf(-1) != nil {
		t.Error("sectionOf answers an id out of range")
	}
}

// Every section is omitted exactly when empty: a program with every table
// empty encodes to the header and hash alone, and one with every section
// present holds each id once, in order, and decodes to the same bytes.
func TestSectionsOmittedWhenEmpty(t *testing.T) {
	b := mustEncode(t, &Program{})
	if len(b) != headerLen+32 {
		t.Fatalf("empty program: %d bytes, want %d", len(b), headerLen+32)
	}
	p := sizedProgram(t)
	p.ServeBudget = Limits{Tokens: 1000}
	b = mustEncode(t, p)
	var ids []int
	for off := headerLen; off < len(b)-32; {
		size, n := binary.Uvarint(b[off+1:])
		ids = append(ids, int(b[off]))
		off += 1 + n + int(size)
	}
	var want []int
	for id := range sections {
		if s := sectionOf(id); s != nil {
			want = append(want, id)
			if s.empty(p) {
				t.Errorf("section %s: empty in the fixture", s.name)
			}
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("section ids %v, want %v", ids, want)
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := mustEncode(t, q); !bytes.Equal(c, b) {
		t.Error("Encode(Decode(b)) != b")
	}
}

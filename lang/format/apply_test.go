package format

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApply: each mode on a canonical file, a file that is not, a CRLF
// file and one with syntax errors.
func TestApply(t *testing.T) {
	canonical := "workflow w\n\nstate S {\n  q : string\n}\n"
	messy := "workflow   w\nstate S {q:string}\n"
	crlf := strings.ReplaceAll(canonical, "\n", "\r\n")
	for _, tc := range []struct {
		mode      Mode
		src       string
		err       error
		out, note string // out: a substring ("" none); note: a substring
		file      string // the file afterwards ("": as it was)
	}{
		{ModePrint, messy, nil, canonical, "", ""},
		{ModePrint, canonical, nil, canonical, "", ""},
		{ModeCheck, canonical, nil, "", "", ""},
		{ModeCheck, messy, ErrNotCanonical, "f.agent\n", "", ""},
		{ModeCheck, crlf, ErrNotCanonical, "f.agent\n", "CRLF", ""},
		{ModeDiff, canonical, nil, "", "", ""},
		{ModeDiff, messy, nil, "+  q : string", "", ""},
		{ModeWrite, messy, nil, "", "", canonical},
		{ModeWrite, "workflow", ErrSyntax, "", "", ""},
	} {
		name := filepath.Join(t.TempDir(), "f.agent")
		if err := os.WriteFile(name, []byte(tc.src), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, diags bytes.Buffer
		var notes []string
		err := Apply(tc.mode, name, []byte(tc.src), &out, &diags, func(s string) { notes = append(notes, s) })
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("mode %d %q: err %v, want %v", tc.mode, tc.src, err, tc.err)
		}
		if tc.out == "" && out.Len() > 0 || !strings.Contains(out.String(), tc.out) {
			t.Errorf("mode %d %q: out %q, want %q", tc.mode, tc.src, out.String(), tc.out)
		}
		if note := strings.Join(notes, "\n"); tc.note == "" && note != "" || !strings.Contains(note, tc.note) {
			t.Errorf("mode %d %q: note %q, want %q", tc.mode, tc.src, note, tc.note)
		}
		if (tc.err == ErrSyntax) != (diags.Len() > 0) {
			t.Errorf("mode %d %q: diagnostics %q", tc.mode, tc.src, diags.String())
		}
		want := tc.file
		if want == "" {
			want = tc.src
		}
		b, _ := os.ReadFile(name)
		if info, _ := os.Stat(name); string(b) != want || info.Mode().Perm() != 0o600 {
			t.Errorf("mode %d %q: file %q (%v), want %q", tc.mode, tc.src, b, info.Mode(), want)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFmtCheckNamesCRLF: a CRLF file that is otherwise canonical fails
// fmt --check, and the message says why: the canonical form uses LF
// (issue 18).
func TestFmtCheckNamesCRLF(t *testing.T) {
	name := filepath.Join(t.TempDir(), "crlf.agent")
	if err := os.WriteFile(name, []byte("state S {\r\n  q : string\r\n}\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runWith([]string{"fmt", "--check", name}, &app{stdout: &out, stderr: &errb}); code != exitFail {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if strings.TrimSpace(out.String()) != name || !strings.Contains(errb.String(), "CRLF line endings; the canonical form uses LF") {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

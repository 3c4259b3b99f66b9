package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (README graph)")

// TestReadmeGraphIsFresh pins the Mermaid picture in README.md to what
// `agentc graph examples/support/support.agent` prints today.
func TestReadmeGraphIsFresh(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	var out, errb bytes.Buffer
	if code := runWith([]string{"graph", "examples/support/support.agent"}, &app{stdout: &out, stderr: &errb}); code != 0 {
		t.Fatalf("agentc graph exit %d: %s", code, errb.String())
	}
	const begin, end = "<!-- graph:support:begin -->\n```mermaid\n", "```\n<!-- graph:support:end -->"
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
	}
	fresh := text[:i+len(begin)] + out.String() + text[j:]
	if fresh == text {
		return
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's support graph is stale; run go test ./cmd/agentc -run TestReadmeGraphIsFresh -update")
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptedLineThreeIsPositioned corrupts line 3 of every example and
// checks that text, JSON and SARIF all point at FILE:3:COL.
func TestCorruptedLineThreeIsPositioned(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "*", "*.agent"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "agentc.yaml"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, rel)
			src, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(src), "\n")
			lines[2] = "%%% corrupted"
			if err := os.WriteFile(target, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			name := filepath.ToSlash(rel)
			run := func(format string) (string, string) {
				var out, errb bytes.Buffer
				if code := runWith([]string{"validate", "--format", format, name}, &app{stdout: &out, stderr: &errb}); code != exitFail {
					t.Fatalf("%s: exit %d, want %d\n%s%s", format, code, exitFail, out.String(), errb.String())
				}
				return out.String(), errb.String()
			}
			if _, text := run("text"); !strings.Contains(text, name+":3:1: error S101") {
				t.Errorf("text output lacks %s:3:1:\n%s", name, text)
			}
			js, _ := run("json")
			var doc struct {
				Diagnostics []struct {
					Code string
					Span struct {
						File  string
						Start struct{ Line, Column int }
					}
				}
			}
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range doc.Diagnostics {
				found = found || (d.Span.File == name && d.Span.Start.Line == 3 && d.Span.Start.Column == 1 && d.Code == "S101")
			}
			if !found {
				t.Errorf("JSON lacks the line-3 diagnostic: %s", js)
			}
			sarif, _ := run("sarif")
			if !strings.Contains(sarif, `"uri": "`+name+`"`) || !strings.Contains(sarif, `"startLine": 3,`) {
				t.Errorf("SARIF lacks the line-3 location")
			}
		})
	}
}

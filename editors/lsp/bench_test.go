package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkDiagnosticsAfterEdit is the editor's wait: one incremental
// edit (a character typed into a string, then removed) until the edited
// document's diagnostics are published, over the pipes as in an editor.
// "largest" edits the largest example, alone; "shared" edits
// examples/common/models.agent with every example open, so each edit also
// re-checks every importer. Target: ≤ 50 ms. ms-check/op is the server's
// own time for the re-checks.
func BenchmarkDiagnosticsAfterEdit(b *testing.B) {
	root, files := exampleFiles(b)
	largest, size := "", 0
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && int(st.Size()) > size {
			largest, size = f, int(st.Size())
		}
	}
	b.Run("largest", func(b *testing.B) { benchEdit(b, root, largest, []string{largest}, "instruction = \"") })
	shared := filepath.Join(root, "examples", "common", "models.agent")
	b.Run("shared", func(b *testing.B) { benchEdit(b, root, shared, files, "name           = \"") })
}

func benchEdit(b *testing.B, root, edited string, open []string, anchor string) {
	c := newClient(b, root)
	var src []byte
	uri := ""
	for _, f := range open {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		u := c.open(f, string(data))
		if f == edited {
			src, uri = data, u
		}
	}
	c.waitPublished(uri, 1)
	i := strings.Index(string(src), anchor)
	if i < 0 {
		b.Fatalf("%s has no %q", edited, anchor)
	}
	p := newText(src).position(i + len(anchor))
	b.ReportMetric(float64(len(src)), "bytes")
	b.ResetTimer()
	var server time.Duration
	for n := range b.N {
		v := n + 2
		if n%2 == 0 {
			c.change(uri, v, contentChange{Range: &Range{Start: p, End: p}, Text: "x"})
		} else {
			c.change(uri, v, contentChange{Range: &Range{Start: p, End: Position{Line: p.Line, Character: p.Character + 1}}, Text: ""})
		}
		if ds := c.waitPublished(uri, v); len(ds) != 0 {
			b.Fatalf("%s: %v", filepath.Base(edited), ds)
		}
		server += c.srv.lastCheck
	}
	b.StopTimer()
	b.ReportMetric(float64(server.Microseconds())/float64(b.N)/1000, "ms-check/op")
}

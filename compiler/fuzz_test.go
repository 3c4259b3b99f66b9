package compiler

import (
	"github.com/agentc/agentc/stdlib"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// FuzzCheck parses and checks arbitrary text: Load and Check must never
// panic, and must return an Info. Seeds are every .agent file under
// testdata.
func FuzzCheck(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.agent"))
		for _, p := range paths {
			if src, err := os.ReadFile(p); err == nil {
				f.Add(src)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{
			"main.agent":      {Data: src},
			"lib/other.agent": {Data: []byte("type T { x: int }\nmodel m { provider = openai, name = \"x\" }\n")},
		}
		cfg := Config{FS: fsys, Universe: stdlib.Universe()}
		pkg, _ := Load(cfg, "main.agent")
		info, _ := Check(cfg, pkg)
		if info == nil {
			t.Fatal("Check returned no Info")
		}
		for _, g := range info.Graphs {
			if g.Analysis == nil {
				continue
			}
			for _, n := range g.Nodes {
				g.Analysis.Concurrent(n)
				g.Analysis.Assigned(n)
			}
		}
	})
}

package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/stdlib"
)

// FuzzCompile compiles arbitrary text: Compile must never panic, a program
// it returns must verify and decode from its own encoding, and it must never
// report an internal error. Seeds are the examples that import only the
// shared models (their import rewritten) and every block of
// spec/language.md.
func FuzzCompile(f *testing.F) {
	models, _ := os.ReadFile("../examples/common/models.agent")
	for _, name := range []string{"support", "team", "codereview", "chat"} {
		if src, err := os.ReadFile("../examples/" + name + "/" + name + ".agent"); err == nil {
			f.Add([]byte(strings.ReplaceAll(string(src), `"../common/models.agent"`, `"models.agent"`)))
		}
	}
	if text, err := os.ReadFile(filepath.Join("..", "spec", "language.md")); err == nil {
		for _, part := range strings.Split(string(text), "```agent")[1:] {
			if i := strings.Index(part, "```"); i > 0 {
				f.Add([]byte(part[strings.Index(part, "\n")+1 : i]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{
			"main.agent":                       {Data: src},
			"models.agent":                     {Data: models},
			"lib/other.agent":                  {Data: []byte("type T { x: int }\n")},
			"skills/house-style/SKILL.md":      {Data: []byte("# style\n")},
			"skills/cert-diagnostics/SKILL.md": {Data: []byte("# diagnostics\n")},
		}
		cfg := Config{FS: fsys, Universe: stdlib.Universe()}
		pkg, _ := Load(cfg, "main.agent")
		prog, _, ds := Compile(cfg, pkg)
		for _, d := range ds {
			if strings.Contains(d.Summary, "internal compiler error") {
				t.Fatalf("%s\n--- source:\n%s", d.Summary, src)
			}
		}
		if prog == nil {
			return
		}
		reloaded(t, prog)
	})
}

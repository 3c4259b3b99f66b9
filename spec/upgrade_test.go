package spec_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm/upgrade"
)

// TestUpgradeBlocks: every ```agent upgrade NAME old / new [CODE] pair of
// spec/*.md goes through upgrade.Check: compatible without a CODE, else
// refused with that finding, at a position in both versions.
func TestUpgradeBlocks(t *testing.T) {
	pairs := map[string][2]*block{}
	var names []string
	for _, b := range specBlocks(t) {
		if b.pair == "" {
			continue
		}
		p, ok := pairs[b.pair]
		if !ok {
			names = append(names, b.pair)
		}
		i := 0
		if b.side == "new" {
			i = 1
		}
		if p[i] != nil {
			t.Fatalf("%s: upgrade pair %s has two %s sides", b.where(), b.pair, b.side)
		}
		p[i] = &b
		pairs[b.pair] = p
	}
	var valid, invalid int
	for _, name := range names {
		p := pairs[name]
		if p[0] == nil || p[1] == nil {
			t.Fatalf("upgrade pair %s lacks a side", name)
		}
		t.Run(name, func(t *testing.T) {
			rep := upgrade.Check(compileBlock(t, p[0].src), compileBlock(t, p[1].src))
			if p[1].refuse == "" {
				valid++
				if !rep.Compatible() {
					t.Fatalf("%s: want a compatible pair, got %v", p[1].where(), rep.Issues)
				}
				return
			}
			invalid++
			i := slices.IndexFunc(rep.Issues, func(i upgrade.Issue) bool { return i.Code == p[1].refuse && i.Severity == diag.Error })
			if i < 0 || !rep.Issues[i].Old.IsValid() || !rep.Issues[i].New.IsValid() {
				t.Fatalf("%s: want %s with positions in both versions, got %v", p[1].where(), p[1].refuse, rep.Issues)
			}
		})
	}
	if valid == 0 || invalid == 0 {
		t.Errorf("want at least one compatible and one refused upgrade pair in spec/, have %d and %d", valid, invalid)
	}
}

func compileBlock(t *testing.T, src string) *bytecode.Program {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, blockFile), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := compiler.Config{FS: os.DirFS(dir), Root: ".", Universe: stdlib.Universe()}
	p, _, ds := compiler.Build(cfg, blockFile)
	if p == nil {
		t.Fatalf("block does not compile: %v", ds)
	}
	return p
}

package compiler

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/lang/diag"
)

// unusedFS: main.agent imports lib.agent; each declares a state nothing
// uses.
var unusedFS = fstest.MapFS{
	"main.agent": {Data: []byte("workflow main \"M\"\n\nimport \"lib.agent\"\n\nstate Mine { a: string }\n")},
	"lib.agent":  {Data: []byte("state Theirs { b: string }\n")},
}

// unusedIn lists the files of ds' "never used" warnings, sorted.
func unusedIn(ds []diag.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		if d.Code == diag.UnusedDecl {
			out = append(out, d.Subject.File)
		}
	}
	slices.Sort(out)
	return out
}

// TestUnusedSpeaksForTheRoot: "never used" is reported for the root file's
// own declarations only, and not at all for a root another root imports.
func TestUnusedSpeaksForTheRoot(t *testing.T) {
	cfg := Config{FS: unusedFS}
	tests := []struct {
		name  string
		roots []string
		want  []string
	}{
		{"main alone", []string{"main.agent"}, []string{"main.agent"}},
		{"the library alone", []string{"lib.agent"}, []string{"lib.agent"}},
		{"both: the library is imported", []string{"main.agent", "lib.agent"}, []string{"main.agent"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := unusedIn(CheckRoots(cfg, tc.roots...)); !slices.Equal(got, tc.want) {
				t.Errorf("CheckRoots: never used in %v, want %v", got, tc.want)
			}
		})
	}
	prog, out, ds := Build(cfg, "main.agent")
	if prog == nil || out == nil || len(out.Bytes) == 0 || out.Hash != prog.Hash {
		t.Fatalf("Build: program %v, output %+v: %v", prog != nil, out, ds)
	}
	if got := unusedIn(ds); !slices.Equal(got, []string{"main.agent"}) {
		t.Errorf("Build: never used in %v, want [main.agent]", got)
	}
	// A package whose own file imports the root (a cycle through it) makes
	// the root a library too.
	pkg, _ := Load(cfg, "main.agent")
	_, ds = Check(cfg, pkg)
	if got := unusedIn(ForRoot(ds, "lib.agent", pkg)); len(got) != 0 {
		t.Errorf("ForRoot of an imported file kept %v", got)
	}
}

// Package upgradetest holds the program pairs the upgrade tests share
// (spec/upgrade.md, issue 16's acceptance): edits of the support example
// (examples/support/support.agent) that keep a run waiting at approve
// movable, or not. It is imported by tests only.
package upgradetest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/runtimetest"
)

// Edit is one textual replacement of support.agent.
type Edit struct{ Old, New string }

// Variant is a named edit of the support example and whether a run waiting
// at approve may move to it; Code is the finding that refuses it.
type Variant struct {
	Name       string
	Edits      []Edit
	Compatible bool
	Code       string
}

// Variants of the support example.
var Variants = []Variant{
	{Name: "prompt", Compatible: true, Edits: []Edit{
		{`"Publish this report?"`, `"Publish this report? Check the expiry dates first."`},
		{`"Write the report from {evidence}"`, `"Write a short report from {evidence}"`},
	}},
	{Name: "defaulted-field", Compatible: true, Edits: []Edit{
		{"  failure  : error?\n", "  failure  : error?\n  reviews  : int = 0\n"},
	}},
	{Name: "resume-type", Code: "U706", Edits: []Edit{
		{`node approve  = interrupt "Publish this report?" returns Decision into decision`,
			`node approve  = interrupt "Publish this report?" returns Verdict into verdict`},
		{"type Decision { approved: bool, feedback: string? }\n",
			"type Decision { approved: bool, feedback: string? }\ntype Verdict  { approved: bool, feedback: string?, reviewer: string? }\n"},
		{"  decision : Decision?\n", "  decision : Decision?\n  verdict  : Verdict?\n"},
		{"approve  -> end   when decision.approved", "approve  -> end   when verdict.approved"},
	}},
	{Name: "interrupt-removed", Code: "U705", Edits: []Edit{
		{`node approve  = interrupt "Publish this report?" returns Decision into decision`,
			`node signoff  = interrupt "Publish this report?" returns Decision into decision`},
		{"write    -> approve", "write    -> signoff"},
		{"approve  -> end   when", "signoff  -> end   when"},
		{"approve  -> write otherwise", "signoff  -> write otherwise"},
		{"answer approve", "answer signoff"},
		{"visited(approve)", "visited(signoff)"},
	}},
}

// Find returns the variant named name.
func Find(name string) Variant {
	for _, v := range Variants {
		if v.Name == name {
			return v
		}
	}
	panic("upgradetest: no variant " + name)
}

// Apply applies v's edits to src; an edit that does not match is an error.
func (v Variant) Apply(src string) (string, error) {
	for _, e := range v.Edits {
		if !strings.Contains(src, e.Old) {
			return "", fmt.Errorf("upgradetest: variant %s: %q is not in the source", v.Name, e.Old)
		}
		src = strings.ReplaceAll(src, e.Old, e.New)
	}
	return src, nil
}

// CopyExamples copies the support and common example folders from
// examples (the repository's examples directory) into dst, so that
// dst/support/support.agent compiles as the original does.
func CopyExamples(examples, dst string) error {
	for _, dir := range []string{"support", "common"} {
		root := filepath.Join(examples, dir)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(examples, p)
			if err != nil {
				return err
			}
			out := filepath.Join(dst, rel)
			if d.IsDir() {
				return os.MkdirAll(out, 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Rewrite applies v to dst/support/support.agent in place.
func (v Variant) Rewrite(dst string) error {
	p := filepath.Join(dst, "support", "support.agent")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	s, err := v.Apply(string(b))
	if err != nil {
		return err
	}
	return os.WriteFile(p, []byte(s), 0o644)
}

// Program copies the support example from examples into a fresh folder,
// applies variant v ("": none), compiles it, and returns the program and
// the folder (the project root the program's fixtures are under).
func Program(t testing.TB, examples, v string) (*bytecode.Program, string) {
	t.Helper()
	dir := t.TempDir()
	if err := CopyExamples(examples, dir); err != nil {
		t.Fatal(err)
	}
	if v != "" {
		if err := Find(v).Rewrite(dir); err != nil {
			t.Fatal(err)
		}
	}
	return runtimetest.Compile(t, os.DirFS(dir), "support/support.agent"), dir
}

// Nested is a workflow whose runs wait inside sub-runs: graph g maps graph
// ask over two items, each waiting at its interrupt q (path ids
// g/each/0/ask/q, g/each/1/ask/q), then waits at its own interrupt close.
const Nested = `workflow w
state Ask { item: string, note: string = "" }
graph ask(Ask) input item output note {
  node q = interrupt "Approve {item}?" returns string into note
  start -> q
  q -> end
}
state S { q: string, items: list<string> = ["a", "b"], notes: list<string> = [] reduce append, ok: bool = false }
graph g(S) input q {
  node each  = map x in items { graph ask { item = x } } into notes
  node close = interrupt "Close {notes}?" returns bool into ok
  start -> each
  each  -> close
  close -> end
}
`

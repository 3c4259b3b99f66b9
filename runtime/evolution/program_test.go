package evolution

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/stdlib"
)

const programSrc = `model fast { provider = openai, name = "a" }
model strong { provider = openai, name = "b" }
skill report from "skills/report" { description = "Reports, briefly" }
evolution learn {
  reviewer       = strong
  min_tool_calls = 2
  gates          = [safety, human]
  min_score      = 0.5
  scope          = user
  publish        = "learned"
}
agent writer llm { model = fast, skills = [report: exec], evolution = learn }
agent reader llm { model = fast, skills = [report] }
`

// TestFromProgram compiles a program and checks what the runtime reads of
// its grants and evolution policy, and that the compiler gave the agents
// the skill tools their grants imply.
func TestFromProgram(t *testing.T) {
	fsys := fstest.MapFS{
		"app/main.agent":             {Data: []byte(programSrc)},
		"app/skills/report/SKILL.md": {Data: []byte("---\nname: report\ndescription: d\n---\nbody\n")},
	}
	cfg := compiler.Config{FS: fsys, Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, "app/main.agent")
	prog, _, cds := compiler.Compile(cfg, pkg)
	if prog == nil || len(ds)+len(cds) > 0 {
		t.Fatalf("compile: %v %v", ds, cds)
	}
	tools := map[string][]string{}
	for _, ag := range prog.Agents {
		for _, ti := range ag.Tools {
			tools[ag.Name] = append(tools[ag.Name], prog.Tools[ti].Name)
		}
	}
	if got := strings.Join(tools["writer"], ","); got != "skill_load,skill_run" {
		t.Errorf("writer tools = %s", got)
	}
	if got := strings.Join(tools["reader"], ","); got != "skill_load" {
		t.Errorf("reader tools = %s", got)
	}
	root := "/proj"
	cat := skill.CatalogFromProgram(prog, root)
	w := cat.Grants["writer"]
	if len(w) != 1 || w[0].Decl != "report" || !w[0].Exec || w[0].Dir != filepath.Join(root, "app/skills/report") || w[0].Description != "Reports, briefly" {
		t.Errorf("writer grants = %+v", w)
	}
	if r := cat.Grants["reader"]; len(r) != 1 || r[0].Exec {
		t.Errorf("reader grants = %+v", r)
	}
	if ev := cat.Evolved["writer"]; ev.Dir != filepath.Join(root, "app/learned") || ev.Scope != "user" {
		t.Errorf("evolved = %+v", ev)
	}
	strong := &reviewer{}
	pols := PoliciesFromProgram(prog, map[string]runtime.Model{"strong": strong, "fast": &reviewer{}}, root)
	p, ok := pols["writer"]
	if !ok || len(pols) != 1 {
		t.Fatalf("policies = %+v", pols)
	}
	if p.Reviewer != strong || p.MinToolCalls != 2 || strings.Join(p.Gates, ",") != "safety,human" || p.MinScore != 0.5 ||
		p.Scope != "user" || p.Publish != filepath.Join(root, "app/learned") || p.Declared["report"] == "" {
		t.Errorf("policy = %+v", p)
	}
}

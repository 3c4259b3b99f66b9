package skill

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/vm"
)

var ctx = context.Background()

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

const reportMD = "---\nname: report\ndescription: Writes a status report.\ntags: [ops]\n---\n# Report\n1. Run scripts/report.sh NAME.\n2. Save report.txt.\n"

// fixture makes a skill folder "report" with a doc and a script.
func fixture(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "skills", "report")
	write(t, filepath.Join(dir, "SKILL.md"), reportMD, 0o644)
	write(t, filepath.Join(dir, "docs", "format.md"), "Use one line per host.\n", 0o644)
	write(t, filepath.Join(dir, "scripts", "report.sh"), "#!/bin/sh\necho \"report for $1\" > report.txt\necho ok; echo \"$SKILL_DIR\" | grep -q skills/report && echo staged\n", 0o644)
	return dir
}

func TestRepositoryLoadsAndRefreshes(t *testing.T) {
	dir := fixture(t)
	repo := NewRepository()
	s, err := repo.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "report" || s.Front.Description != "Writes a status report." || !strings.Contains(s.Body, "scripts/report.sh") ||
		strings.Join(s.Docs, ",") != "docs/format.md" || strings.Join(s.Scripts, ",") != "scripts/report.sh" {
		t.Fatalf("skill = %+v", s)
	}
	if again, _ := repo.Load(dir); again != s {
		t.Error("an unchanged folder was read again")
	}
	// A change (size differs) is seen on the next access.
	write(t, filepath.Join(dir, "SKILL.md"), strings.Replace(reportMD, "Writes a status report.", "Writes a longer status report.", 1), 0o644)
	s2, err := repo.Load(dir)
	if err != nil || s2 == s || s2.Front.Description != "Writes a longer status report." || s2.Hash == s.Hash {
		t.Fatalf("after change: %+v, %v", s2, err)
	}
	// Bad front matter is an error with file:line:col, not a silent skip.
	write(t, filepath.Join(dir, "SKILL.md"), "---\nname: report\ndescription: d\ntags: 7\n---\n", 0o644)
	_, err = repo.Load(dir)
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "SKILL.md:4:7: tags must be a list") {
		t.Fatalf("bad front matter: %v", err)
	}
	skills, errs := repo.Scan(filepath.Dir(dir))
	if len(skills) != 0 || len(errs) != 1 {
		t.Errorf("scan = %v, %v", skills, errs)
	}
	if skills, errs := repo.Scan(filepath.Join(t.TempDir(), "none")); skills != nil || errs != nil {
		t.Errorf("missing root: %v %v", skills, errs)
	}
}

func newTools(t *testing.T, dir string, exec bool) (*Tools, store.Store) {
	st := memory.New()
	return &Tools{
		Repo:       NewRepository(),
		Catalog:    &Catalog{Grants: map[string][]Grant{"writer": {{Decl: "report_skill", Dir: dir, Exec: exec}}}},
		Docs:       st,
		Workspaces: &workspace.Manager{Base: t.TempDir()},
		Exec:       &workspace.Local{},
		Now:        func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
	}, st
}

var sess = store.SessionKey{App: "app", User: "ann", Session: "s1"}

func call(t *testing.T, tl runtime.Tool, agent, args string) (string, error) {
	t.Helper()
	out, err := tl.Call(ctx, runtime.ToolRequest{Args: json.RawMessage(args), Agent: agent, Session: sess, Run: "run_1"})
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func TestSkillLoadRecordsWhatWasLoaded(t *testing.T) {
	tools, _ := newTools(t, fixture(t), false)
	load := tools.All()["skill_load"]
	out, err := call(t, load, "writer", `{"skill":"report_skill"}`)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	_ = json.Unmarshal([]byte(out), &text)
	if !strings.Contains(text, "# Skill report_skill") || !strings.Contains(text, "1. Run scripts/report.sh") ||
		!strings.Contains(text, "Documents (load with skill_load docs=[...]): docs/format.md") || strings.Contains(text, "one line per host") {
		t.Errorf("first load = %s", text)
	}
	// The second load does not deliver the instructions again; a new
	// document is delivered on demand, once.
	out, _ = call(t, load, "writer", `{"skill":"report","docs":["docs/format.md"]}`)
	_ = json.Unmarshal([]byte(out), &text)
	if !strings.Contains(text, "already loaded") || strings.Contains(text, "1. Run scripts") || !strings.Contains(text, "Use one line per host.") {
		t.Errorf("second load = %s", text)
	}
	out, _ = call(t, load, "writer", `{"skill":"report","include_all_docs":true}`)
	_ = json.Unmarshal([]byte(out), &text)
	if strings.Contains(text, "Use one line per host.") || !strings.Contains(text, "Document docs/format.md is already loaded") {
		t.Errorf("third load = %s", text)
	}
	out, _ = call(t, load, "writer", `{"skill":"report","reload":true}`)
	_ = json.Unmarshal([]byte(out), &text)
	if !strings.Contains(text, "1. Run scripts") {
		t.Errorf("reload = %s", text)
	}
	if ov := tools.Overview("writer", sess); ov != "Skills you can load:\n- report_skill: Writes a status report. (skill_load)\n" {
		t.Errorf("overview = %q", ov)
	}
	for args, want := range map[string]string{
		`{"skill":"nope"}`:                         "unknown skill \"nope\"; this agent's skills are: report_skill",
		`{"skill":"report","docs":["../../x.md"]}`: "has no document",
	} {
		_, err := call(t, load, "writer", args)
		var ve *vm.Error
		if !errors.As(err, &ve) || ve.Kind != vm.KindToolError || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", args, err)
		}
	}
	if _, err := call(t, load, "other", `{"skill":"report"}`); err == nil || !strings.Contains(err.Error(), "has no skills") {
		t.Errorf("agent without grants: %v", err)
	}
}

func TestSkillRunNeedsExecGrant(t *testing.T) {
	dir := fixture(t)
	tools, _ := newTools(t, dir, false)
	_, err := call(t, tools.All()["skill_run"], "writer", `{"skill":"report_skill","command":"scripts/report.sh prod"}`)
	var ve *vm.Error
	if !errors.As(err, &ve) || ve.Kind != vm.KindToolError || !strings.Contains(err.Error(), "not granted to agent \"writer\" with exec") {
		t.Fatalf("without exec: %v", err)
	}
	tools, _ = newTools(t, dir, true)
	run := tools.All()["skill_run"]
	out, err := call(t, run, "writer", `{"skill":"report_skill","command":"scripts/report.sh 'prod db'"}`)
	if err != nil {
		t.Fatal(err)
	}
	var res RunOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ExitCode != 0 || res.Stdout != "ok\nstaged\n" {
		t.Fatalf("run = %s, %v", out, err)
	}
	ws, _ := tools.Workspaces.ForRun("run_1")
	if b, _, err := ws.ReadFile("report.txt", 100); err != nil || string(b) != "report for prod db\n" {
		t.Errorf("report.txt = %q, %v", b, err)
	}
	// The Runner removes the workspace skill_run staged into when the run
	// ends for good: skill_run hands it the Manager.
	if rs, ok := run.(runtime.RunScoped); !ok || rs.RunEndObserver() != runtime.RunEndObserver(tools.Workspaces) {
		t.Error("skill_run does not hand the Runner its workspace Manager")
	}
	if err := tools.Workspaces.RunEnded(ctx, "run_1", runtime.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the staged workspace stays after the run: %v", err)
	}
	for _, cmd := range []string{"sh -c 'rm -rf /'", "../../bin/sh", "/bin/sh", "scripts/missing.sh"} {
		args, _ := json.Marshal(map[string]string{"skill": "report_skill", "command": cmd})
		if _, err := call(t, run, "writer", string(args)); err == nil || !strings.Contains(err.Error(), "is not a script of skill") {
			t.Errorf("%q: %v", cmd, err)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	got, err := SplitCommand(`a 'b c' "d \"e\"" f\g`)
	if err != nil || strings.Join(got, "|") != `a|b c|d "e"|f\g` {
		t.Errorf("split = %q, %v", got, err)
	}
	for _, bad := range []string{"", "  ", "'open", `"open`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPublishDirAndEvolvedSkills(t *testing.T) {
	base := t.TempDir()
	if got := PublishDir(base, "user", store.SessionKey{App: "app", User: "a/../b"}); got != filepath.Join(base, "app", "x-"+"612f2e2e2f62") {
		t.Errorf("user dir = %s", got)
	}
	dir := filepath.Join(PublishDir(base, "app", sess), "report")
	write(t, filepath.Join(dir, "SKILL.md"), reportMD, 0o644)
	tools := &Tools{Repo: NewRepository(), Catalog: &Catalog{Evolved: map[string]Evolved{"writer": {Dir: base, Scope: "app"}}}}
	out, err := call(t, tools.All()["skill_load"], "writer", `{"skill":"report"}`)
	if err != nil || !strings.Contains(out, "# Skill report") {
		t.Errorf("evolved load = %s, %v", out, err)
	}
	if _, err := call(t, tools.All()["skill_run"], "writer", `{"skill":"report","command":"scripts/x"}`); err == nil || !strings.Contains(err.Error(), "not granted") {
		t.Errorf("evolved skills run: %v", err)
	}
}

func TestPreloadOffersTheOverview(t *testing.T) {
	tools, _ := newTools(t, fixture(t), true)
	prog := &bytecode.Program{Agents: []bytecode.Agent{{Name: "writer"}, {Name: "other"}}}
	msgs, err := tools.Preload(ctx, runtime.PreloadRequest{Session: sess, Program: prog, Agent: 0})
	if err != nil || len(msgs) != 1 || msgs[0].Role != runtime.RoleSystem ||
		msgs[0].Content != "Skills you can load:\n- report_skill: Writes a status report. (skill_load, skill_run)\n" {
		t.Errorf("writer: %+v, %v", msgs, err)
	}
	for _, req := range []runtime.PreloadRequest{
		{Session: sess, Program: prog, Agent: 1}, // no grants
		{Session: sess, Program: prog, Agent: 7}, // out of range
		{Session: sess, Agent: 0},                // no program
	} {
		if msgs, err := tools.Preload(ctx, req); err != nil || msgs != nil {
			t.Errorf("agent %d: %+v, %v", req.Agent, msgs, err)
		}
	}
}

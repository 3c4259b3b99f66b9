package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/vm"
)

// LoadedColl is the Docs collection recording what skill_load delivered
// per session: DocPath(app, user, session, agent, skill) → loadRecord.
const LoadedColl = "skill_loaded"

// Tools are skill_load and skill_run over a catalog of grants.
type Tools struct {
	Repo    *Repository
	Catalog *Catalog
	// Docs records what each session has loaded (nil: nothing is
	// recorded and every load delivers everything).
	Docs store.Docs
	// Workspaces and Exec run skill_run (nil Exec: skill_run fails).
	Workspaces *workspace.Manager
	Exec       workspace.Executor
	Now        func() time.Time
}

// Tool names.
const (
	LoadToolName = "skill_load"
	RunToolName  = "skill_run"
)

// All returns skill_load and skill_run by name, for a RunnerConfig's tools.
func (t *Tools) All() map[string]runtime.Tool {
	return map[string]runtime.Tool{LoadToolName: &loadTool{t}, RunToolName: &runTool{t}}
}

// available is one skill an agent may use.
type available struct {
	name  string // what the model passes
	grant Grant
	skill *Skill
	err   error
}

// description is what the grant says the skill is for, else the skill's own
// front matter.
func (a available) description() string {
	if a.grant.Description != "" {
		return a.grant.Description
	}
	return a.skill.Front.Description
}

// forAgent lists the skills agent may load: its grants, then the skills its
// evolution policy published for the session's scope.
func (t *Tools) forAgent(agent string, key store.SessionKey) []available {
	var out []available
	for _, g := range t.Catalog.Grants[agent] {
		s, err := t.Repo.Load(g.Dir)
		out = append(out, available{name: g.Decl, grant: g, skill: s, err: err})
	}
	if ev, ok := t.Catalog.Evolved[agent]; ok {
		skills, _ := t.Repo.Scan(PublishDir(ev.Dir, ev.Scope, key))
		for _, s := range skills {
			if !slices.ContainsFunc(out, func(a available) bool { return a.name == s.Name() }) {
				out = append(out, available{name: s.Name(), grant: Grant{Decl: s.Name(), Dir: s.Dir}, skill: s})
			}
		}
	}
	return out
}

// Overview is the text an agent's system prompt lists its skills with:
// one line per skill, its name and description (the integrator's llm loop
// appends it to the instruction).
func (t *Tools) Overview(agent string, key store.SessionKey) string {
	var b strings.Builder
	for _, a := range t.forAgent(agent, key) {
		if a.err != nil {
			continue
		}
		desc := a.description()
		mode := "skill_load"
		if a.grant.Exec {
			mode = "skill_load, skill_run"
		}
		fmt.Fprintf(&b, "- %s: %s (%s)\n", a.name, oneLine(desc), mode)
	}
	if b.Len() == 0 {
		return ""
	}
	return "Skills you can load:\n" + b.String()
}

// Preload implements runtime.Preloader: the overview of the skills the
// agent may load (spec §8, read grant), as one system message; nothing for an
// agent without grants.
func (t *Tools) Preload(_ context.Context, req runtime.PreloadRequest) ([]runtime.Message, error) {
	if req.Program == nil || req.Agent < 0 || req.Agent >= len(req.Program.Agents) {
		return nil, nil
	}
	text := t.Overview(req.Program.Agents[req.Agent].Name, req.Session)
	if text == "" {
		return nil, nil
	}
	return []runtime.Message{{Role: runtime.RoleSystem, Content: text}}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (t *Tools) find(tool, agent, name string, key store.SessionKey) (available, error) {
	all := t.forAgent(agent, key)
	var names []string
	for _, a := range all {
		if a.name == name || (a.skill != nil && a.skill.Name() == name) {
			if a.err != nil {
				return a, runtime.Errorf(vm.KindToolError, "%s: skill %s cannot be loaded: %v", tool, name, a.err)
			}
			return a, nil
		}
		names = append(names, a.name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return available{}, runtime.Errorf(vm.KindToolError, "%s: agent %q has no skills", tool, agent)
	}
	return available{}, runtime.Errorf(vm.KindToolError, "%s: unknown skill %q; this agent's skills are: %s", tool, name, strings.Join(names, ", "))
}

// args decodes tool's arguments into in and finds the skill they name
// (skill points into in).
func (t *Tools) args(tool string, req runtime.ToolRequest, in any, skill *string) (available, error) {
	if err := runtime.DecodeArgs(tool, req.Args, in); err != nil {
		return available{}, err
	}
	return t.find(tool, req.Agent, *skill, req.Session)
}

type loadTool struct{ t *Tools }

func (l *loadTool) Spec() runtime.ToolSpec { s, _ := workspace.BuiltinSpec(LoadToolName); return s }
func (l *loadTool) Effect() runtime.Effect { _, e := workspace.BuiltinSpec(LoadToolName); return e }

// loadRecord is what one session has received of one skill.
type loadRecord struct {
	Hash string    `json:"hash"`
	Docs []string  `json:"docs,omitempty"`
	Run  string    `json:"run"`
	Time time.Time `json:"time"`
}

func (l *loadTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var in struct {
		Skill          string   `json:"skill"`
		Docs           []string `json:"docs"`
		IncludeAllDocs *bool    `json:"include_all_docs"`
		Reload         *bool    `json:"reload"`
	}
	a, err := l.t.args(LoadToolName, req, &in, &in.Skill)
	if err != nil {
		return nil, err
	}
	s := a.skill
	want := in.Docs
	if in.IncludeAllDocs != nil && *in.IncludeAllDocs {
		want = s.Docs
	}
	for _, d := range want {
		if !slices.Contains(s.Docs, d) {
			return nil, runtime.Errorf(vm.KindToolError, "skill_load: skill %s has no document %q; its documents are: %s", a.name, d, strings.Join(s.Docs, ", "))
		}
	}
	var rec loadRecord
	key := ""
	if l.t.Docs != nil && req.Session.App != "" {
		key = store.DocPath(req.Session.App, req.Session.User, req.Session.Session, req.Agent, a.name)
		b, err := l.t.Docs.GetDoc(ctx, LoadedColl, key)
		switch {
		case err == nil:
			if json.Unmarshal(b, &rec) != nil {
				rec = loadRecord{}
			}
		case !errors.Is(err, store.ErrNotFound):
			return nil, runtime.Errorf(vm.KindUnavailable, "skill_load: %v", err)
		}
	}
	reload := in.Reload != nil && *in.Reload
	fresh := reload || rec.Hash != s.Hash
	var b strings.Builder
	if fresh {
		fmt.Fprintf(&b, "# Skill %s\n\n%s\n\n%s", a.name, oneLine(a.description()), strings.TrimSpace(s.Body))
		if len(s.Docs) > 0 {
			fmt.Fprintf(&b, "\n\nDocuments (load with skill_load docs=[...]): %s", strings.Join(s.Docs, ", "))
		}
		if len(s.Scripts) > 0 {
			if a.grant.Exec {
				fmt.Fprintf(&b, "\n\nScripts (run with skill_run): %s", strings.Join(s.Scripts, ", "))
			} else {
				fmt.Fprintf(&b, "\n\nScripts: %s (this agent may not run them)", strings.Join(s.Scripts, ", "))
			}
		}
		rec = loadRecord{Hash: s.Hash}
	} else {
		fmt.Fprintf(&b, "Skill %s is already loaded in this session: its instructions are in an earlier skill_load result. Pass reload=true to receive them again.", a.name)
	}
	for _, d := range want {
		if !fresh && slices.Contains(rec.Docs, d) {
			fmt.Fprintf(&b, "\n\nDocument %s is already loaded in this session.", d)
			continue
		}
		text, err := s.Doc(d)
		if err != nil {
			return nil, runtime.Errorf(vm.KindToolError, "skill_load: %v", err)
		}
		fmt.Fprintf(&b, "\n\n## Document %s\n\n%s", d, strings.TrimSpace(text))
		rec.Docs = append(rec.Docs, d)
	}
	if key != "" {
		sort.Strings(rec.Docs)
		rec.Docs = slices.Compact(rec.Docs)
		rec.Run = req.Run
		if l.t.Now != nil {
			rec.Time = l.t.Now().UTC()
		}
		v, _ := json.Marshal(rec)
		if err := l.t.Docs.ApplyDocs(ctx, store.DocOp{Coll: LoadedColl, Key: key, Value: v}); err != nil {
			return nil, runtime.Errorf(vm.KindUnavailable, "skill_load: record: %v", err)
		}
	}
	return json.Marshal(b.String())
}

type runTool struct{ t *Tools }

// RunEndObserver implements runtime.RunScoped: the Runner removes a run's
// workspace (where skill_run staged the skill) when the run ends for good.
func (r *runTool) RunEndObserver() runtime.RunEndObserver {
	if r.t.Workspaces == nil {
		return nil
	}
	return r.t.Workspaces
}

func (r *runTool) Spec() runtime.ToolSpec { s, _ := workspace.BuiltinSpec(RunToolName); return s }
func (r *runTool) Effect() runtime.Effect { _, e := workspace.BuiltinSpec(RunToolName); return e }

// RunOutput is skill_run's output record.
type RunOutput struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

func (r *runTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var in struct {
		Skill   string  `json:"skill"`
		Command string  `json:"command"`
		Cwd     *string `json:"cwd"`
		Stdin   *string `json:"stdin"`
		Timeout *string `json:"timeout"`
	}
	a, err := r.t.args(RunToolName, req, &in, &in.Skill)
	if err != nil {
		return nil, err
	}
	if !a.grant.Exec {
		return nil, runtime.Errorf(vm.KindToolError, "skill_run: skill %s is not granted to agent %q with exec; it may only be loaded", a.name, req.Agent)
	}
	if r.t.Exec == nil || r.t.Workspaces == nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "skill_run: no executor configured")
	}
	s := a.skill
	ws, err := r.t.Workspaces.ForRun(req.Run)
	if err != nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "skill_run: %v", err)
	}
	staged := "skills/" + s.Name()
	if err := ws.CopyDir(s.Dir, staged, MaxBytes); err != nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "skill_run: stage skill %s: %v", a.name, err)
	}
	stagedAbs := ws.Root + "/" + staged
	var argv []string
	if len(s.Front.Shell) > 0 {
		argv = append(slices.Clone(s.Front.Shell), in.Command)
	} else {
		words, err := SplitCommand(in.Command)
		if err != nil {
			return nil, runtime.Errorf(vm.KindToolError, "skill_run: %v", err)
		}
		script, err := workspace.Confine(words[0])
		if err != nil || !slices.Contains(s.Scripts, script) {
			return nil, runtime.Errorf(vm.KindToolError, "skill_run: %q is not a script of skill %s (scripts: %s); without a declared shell a command starts with a script path", words[0], a.name, strings.Join(s.Scripts, ", "))
		}
		// Files under scripts/ are the skill's scripts: executable once
		// staged, whatever mode their checkout gave them.
		if err := ws.MakeExecutable(staged + "/" + script); err != nil {
			return nil, runtime.Errorf(vm.KindUnavailable, "skill_run: %v", err)
		}
		argv = append([]string{stagedAbs + "/" + script}, words[1:]...)
	}
	cmd := workspace.Command{Argv: argv, Env: map[string]string{"SKILL_DIR": stagedAbs, "WORKSPACE": ws.Root}}
	if in.Cwd != nil {
		cmd.Dir = *in.Cwd
	}
	if in.Stdin != nil {
		cmd.Stdin = []byte(*in.Stdin)
	}
	if cmd.Timeout, err = workspace.ParseTimeout(in.Timeout); err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "skill_run: %v", err)
	}
	res, err := r.t.Exec.Run(ctx, ws, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, runtime.Errorf(vm.KindTimeout, "skill_run: %v", err)
		}
		return nil, runtime.Errorf(vm.KindToolError, "skill_run: %v", err)
	}
	out := RunOutput{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}
	if res.TimedOut {
		out.Stderr += "\n[killed: timed out]"
	}
	return json.Marshal(out)
}

// SplitCommand splits a command line into words: blanks separate words,
// single quotes keep everything literally, double quotes keep blanks and
// allow \" and \\. Nothing is expanded; there is no shell.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		case unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

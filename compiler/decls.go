package compiler

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/skillmd"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Checks of the declarations other than graphs, serve and tests: states,
// models, skills, policies, tools and agents.

var reducerByName = map[string]Reducer{
	"replace": ReduceReplace, "append": ReduceAppend, "merge": ReduceMerge,
	"sum": ReduceSum, "max": ReduceMax, "min": ReduceMin,
}

func (c *checker) checkState(s *State) {
	syn, ok := s.syn.(*syntax.State)
	if !ok {
		return
	}
	file := c.fileOf[s.syn]
	seen := map[string]diag.Span{}
	var tfields []types.Field
	complete := true
	for _, sf := range syn.Fields {
		if sf.Name == nil {
			continue
		}
		if prev, dup := seen[sf.Name.Name]; dup {
			related(c.errorf(diag.DuplicateName, sf.Name.Span(), "state field %s is repeated", sf.Name.Name), "first here", prev)
			continue
		}
		seen[sf.Name.Name] = sf.Name.Span()
		f := &Field{Name: sf.Name.Name, Span: sf.Name.Span(), Index: len(s.Fields), Syntax: sf}
		s.Fields = append(s.Fields, f)
		f.Type = c.typeOf(sf.Type, file)
		if containsSecret(f.Type) {
			c.errorf(SecretEscapes, sf.Type.Span(), "state cannot hold a secret (%s): secrets are never stored", f.Type)
			f.Type = nil
		}
		if sf.Reduce != nil {
			r, ok := reducerByName[sf.Reduce.Name]
			if !ok {
				c.errorf(diag.UnknownName, sf.Reduce.Span(), "unknown reducer %s", sf.Reduce.Name).Detail =
					"reducers: replace, append, merge, sum, max, min"
			} else {
				f.Reducer = r
				c.checkReducer(f, sf.Reduce.Span())
			}
		}
		if f.Type == nil {
			complete = false
			continue
		}
		if sf.Max != nil {
			c.checkListSize(f, sf.Max)
		}
		tf := types.Field{Name: f.Name, Type: f.Type}
		if sf.Default != nil {
			f.Default = sf.Default
			if v, ok := c.defaultValue(sf.Default, f.Type, file); ok {
				f.DefaultValue, f.HasDefault = v, true
				tf.HasDefault, tf.Default = true, v
				c.checkLiteralSize(f, sf.Default, "the default of "+f.Name)
			}
		}
		tfields = append(tfields, tf)
	}
	if complete {
		if t, err := types.NewRecord(s.name, tfields); err == nil {
			s.Type = t
		}
	}
}

// checkListSize checks a list field's `max N` (spec/language.md §9.1)
// and records N in f.MaxLen.
func (c *checker) checkListSize(f *Field, lit *syntax.IntLit) {
	n, err := strconv.ParseInt(lit.Text, 10, 64)
	if err != nil || n < 1 || n > bytecode.MaxListSize {
		c.errorf(InvalidListSize, lit.Span(), "max %s: a list size is a whole number from 1 to %d", lit.Text, bytecode.MaxListSize)
		return
	}
	if !bytecode.Sizable(f.Type) {
		c.errorf(InvalidListSize, lit.Span(), "max %s: field %s is %s; only a list has a size", lit.Text, f.Name, f.Type)
		return
	}
	f.MaxLen = int(n)
}

// checkLiteralSize reports a list literal written to a sized field (a
// default, a set value, a test input) with more elements than the field
// holds: the write could only fail.
func (c *checker) checkLiteralSize(f *Field, e *syntax.Expr, what string) {
	if f == nil || f.MaxLen == 0 {
		return
	}
	if l, ok := primaryOf(e).(*syntax.ListLit); ok && len(l.Elems) > f.MaxLen {
		c.errorf(InvalidListSize, e.Span(), "%s has %d elements, past its max of %d", what, len(l.Elems), f.MaxLen)
	}
}

// checkReducer checks that a reducer fits its field's type.
func (c *checker) checkReducer(f *Field, at diag.Span) {
	t := f.Type
	if t == nil || f.Reducer == ReduceReplace {
		return
	}
	if t.Kind() == types.KindOptional {
		c.errorf(InvalidReducer, at, "reducer %s needs a non-optional field, not %s", f.Reducer, t)
		return
	}
	var ok bool
	var need string
	switch f.Reducer {
	case ReduceAppend:
		ok, need = t.Kind() == types.KindList || t.Kind() == types.KindMessages, "a list"
	case ReduceMerge:
		ok, need = t.Kind() == types.KindMap || t.Kind() == types.KindRecord, "a map or record"
	case ReduceSum:
		ok, need = isNumeric(t) || t.Kind() == types.KindDuration, "an int, float or duration"
	case ReduceMax, ReduceMin:
		ok, need = isNumeric(t) || t.Kind() == types.KindDuration || t.Kind() == types.KindString, "an int, float, duration or string"
	}
	if !ok {
		c.errorf(InvalidReducer, at, "reducer %s needs %s, not %s", f.Reducer, need, t)
	}
}

func (c *checker) checkModel(m *Model) {
	syn, ok := m.syn.(*syntax.BlockDecl)
	if !ok || syn.Body == nil {
		return
	}
	m.Attrs = c.checkBlock(modelSchema, syn.Body.Attrs, m.span, &scope{where: InConfig, file: m.file})
	c.checkModelFallback(m)
}

func (c *checker) checkSkill(s *Skill) {
	syn, ok := s.syn.(*syntax.Skill)
	if !ok || syn.From == nil {
		return
	}
	if syn.Body != nil {
		s.Attrs = c.checkBlock(skillSchema, syn.Body.Attrs, s.span, &scope{where: InConst, file: s.file})
	}
	p, lit := syn.From.Literal()
	if !lit {
		c.errorf(NotConstant, syn.From.Span(), "a skill folder must be a literal path")
		return
	}
	dir, err := resolveRel(s.file, p)
	if err != nil {
		c.errorf(BadPath, syn.From.Span(), "skill folder %q: %v", p, err)
		return
	}
	s.Path, s.Dir = p, dir
	if c.cfg.FS != nil {
		if _, err := fs.Stat(c.cfg.FS, c.cfg.fsPath(path.Join(dir, "SKILL.md"))); err != nil {
			c.errorf(FileMissing, syn.From.Span(), "skill folder %s has no SKILL.md", dir)
			return
		}
		c.checkSkillFile(s, syn.From.Span())
	}
}

// checkSkillFile parses the skill's SKILL.md and reports each problem of
// its front matter at its position in SKILL.md (P514), pointing back at the
// declaration.
func (c *checker) checkSkillFile(s *Skill, decl diag.Span) {
	name := path.Join(s.Dir, "SKILL.md")
	src, err := fs.ReadFile(c.cfg.FS, c.cfg.fsPath(name))
	if err != nil {
		c.errorf(FileMissing, decl, "skill folder %s: cannot read SKILL.md: %v", s.Dir, err)
		return
	}
	f, probs := skillmd.Parse(name, src)
	for _, p := range probs {
		related(c.errorf(SkillFile, p.Span, "%s", p.Msg), "skill "+s.Name()+" declared here", decl)
	}
	if len(probs) == 0 {
		s.Front = &f.Front
	}
}

// grantSkillTools adds the builtin skill tools an llm agent's grants and
// evolution policy imply (spec/language.md §7.6): skill_load for any skill
// grant or an evolution policy (published skills), skill_run for an exec
// grant.
func (c *checker) grantSkillTools(a *Agent) {
	exec := false
	for _, g := range a.Skills {
		exec = exec || g.Exec
	}
	add := func(name string) {
		for _, t := range a.Tools {
			if t.Name() == name {
				return
			}
		}
		if t := c.builtinTool(name); t != nil {
			t.used = true
			a.Tools = append(a.Tools, t)
		}
	}
	if len(a.Skills) > 0 || a.Evolution != nil {
		add("skill_load")
	}
	if exec {
		add("skill_run")
	}
}

var policySchemas = map[DeclKind]*blockSchema{
	DeclSummary: summarySchema, DeclCompaction: compactionSchema, DeclRecall: recallSchema,
	DeclMemory: memorySchema, DeclEvolution: evolutionSchema,
}

func (c *checker) checkPolicy(p *Policy) {
	syn, ok := p.syn.(*syntax.BlockDecl)
	if !ok || syn.Body == nil {
		return
	}
	p.Attrs = c.checkBlock(policySchemas[p.kind], syn.Body.Attrs, p.span, &scope{where: InConst, file: p.file})
	if p.kind == DeclCompaction {
		keep := p.Attrs.Get("keep")
		clean := p.Attrs.Get("force_clean")
		if keep == nil || clean == nil {
			return
		}
		for i, d := range clean.Refs {
			for j, k := range keep.Refs {
				if d == k {
					at := clean.Value.Span()
					if l, ok := primaryOf(clean.Value).(*syntax.ListLit); ok && i < len(l.Elems) {
						at = l.Elems[i].Span()
					}
					d := c.errorf(CompactionOverlap, at, "%s is in both force_clean and keep", d.Name())
					if l, ok := primaryOf(keep.Value).(*syntax.ListLit); ok && j < len(l.Elems) {
						related(d, "kept here", l.Elems[j].Span())
					}
				}
			}
		}
	}
}

var agentForms = map[string]AgentForm{"llm": AgentLLM, "chain": AgentChain, "parallel": AgentParallel, "cycle": AgentCycle}

// agentSchemas are the attribute tables of the agent forms.
var agentSchemas = [...]*blockSchema{AgentLLM: llmAgentSchema, AgentChain: chainSchema, AgentParallel: parallelSchema, AgentCycle: cycleSchema}

// agentHeader sets an agent's form and doc, before tools (run = agent X) and
// other agents look at it.
func (c *checker) agentHeader(a *Agent) {
	syn, ok := a.syn.(*syntax.Agent)
	if !ok || syn.Kind == nil {
		return
	}
	if syn.Doc != nil {
		a.Doc, _ = syn.Doc.Literal()
	}
	f, ok := agentForms[syn.Kind.Name]
	if !ok {
		c.errorf(diag.UnknownName, syn.Kind.Span(), "unknown agent kind %s", syn.Kind.Name).Detail =
			"agent kinds: llm, chain, parallel, cycle"
		a.bad = true
		return
	}
	a.Form = f
}

func (c *checker) checkAgent(a *Agent) {
	syn, ok := a.syn.(*syntax.Agent)
	if !ok || a.Form == 0 || syn.Body == nil || a.Attrs != nil {
		return
	}
	sc := &scope{where: InConst, file: a.file}
	a.Attrs = c.checkBlock(agentSchemas[a.Form], syn.Body.Attrs, a.span, sc)
	if at := a.Attrs.Get("budget"); at != nil && at.Syn != nil && at.Syn.Key != nil {
		a.Budget = limitsOf(at.Block, at.Syn.Key.Span())
	}
	one := func(name string) Decl {
		if at := a.Attrs.Get(name); at != nil && len(at.Refs) == 1 {
			return at.Refs[0]
		}
		return nil
	}
	a.Output = types.StringType
	switch a.Form {
	case AgentLLM:
		a.Model, _ = one("model").(*Model)
		if at := a.Attrs.Get("instruction"); at != nil {
			a.Instruction, _ = primaryOf(at.Value).(*syntax.String)
		}
		if at := a.Attrs.Get("tools"); at != nil {
			for _, d := range at.Refs {
				if t, ok := d.(*Tool); ok {
					a.Tools = append(a.Tools, t)
				}
			}
		}
		if at := a.Attrs.Get("skills"); at != nil {
			for i, d := range at.Refs {
				if s, ok := d.(*Skill); ok {
					a.Skills = append(a.Skills, SkillGrant{Skill: s, Exec: at.Tags[i] == "exec"})
				}
			}
		}
		a.Summary, _ = one("summary").(*Policy)
		a.Compaction, _ = one("compaction").(*Policy)
		a.Recall, _ = one("recall").(*Policy)
		a.Memory, _ = one("memory").(*Policy)
		a.Evolution, _ = one("evolution").(*Policy)
		c.grantSkillTools(a)
		if at := a.Attrs.Get("max_turns"); at != nil && at.HasConst {
			a.MaxTurns = int(at.Const.Int())
		}
		if at := a.Attrs.Get("output"); at != nil && at.Type != nil {
			if containsSecret(at.Type) {
				c.errorf(SecretEscapes, at.Value.Span(), "an agent cannot output a secret")
			} else {
				a.Output = at.Type
			}
		}
		c.checkAgentFallback(a)
	default:
		if at := a.Attrs.Get("agents"); at != nil {
			for _, d := range at.Refs {
				if s, ok := d.(*Agent); ok {
					a.Agents = append(a.Agents, s)
				}
			}
			need := 1
			if a.Form == AgentParallel {
				need = 2
			}
			if l, ok := primaryOf(at.Value).(*syntax.ListLit); ok && len(l.Elems) < need {
				c.errorf(InvalidValue, at.Value.Span(), "%s agent needs at least %d member(s)", withArticle(a.Form.String()), need)
			}
		}
		if a.Form == AgentParallel {
			a.Output = types.MapOf(types.StringType) // member name -> answer
		}
		if at := a.Attrs.Get("until"); at != nil {
			a.Until = at.Value
		}
		if at := a.Attrs.Get("max"); at != nil && at.HasConst {
			a.Max = int(at.Const.Int())
		}
		a.Answer = len(a.Agents) - 1
		if at := a.Attrs.Get("answer"); at != nil && len(at.Refs) == 1 {
			if m, ok := at.Refs[0].(*Agent); ok {
				if i := slices.Index(a.Agents, m); i >= 0 {
					a.Answer = i
				} else {
					c.errorf(InvalidValue, at.Value.Span(), "answer must name a member of cycle %s; %s is not in its agents", a.name, m.name)
				}
			}
		}
	}
	c.agentRecursion(a)
}

// agentRecursion reports a composition that contains itself, and computes
// compositions' output types in dependency order.
func (c *checker) agentRecursion(a *Agent) bool {
	switch c.agentSt[a] {
	case 1:
		return false
	case 2:
		return true
	}
	c.agentSt[a] = 1
	ok := true
	if syn, isAgent := a.syn.(*syntax.Agent); isAgent && a.Form != AgentLLM {
		list := a.Attrs.Get("agents")
		for i, sub := range a.Agents {
			if c.agentSt[sub] == 1 {
				at := a.span
				if list != nil {
					if l, isList := primaryOf(list.Value).(*syntax.ListLit); isList && i < len(l.Elems) {
						at = l.Elems[i].Span()
					}
				}
				c.errorf(RecursiveCall, at, "agent %s contains itself through %s", a.name, sub.name)
				ok = false
				continue
			}
			if sub.Attrs == nil && sub.Form != 0 {
				c.checkAgent(sub) // resolves sub first; its own recursion is reported there
			}
			if !c.agentRecursion(sub) {
				ok = false
			}
		}
		_ = syn
		if len(a.Agents) > 0 && (a.Form == AgentChain || a.Form == AgentCycle) {
			a.Output = a.Agents[min(max(a.Answer, 0), len(a.Agents)-1)].Output
		}
	}
	c.agentSt[a] = 2
	return ok
}

// agentEffect is the strongest effect an agent can reach.
func (c *checker) agentEffect(a *Agent, busy map[*Agent]bool) Effect {
	if a.Effect != 0 {
		return a.Effect
	}
	if busy[a] {
		return ReadOnly
	}
	busy[a] = true
	e := ReadOnly
	for _, t := range a.Tools {
		e = max(e, t.Effect)
	}
	for _, g := range a.Skills {
		if g.Exec {
			e = max(e, SideEffect)
		}
	}
	for _, s := range a.Agents {
		e = max(e, c.agentEffect(s, busy))
	}
	delete(busy, a)
	return e
}

func (c *checker) finishAgentEffects() {
	for _, a := range c.info.Agents {
		a.Effect = c.agentEffect(a, map[*Agent]bool{})
	}
	// A tool run by an agent must declare an effect that covers the
	// agent's (§12.9): a weaker one would let a crash re-run side effects.
	for _, t := range c.info.Tools {
		a := t.Impl.Agent
		if t.Impl.Kind != ImplAgent || a == nil || t.Effect >= a.Effect {
			continue
		}
		at := t.Attrs.Get("effect")
		if at == nil {
			continue
		}
		d := c.errorf(WeakToolEffect, at.Span, "tool %s declares effect %s, but its agent %s has effect %s", t.name, t.Effect, a.name, a.Effect)
		d.Detail = "declare effect = " + a.Effect.String() + " (or stronger); " + effectCause(a)
	}
}

// effectCause names what gives agent a its effect.
func effectCause(a *Agent) string {
	for _, t := range a.Tools {
		if t.Effect == a.Effect {
			return fmt.Sprintf("the agent calls tool %s (%s)", t.name, t.Effect)
		}
	}
	for _, g := range a.Skills {
		if g.Exec && a.Effect == SideEffect {
			return "the agent holds an exec skill grant"
		}
	}
	for _, s := range a.Agents {
		if s.Effect == a.Effect {
			return fmt.Sprintf("the agent calls agent %s (%s)", s.name, s.Effect)
		}
	}
	return "an agent's effect is the strongest of what it can reach"
}

var effectByName = map[string]Effect{"read_only": ReadOnly, "idempotent": Idempotent, "side_effect": SideEffect}

func (c *checker) checkTool(t *Tool) {
	syn, ok := t.syn.(*syntax.Tool)
	if !ok {
		return
	}
	if syn.Doc != nil {
		t.Doc, _ = syn.Doc.Literal()
	}
	file := t.file
	var attrs []*syntax.Attr
	var input, output *syntax.ToolItem
	var run *syntax.ToolItem
	dup := func(prev *syntax.ToolItem, it *syntax.ToolItem, what string) bool {
		if prev != nil {
			related(c.errorf(diag.DuplicateAttr, it.Span(), "tool %s has a second %s", t.name, what), "first here", prev.Span())
			return true
		}
		return false
	}
	for _, it := range syn.Items {
		switch {
		case it.Input != nil:
			if !dup(input, it, "input") {
				input = it
			}
		case it.Output != nil:
			if !dup(output, it, "output") {
				output = it
			}
		case it.Run != nil:
			if !dup(run, it, "run") {
				run = it
			}
		case it.Attr != nil:
			attrs = append(attrs, it.Attr)
		}
	}
	t.Attrs = c.checkBlock(toolSchema, attrs, t.span, &scope{where: InConfig, file: file})
	t.Effect = SideEffect
	if at := t.Attrs.Get("effect"); at != nil && len(at.Symbols) == 1 {
		t.Effect = effectByName[at.Symbols[0]]
	}
	t.Input, _ = types.NewRecord("", nil)
	if input != nil {
		if it := c.typeOf(input.Input, file); it != nil {
			if it.Kind() != types.KindRecord {
				c.errorf(ToolInputRecord, input.Input.Span(), "a tool's input must be a record, not %s", it)
			} else {
				t.Input = it
			}
		}
	}
	t.Output = types.StringType
	if output != nil {
		ot := c.typeOf(output.Output, file)
		switch {
		case containsSecret(ot):
			c.errorf(ToolInputRecord, output.Output.Span(), "a tool cannot output a secret")
		case ot != nil:
			t.Output = ot
		}
	}
	if run == nil {
		c.errorf(diag.MissingAttr, t.span, "tool %s needs run = builtin.NAME, http { ... }, exec { ... }, mcp { ... } or agent NAME", t.name)
		return
	}
	r := run.Run
	sc := &scope{where: InConfig, file: file, vars: map[string]*types.Type{"input": t.Input}}
	switch {
	case r.Builtin != nil:
		t.Impl = ToolImpl{Kind: ImplBuiltin, Builtin: r.Builtin.Name}
		if c.uni.Impls != nil && !c.uni.Impls[r.Builtin.Name] {
			var names []string
			for n := range c.uni.Impls {
				names = append(names, n)
			}
			c.errorf(UnknownBuiltin, r.Builtin.Span(), "no builtin tool implementation %s", r.Builtin.Name).Detail = suggest(r.Builtin.Name, sortedCopy(names))
		}
	case r.HTTP != nil:
		t.Impl = ToolImpl{Kind: ImplHTTP, Attrs: c.checkBlock(httpSchema, r.HTTP.Attrs, run.Span(), sc)}
	case r.Exec != nil:
		t.Impl = ToolImpl{Kind: ImplExec, Attrs: c.checkBlock(execSchema, r.Exec.Attrs, run.Span(), sc)}
		c.checkShellCommand(t.Impl.Attrs)
	case r.MCP != nil:
		t.Impl = ToolImpl{Kind: ImplMCP, Attrs: c.checkBlock(mcpToolSchema, r.MCP.Attrs, run.Span(), &scope{where: InConfig, file: file})}
		c.checkMCPTransport(t.Impl.Attrs, run.Span())
		inAt, outAt := t.span, t.span
		if input != nil {
			inAt = input.Span()
		}
		if output != nil {
			outAt = output.Span()
		}
		c.pinMCP(t, run.Span(), inAt, outAt)
	case r.Agent != nil:
		t.Impl = ToolImpl{Kind: ImplAgent}
		if a, ok := c.lookup(r.Agent, file, "agent", DeclAgent).(*Agent); ok {
			t.Impl.Agent = a
			if a.Attrs == nil && a.Form != 0 {
				c.checkAgent(a)
			}
			if a.Output != nil && !assignable(a.Output, t.Output) {
				c.errorf(TypeMismatch, r.Agent.Span(), "agent %s outputs %s, but tool %s outputs %s", a.name, a.Output, t.name, t.Output)
			}
		}
	}
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

// checkMCPTransport checks that an mcp tool names exactly one transport:
// url (streamable HTTP, with headers) or command (stdio, with env).
func (c *checker) checkMCPTransport(attrs *Attrs, at diag.Span) {
	url, cmd := attrs.Get("url"), attrs.Get("command")
	switch {
	case url == nil && cmd == nil:
		c.errorf(diag.MissingAttr, at, "mcp tool needs url (streamable HTTP) or command (stdio)")
	case url != nil && cmd != nil:
		c.errorf(InvalidValue, cmd.Span, "mcp tool sets both url and command; a server has one transport")
	case url != nil:
		if e := attrs.Get("env"); e != nil {
			c.errorf(InvalidValue, e.Span, "env applies to a stdio server (command), not to url")
		}
	default:
		if h := attrs.Get("headers"); h != nil {
			c.errorf(InvalidValue, h.Span, "headers apply to a streamable HTTP server (url), not to command")
		}
		if cmd.HasConst && cmd.Const.Kind() == types.ValList && cmd.Const.Len() == 0 {
			c.errorf(InvalidValue, cmd.Span, "command must name the program: [\"prog\", \"arg\"]")
		}
	}
}

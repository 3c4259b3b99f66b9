// Package compiler checks .agent programs and lowers them to bytecode.
//
// Load reads and parses the files of a program; Check resolves names, checks
// attributes against their block schemas, type-checks every expression,
// computes definite assignment over each graph, and proves the graph
// properties listed in spec/checks.md. Diagnostics are values: nothing here
// prints. Check always returns an Info, with as much resolved as possible.
package compiler

import (
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Check runs every check on pkg. It returns the Info it built (also when it
// reports errors) and the diagnostics, sorted and de-duplicated.
func Check(cfg Config, pkg *Package) (*Info, []diag.Diagnostic) {
	if pkg == nil {
		pkg = &Package{Imports: map[string][]string{}, byName: map[string]*syntax.File{}}
	}
	c := newChecker(cfg, pkg)
	c.run()
	return c.info, c.diags.Sorted()
}

type checker struct {
	cfg   Config
	uni   *Universe
	pkg   *Package
	info  *Info
	diags diag.List

	visible  map[string]map[string]bool // file -> files whose declarations it sees
	fileOf   map[syntax.Decl]string
	builtins map[string]*Tool

	typeBusy map[*TypeDecl]bool // type declarations being resolved (cycle detection)
	typeDone map[*TypeDecl]bool
	agentSt  map[*Agent]uint8 // 0 unvisited, 1 resolving, 2 done
	graphs   map[*Graph]*graphBuild
	mcpLocks map[string]*mcpLock // declaring file -> its MCP lock file
}

func newChecker(cfg Config, pkg *Package) *checker {
	uni := cfg.Universe
	if uni == nil {
		uni = &Universe{}
	}
	c := &checker{
		cfg: cfg, uni: uni, pkg: pkg,
		info: &Info{
			Package: pkg, Universe: uni,
			// About one expression per 24 bytes and one name per 32 in
			// typical sources; sizing up front avoids rehashing.
			// Dense code has about one typed expression and one reference
			// per 12 bytes; sized for that, the maps do not grow.
			ExprTypes: make(map[syntax.Node]*types.Type, pkg.srcBytes/12),
			Refs:      make(map[syntax.Node]Ref, pkg.srcBytes/12),
			byName:    map[string]Decl{},
		},
		visible:  map[string]map[string]bool{},
		fileOf:   map[syntax.Decl]string{},
		builtins: map[string]*Tool{},
		typeBusy: map[*TypeDecl]bool{},
		typeDone: map[*TypeDecl]bool{},
		agentSt:  map[*Agent]uint8{},
		graphs:   map[*Graph]*graphBuild{},
		mcpLocks: map[string]*mcpLock{},
	}
	return c
}

func (c *checker) run() {
	c.collect()
	for _, t := range c.info.Types {
		c.resolveTypeDecl(t)
	}
	for _, s := range c.info.States {
		c.checkState(s)
	}
	for _, m := range c.info.Models {
		c.checkModel(m)
	}
	for _, s := range c.info.Skills {
		c.checkSkill(s)
	}
	for _, p := range c.info.Policies {
		c.checkPolicy(p)
	}
	for _, a := range c.info.Agents {
		c.agentHeader(a)
	}
	for _, t := range c.info.Tools {
		c.checkTool(t)
	}
	for _, a := range c.info.Agents {
		c.checkAgent(a)
	}
	c.finishAgentEffects()
	for _, g := range c.info.Graphs {
		c.buildGraph(g)
	}
	c.graphRecursion()
	for _, g := range c.info.Graphs {
		c.checkGraph(g)
	}
	c.graphEffects()
	c.checkServe()
	c.checkTests()
	c.unused()
	for _, name := range c.uni.ToolNames() {
		if t, ok := c.builtins[name]; ok && t.used {
			c.info.BuiltinTools = append(c.info.BuiltinTools, t)
		}
	}
}

func (c *checker) errorf(code diag.Code, at diag.Span, format string, args ...any) *diag.Diagnostic {
	return c.diags.Errorf(code, at, format, args...)
}

func (c *checker) warnf(code diag.Code, at diag.Span, format string, args ...any) *diag.Diagnostic {
	return c.diags.Warnf(code, at, format, args...)
}

// related attaches a "see here" location to d.
func related(d *diag.Diagnostic, msg string, at diag.Span) {
	if d != nil && at.IsValid() {
		d.Related = append(d.Related, diag.Related{Message: msg, Span: at})
	}
}

func quoteList(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

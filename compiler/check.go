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
	"unsafe"
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

	edgeBlock []*Edge    // shares for nodes' edge lists (edgeList)
	setItems  []SetItem  // blocks of set items (setItem)
	setLists  []*SetItem // shares for set nodes' item lists
	writes    []*Field   // shares for nodes' write lists (nodeWrites)
}

// chunks hands out zeroed *T from chunks of at most 32 KiB, sized for the
// expected count: a few allocations for all, and pointers that stay valid.
// (One array for thousands of nodes would be a large object: fresh pages,
// zeroed and faulted in on every compile.)
type chunks[T any] struct {
	buf  []T
	left int // how many more are expected
}

func (c *chunks[T]) get() *T {
	if len(c.buf) == 0 {
		var zero T
		size := max(1, min(c.left, 32<<10/int(unsafe.Sizeof(zero))))
		if c.left <= 0 {
			size = 8 // more than expected
		}
		c.left -= size
		c.buf = make([]T, size)
	}
	x := &c.buf[0]
	c.buf = c.buf[1:]
	return x
}

// share returns an empty slice with room for n, taken from *block (a new
// block of at least 512 when it is short): many small lists cost one
// allocation per block instead of one each. The share is capped, so an
// append past it gets an array of its own and never reaches a neighbour.
func share[T any](block *[]T, n int) []T {
	if len(*block) < n {
		*block = make([]T, max(n, 512))
	}
	out := (*block)[:0:n]
	*block = (*block)[n:]
	return out
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
			// Dense code has about one typed expression and one reference
			// per 12 bytes; sized for that, the tables seldom grow.
			ExprTypes: newNodeTable[*types.Type](pkg.srcBytes / 12),
			Refs:      newRefTable(pkg.srcBytes / 12),
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
	forEach(c.info.States, c.checkState)
	forEach(c.info.Models, c.checkModel)
	forEach(c.info.Skills, c.checkSkill)
	forEach(c.info.Policies, c.checkPolicy)
	forEach(c.info.Agents, c.agentHeader)
	forEach(c.info.Tools, c.checkTool)
	forEach(c.info.Agents, c.checkAgent)
	c.finishAgentEffects()
	forEach(c.info.Graphs, c.buildGraph)
	c.graphRecursion()
	forEach(c.info.Graphs, c.checkGraph)
	c.graphEffects()
	c.checkServe()
	c.checkBudgets()
	c.checkTests()
	c.unused()
	for _, name := range c.uni.ToolNames() {
		if t, ok := c.builtins[name]; ok && t.used {
			c.info.BuiltinTools = append(c.info.BuiltinTools, t)
		}
	}
}

// forEach calls f on each element of list.
func forEach[T any](list []T, f func(T)) {
	for _, x := range list {
		f(x)
	}
}

func (c *checker) errorf(code diag.Code, at diag.Span, format string, args ...any) *diag.Diagnostic {
	return c.diags.Errorf(code, at, format, args...)
}

func (c *checker) warnf(code diag.Code, at diag.Span, format string, args ...any) *diag.Diagnostic {
	return c.diags.Warnf(code, at, format, args...)
}

// keyedOnce calls f on each attribute of attrs that has a key, the first
// time its name is set; a name set again is reported and skipped. It
// returns where each name was first set.
func (c *checker) keyedOnce(attrs []*syntax.Attr, f func(a *syntax.Attr, name string)) map[string]diag.Span {
	seen := map[string]diag.Span{}
	for _, a := range attrs {
		if a.Key == nil {
			continue
		}
		name := a.Key.Name
		if prev, dup := seen[name]; dup {
			related(c.errorf(diag.DuplicateAttr, a.Key.Span(), "%s is set twice", name), "first set here", prev)
			continue
		}
		seen[name] = a.Key.Span()
		f(a, name)
	}
	return seen
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

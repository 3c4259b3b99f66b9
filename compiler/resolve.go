package compiler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Name resolution. Every top-level declaration of every loaded file lives in
// one program namespace (names are unique across files), but a file sees
// only its own declarations and those of the files it imports directly.
// Builtin tools come from the universe and may not be redeclared.

// builtinTypeNames are the predeclared type names; a type may not reuse them.
var builtinTypeNames = map[string]bool{
	"string": true, "int": true, "float": true, "bool": true, "duration": true, "list": true, "map": true,
	"json": true, "messages": true, "secret": true, "error": true, "null": true,
}

// keywordDeclKinds maps a declaration's keyword to its kind.
var keywordDeclKinds = map[string]DeclKind{
	"model": DeclModel, "type": DeclType, "tool": DeclTool, "skill": DeclSkill, "state": DeclState,
	"summary": DeclSummary, "compaction": DeclCompaction, "recall": DeclRecall, "memory": DeclMemory,
	"evolution": DeclEvolution, "agent": DeclAgent, "graph": DeclGraph,
}

// collect creates an object for every declaration and checks the program
// namespace, workflow headers and the serve block.
func (c *checker) collect() {
	for _, f := range c.pkg.Files {
		vis := map[string]bool{f.Name: true}
		for _, m := range c.pkg.Imports[f.Name] {
			vis[m] = true
		}
		c.visible[f.Name] = vis

		var header *syntax.Workflow
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *syntax.Workflow:
				if header != nil {
					c.errorf(diag.DuplicateHeader, d.Span(), "file %s has a second workflow header", f.Name).Related =
						[]diag.Related{{Message: "first header here", Span: header.Span()}}
					continue
				}
				header = d
				if len(c.pkg.Roots) > 0 && f.Name == c.pkg.Roots[0] && d.Name != nil {
					c.info.Workflow = d.Name.Name
					if d.Doc != nil {
						c.info.Doc, _ = d.Doc.Literal()
					}
				}
			case syntax.NamedDecl:
				keyword, name := d.Declares()
				kind := keywordDeclKinds[keyword]
				c.declare(newDecl(kind, c.info), kind, name, d, f.Name)
			case *syntax.Serve:
				if c.info.Serve != nil {
					c.errorf(diag.DuplicateHeader, d.Span(), "a program has one serve block").Related =
						[]diag.Related{{Message: "first serve block here", Span: c.info.Serve.Span}}
					continue
				}
				c.info.Serve = &Serve{Span: d.Span(), Syntax: d}
				c.fileOf[d] = f.Name
			case *syntax.Test:
				c.fileOf[d] = f.Name
			case *syntax.BadDecl:
				kind, ok := keywordDeclKinds[d.Keyword]
				if !ok || d.Name == nil {
					continue
				}
				obj := newDecl(kind, &Info{}) // in none of the program's lists
				obj.base().bad = true
				c.declare(obj, kind, d.Name, d, f.Name)
			}
		}
	}
}

// newDecls make the empty object of a declaration of each kind, appended
// to the info's list of that kind; every other kind is a policy.
var newDecls = map[DeclKind]func(info *Info) Decl{
	DeclModel: func(info *Info) Decl { return listed(&info.Models) },
	DeclType:  func(info *Info) Decl { return listed(&info.Types) },
	DeclTool:  func(info *Info) Decl { return listed(&info.Tools) },
	DeclSkill: func(info *Info) Decl { return listed(&info.Skills) },
	DeclState: func(info *Info) Decl { return listed(&info.States) },
	DeclAgent: func(info *Info) Decl { return listed(&info.Agents) },
	DeclGraph: func(info *Info) Decl { return listed(&info.Graphs) },
}

// newDecl returns the empty object of a declaration of kind, listed in
// info.
func newDecl(kind DeclKind, info *Info) Decl {
	if mk, ok := newDecls[kind]; ok {
		return mk(info)
	}
	return listed(&info.Policies)
}

// declPtr is the pointer type of a declaration object.
type declPtr[T any] interface {
	*T
	Decl
}

// listed appends a new object to list and returns it.
func listed[T any, P declPtr[T]](list *[]P) Decl {
	obj := P(new(T))
	*list = append(*list, obj)
	return obj
}

func (c *checker) declare(obj Decl, kind DeclKind, name *syntax.Ident, syn syntax.Decl, file string) {
	o := obj.base()
	o.kind, o.syn, o.file = kind, syn, file
	c.fileOf[syn] = file
	if name == nil {
		o.bad = true
		return
	}
	o.name, o.span = name.Name, name.Span()
	if !o.bad {
		c.info.Decls = append(c.info.Decls, obj)
	}
	switch {
	case kind == DeclType && builtinTypeNames[name.Name]:
		c.errorf(diag.ReservedName, name.Span(), "%s is a builtin type name", name.Name)
		o.used = true // reported once is enough
		return
	case c.uni.Tool(name.Name) != nil:
		c.errorf(diag.ReservedName, name.Span(), "%s is a builtin tool", name.Name)
		o.used = true
		return
	}
	if prev, ok := c.info.byName[name.Name]; ok {
		o.used = true
		c.errorf(diag.DuplicateName, name.Span(), "%s is already declared (as %s)", name.Name, withArticle(prev.Kind().String())).Related =
			[]diag.Related{{Message: "previous declaration", Span: prev.Span()}}
		return
	}
	c.info.byName[name.Name] = obj
}

// lookup resolves a declaration reference written in file. It reports unknown
// names, names from files that are not imported, and wrong kinds, and returns
// nil for them (and, silently, for declarations that did not parse).
func (c *checker) lookup(id *syntax.Ident, file string, what string, kinds ...DeclKind) Decl {
	if id == nil {
		return nil
	}
	return c.lookupName(id.Name, id.Span(), id, file, what, kinds...)
}

func (c *checker) lookupName(name string, at diag.Span, key syntax.Node, file, what string, kinds ...DeclKind) Decl {
	d := c.info.byName[name]
	if d == nil && wantsKind(kinds, DeclTool) {
		if bt := c.builtinTool(name); bt != nil {
			d = bt
		}
	}
	if d == nil && c.uni.Tool(name) != nil {
		c.errorf(diag.WrongKind, at, "%s is a builtin tool, not %s", name, withArticle(what))
		return nil
	}
	if d == nil {
		cands := c.declNames(kinds...)
		c.errorf(diag.UnknownName, at, "unknown %s %s", what, name).Detail = suggest(name, cands)
		return nil
	}
	o := d.base()
	o.used = true
	if key != nil {
		c.info.Refs.set(key, Ref{Kind: RefDecl, Decl: d})
	}
	if o.bad {
		return nil
	}
	if o.file != "" && file != "" && !c.visible[file][o.file] {
		c.errorf(diag.UnknownName, at, "%s is declared in %s, which %s does not import", name, o.file, file)
		return nil
	}
	if len(kinds) > 0 && !wantsKind(kinds, d.Kind()) {
		c.errorf(diag.WrongKind, at, "%s is %s, not %s", name, withArticle(describeDecl(d)), withArticle(what))
		return nil
	}
	return d
}

func describeDecl(d Decl) string {
	if a, ok := d.(*Agent); ok && a.Form != 0 {
		return a.Form.String() + " agent"
	}
	if t, ok := d.(*Tool); ok && t.Builtin {
		return "builtin tool"
	}
	return d.Kind().String()
}

func wantsKind(kinds []DeclKind, k DeclKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// builtinTool returns the Tool object of a universe tool, creating it once.
func (c *checker) builtinTool(name string) *Tool {
	if t, ok := c.builtins[name]; ok {
		return t
	}
	bt := c.uni.Tool(name)
	if bt == nil {
		return nil
	}
	t := &Tool{Doc: bt.Doc, Input: bt.Input, Output: bt.Output, Effect: bt.Effect, Builtin: true,
		Impl: ToolImpl{Kind: ImplBuiltin, Builtin: name}}
	t.name, t.kind = name, DeclTool
	c.builtins[name] = t
	return t
}

// declNames lists declared names of the given kinds (all kinds if none), for
// suggestions.
func (c *checker) declNames(kinds ...DeclKind) []string {
	var out []string
	for n, d := range c.info.byName {
		if len(kinds) == 0 || wantsKind(kinds, d.Kind()) {
			out = append(out, n)
		}
	}
	if wantsKind(kinds, DeclTool) {
		out = append(out, c.uni.ToolNames()...)
	}
	sort.Strings(out)
	return out
}

// unused warns about declarations nothing refers to. Graphs and agents are
// entry points (agentc run --run NAME) and never reported.
func (c *checker) unused() {
	for _, d := range c.info.Decls {
		o := d.base()
		if o.used || o.bad || o.kind == DeclGraph || o.kind == DeclAgent {
			continue
		}
		c.warnf(diag.UnusedDecl, o.span, "%s %s is never used", o.kind, o.name)
	}
}

// suggest returns "did you mean X?" for the closest candidate, or "".
func suggest(name string, cands []string) string {
	best, bestD := "", 0
	for _, cand := range cands {
		if cand == name {
			continue
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(cand))
		limit := len(name) / 3
		if limit < 1 {
			limit = 1
		}
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = cand, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %s?", best)
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

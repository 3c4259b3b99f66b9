package lsp

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/syntax"
)

// Completion in context. The context is read from the syntax tree (which
// declaration holds the cursor) and the words just before the cursor; the
// names offered come from the last check's Info and the universe.

// completionCtx is what the text before the cursor says.
type completionCtx struct {
	prefix string // the identifier being typed
	prev   string // the word or "->" / "=" / "==" before it
	key    string // before "=", "==" or "!=": the key or operand
	decl   syntax.Decl
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// wordBefore returns the token ending at i (skipping blanks) and where it
// starts: an identifier, "->", or one punctuation byte.
func wordBefore(src []byte, i int) (string, int) {
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\r' || src[i-1] == '\n') {
		i--
	}
	if i == 0 {
		return "", 0
	}
	j := i
	for j > 0 && isIdentByte(src[j-1]) {
		j--
	}
	if j < i {
		return string(src[j:i]), j
	}
	if i >= 2 && src[i-2] == '-' && src[i-1] == '>' {
		return "->", i - 2
	}
	return string(src[i-1 : i]), i - 1
}

func contextAt(f *syntax.File, src []byte, off int) completionCtx {
	off = max(0, min(off, len(src)))
	start := off
	for start > 0 && isIdentByte(src[start-1]) {
		start--
	}
	c := completionCtx{prefix: string(src[start:off])}
	var at int
	c.prev, at = wordBefore(src, start)
	if c.prev == "=" {
		if op, at2 := wordBefore(src, at); op == "=" || op == "!" {
			c.prev = op + "=" // == or !=
			c.key, _ = wordBefore(src, at2)
		} else {
			c.key = op
		}
	}
	if f != nil {
		for _, d := range f.Decls {
			sp := d.Span()
			if d != nil && sp.Start.Offset < start && start <= sp.End.Offset {
				c.decl = d
			}
		}
	}
	return c
}

func (s *Server) completion(p *textDocumentPositionParams) (*completionList, error) {
	d, off, err := s.posOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	c := contextAt(d.pkg.File(d.name), d.text.src, off)
	items := complete(d.info, c, graphFor(d, c.decl))
	// Keep what matches the prefix; the client filters further.
	out := items[:0]
	seen := map[string]bool{}
	for _, it := range items {
		if strings.HasPrefix(it.Label, c.prefix) && !seen[it.Label] {
			seen[it.Label] = true
			out = append(out, it)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return &completionList{Items: out}, nil
}

func keywordItems(classes ...syntax.KeywordClass) []CompletionItem {
	var out []CompletionItem
	for _, k := range syntax.Keywords() {
		if slices.Contains(classes, k.Class) {
			out = append(out, CompletionItem{Label: k.Word, Kind: completionKeyword, Detail: string(k.Class) + " keyword"})
		}
	}
	return out
}

func words(kind int, detail string, ws ...string) []CompletionItem {
	out := make([]CompletionItem, len(ws))
	for i, w := range ws {
		out[i] = CompletionItem{Label: w, Kind: kind, Detail: detail}
	}
	return out
}

// declItems offers the declarations of the given kinds (every kind when
// none is given), builtin tools included for tools.
func declItems(info *compiler.Info, kinds ...compiler.DeclKind) []CompletionItem {
	if info == nil {
		return nil
	}
	var out []CompletionItem
	add := func(d compiler.Decl) {
		if len(kinds) > 0 && !slices.Contains(kinds, d.Kind()) {
			return
		}
		out = append(out, CompletionItem{Label: d.Name(), Kind: declItemKind(d.Kind()), Detail: d.Kind().String()})
	}
	for _, d := range info.Decls {
		add(d)
	}
	if len(kinds) == 0 || slices.Contains(kinds, compiler.DeclTool) {
		for _, t := range info.BuiltinTools {
			add(t)
		}
		if u := info.Universe; u != nil {
			for name, t := range u.Tools {
				out = append(out, CompletionItem{Label: name, Kind: completionFunction, Detail: "builtin tool", Documentation: t.Doc})
			}
		}
	}
	return out
}

func declItemKind(k compiler.DeclKind) int {
	switch k {
	case compiler.DeclType, compiler.DeclState:
		return completionStruct
	case compiler.DeclTool:
		return completionFunction
	case compiler.DeclAgent, compiler.DeclGraph:
		return completionClass
	case compiler.DeclSkill:
		return completionModule
	}
	return completionValue
}

func funcItems(info *compiler.Info) []CompletionItem {
	if info == nil || info.Universe == nil {
		return nil
	}
	var out []CompletionItem
	for name, f := range info.Universe.Funcs {
		out = append(out, CompletionItem{Label: name, Kind: completionFunction, Detail: "function", Documentation: f.Doc})
	}
	return out
}

func attrItems(kind string) []CompletionItem {
	var out []CompletionItem
	for _, a := range compiler.BlockAttrs(kind) {
		detail := kind + " attribute"
		if a.Required {
			detail += " (required)"
		}
		out = append(out, CompletionItem{Label: a.Name, Kind: completionProperty, Detail: detail, Documentation: a.Doc})
	}
	return out
}

// attrWords offers the words of a symbol attribute (provider = ...).
func attrWords(kind, key string) []CompletionItem {
	for _, a := range compiler.BlockAttrs(kind) {
		if a.Name == key && len(a.Words) > 0 {
			return words(completionEnum, key, a.Words...)
		}
	}
	return nil
}

// graphFor is the checked graph of the declaration holding the cursor:
// the last check's, or while it does not parse, the last version that
// did.
func graphFor(d *document, decl syntax.Decl) *compiler.Graph {
	name := ""
	switch x := decl.(type) {
	case *syntax.Graph:
		if x.Name != nil {
			name = x.Name.Name
		}
	case *syntax.BadDecl:
		if x.Keyword == "graph" && x.Name != nil {
			name = x.Name.Name
		}
	}
	if name == "" {
		return nil
	}
	if g, ok := d.info.Lookup(name).(*compiler.Graph); ok {
		if _, parsed := g.Syntax().(*syntax.Graph); parsed {
			return g
		}
	}
	return d.graphs[name]
}

func nodeItems(g *compiler.Graph) []CompletionItem {
	var out []CompletionItem
	for _, n := range g.Nodes {
		if n.Kind == compiler.NodeStart {
			continue
		}
		out = append(out, CompletionItem{Label: n.Name, Kind: completionEvent, Detail: "node (" + n.Kind.String() + ")"})
	}
	return out
}

func fieldItems(st *compiler.State) []CompletionItem {
	if st == nil {
		return nil
	}
	var out []CompletionItem
	for _, f := range st.Fields {
		out = append(out, CompletionItem{Label: f.Name, Kind: completionField, Detail: typeString(f.Type), Documentation: "field of state " + st.Name()})
	}
	return out
}

// enumItems offers the quoted literals of an enum-typed state field.
func enumItems(st *compiler.State, field string) []CompletionItem {
	f := st.Field(field)
	if f == nil || f.Type == nil {
		return nil
	}
	t := f.Type
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	if t == nil || t.Kind() != types.KindEnum {
		return nil
	}
	var out []CompletionItem
	for _, l := range t.Literals() {
		out = append(out, CompletionItem{Label: strconv.Quote(l), Kind: completionEnum, Detail: f.Type.String()})
	}
	return out
}

// blockKind is the attribute table of the declaration that holds the
// cursor.
func blockKind(info *compiler.Info, d syntax.Decl) string {
	switch x := d.(type) {
	case *syntax.BlockDecl:
		return x.Kind
	case *syntax.Agent:
		if x.Kind != nil {
			return x.Kind.Name + " agent"
		}
	case *syntax.Tool:
		return "tool"
	case *syntax.Skill:
		return "skill"
	case *syntax.Serve:
		return "serve"
	case *syntax.Test:
		return "test"
	case *syntax.BadDecl:
		switch x.Keyword {
		case "model", "summary", "compaction", "recall", "memory", "evolution", "tool", "skill", "serve", "test":
			return x.Keyword
		case "agent":
			return "llm agent"
		}
	}
	return ""
}

// refKinds are the declaration kinds a reference attribute names.
var refKinds = map[string][]compiler.DeclKind{
	"model":      {compiler.DeclModel},
	"tools":      {compiler.DeclTool},
	"skills":     {compiler.DeclSkill},
	"agents":     {compiler.DeclAgent},
	"summary":    {compiler.DeclSummary},
	"compaction": {compiler.DeclCompaction},
	"recall":     {compiler.DeclRecall},
	"memory":     {compiler.DeclMemory},
	"evolution":  {compiler.DeclEvolution},
	"run":        {compiler.DeclGraph, compiler.DeclAgent},
	"answer":     {compiler.DeclAgent},
	"output":     {compiler.DeclType},
}

var typeWords = []string{"string", "int", "float", "bool", "duration", "json", "messages", "secret", "list", "map"}

var reducerWords = []string{"replace", "append", "merge", "sum", "max", "min"}

func complete(info *compiler.Info, c completionCtx, g *compiler.Graph) []CompletionItem {
	switch c.prev {
	case "->":
		if g != nil {
			return nodeItems(g)
		}
		return nil
	case "reduce":
		return words(completionEnum, "reducer", reducerWords...)
	case "llm", "agent":
		if g != nil {
			return declItems(info, compiler.DeclAgent)
		}
	case "tool":
		if g != nil {
			return declItems(info, compiler.DeclTool)
		}
	case "graph":
		if g != nil {
			return declItems(info, compiler.DeclGraph)
		}
	case "into", "input", "output":
		if g != nil {
			return fieldItems(g.State)
		}
	case ":", "<", "|":
		return append(words(completionKeyword, "type", typeWords...), declItems(info, compiler.DeclType)...)
	case "import", "from", "workflow":
		return nil
	case "(":
		if _, ok := c.decl.(*syntax.Graph); ok {
			return declItems(info, compiler.DeclState)
		}
	case "==", "!=":
		if g != nil {
			return enumItems(g.State, c.key)
		}
	case "=":
		if g != nil {
			if items := enumItems(g.State, c.key); items != nil {
				return items // set { field = ... }
			}
		}
		kind := blockKind(info, c.decl)
		if ws := attrWords(kind, c.key); ws != nil {
			return ws
		}
		if kinds, ok := refKinds[c.key]; ok && g == nil {
			return declItems(info, kinds...)
		}
	}
	if c.decl == nil {
		return keywordItems(syntax.ClassDeclaration)
	}
	var out []CompletionItem
	decl := c.decl
	if g != nil {
		decl = g.Syntax()
	}
	switch x := decl.(type) {
	case *syntax.Graph:
		out = append(out, words(completionKeyword, "graph keyword", "node", "llm", "tool", "agent", "graph", "set", "map",
			"interrupt", "join", "wait", "until", "all", "any", "when", "otherwise", "max", "else", "into", "retry", "backoff", "on",
			"timeout", "catch", "cache", "ttl", "concurrency", "returns", "start", "end")...)
		if g != nil {
			out = append(out, nodeItems(g)...)
			out = append(out, fieldItems(g.State)...)
		}
		out = append(out, funcItems(info)...)
	case *syntax.State, *syntax.TypeDecl:
		out = append(out, words(completionKeyword, "type", typeWords...)...)
		out = append(out, declItems(info, compiler.DeclType)...)
		out = append(out, words(completionKeyword, "keyword", "reduce")...)
	case *syntax.Test:
		out = append(out, attrItems("test")...)
		out = append(out, words(completionKeyword, "test keyword", "expect", "before", "answer", "model", "tool", "replay")...)
		if info != nil {
			for _, t := range info.Tests {
				if t.Syntax == x {
					if rg, ok := t.Run.(*compiler.Graph); ok {
						out = append(out, fieldItems(rg.State)...)
						out = append(out, nodeItems(rg)...)
					}
				}
			}
		}
		out = append(out, funcItems(info)...)
	default:
		kind := blockKind(info, c.decl)
		out = append(out, attrItems(kind)...)
		if _, ok := c.decl.(*syntax.Tool); ok {
			out = append(out, words(completionKeyword, "tool keyword", "input", "output", "run", "builtin", "http", "exec", "mcp", "agent")...)
			out = append(out, attrItems("http")...)
			out = append(out, attrItems("exec")...)
			out = append(out, attrItems("mcp tool")...)
		}
		out = append(out, funcItems(info)...)
	}
	out = append(out, keywordItems(syntax.ClassConstant, syntax.ClassOperator)...)
	return out
}

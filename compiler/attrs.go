package compiler

import (
	"fmt"
	"math"
	"sort"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Attribute schemas: one table per block kind, in one place. checkBlock
// checks a block against its schema: unknown, duplicate and missing
// attributes, block versus value form, and each value by its kind.

// valueKind says how an attribute's value is written and checked.
type valueKind uint8

const (
	vConst   valueKind = iota // a typed value without state (env() where the block allows it)
	vSecret                   // a secret: env("NAME") only
	vExpr                     // a typed expression in the block's scope (node arguments, tool requests)
	vRef                      // one declaration name
	vRefs                     // a list of declaration names
	vGrants                   // skill grants: [name, name: exec]
	vWord                     // one word of a fixed set (an identifier or a string)
	vWords                    // a list of such words
	vTypeRef                  // a type name
	vCond                     // a bool condition in its own scope (trigger, until)
	vBlock                    // a nested block
	vPath                     // a relative, slash-separated path string
)

type attrSpec struct {
	name     string
	kind     valueKind
	typ      *types.Type // vConst, vExpr
	refs     []DeclKind  // vRef, vRefs
	words    []string    // vWord, vWords, vGrants (tags)
	where    Where       // vCond: the condition's scope
	required bool
	// numeric range for vConst ints, floats and durations
	min, max         float64
	hasMin, hasMax   bool
	minOpen, maxOpen bool
	block            *blockSchema
	doc              string
}

type blockSchema struct {
	what  string
	attrs []attrSpec
	// literal: the block's values are constants written in the source
	// (checked in a constant scope, so env() is refused), whatever scope
	// the enclosing block has.
	literal bool
}

func (s *blockSchema) spec(name string) *attrSpec {
	for i := range s.attrs {
		if s.attrs[i].name == name {
			return &s.attrs[i]
		}
	}
	return nil
}

func (s *blockSchema) names() []string {
	out := make([]string, len(s.attrs))
	for i, a := range s.attrs {
		out[i] = a.name
	}
	sort.Strings(out)
	return out
}

// Builders for the tables below.
func constA(name string, t *types.Type, doc string) attrSpec {
	return attrSpec{name: name, kind: vConst, typ: t, doc: doc}
}
func exprA(name string, t *types.Type, doc string) attrSpec {
	return attrSpec{name: name, kind: vExpr, typ: t, doc: doc}
}
func refA(name string, doc string, kinds ...DeclKind) attrSpec {
	return attrSpec{name: name, kind: vRef, refs: kinds, doc: doc}
}
func refsA(name string, doc string, kinds ...DeclKind) attrSpec {
	return attrSpec{name: name, kind: vRefs, refs: kinds, doc: doc}
}
func wordA(name string, doc string, words ...string) attrSpec {
	return attrSpec{name: name, kind: vWord, words: words, doc: doc}
}
func wordsA(name string, doc string, words ...string) attrSpec {
	return attrSpec{name: name, kind: vWords, words: words, doc: doc}
}
func blockA(name string, b *blockSchema, doc string) attrSpec {
	return attrSpec{name: name, kind: vBlock, block: b, doc: doc}
}
func (a attrSpec) req() attrSpec { a.required = true; return a }
func (a attrSpec) atLeast(n float64) attrSpec {
	a.min, a.hasMin = n, true
	return a
}
func (a attrSpec) above(n float64) attrSpec {
	a.min, a.hasMin, a.minOpen = n, true, true
	return a
}
func (a attrSpec) atMost(n float64) attrSpec {
	a.max, a.hasMax = n, true
	return a
}

var (
	tString   = types.StringType
	tInt      = types.IntType
	tFloat    = types.FloatType
	tBool     = types.BoolType
	tDuration = types.DurationType
	tStrings  = types.ListOf(types.StringType)
	tStrMap   = types.MapOf(types.StringType)
)

// priceSchema is a model's price block: USD per million tokens. Lowered
// flat into the model's attributes as price.input, price.output and
// price.cached (spec/bytecode.md).
var priceSchema = &blockSchema{what: "price", literal: true, attrs: []attrSpec{
	constA("input", tFloat, "USD per million prompt tokens").atLeast(0),
	constA("output", tFloat, "USD per million completion tokens").atLeast(0),
	constA("cached", tFloat, "USD per million cached prompt tokens (not yet counted: usage has no cached count)").atLeast(0),
}}

// budgetSchema is a budget block of a graph, an agent or the serve block
// (spec/language.md §12.10): what one run may use at most.
var budgetSchema = &blockSchema{what: "budget", literal: true, attrs: []attrSpec{
	constA("tokens", tInt, "the most tokens (prompt and completion) a run's model calls may use").atLeast(1),
	constA("cost", tFloat, "the most a run's model calls may cost, in USD (priced models)").above(0),
	constA("model_calls", tInt, "the most model calls a run may make").atLeast(1),
}}

// budgetAttr is the budget block as an attribute (agents, serve).
var budgetAttr = blockA("budget", budgetSchema, "what one run may use at most: budget { tokens = 100000, cost = 0.5, model_calls = 20 }")

var modelSchema = &blockSchema{what: "model", attrs: []attrSpec{
	wordA("provider", "the API flavor; openai covers every OpenAI-compatible endpoint", "openai").req(),
	constA("name", tString, "the provider's model name").req(),
	constA("base_url", tString, "the endpoint; usually env(\"OPENAI_BASE_URL\", \"\")"),
	{name: "api_key", kind: vSecret, doc: "the API key: env(\"NAME\") only, never a literal"},
	constA("organization", tString, "the organization header"),
	constA("context_window", tInt, "the window in tokens").atLeast(1),
	constA("temperature", tFloat, "sampling temperature").atLeast(0).atMost(2),
	constA("top_p", tFloat, "nucleus sampling").atLeast(0).atMost(1),
	constA("max_tokens", tInt, "the completion limit in tokens").atLeast(1),
	constA("seed", tInt, "the sampling seed"),
	constA("timeout", tDuration, "per request").above(0),
	constA("headers", tStrMap, "extra request headers"),
	blockA("price", priceSchema, "prices in USD per million tokens: price { input = 0.15, output = 0.60 }"),
	refsA("fallback", "models to call instead, in order, when this one is unavailable or rate-limited", DeclModel),
	constA("tool_calls", tBool, "the model takes tool calls (default true)"),
	constA("structured_output", tBool, "the model honours a JSON Schema response format (default true)"),
	constA("image_input", tBool, "the model takes images in user messages: a request's images reach its calls (default false)"),
}}

var summarySchema = &blockSchema{what: "summary", attrs: []attrSpec{
	{name: "trigger", kind: vCond, where: InTrigger, doc: "when to summarize: context_ratio(r), event_count(n), token_count(n), combined with and/or/any/all"},
	constA("min_tokens", tInt, "never summarize fewer new tokens").atLeast(0),
	refA("model", "the summarizing model (default: the agent's)", DeclModel),
	constA("max_summary_tokens", tInt, "the summary's length limit").atLeast(1),
	constA("instruction", tString, "replaces the default summarizing prompt"),
	constA("skip_recent", tInt, "recent events left out of the summary").atLeast(0),
}}

var compactionSchema = &blockSchema{what: "compaction", attrs: []attrSpec{
	refsA("force_clean", "tools whose historical results are always replaced by a placeholder", DeclTool),
	refsA("keep", "tools whose results are never compacted", DeclTool),
	constA("tool_result_max_tokens", tInt, "historical results above this become placeholders").atLeast(1),
	constA("oversized_max_tokens", tInt, "any result above this is head+tail truncated (0: off)").atLeast(0),
	constA("protect_recent", tInt, "completed requests left untouched").atLeast(0),
	constA("sync_ratio", tFloat, "summarize synchronously at this share of the window").above(0).atMost(1),
	constA("current_request", tBool, "also truncate oversized results of the current request"),
}}

var recallSchema = &blockSchema{what: "recall", attrs: []attrSpec{
	constA("search", tBool, "allow session_search calls (false: every call is refused)"),
	constA("load_window", tInt, "events loaded on each side by session_load").atLeast(0).atMost(2),
	constA("preload", tInt, "hits from the user's other sessions injected up front").atLeast(0),
	wordsA("scopes", "where session_search may look", "current_hidden", "current_session", "other_sessions", "all_sessions"),
	constA("top_k", tInt, "hits per search").atLeast(1).atMost(10),
	constA("min_score", tFloat, "the least relevance of a hit").atLeast(0).atMost(1),
	wordA("search_mode", "the search method", "hybrid", "dense"),
}}

var memorySchema = &blockSchema{what: "memory", attrs: []attrSpec{
	wordA("mode", "agentic: the model calls memory tools; auto: an extractor runs after each run", "agentic", "auto"),
	constA("preload", tInt, "memories injected up front (-1: all)").atLeast(-1),
	refA("model", "the extracting model (auto mode)", DeclModel),
	constA("instruction", tString, "replaces the default extraction prompt"),
	constA("max_memories", tInt, "the most memories kept per user").atLeast(1),
}}

var evolutionSchema = &blockSchema{what: "evolution", attrs: []attrSpec{
	refA("reviewer", "the model that reviews finished runs", DeclModel),
	wordsA("gates", "gates a candidate skill passes before publishing", "spec", "safety", "effectiveness", "human"),
	constA("min_tool_calls", tInt, "review runs with at least this many tool calls").atLeast(0),
	constA("min_score", tFloat, "the effectiveness score a candidate needs").atLeast(0).atMost(1),
	wordA("scope", "who shares published skills", "none", "app", "user"),
	{name: "publish", kind: vPath, doc: "the folder published skills are written to"},
}}

var llmAgentSchema = &blockSchema{what: "llm agent", attrs: []attrSpec{
	refA("model", "the model", DeclModel).req(),
	constA("instruction", tString, "the system instruction"),
	refsA("tools", "tools the model may call", DeclTool),
	{name: "skills", kind: vGrants, words: []string{"read", "exec"}, doc: "skill grants: read (default) or exec"},
	refA("summary", "rolling summary policy", DeclSummary),
	refA("compaction", "context compaction policy", DeclCompaction),
	refA("recall", "session recall policy", DeclRecall),
	refA("memory", "memory policy", DeclMemory),
	refA("evolution", "skill evolution policy", DeclEvolution),
	constA("max_turns", tInt, "model turns per call").atLeast(1),
	constA("confirm_side_effects", tBool, "ask the user before each call of a side_effect tool"),
	{name: "output", kind: vTypeRef, doc: "structured output type (default string)"},
	refsA("fallback", "models to call instead of the model, in order, when it is unavailable or rate-limited (default: the model's fallback)", DeclModel),
	budgetAttr,
}}

var chainSchema = &blockSchema{what: "chain agent", attrs: []attrSpec{
	refsA("agents", "run in order, each on the previous output", DeclAgent).req(),
	budgetAttr,
}}

var parallelSchema = &blockSchema{what: "parallel agent", attrs: []attrSpec{
	refsA("agents", "run concurrently on the same input", DeclAgent).req(),
	budgetAttr,
}}

var cycleSchema = &blockSchema{what: "cycle agent", attrs: []attrSpec{
	refsA("agents", "run in order, repeatedly", DeclAgent).req(),
	{name: "until", kind: vCond, where: InCycle, doc: "stop when this holds (names: input, output, iteration)"},
	constA("max", tInt, "the most rounds").atLeast(1).req(),
	refA("answer", "the member whose last answer is the cycle's (default: the last member)", DeclAgent),
	budgetAttr,
}}

var a2aSchema = &blockSchema{what: "a2a", attrs: []attrSpec{
	constA("path", tString, "the mount path"),
	constA("name", tString, "the agent card's name"),
	constA("description", tString, "the agent card's description"),
	constA("version", tString, "the agent card's version"),
	constA("url", tString, "the public URL in the agent card"),
	constA("skills", tStrings, "skill tags in the agent card"),
}}

var openaiSchema = &blockSchema{what: "openai", attrs: []attrSpec{
	constA("path", tString, "the mount path of /chat/completions and /models"),
	constA("model", tString, "the model name clients use"),
}}

var mcpSchema = &blockSchema{what: "mcp", attrs: []attrSpec{
	constA("path", tString, "the URL path of the streamable HTTP endpoint"),
}}

var serveSchema = &blockSchema{what: "serve", attrs: []attrSpec{
	refA("run", "the runnable served", DeclGraph, DeclAgent),
	constA("addr", tString, "the listen address"),
	constA("app", tString, "the app name in session keys"),
	constA("agui", tString, "the AG-UI mount path"),
	blockA("a2a", a2aSchema, "the A2A endpoint"),
	blockA("openai", openaiSchema, "the OpenAI-compatible endpoint"),
	blockA("mcp", mcpSchema, "the MCP endpoint (streamable HTTP)"),
	budgetAttr,
}}

var httpSchema = &blockSchema{what: "http", attrs: []attrSpec{
	wordA("method", "the HTTP method", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"),
	exprA("url", tString, "the URL; may interpolate {input.x} and env()").req(),
	exprA("headers", tStrMap, "request headers"),
	exprA("query", tStrMap, "query parameters"),
	exprA("body", types.JSONType, "the JSON body"),
	constA("timeout", tDuration, "per request").above(0),
}}

var execSchema = &blockSchema{what: "exec", attrs: []attrSpec{
	exprA("command", tStrings, "argv; may interpolate {input.x}").req(),
	exprA("dir", tString, "the working folder"),
	exprA("env", tStrMap, "environment variables"),
	exprA("stdin", tString, "standard input"),
	constA("timeout", tDuration, "per run").above(0),
}}

// mcpToolSchema is `run = mcp { ... }`: one tool of an MCP server, reached
// over streamable HTTP (url) or stdio (command). Nothing here sees the
// call's input: the session is the server's, shared by the tool's calls.
var mcpToolSchema = &blockSchema{what: "mcp tool", attrs: []attrSpec{
	constA("url", tString, "the streamable HTTP endpoint; may be env()"),
	constA("headers", tStrMap, "HTTP request headers; values may be env()"),
	constA("command", tStrings, "argv of a stdio server (instead of url)"),
	constA("env", tStrMap, "environment variables of the stdio server; values may be env()"),
	constA("tool", tString, "the server's tool name").req(),
	constA("timeout", tDuration, "per call").above(0),
	constA("effect_override", tString, "why the tool's effect may be weaker than the server's destructiveHint"),
}}

var toolSchema = &blockSchema{what: "tool", attrs: []attrSpec{
	wordA("effect", "read_only | idempotent | side_effect (default)", "read_only", "idempotent", "side_effect"),
	constA("timeout", tDuration, "per call").above(0),
	constA("confirm", tBool, "an llm loop asks the user before each call (approve, edit the arguments, reject)"),
}}

var skillSchema = &blockSchema{what: "skill", attrs: []attrSpec{
	constA("description", tString, "overrides SKILL.md's description"),
}}

var llmNodeSchema = &blockSchema{what: "llm node", attrs: []attrSpec{
	exprA("prompt", tString, "the user message of this turn"),
}}

var agentNodeSchema = &blockSchema{what: "agent node", attrs: []attrSpec{
	exprA("prompt", tString, "the input message"),
}}

var testSchema = &blockSchema{what: "test", attrs: []attrSpec{
	refA("run", "the graph or agent under test", DeclGraph, DeclAgent).req(),
	exprA("input", nil, "the run's input, typed by the graph's input field"),
}}

// checkBlock checks attrs against schema. at is where a missing attribute is
// reported (the declaration's name). The scope gives expressions their
// names and allowed functions.
func (c *checker) checkBlock(schema *blockSchema, attrs []*syntax.Attr, at diag.Span, sc *scope) *Attrs {
	out := &Attrs{}
	seen := c.keyedOnce(attrs, func(a *syntax.Attr, name string) {
		spec := schema.spec(name)
		if spec == nil {
			c.errorf(diag.UnknownAttr, a.Key.Span(), "%s has no attribute %s", schema.what, name).Detail =
				suggestOr(name, schema.names())
			return
		}
		out.List = append(out.List, c.checkAttr(spec, a, sc))
	})
	for _, s := range schema.attrs {
		if _, ok := seen[s.name]; s.required && !ok {
			c.errorf(diag.MissingAttr, at, "%s needs %s", schema.what, s.name).Detail = s.name + ": " + s.doc
		}
	}
	return out
}

func suggestOr(name string, names []string) string {
	if s := suggest(name, names); s != "" {
		return s
	}
	return "attributes: " + quoteList(names)
}

// checkAttr checks one attribute value against its spec.
func (c *checker) checkAttr(spec *attrSpec, a *syntax.Attr, sc *scope) *Attr {
	out := &Attr{Name: spec.name, Span: a.Span(), Syn: a, Value: a.Value, Type: spec.typ}
	if spec.kind == vBlock {
		if a.Block == nil {
			c.errorf(TypeMismatch, a.Key.Span(), "%s is a block: write %s { ... }", spec.name, spec.name)
			return out
		}
		bsc := sc
		if spec.block.literal {
			bsc = &scope{where: InConst, file: sc.file}
		}
		out.Block = c.checkBlock(spec.block, a.Block.Attrs, a.Key.Span(), bsc)
		return out
	}
	if a.Block != nil || a.Value == nil {
		c.errorf(TypeMismatch, a.Key.Span(), "%s takes a value: write %s = ...", spec.name, spec.name)
		return out
	}
	v := a.Value
	switch spec.kind {
	case vConst:
		t := c.expect(v, sc, spec.typ, spec.name)
		if t == nil {
			return out
		}
		if env := envRef(v); env != nil {
			out.Env = env
			return out
		}
		if cv, ok := c.constValue(v, spec.typ); ok {
			if conv, err := types.Convert(cv, spec.typ); err == nil {
				out.Const, out.HasConst = conv, true
				c.checkRange(spec, conv, v)
			}
		}
	case vExpr:
		if spec.typ != nil {
			c.expect(v, sc, spec.typ, spec.name)
		}
	case vSecret:
		if call, ok := primaryOf(v).(*syntax.Call); ok && call.Func != nil && call.Func.Name == "env" {
			c.expr(v, sc, nil)
			out.Env = envRef(v)
			out.Type = types.SecretType
			return out
		}
		if _, ok := literalString(v); ok {
			c.errorf(LiteralSecret, v.Span(), "%s must not be written in the source; use env(\"NAME\")", spec.name)
			return out
		}
		c.errorf(TypeMismatch, v.Span(), "%s must be env(\"NAME\")", spec.name)
	case vRef:
		n, ok := bareName(v)
		if !ok {
			c.errorf(TypeMismatch, v.Span(), "%s must name %s", spec.name, withArticle(kindsText(spec.refs)))
			return out
		}
		if d := c.lookupName(n.Ident, n.Span(), n, sc.file, kindsText(spec.refs), spec.refs...); d != nil {
			out.Refs = []Decl{d}
		}
	case vRefs, vGrants:
		list, ok := primaryOf(v).(*syntax.ListLit)
		if !ok {
			c.errorf(TypeMismatch, v.Span(), "%s must be a list: [a, b]", spec.name)
			return out
		}
		seen := map[string]diag.Span{}
		for _, el := range list.Elems {
			n, ok := bareName(el.X)
			if !ok {
				c.errorf(TypeMismatch, el.X.Span(), "%s lists %s names", spec.name, kindsText(spec.refs))
				continue
			}
			if prev, dup := seen[n.Ident]; dup {
				related(c.errorf(diag.DuplicateName, n.Span(), "%s is listed twice", n.Ident), "first here", prev)
				continue
			}
			seen[n.Ident] = n.Span()
			tag := ""
			if el.Tag != nil {
				if spec.kind != vGrants {
					c.errorf(InvalidOperation, el.Tag.Span(), "a \": %s\" tag is only allowed in skill grants", el.Tag.Name)
				} else if !contains(spec.words, el.Tag.Name) {
					c.errorf(InvalidValue, el.Tag.Span(), "grant %s must be one of %s", el.Tag.Name, quoteList(spec.words))
				} else {
					tag = el.Tag.Name
				}
			}
			kinds := spec.refs
			what := kindsText(kinds)
			if spec.kind == vGrants {
				kinds, what = []DeclKind{DeclSkill}, "skill"
			}
			if d := c.lookupName(n.Ident, n.Span(), n, sc.file, what, kinds...); d != nil {
				out.Refs = append(out.Refs, d)
				out.Tags = append(out.Tags, tag)
			}
		}
	case vWord:
		if w, ok := c.word(spec, v); ok {
			out.Symbols = []string{w}
		}
	case vWords:
		list, ok := primaryOf(v).(*syntax.ListLit)
		if !ok {
			c.errorf(TypeMismatch, v.Span(), "%s must be a list: [a, b]", spec.name)
			return out
		}
		for _, el := range list.Elems {
			if w, ok := c.word(spec, el.X); ok {
				out.Symbols = append(out.Symbols, w)
			}
		}
	case vTypeRef:
		n, ok := bareName(v)
		if !ok {
			c.errorf(TypeMismatch, v.Span(), "%s must name a type", spec.name)
			return out
		}
		id := &syntax.Ident{At: n.At, Name: n.Ident}
		out.Type = c.namedType(id, sc.file)
		if out.Type != nil {
			c.info.Refs.set(n, Ref{Kind: RefDecl, Decl: c.info.byName[n.Ident]})
		}
	case vCond:
		csc := &scope{where: spec.where, file: sc.file}
		if spec.where == InCycle {
			csc.vars = map[string]*types.Type{"input": tString, "output": tString, "iteration": tInt}
		}
		out.Type = tBool
		c.expect(v, csc, tBool, spec.name)
	case vPath:
		s, ok := literalString(v)
		if !ok {
			c.errorf(TypeMismatch, v.Span(), "%s must be a literal path string", spec.name)
			return out
		}
		if _, err := resolveRel(sc.file, s); err != nil {
			c.errorf(BadPath, v.Span(), "%s: %v", spec.name, err)
		}
		out.Const, out.HasConst = types.MakeString(s), true
	}
	return out
}

// word checks a word value: an identifier or a string literal from the set.
func (c *checker) word(spec *attrSpec, v *syntax.Expr) (string, bool) {
	var w string
	if n, ok := bareName(v); ok {
		w = n.Ident
		defer func() { c.info.Refs.set(n, Ref{Kind: RefSymbol, Symbol: w}) }()
	} else if s, ok := literalString(v); ok {
		w = s
	} else {
		c.errorf(TypeMismatch, v.Span(), "%s must be one of %s", spec.name, quoteList(spec.words))
		return "", false
	}
	if !contains(spec.words, w) {
		c.errorf(InvalidValue, v.Span(), "%s must be one of %s, not %s", spec.name, quoteList(spec.words), w).Detail = suggest(w, spec.words)
		return "", false
	}
	return w, true
}

// checkRange checks a constant number or duration against the spec's range.
func (c *checker) checkRange(spec *attrSpec, v types.Value, e *syntax.Expr) {
	if !spec.hasMin && !spec.hasMax {
		return
	}
	var x float64
	switch v.Kind() {
	case types.ValInt:
		x = float64(v.Int())
	case types.ValFloat:
		x = v.Float()
	case types.ValDuration:
		x = float64(v.Duration())
	default:
		return
	}
	bad := math.IsNaN(x) ||
		(spec.hasMin && (x < spec.min || spec.minOpen && x == spec.min)) ||
		(spec.hasMax && (x > spec.max || spec.maxOpen && x == spec.max))
	if !bad {
		return
	}
	c.errorf(InvalidValue, e.Span(), "%s must be %s", spec.name, rangeText(spec))
}

func rangeText(s *attrSpec) string {
	num := func(f float64) string {
		if s.typ == tDuration {
			return "a positive duration"
		}
		return fmt.Sprint(f)
	}
	switch {
	case s.typ == tDuration:
		return "a positive duration"
	case s.hasMin && s.hasMax:
		lo, hi := "[", "]"
		if s.minOpen {
			lo = "("
		}
		if s.maxOpen {
			hi = ")"
		}
		return fmt.Sprintf("in %s%s, %s%s", lo, num(s.min), num(s.max), hi)
	case s.hasMin && s.minOpen:
		return "above " + num(s.min)
	case s.hasMin:
		return "at least " + num(s.min)
	}
	return "at most " + num(s.max)
}

func kindsText(kinds []DeclKind) string {
	var parts []string
	for _, k := range kinds {
		parts = append(parts, k.String())
	}
	switch len(parts) {
	case 0:
		return "declaration"
	case 1:
		return parts[0]
	}
	s := ""
	for i, p := range parts {
		switch {
		case i == 0:
		case i == len(parts)-1:
			s += " or "
		default:
			s += ", "
		}
		s += p
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// envRef recognizes env("NAME") and env("NAME", "default").
func envRef(e *syntax.Expr) *EnvRef {
	call, ok := primaryOf(e).(*syntax.Call)
	if !ok || call.Func == nil || call.Func.Name != "env" || len(call.Args) == 0 || len(call.Args) > 2 {
		return nil
	}
	name, ok := literalString(call.Args[0])
	if !ok {
		return nil
	}
	r := &EnvRef{Name: name}
	if len(call.Args) == 2 {
		d, ok := literalString(call.Args[1])
		if !ok {
			return nil
		}
		r.Default, r.HasDefault = d, true
	}
	return r
}

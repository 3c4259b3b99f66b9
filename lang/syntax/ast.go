package syntax

import (
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/agentc/agentc/lang/diag"
)

// The AST is the participle grammar: one struct per production, its EBNF in
// the comment above it, Pos/EndPos on every node. Fields are exported so
// participle can fill them; code outside lang/ reads positions only through
// Span() (diag.Span), never through lexer.Position.

// Node is implemented by every AST node.
type Node interface{ Span() diag.Span }

// At is embedded by every node and carries its source range.
type At struct {
	Pos    lexer.Position
	EndPos lexer.Position
}

// Span returns the node's source range.
func (a At) Span() diag.Span { return spanOf(a.Pos, a.EndPos) }

// File is one parsed .agent file.
//
//	File = Decl* .
type File struct {
	At
	Decls []Decl `@@*`

	// Name is the file's relative, slash-separated path.
	Name string
	// Comments holds every comment in source order (participle keeps none;
	// the formatter attaches them by position).
	Comments []Comment
}

// Comment is a // line or /* block */ comment.
type Comment struct {
	Text string
	Pos  diag.Pos
	End  diag.Pos
}

// Decl is a top-level declaration.
type Decl interface {
	Node
	decl()
}

// Workflow names the workflow and documents it.
//
//	Workflow = "workflow" Ident String? .
type Workflow struct {
	At
	Name *Ident  `"workflow" @@`
	Doc  *String `@@?`
}

// Import brings every top-level declaration of another file into scope,
// unqualified.
//
//	Import = "import" String .
type Import struct {
	At
	Path *String `"import" @@`
}

// BlockDecl is a named configuration block: model, summary, compaction,
// recall, memory or evolution. Its attributes are checked by the compiler
// against the kind's schema.
//
//	BlockDecl = ("model" | "summary" | "compaction" | "recall" | "memory" | "evolution") Ident Block .
type BlockDecl struct {
	At
	Kind string `@("model" | "summary" | "compaction" | "recall" | "memory" | "evolution")`
	Name *Ident `@@`
	Body *Block `@@`
}

// TypeDecl declares a named record or enum type.
//
//	TypeDecl = "type" Ident ( RecordType | "=" Type ) .
type TypeDecl struct {
	At
	Name   *Ident      `"type" @@`
	Record *RecordType `( @@`
	Alias  *Type       `| "=" @@ )`
}

// Tool declares a typed tool and its implementation.
//
//	Tool = "tool" Ident String? "{" ToolItem* "}" .
type Tool struct {
	At
	Name  *Ident      `"tool" @@`
	Doc   *String     `@@?`
	Items []*ToolItem `"{" @@* "}"`
}

// ToolItem is one line of a tool declaration.
//
//	ToolItem = "input" Type | "output" Type | "run" "=" ToolRun | Attr .
type ToolItem struct {
	At
	Input  *Type    `  "input" @@`
	Output *Type    `| "output" @@`
	Run    *ToolRun `| "run" "=" @@`
	Attr   *Attr    `| @@`
}

// ToolRun names a tool's implementation.
//
//	ToolRun = "builtin" "." Ident | "http" Block | "exec" Block | "agent" Ident .
type ToolRun struct {
	At
	Builtin *Ident `  "builtin" "." @@`
	HTTP    *Block `| "http" @@`
	Exec    *Block `| "exec" @@`
	Agent   *Ident `| "agent" @@`
}

// Skill declares a skill folder (containing SKILL.md).
//
//	Skill = "skill" Ident "from" String Block? .
type Skill struct {
	At
	Name *Ident  `"skill" @@`
	From *String `"from" @@`
	Body *Block  `@@?`
}

// State declares a graph's typed state.
//
//	State = "state" Ident "{" Field* "}" .
type State struct {
	At
	Name   *Ident   `"state" @@`
	Fields []*Field `"{" @@* "}"`
}

// Agent declares an llm agent or a composition (chain, parallel, cycle).
//
//	Agent = "agent" Ident Ident String? Block .
type Agent struct {
	At
	Name *Ident  `"agent" @@`
	Kind *Ident  `@@`
	Doc  *String `@@?`
	Body *Block  `@@`
}

// Graph declares a state graph over a state type.
//
//	Graph = "graph" Ident "(" Ident ")" ( "input" Ident )? ( "output" Ident )? String? "{" GraphItem* "}" .
type Graph struct {
	At
	Name   *Ident       `"graph" @@`
	State  *Ident       `"(" @@ ")"`
	Input  *Ident       `( "input" @@ )?`
	Output *Ident       `( "output" @@ )?`
	Doc    *String      `@@?`
	Items  []*GraphItem `"{" @@* "}"`
}

// GraphItem is a node or an edge.
//
//	GraphItem = NodeDecl | Edge .
type GraphItem struct {
	At
	Node *NodeDecl `  @@`
	Edge *Edge     `| @@`
}

// NodeDecl declares a graph node.
//
//	NodeDecl = "node" Ident "=" NodeBody Clause* .
type NodeDecl struct {
	At
	Name    *Ident    `"node" @@ "="`
	Body    NodeBody  `@@`
	Clauses []*Clause `@@*`
}

// NodeBody is what a node does.
type NodeBody interface {
	Node
	nodeBody()
}

// CallNode runs an llm agent, a tool, an agent, or a sub-graph.
//
//	CallNode = ("llm" | "tool" | "agent" | "graph") Ident Block? .
type CallNode struct {
	At
	Kind   string `@("llm" | "tool" | "agent" | "graph")`
	Callee *Ident `@@`
	Args   *Block `@@?`
}

// SetNode is a pure state update.
//
//	SetNode = "set" Block .
type SetNode struct {
	At
	Body *Block `"set" @@`
}

// MapNode fans a call out over a list.
//
//	MapNode = "map" Ident "in" Expr ( "concurrency" Int )? "{" NodeBody Clause* "}" .
type MapNode struct {
	At
	Var         *Ident    `"map" @@ "in"`
	List        *Expr     `@@`
	Concurrency *IntLit   `( "concurrency" @@ )?`
	Body        NodeBody  `"{" @@`
	Clauses     []*Clause `@@* "}"`
}

// InterruptNode waits for a typed value from outside the run.
//
//	InterruptNode = "interrupt" String "returns" Type .
type InterruptNode struct {
	At
	Prompt  *String `"interrupt" @@`
	Returns *Type   `"returns" @@`
}

// JoinNode waits for its concurrent predecessors.
//
//	JoinNode = "join" ( "all" | "any" ) .
type JoinNode struct {
	At
	Mode string `"join" @("all" | "any")`
}

// Clause is a per-node policy or the node's output target.
//
//	Clause = Retry | "timeout" Duration | "catch" "->" Ident | Cache | "into" Ident .
type Clause struct {
	At
	Retry   *Retry       `  @@`
	Timeout *DurationLit `| "timeout" @@`
	Catch   *Ident       `| "catch" "->" @@`
	Cache   *Cache       `| @@`
	Into    *Ident       `| "into" @@`
}

// Retry re-runs a failed attempt.
//
//	Retry = "retry" Int ( "backoff" Duration ".." Duration )? ( "on" "[" ( Ident ( "," Ident )* )? "]" )? .
type Retry struct {
	At
	Attempts *IntLit      `"retry" @@`
	Min      *DurationLit `( "backoff" @@`
	Max      *DurationLit `".." @@ )?`
	On       []*Ident     `( "on" "[" ( @@ ( "," @@ )* )? "]" )?`
}

// Cache memoizes a node by the hash of its inputs.
//
//	Cache = "cache" ( "ttl" Duration )? .
type Cache struct {
	At
	Keyword string       `@"cache"`
	TTL     *DurationLit `( "ttl" @@ )?`
}

// Edge is control flow between two nodes.
//
//	Edge = Ident "->" Ident ( "when" Expr | "otherwise" )? ( "max" Int ( "else" "->" Ident )? )? .
type Edge struct {
	At
	From      *Ident  `@@ "->"`
	To        *Ident  `@@`
	When      *Expr   `( "when" @@`
	Otherwise bool    `| @"otherwise" )?`
	Max       *IntLit `( "max" @@`
	Else      *Ident  `( "else" "->" @@ )? )?`
}

// Serve configures `agentc serve`.
//
//	Serve = "serve" Block .
type Serve struct {
	At
	Body *Block `"serve" @@`
}

// Test is an offline test of a runnable.
//
//	Test = "test" String "{" TestItem* "}" .
type Test struct {
	At
	Name  *String     `"test" @@`
	Items []*TestItem `"{" @@* "}"`
}

// TestItem is one line of a test.
//
//	TestItem = Replay | Answer | Expect | Attr .
type TestItem struct {
	At
	Replay *Replay `  @@`
	Answer *Answer `| @@`
	Expect *Expect `| @@`
	Attr   *Attr   `| @@`
}

// Replay scripts a model or a tool from a fixture file (spec/fixtures.md).
//
//	Replay = ( "model" | "tool" ) Ident "replay" String .
type Replay struct {
	At
	Kind    string  `@( "model" | "tool" )`
	Name    *Ident  `@@`
	Fixture *String `"replay" @@`
}

// Answer scripts the value that resumes an interrupt node.
//
//	Answer = "answer" Ident "=" Expr .
type Answer struct {
	At
	Node  *Ident `"answer" @@ "="`
	Value *Expr  `@@`
}

// Expect asserts on the final state, or orders two visits.
//
//	Expect = "expect" Expr ( "before" Expr )? .
type Expect struct {
	At
	Cond   *Expr `"expect" @@`
	Before *Expr `( "before" @@ )?`
}

// Block is a brace-delimited list of attributes.
//
//	Block = "{" Attr* "}" .
type Block struct {
	At
	Attrs []*Attr `"{" @@* "}"`
}

// Attr sets a key to a value or a nested block. A trailing comma is allowed.
//
//	Attr = Ident ( "=" Expr | Block ) ","? .
type Attr struct {
	At
	Key   *Ident `@@`
	Value *Expr  `( "=" @@`
	Block *Block `| @@ ) ","?`
}

// Field is a typed field of a state or record type.
//
//	Field = Ident ":" Type ( "=" Expr )? ( "reduce" Ident )? ","? .
type Field struct {
	At
	Name    *Ident `@@ ":"`
	Type    *Type  `@@`
	Default *Expr  `( "=" @@ )?`
	Reduce  *Ident `( "reduce" @@ )? ","?`
}

// Type is a type expression: an enum of string literals, or a single type
// with an optional "?".
//
//	Type = String ( "|" String )* | SingleType .
type Type struct {
	At
	Enum   []*String   `  @@ ( "|" @@ )*`
	Single *SingleType `| @@`
}

// SingleType is a named, list, map, record or parenthesized type.
//
//	SingleType = ( "list" "<" Type ">" | "map" "<" Type ">" | RecordType | "(" Type ")" | Ident ) "?"? .
type SingleType struct {
	At
	List     *Type       `( "list" "<" @@ ">"`
	Map      *Type       `| "map" "<" @@ ">"`
	Record   *RecordType `| @@`
	Paren    *Type       `| "(" @@ ")"`
	Named    *Ident      `| @@ )`
	Optional bool        `@"?"?`
}

// RecordType is an anonymous record.
//
//	RecordType = "{" Field* "}" .
type RecordType struct {
	At
	Fields []*Field `"{" @@* "}"`
}

// Ident is a name.
//
//	Ident = <ident> .
type Ident struct {
	At
	Name string `@Ident`
}

// IntLit is an integer literal (kept as text; the checker converts it).
//
//	IntLit = <int> .
type IntLit struct {
	At
	Text string `@Int`
}

// DurationLit is a duration literal such as 200ms or 1h30m.
//
//	DurationLit = <duration> .
type DurationLit struct {
	At
	Text string `@Duration`
}

// String is a "..." string or a """...""" text block with {expr}
// interpolations. Literal parts keep their raw source; see Value and Parts.
// The lexer guarantees that Open and Close match.
//
//	String = ( <stropen> | <textopen> ) StrPart* ( <strclose> | <textclose> ) .
type String struct {
	At
	Open  string     `@(StrOpen | TextOpen)`
	Parts []*StrPart `@@*`
	Close string     `@(StrClose | TextClose)`
}

// IsBlock reports whether s is a """ text block.
func (s *String) IsBlock() bool { return s.Open == `"""` }

// StrPart is literal text or an interpolated expression.
//
//	StrPart = <text> | <interpopen> Expr <interpend> .
type StrPart struct {
	At
	Text   *string `  @Text`
	Interp *Expr   `| InterpOpen @@ InterpEnd`
}

func (*Workflow) decl()  {}
func (*Import) decl()    {}
func (*BlockDecl) decl() {}
func (*TypeDecl) decl()  {}
func (*Tool) decl()      {}
func (*Skill) decl()     {}
func (*State) decl()     {}
func (*Agent) decl()     {}
func (*Graph) decl()     {}
func (*Serve) decl()     {}
func (*Test) decl()      {}

func (*CallNode) nodeBody()      {}
func (*SetNode) nodeBody()       {}
func (*MapNode) nodeBody()       {}
func (*InterruptNode) nodeBody() {}
func (*JoinNode) nodeBody()      {}

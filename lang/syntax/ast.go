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
	Decls []Decl `parser:"@@*"`

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
	Name *Ident  `parser:"\"workflow\" @@"`
	Doc  *String `parser:"@@?"`
}

// Import brings every top-level declaration of another file into scope,
// unqualified.
//
//	Import = "import" String .
type Import struct {
	At
	Path *String `parser:"\"import\" @@"`
}

// BlockDecl is a named configuration block: model, summary, compaction,
// recall, memory or evolution. Its attributes are checked by the compiler
// against the kind's schema.
//
//	BlockDecl = ("model" | "summary" | "compaction" | "recall" | "memory" | "evolution") Ident Block .
type BlockDecl struct {
	At
	Kind string `parser:"@(\"model\" | \"summary\" | \"compaction\" | \"recall\" | \"memory\" | \"evolution\")"`
	Name *Ident `parser:"@@"`
	Body *Block `parser:"@@"`
}

// TypeDecl declares a named record or enum type.
//
//	TypeDecl = "type" Ident ( RecordType | "=" Type ) .
type TypeDecl struct {
	At
	Name   *Ident      `parser:"\"type\" @@"`
	Record *RecordType `parser:"( @@"`
	Alias  *Type       `parser:"| \"=\" @@ )"`
}

// Tool declares a typed tool and its implementation.
//
//	Tool = "tool" Ident String? "{" ToolItem* "}" .
type Tool struct {
	At
	Name  *Ident      `parser:"\"tool\" @@"`
	Doc   *String     `parser:"@@?"`
	Items []*ToolItem `parser:"\"{\" @@* \"}\""`
}

// ToolItem is one line of a tool declaration.
//
//	ToolItem = "input" Type | "output" Type | "run" "=" ToolRun | Attr .
type ToolItem struct {
	At
	Input  *Type    `parser:"  \"input\" @@"`
	Output *Type    `parser:"| \"output\" @@"`
	Run    *ToolRun `parser:"| \"run\" \"=\" @@"`
	Attr   *Attr    `parser:"| @@"`
}

// ToolRun names a tool's implementation.
//
//	ToolRun = "builtin" "." Ident | "http" Block | "exec" Block | "mcp" Block | "agent" Ident .
type ToolRun struct {
	At
	Builtin *Ident `parser:"  \"builtin\" \".\" @@"`
	HTTP    *Block `parser:"| \"http\" @@"`
	Exec    *Block `parser:"| \"exec\" @@"`
	MCP     *Block `parser:"| \"mcp\" @@"`
	Agent   *Ident `parser:"| \"agent\" @@"`
}

// Skill declares a skill folder (containing SKILL.md).
//
//	Skill = "skill" Ident "from" String Block? .
type Skill struct {
	At
	Name *Ident  `parser:"\"skill\" @@"`
	From *String `parser:"\"from\" @@"`
	Body *Block  `parser:"@@?"`
}

// State declares a graph's typed state.
//
//	State = "state" Ident "{" Field* "}" .
type State struct {
	At
	Name   *Ident   `parser:"\"state\" @@"`
	Fields []*Field `parser:"\"{\" @@* \"}\""`
}

// Agent declares an llm agent or a composition (chain, parallel, cycle).
//
//	Agent = "agent" Ident Ident String? Block .
type Agent struct {
	At
	Name *Ident  `parser:"\"agent\" @@"`
	Kind *Ident  `parser:"@@"`
	Doc  *String `parser:"@@?"`
	Body *Block  `parser:"@@"`
}

// Graph declares a state graph over a state type.
//
//	Graph = "graph" Ident "(" Ident ")" ( "input" Ident )? ( "output" Ident )? String? "{" GraphItem* "}" .
type Graph struct {
	At
	Name   *Ident       `parser:"\"graph\" @@"`
	State  *Ident       `parser:"\"(\" @@ \")\""`
	Input  *Ident       `parser:"( \"input\" @@ )?"`
	Output *Ident       `parser:"( \"output\" @@ )?"`
	Doc    *String      `parser:"@@?"`
	Items  []*GraphItem `parser:"\"{\" @@* \"}\""`
}

// GraphItem is a node, the graph's budget, or an edge.
//
//	GraphItem = NodeDecl | Budget | Edge .
//	Budget    = "budget" Block .
type GraphItem struct {
	At
	Node   *NodeDecl `parser:"  @@"`
	Budget *Block    `parser:"| \"budget\" @@"`
	Edge   *Edge     `parser:"| @@"`
}

// NodeDecl declares a graph node.
//
//	NodeDecl = "node" Ident "=" NodeBody Clause* .
type NodeDecl struct {
	At
	Name    *Ident    `parser:"\"node\" @@ \"=\""`
	Body    NodeBody  `parser:"@@"`
	Clauses []*Clause `parser:"@@*"`
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
	Kind   string `parser:"@(\"llm\" | \"tool\" | \"agent\" | \"graph\")"`
	Callee *Ident `parser:"@@"`
	Args   *Block `parser:"@@?"`
}

// SetNode is a pure state update.
//
//	SetNode = "set" Block .
type SetNode struct {
	At
	Body *Block `parser:"\"set\" @@"`
}

// MapNode fans a call out over a list.
//
//	MapNode = "map" Ident "in" Expr ( "concurrency" Int )? "{" NodeBody Clause* "}" .
type MapNode struct {
	At
	Var         *Ident    `parser:"\"map\" @@ \"in\""`
	List        *Expr     `parser:"@@"`
	Concurrency *IntLit   `parser:"( \"concurrency\" @@ )?"`
	Body        NodeBody  `parser:"\"{\" @@"`
	Clauses     []*Clause `parser:"@@* \"}\""`
}

// InterruptNode waits for a typed value from outside the run.
//
//	InterruptNode = "interrupt" String "returns" Type .
type InterruptNode struct {
	At
	Prompt  *String `parser:"\"interrupt\" @@"`
	Returns *Type   `parser:"\"returns\" @@"`
}

// WaitNode waits for a duration, or until a time computed from state (an
// RFC 3339 timestamp), on a durable timer.
//
//	WaitNode = "wait" "until"? Expr .
type WaitNode struct {
	At
	Until bool  `parser:"\"wait\" @\"until\"?"`
	For   *Expr `parser:"@@"`
}

// JoinNode waits for its concurrent predecessors.
//
//	JoinNode = "join" ( "all" | "any" ) .
type JoinNode struct {
	At
	Mode string `parser:"\"join\" @(\"all\" | \"any\")"`
}

// Clause is a per-node policy or the node's output target.
//
//	Clause = Retry | "timeout" Duration ( "else" "->" Ident )? | "catch" "->" Ident | Cache | "into" Ident .
//
// A timeout's else target is an interrupt's: where the run goes when
// nobody answered in time.
type Clause struct {
	At
	Retry   *Retry       `parser:"  @@"`
	Timeout *DurationLit `parser:"| \"timeout\" @@"`
	Else    *Ident       `parser:"  ( \"else\" \"->\" @@ )?"`
	Catch   *Ident       `parser:"| \"catch\" \"->\" @@"`
	Cache   *Cache       `parser:"| @@"`
	Into    *Ident       `parser:"| \"into\" @@"`
}

// Retry re-runs a failed attempt.
//
//	Retry = "retry" Int ( "backoff" Duration ".." Duration )? ( "on" "[" ( Ident ( "," Ident )* )? "]" )? .
type Retry struct {
	At
	Attempts *IntLit      `parser:"\"retry\" @@"`
	Min      *DurationLit `parser:"( \"backoff\" @@"`
	Max      *DurationLit `parser:"\"..\" @@ )?"`
	On       []*Ident     `parser:"( \"on\" \"[\" ( @@ ( \",\" @@ )* )? \"]\" )?"`
}

// Cache memoizes a node by the hash of its inputs.
//
//	Cache = "cache" ( "ttl" Duration )? .
type Cache struct {
	At
	Keyword string       `parser:"@\"cache\""`
	TTL     *DurationLit `parser:"( \"ttl\" @@ )?"`
}

// Edge is control flow between two nodes.
//
//	Edge = Ident "->" Ident ( "when" Expr | "otherwise" )? ( "max" Int ( "else" "->" Ident )? )? .
type Edge struct {
	At
	From      *Ident  `parser:"@@ \"->\""`
	To        *Ident  `parser:"@@"`
	When      *Expr   `parser:"( \"when\" @@"`
	Otherwise bool    `parser:"| @\"otherwise\" )?"`
	Max       *IntLit `parser:"( \"max\" @@"`
	Else      *Ident  `parser:"( \"else\" \"->\" @@ )? )?"`
}

// Serve configures `agentc serve`.
//
//	Serve = "serve" Block .
type Serve struct {
	At
	Body *Block `parser:"\"serve\" @@"`
}

// Test is an offline test of a runnable.
//
//	Test = "test" String "{" TestItem* "}" .
type Test struct {
	At
	Name  *String     `parser:"\"test\" @@"`
	Items []*TestItem `parser:"\"{\" @@* \"}\""`
}

// TestItem is one line of a test.
//
//	TestItem = Replay | Answer | Expect | Attr .
type TestItem struct {
	At
	Replay *Replay `parser:"  @@"`
	Answer *Answer `parser:"| @@"`
	Expect *Expect `parser:"| @@"`
	Attr   *Attr   `parser:"| @@"`
}

// Replay scripts a model or a tool from a fixture file (spec/fixtures.md).
//
//	Replay = ( "model" | "tool" ) Ident "replay" String .
type Replay struct {
	At
	Kind    string  `parser:"@( \"model\" | \"tool\" )"`
	Name    *Ident  `parser:"@@"`
	Fixture *String `parser:"\"replay\" @@"`
}

// Answer scripts the value that resumes an interrupt node.
//
//	Answer = "answer" Ident "=" Expr .
type Answer struct {
	At
	Node  *Ident `parser:"\"answer\" @@ \"=\""`
	Value *Expr  `parser:"@@"`
}

// Expect asserts on the final state, or orders two visits.
//
//	Expect = "expect" Expr ( "before" Expr )? .
type Expect struct {
	At
	Cond   *Expr `parser:"\"expect\" @@"`
	Before *Expr `parser:"( \"before\" @@ )?"`
}

// Block is a brace-delimited list of attributes.
//
//	Block = "{" Attr* "}" .
type Block struct {
	At
	Attrs []*Attr `parser:"\"{\" @@* \"}\""`
}

// Attr sets a key to a value or a nested block. A trailing comma is allowed.
//
//	Attr = Ident ( "=" Expr | Block ) ","? .
type Attr struct {
	At
	Key   *Ident `parser:"@@"`
	Value *Expr  `parser:"( \"=\" @@"`
	Block *Block `parser:"| @@ ) \",\"?"`
}

// Field is a typed field of a state or record type.
//
//	Field = Ident ":" Type ( "max" IntLit )? ( "=" Expr )? ( "reduce" Ident )? ","? .
//
// Max is a list field's size (spec/language.md §9.1).
type Field struct {
	At
	Name    *Ident  `parser:"@@ \":\""`
	Type    *Type   `parser:"@@"`
	Max     *IntLit `parser:"( \"max\" @@ )?"`
	Default *Expr   `parser:"( \"=\" @@ )?"`
	Reduce  *Ident  `parser:"( \"reduce\" @@ )? \",\"?"`
}

// Type is a type expression: an enum of string literals, or a single type
// with an optional "?".
//
//	Type = String ( "|" String )* | SingleType .
type Type struct {
	At
	Enum   []*String   `parser:"  @@ ( \"|\" @@ )*"`
	Single *SingleType `parser:"| @@"`
}

// SingleType is a named, list, map, record or parenthesized type.
//
//	SingleType = ( "list" "<" Type ">" | "map" "<" Type ">" | RecordType | "(" Type ")" | Ident ) "?"? .
type SingleType struct {
	At
	List     *Type       `parser:"( \"list\" \"<\" @@ \">\""`
	Map      *Type       `parser:"| \"map\" \"<\" @@ \">\""`
	Record   *RecordType `parser:"| @@"`
	Paren    *Type       `parser:"| \"(\" @@ \")\""`
	Named    *Ident      `parser:"| @@ )"`
	Optional bool        `parser:"@\"?\"?"`
}

// RecordType is an anonymous record.
//
//	RecordType = "{" Field* "}" .
type RecordType struct {
	At
	Fields []*Field `parser:"\"{\" @@* \"}\""`
}

// Ident is a name.
//
//	Ident = <ident> .
type Ident struct {
	At
	Name string `parser:"@Ident"`
}

// IntLit is an integer literal (kept as text; the checker converts it).
//
//	IntLit = <int> .
type IntLit struct {
	At
	Text string `parser:"@Int"`
}

// DurationLit is a duration literal such as 200ms or 1h30m.
//
//	DurationLit = <duration> .
type DurationLit struct {
	At
	Text string `parser:"@Duration"`
}

// String is a "..." string or a """...""" text block with {expr}
// interpolations. Literal parts keep their raw source; see Value and Parts.
// The lexer guarantees that Open and Close match.
//
//	String = ( <stropen> | <textopen> ) StrPart* ( <strclose> | <textclose> ) .
type String struct {
	At
	Open  string     `parser:"@(StrOpen | TextOpen)"`
	Parts []*StrPart `parser:"@@*"`
	Close string     `parser:"@(StrClose | TextClose)"`
}

// IsBlock reports whether s is a """ text block.
func (s *String) IsBlock() bool { return s.Open == `"""` }

// StrPart is literal text or an interpolated expression.
//
//	StrPart = <text> | <interpopen> Expr <interpend> .
type StrPart struct {
	At
	Text   *string `parser:"  @Text"`
	Interp *Expr   `parser:"| InterpOpen @@ InterpEnd"`
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

// NamedDecl is a declaration that puts a name in the program's namespace:
// a block declaration (model, summary, …), type, tool, skill, state, agent
// or graph.
type NamedDecl interface {
	Decl
	// Declares returns the declaration's keyword and the name it declares.
	Declares() (keyword string, name *Ident)
}

func (d *BlockDecl) Declares() (string, *Ident) { return d.Kind, d.Name }
func (d *TypeDecl) Declares() (string, *Ident)  { return "type", d.Name }
func (d *Tool) Declares() (string, *Ident)      { return "tool", d.Name }
func (d *Skill) Declares() (string, *Ident)     { return "skill", d.Name }
func (d *State) Declares() (string, *Ident)     { return "state", d.Name }
func (d *Agent) Declares() (string, *Ident)     { return "agent", d.Name }
func (d *Graph) Declares() (string, *Ident)     { return "graph", d.Name }

func (*CallNode) nodeBody()      {}
func (*SetNode) nodeBody()       {}
func (*MapNode) nodeBody()       {}
func (*InterruptNode) nodeBody() {}
func (*JoinNode) nodeBody()      {}
func (*WaitNode) nodeBody()      {}

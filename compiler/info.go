package compiler

import (
	"time"

	"github.com/agentc/agentc/compiler/skillmd"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Info is everything Check learned about a package: resolved declarations,
// the type of every expression, the resolution of every name, and each
// graph's analysis. Check returns an Info even when it reports errors; parts
// that could not be resolved are nil. Every slice is in a deterministic order:
// files by path, declarations in source order.
type Info struct {
	Package  *Package
	Universe *Universe

	// Workflow is the name in the first root file's workflow header ("" if
	// none); Doc its documentation string.
	Workflow, Doc string

	Decls    []Decl // every declaration, files in path order, then source order
	Models   []*Model
	Types    []*TypeDecl
	Tools    []*Tool // declared tools; builtin tools are in BuiltinTools
	Skills   []*Skill
	States   []*State
	Policies []*Policy // summary, compaction, recall, memory, evolution
	Agents   []*Agent
	Graphs   []*Graph
	Serve    *Serve // nil without a serve block
	Tests    []*Test

	// BuiltinTools are the universe's tools that the program references,
	// by name order.
	BuiltinTools []*Tool

	// ExprTypes holds the type of every checked expression node that
	// computes a value: each *syntax.Expr, each precedence level that has an
	// operator (a level without one has its operand's type), each Postfix
	// with selectors, each Primary, and each interpolated String. Reads of
	// optional state fields that are definitely assigned have the narrowed
	// (non-optional) type.
	ExprTypes NodeTable[*types.Type]
	// Refs maps each *syntax.Name, *syntax.Call and *syntax.Ident that names
	// something to what it names.
	Refs RefTable

	byName map[string]Decl
}

// Lookup returns the declaration named name, or a builtin tool, or nil.
func (in *Info) Lookup(name string) Decl {
	if in == nil {
		return nil
	}
	return in.byName[name]
}

// TypeOf returns the checked type of an expression node, or nil.
func (in *Info) TypeOf(n syntax.Node) *types.Type {
	if in == nil {
		return nil
	}
	return in.ExprTypes.Of(n)
}

// RefKind says what a name refers to.
type RefKind uint8

// Kinds of references.
const (
	RefField   RefKind = iota + 1 // a state field (Field)
	RefLoopVar                    // the loop variable of the enclosing map node (Node)
	RefVar                        // an implicit variable: `input` in tool blocks, `error` in catch routes, input/output/iteration in cycle conditions (Var)
	RefDecl                       // a declaration (Decl)
	RefNode                       // a graph node (Node), in visited(), answers, edges and catch clauses
	RefFunc                       // an expression function (Func)
	RefSymbol                     // a word from an attribute's fixed set (Symbol)
)

// Ref is the resolution of one name.
type Ref struct {
	Kind   RefKind
	Field  *Field
	Node   *Node
	Decl   Decl
	Func   *Func
	Var    string
	Symbol string
}

// DeclKind is the kind of a top-level declaration.
type DeclKind uint8

// Declaration kinds.
const (
	DeclModel DeclKind = iota + 1
	DeclType
	DeclTool
	DeclSkill
	DeclState
	DeclSummary
	DeclCompaction
	DeclRecall
	DeclMemory
	DeclEvolution
	DeclAgent
	DeclGraph
)

var declKindNames = [...]string{
	DeclModel: "model", DeclType: "type", DeclTool: "tool", DeclSkill: "skill", DeclState: "state",
	DeclSummary: "summary", DeclCompaction: "compaction", DeclRecall: "recall", DeclMemory: "memory",
	DeclEvolution: "evolution", DeclAgent: "agent", DeclGraph: "graph",
}

func (k DeclKind) String() string {
	if int(k) < len(declKindNames) && declKindNames[k] != "" {
		return declKindNames[k]
	}
	return "declaration"
}

// Decl is a resolved top-level declaration.
type Decl interface {
	Name() string
	Kind() DeclKind
	// Span is the span of the declared name.
	Span() diag.Span
	// Syntax is the declaration's syntax; nil for builtins.
	Syntax() syntax.Decl
	base() *object
}

// object is embedded in every Decl.
type object struct {
	name string
	kind DeclKind
	span diag.Span
	syn  syntax.Decl
	file string
	used bool
	bad  bool // stands for a declaration that did not parse
}

func (o *object) Name() string        { return o.name }
func (o *object) Kind() DeclKind      { return o.kind }
func (o *object) Span() diag.Span     { return o.span }
func (o *object) Syntax() syntax.Decl { return o.syn }
func (o *object) base() *object       { return o }

// Attrs are the checked attributes of a block, in source order.
type Attrs struct {
	List []*Attr
}

// Get returns the attribute named name, or nil. Get on a nil *Attrs is nil.
func (a *Attrs) Get(name string) *Attr {
	if a == nil {
		return nil
	}
	return byName(a.List, name, func(x *Attr) string { return x.Name })
}

// byName returns the element of list whose name (by nameOf) is name, or
// nil.
func byName[T any](list []*T, name string, nameOf func(*T) string) *T {
	for _, x := range list {
		if nameOf(x) == name {
			return x
		}
	}
	return nil
}

// Attr is one checked attribute.
type Attr struct {
	Name string
	Span diag.Span    // the whole attribute
	Syn  *syntax.Attr // its syntax
	// Value is the value expression (nil for a nested block); its type is in
	// Info.ExprTypes, Type is the type it was checked against.
	Value *syntax.Expr
	Type  *types.Type
	Block *Attrs // a nested block such as a2a { ... }
	// Refs are the declarations a reference attribute names, in order;
	// Tags holds the grant of each (skills = [x: exec]) or "".
	Refs []Decl
	Tags []string
	// Symbols holds the words of a symbol attribute (provider = openai).
	Symbols []string
	// Const is the value when Value is a literal (no env(), no state);
	// HasConst says whether it is set.
	Const    types.Value
	HasConst bool
	// Env is set when Value is env(NAME[, DEFAULT]); it is resolved when a
	// program is loaded.
	Env *EnvRef
}

// EnvRef is an env("NAME", "default") value.
type EnvRef struct {
	Name       string
	Default    string
	HasDefault bool
}

// Model is a model declaration.
type Model struct {
	object
	Attrs *Attrs
}

// TypeDecl is a named type.
type TypeDecl struct {
	object
	Type *types.Type // nil if it could not be resolved
}

// Tool is a declared or builtin tool.
type Tool struct {
	object
	Doc     string
	Input   *types.Type // a record
	Output  *types.Type
	Effect  Effect
	Impl    ToolImpl
	Builtin bool // provided by the universe; Syntax is nil
	Attrs   *Attrs
	// MCP is what the lock file pins for a `run = mcp` tool (nil for other
	// tools, and when Config.IgnoreMCPLocks).
	MCP *MCPPin
}

// ImplKind is how a tool is implemented.
type ImplKind uint8

// Tool implementations.
const (
	ImplBuiltin ImplKind = iota + 1 // run = builtin.NAME (or a universe tool)
	ImplHTTP                        // run = http { ... }
	ImplExec                        // run = exec { ... }
	ImplAgent                       // run = agent NAME
	ImplMCP                         // run = mcp { ... }
)

// ToolImpl is a tool's implementation.
type ToolImpl struct {
	Kind    ImplKind
	Builtin string // ImplBuiltin
	Attrs   *Attrs // ImplHTTP, ImplExec, ImplMCP
	Agent   *Agent // ImplAgent
}

// Skill is a skill declaration.
type Skill struct {
	object
	Path  string // relative, slash-separated, relative to the declaring file's folder
	Dir   string // the folder relative to the module root
	Attrs *Attrs
	Front *skillmd.Front // SKILL.md's front matter when it is valid, else nil
}

// State is a state declaration.
type State struct {
	object
	Type   *types.Type // the record type of the whole state
	Fields []*Field
}

// Field returns the named field, or nil.
func (s *State) Field(name string) *Field {
	if s == nil {
		return nil
	}
	return byName(s.Fields, name, func(f *Field) string { return f.Name })
}

// Field is a state field.
type Field struct {
	Name  string
	Span  diag.Span
	Index int
	Type  *types.Type // nil if it could not be resolved
	// Default is the default expression; DefaultValue its value.
	Default      *syntax.Expr
	DefaultValue types.Value
	HasDefault   bool
	Reducer      Reducer
	// MaxLen is the declared size of a list field (`max N`), 0 if none.
	MaxLen int
	Syntax *syntax.Field
}

// Reducer merges a write into a state field.
type Reducer uint8

// Reducers.
const (
	ReduceReplace Reducer = iota
	ReduceAppend
	ReduceMerge
	ReduceSum
	ReduceMax
	ReduceMin
)

var reducerNames = [...]string{"replace", "append", "merge", "sum", "max", "min"}

func (r Reducer) String() string {
	if int(r) < len(reducerNames) {
		return reducerNames[r]
	}
	return "reducer"
}

// Policy is a summary, compaction, recall, memory or evolution declaration.
type Policy struct {
	object
	Attrs *Attrs
}

// AgentForm is the kind of an agent.
type AgentForm uint8

// Agent forms.
const (
	AgentLLM AgentForm = iota + 1
	AgentChain
	AgentParallel
	AgentCycle
)

var agentFormNames = [...]string{AgentLLM: "llm", AgentChain: "chain", AgentParallel: "parallel", AgentCycle: "cycle"}

func (f AgentForm) String() string {
	if int(f) < len(agentFormNames) && agentFormNames[f] != "" {
		return agentFormNames[f]
	}
	return "agent"
}

// Agent is an llm agent or a composition.
type Agent struct {
	object
	Form  AgentForm
	Doc   string
	Attrs *Attrs

	// llm agents
	Model       *Model
	Instruction *syntax.String
	Tools       []*Tool
	Skills      []SkillGrant
	Summary     *Policy
	Compaction  *Policy
	Recall      *Policy
	Memory      *Policy
	Evolution   *Policy
	MaxTurns    int
	// Output is the agent's result type: string, or the `output` type of an
	// llm agent (structured output), or the last agent's output for chains.
	Output *types.Type

	// compositions
	Agents []*Agent
	Until  *syntax.Expr // cycle
	Max    int          // cycle
	// Answer is the index in Agents of the member whose answer is the
	// composition's (chain and cycle: the last member unless a cycle's
	// `answer` names another).
	Answer int

	// Effect is the strongest effect the agent can reach through its tools
	// and sub-agents.
	Effect Effect

	// Budget is the declared budget (nil: none); Bound what one call of
	// the agent uses at most (budget.go).
	Budget *Limits
	Bound  *Bound
}

// SkillGrant is one entry of an agent's skills list.
type SkillGrant struct {
	Skill *Skill
	Exec  bool // granted with `exec`, else read
}

// Graph is a graph declaration with its nodes, edges and analysis.
type Graph struct {
	object
	Doc           string
	State         *State
	Input, Output *Field // bindings; nil when absent
	// Nodes holds Start (index 0), End (index 1), then the declared nodes in
	// source order; Node.Index is the position.
	Nodes      []*Node
	Start, End *Node
	// Edges holds the declared edges in source order, each followed by its
	// synthesized else edge, then the synthesized catch edges in node order.
	Edges    []*Edge
	Analysis *Analysis
	// Effect is the strongest effect of any node.
	Effect Effect

	// Budget is the declared budget (nil: none); Bound what one run uses
	// at most (budget.go).
	Budget *Limits
	Bound  *Bound
}

// Node returns the named node (including "start" and "end"), or nil.
func (g *Graph) Node(name string) *Node {
	if g == nil {
		return nil
	}
	return byName(g.Nodes, name, func(n *Node) string { return n.Name })
}

// NodeKind is what a node does.
type NodeKind uint8

// Node kinds.
const (
	NodeStart NodeKind = iota + 1
	NodeEnd
	NodeCall      // llm, tool, agent or graph call (Call)
	NodeSet       // Set
	NodeMap       // Map
	NodeInterrupt // Interrupt
	NodeJoin      // JoinAll
	NodeWait      // Wait
)

var nodeKindNames = [...]string{NodeStart: "start", NodeEnd: "end", NodeCall: "call", NodeSet: "set", NodeMap: "map", NodeInterrupt: "interrupt", NodeJoin: "join", NodeWait: "wait"}

func (k NodeKind) String() string {
	if int(k) < len(nodeKindNames) && nodeKindNames[k] != "" {
		return nodeKindNames[k]
	}
	return "node"
}

// Node is one graph node.
type Node struct {
	Name   string
	Span   diag.Span // the node's name
	Index  int
	Kind   NodeKind
	Syntax *syntax.NodeDecl // nil for start and end

	Call      *Call       // NodeCall
	Set       []*SetItem  // NodeSet
	Map       *MapSpec    // NodeMap
	Interrupt *Interrupt  // NodeInterrupt
	Wait      *Wait       // NodeWait
	JoinAll   bool        // NodeJoin: all (else any)
	Into      *Field      // the `into` target, or nil
	IntoSpan  diag.Span   // the target's span
	Output    *types.Type // what the node produces before `into` (nil: nothing)
	Policies  Policies

	Out []*Edge // declared out-edges in source order, then else, then catch
	In  []*Edge
	// Preds are the distinct predecessors (sources of in-edges), by index.
	// For a join these are the nodes it waits for.
	Preds []*Node
	// Writes are the fields the node writes, in field order.
	Writes []*Field
	Effect Effect
}

// Call is an llm, tool, agent or sub-graph call.
type Call struct {
	Kind   string // "llm", "tool", "agent", "graph"
	Agent  *Agent
	Tool   *Tool
	Graph  *Graph
	Args   *Attrs
	Output *types.Type
}

// Callee is the name of the agent, tool or graph called; "" when the call
// did not resolve.
func (c *Call) Callee() string {
	switch {
	case c.Agent != nil:
		return c.Agent.Name()
	case c.Tool != nil:
		return c.Tool.Name()
	case c.Graph != nil:
		return c.Graph.Name()
	}
	return ""
}

// SetItem is one `field = value` of a set node.
type SetItem struct {
	Field *Field
	Value *syntax.Expr
	Span  diag.Span
}

// MapSpec is a map node's iteration.
type MapSpec struct {
	Var         string
	VarSpan     diag.Span
	VarType     *types.Type // element type of List
	List        *syntax.Expr
	Concurrency int // 0: unlimited
	Body        *Call
	Item        Policies    // per-item retry, timeout, catch, cache
	ItemOutput  *types.Type // one item's result
}

// Interrupt is an interrupt node.
type Interrupt struct {
	Prompt  *syntax.String
	Returns *types.Type
}

// Wait is a wait node's deadline: a duration from when it is reached, or
// (Until) an RFC 3339 timestamp.
type Wait struct {
	For   *syntax.Expr
	Until bool
}

// Policies are a node's retry, timeout, catch and cache clauses.
type Policies struct {
	Retry   *RetryPolicy
	Timeout time.Duration // 0: none
	Catch   *Node
	Cache   *CachePolicy
}

// RetryPolicy is `retry N backoff MIN..MAX on [kinds]`.
type RetryPolicy struct {
	Attempts   int
	MinBackoff time.Duration
	MaxBackoff time.Duration
	On         []string // empty: every retryable kind
}

// CachePolicy is `cache ttl D`.
type CachePolicy struct {
	TTL time.Duration // 0: forever
}

// EdgeKind classifies edges.
type EdgeKind uint8

// Edge kinds.
const (
	EdgeAlways    EdgeKind = iota + 1 // unconditional (sequence or fan-out)
	EdgeWhen                          // one case of a switch
	EdgeOtherwise                     // the switch's default
	EdgeElse                          // synthesized: taken when a `max N` edge is exhausted
	EdgeCatch                         // synthesized: taken when the node fails
)

var edgeKindNames = [...]string{EdgeAlways: "always", EdgeWhen: "when", EdgeOtherwise: "otherwise", EdgeElse: "else", EdgeCatch: "catch"}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) && edgeKindNames[k] != "" {
		return edgeKindNames[k]
	}
	return "edge"
}

// Edge is one edge of a graph.
type Edge struct {
	From, To *Node
	Kind     EdgeKind
	Span     diag.Span    // the edge (for synthesized edges, the clause that made it)
	Syntax   *syntax.Edge // nil for catch edges
	When     *syntax.Expr
	// Case is the position of a when/otherwise edge in its source's switch.
	Case int
	// Max bounds the traversals of this edge per run (0: unbounded).
	Max int
	// Else is the synthesized else edge of a bounded edge, or nil; Parent is
	// the bounded edge of an else edge.
	Else, Parent *Edge
	Index        int // position in Graph.Edges
}

// Serve is the serve block.
type Serve struct {
	Span   diag.Span
	Syntax *syntax.Serve
	Run    Decl // a *Graph or *Agent, or nil
	Attrs  *Attrs
	Budget *Limits // every run's budget (nil: none)
}

// Test is a test block.
type Test struct {
	Name    string
	Span    diag.Span
	Syntax  *syntax.Test
	Run     Decl        // *Graph or *Agent
	State   *types.Type // the state the expectations read
	Input   *syntax.Expr
	Replays []Replay
	Answers []Answer
	Expects []Expect
	Attrs   *Attrs
}

// Replay is `model NAME replay "FILE"` or `tool NAME replay "FILE"`.
type Replay struct {
	Target Decl   // *Model or *Tool
	Path   string // relative to the module root, slash-separated
	Span   diag.Span
}

// Answer is `answer NODE = value`.
type Answer struct {
	Node  *Node
	Value *syntax.Expr
	Span  diag.Span
}

// Expect is `expect cond` or `expect visited(a) before visited(b)`.
type Expect struct {
	Cond   *syntax.Expr
	Before *syntax.Expr // nil unless an ordering
	// First and Then are the ordered nodes of a `before` expectation.
	First, Then *Node
	Span        diag.Span
}

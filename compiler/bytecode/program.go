package bytecode

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// Format identification.
const (
	Magic = "AGNTC"
	// FormatVersion is the uint16 in the header. Bump it on any change that
	// makes an existing file decode differently or not at all; a new
	// optional section does not (files without it decode as before, and a
	// reader that predates it refuses it as an unknown section): section 15
	// (budgets) was added this way.
	FormatVersion = 1
)

// Defaults of an llm agent and its model that the compiler's bounds and the
// runtime share (spec/language.md §5, §11.1).
const (
	DefaultMaxTurns      = 10   // max_turns of an llm agent that declares none
	DefaultContextWindow = 8192 // context_window of a model that declares none
)

// None marks an absent index in an optional (int32) reference field.
// Required references are uint32; optional ones are int32 with None.
const None = -1

// Program is one compiled workflow: everything the VM and the runtime need,
// and nothing they must not see (no AST, no secrets, no absolute paths).
//
// Invariants (checked by Verify, relied on by the VM): every index names an
// element of the table it indexes; every chunk is well formed (stack
// balanced, jumps in range, ends in RETURN with one value); every graph has
// exactly one start and one end node; paths are relative and slash-separated.
// Enum-typed fields use 0 for "invalid": Verify rejects a zero kind.
type Program struct {
	// Hash is the SHA-256 of the encoding (excluding the hash itself). Seal
	// (which the compiler runs) and Decode set it; it identifies the program
	// in checkpoints and in the store.
	Hash [32]byte

	Workflow string   // the workflow header's name
	Doc      string   // the workflow header's doc string
	Files    []string // source files (relative, slash-separated); Span.File indexes this

	Consts []types.Value // the constant pool (never a secret)
	Types  []*types.Type // the type table
	Funcs  []string      // builtin function names CALL refers to; BindFuncs resolves them

	States   []State  // state schemas
	Chunks   []Chunk  // expression code
	Graphs   []Graph  // state graphs (compositions are lowered to graphs too)
	Tools    []Tool   // tool descriptors, builtin tools the program uses included
	Models   []Model  // model descriptors
	Agents   []Agent  // agent descriptors
	Skills   []Skill  // skill descriptors
	Policies []Policy // summary, compaction, recall, memory, evolution blocks
	Serve    *Serve   // the serve block, or nil
	Tests    []Test   // test blocks

	// Budgets holds, by ascending graph index, each runnable's declared
	// budget and the compiler's bound (budget.go); ServeBudget is the serve
	// block's budget, which applies to every run.
	Budgets     []Budget
	ServeBudget Limits
}

// Span is a compact source range: File indexes Program.Files; lines and
// columns are 1-based (0 = unknown); offsets are bytes, End exclusive.
type Span struct {
	File                uint32
	StartLine, StartCol uint32
	EndLine, EndCol     uint32
	StartOff, EndOff    uint32
}

// IsValid reports whether s names a real range.
func (s Span) IsValid() bool { return s.StartLine > 0 }

// Reducer merges a node's write into a state field.
type Reducer uint8

// Reducers.
const (
	ReduceReplace Reducer = iota + 1 // the new value replaces the old (the default)
	ReduceAppend                     // list: append the element, or the elements of a list
	ReduceMerge                      // map/record: key-wise union, the new value wins
	ReduceSum                        // numbers, durations
	ReduceMax
	ReduceMin
	reducerEnd
)

// State is a state schema: the typed fields of a graph's state.
type State struct {
	Name   string
	Fields []StateField
	Span   Span

	// Hash is the state-schema hash (StateHash), set by Seal and Decode. A
	// checkpoint records it; resuming under a different hash needs a
	// migration.
	Hash [32]byte
}

// StateField is one field of a state schema.
type StateField struct {
	Name       string
	Type       uint32 // Types index
	HasDefault bool
	Default    uint32 // Consts index; meaningful only when HasDefault
	Reducer    Reducer
	MaxLen     uint32 // the declared size of a list field (`max N`), 0 if none; section 16
	Span       Span
}

// Chunk is one compiled expression.
type Chunk struct {
	Name      string // for disassembly and errors, e.g. "investigate.triage.arg.prompt"
	State     int32  // the States index whose fields LOAD reads, or None
	NumLocals uint32 // LOADLOCAL slots: 1 in a map body (the loop variable) and in tool templates (`input`)
	MaxStack  uint32 // the deepest stack any path reaches (Verify proves it)
	Code      []Insn
	Spans     []PCSpan // by strictly increasing PC; an instruction's span is the last entry at or before it
}

// PCSpan maps the instructions from PC on to a source span.
type PCSpan struct {
	PC   uint32
	Span Span
}

// SpanAt returns the source span of the instruction at pc.
func (c *Chunk) SpanAt(pc int) Span {
	lo, hi := 0, len(c.Spans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(c.Spans[m].PC) <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return Span{}
	}
	return c.Spans[lo-1].Span
}

// Graph is a state graph.
type Graph struct {
	Name   string
	Doc    string
	State  uint32 // States index
	Input  int32  // state field the run's input is written to, or None
	Output int32  // state field that is the run's result, or None
	Nodes  []Node // exactly one start and one end node
	Span   Span
}

// NodeKind says what a node does.
type NodeKind uint8

// Node kinds.
const (
	NodeStart     NodeKind = iota + 1
	NodeEnd                // reaching it ends the branch
	NodeLLM                // an llm agent turn loop (Call: CallLLM)
	NodeTool               // a tool call (Call: CallTool)
	NodeAgent              // an agent (Call: CallAgent)
	NodeGraph              // a sub-graph (Call: CallGraph)
	NodeSet                // a pure state update (Set)
	NodeMap                // a dynamic fan-out of Call over a list (Map)
	NodeInterrupt          // waits for a typed value (Interrupt)
	NodeJoin               // waits for predecessors (Join)
	NodeWait               // waits on a durable timer (Wait)
	nodeKindEnd
)

// Effect is what re-running a node after a crash may do.
type Effect uint8

// Effects, weakest first.
const (
	EffectReadOnly   Effect = iota + 1
	EffectIdempotent        // safe to repeat
	EffectSideEffect        // journaled with an intent record and replayed, never re-run
	effectEnd
)

// Node is one node of a graph. Only the parts its Kind uses may be non-zero
// (Encode rejects others): Call for llm/tool/agent/graph/map, Map for map,
// Interrupt for interrupt, Set for set, Join for join, Wait for wait.
type Node struct {
	Name string
	Kind NodeKind
	Span Span
	Into int32 // state field the result is written to through its reducer, or None

	Call      Call
	Map       MapSpec
	Interrupt InterruptSpec
	Set       []Assign
	Join      JoinSpec
	Wait      WaitSpec

	Retry    Retry
	Timeout  time.Duration // per attempt; 0 = none
	Catch    int32         // node that receives the error (typed `error`), or None
	Cache    bool          // memoize by input hash
	CacheTTL time.Duration // 0 = no expiry
	Effect   Effect        // the strongest effect the node can reach

	// Edges is the node's route table, in source order. Either every edge
	// is EdgeAlways (a fan-out), or the edges are EdgeWhen conditions
	// optionally followed by one EdgeOtherwise: a switch where the first true
	// condition wins. Only the end node has no edges.
	Edges []Edge
}

// CallKind says what a Call invokes.
type CallKind uint8

// Call kinds; Callee indexes Agents, Tools, Agents and Graphs respectively.
const (
	CallLLM CallKind = iota + 1
	CallTool
	CallAgent
	CallGraph
	callKindEnd
)

// Call describes an invocation: a node's callee, or a map node's body.
type Call struct {
	Kind   CallKind
	Callee uint32
	Args   []Arg // by unique name
}

// Arg is a named argument computed by a chunk.
type Arg struct {
	Name string
	Code uint32 // Chunks index
}

// Retry is a node's retry policy.
type Retry struct {
	MaxAttempts uint32        // attempts including the first; 0 or 1 = no retry
	BackoffMin  time.Duration // delay before the second attempt
	BackoffMax  time.Duration // cap of the exponential backoff
	Jitter      bool
	On          []string // error kinds that are retried; empty = all
}

// MapSpec is a map node's fan-out. In the body's argument chunks, local 0 is
// the loop variable.
type MapSpec struct {
	Var         string // the loop variable's name (for disassembly and errors)
	List        uint32 // Chunks index: the list to fan out over
	Concurrency uint32 // at most this many items at once; 0 = unlimited
}

// InterruptSpec is an interrupt node's question.
type InterruptSpec struct {
	Prompt uint32 // Chunks index: the prompt text
	Resume uint32 // Types index: the type of the value that resumes the run
}

// WaitSpec is a wait node's deadline: Code evaluates to a duration from
// when the node is reached, or (Until) to an RFC 3339 timestamp.
type WaitSpec struct {
	Code  uint32 // Chunks index
	Until bool
}

// Assign is one `field = expr` of a set node.
type Assign struct {
	Field uint32 // state field
	Code  uint32 // Chunks index
}

// JoinMode says when a join fires.
type JoinMode uint8

// Join modes.
const (
	JoinAll JoinMode = iota + 1 // when every predecessor has completed
	JoinAny                     // when the first predecessor completes
	joinModeEnd
)

// JoinSpec is a join node's barrier.
type JoinSpec struct {
	Mode  JoinMode
	Preds []uint32 // node indexes, each with an edge to the join
}

// EdgeKind classifies an edge of a route table.
type EdgeKind uint8

// Edge kinds.
const (
	EdgeAlways    EdgeKind = iota + 1 // unconditional
	EdgeWhen                          // taken if Cond returns true (and no earlier edge was taken)
	EdgeOtherwise                     // taken if no EdgeWhen was
	edgeKindEnd
)

// Edge is one entry of a node's route table.
type Edge struct {
	Kind   EdgeKind
	Cond   int32  // Chunks index of a bool chunk for EdgeWhen, else None
	Target uint32 // node index
	Max    uint32 // a bounded loop: traversals allowed per run; 0 = unbounded
	Else   int32  // where to go instead once Max is used up, else None (then the run fails with loop_limit); None without Max
	Span   Span
}

// ImplKind says how a tool is implemented.
type ImplKind uint8

// Tool implementation kinds.
const (
	ImplBuiltin ImplKind = iota + 1
	ImplHTTP
	ImplExec
	ImplAgent
	ImplMCP
	implKindEnd
)

// Tool is a tool descriptor.
type Tool struct {
	Name   string
	Doc    string
	Input  uint32 // Types index
	Output uint32 // Types index
	Effect Effect
	Impl   ToolImpl
	Attrs  []Attr // further attributes
	Span   Span
}

// ToolImpl is a tool's implementation. Only the fields of its Kind may be
// non-zero. Template chunks see `input` as local 0.
type ToolImpl struct {
	Kind    ImplKind
	Builtin string        // builtin: the stdlib tool name
	Method  string        // http
	URL     uint32        // http: Chunks index of the URL template
	Headers []Attr        // http: header name → value (a template or an env reference)
	Argv    []uint32      // exec: Chunks indexes of the argument templates
	Timeout time.Duration // exec: 0 = none
	Agent   uint32        // agent: Agents index
	Options []Attr        // further implementation options (body, ...; mcp: all of its attributes)
}

// Model is a model descriptor.
type Model struct {
	Name     string
	Provider string // e.g. "openai": any OpenAI-compatible endpoint
	Attrs    []Attr // name, base_url, context_window, ...; env references resolve at load
	Span     Span
}

// AgentKind says what an agent is.
type AgentKind uint8

// Agent kinds.
const (
	AgentLLM AgentKind = iota + 1
	AgentChain
	AgentParallel
	AgentCycle
	agentKindEnd
)

// Grant is what an agent may do with a skill.
type Grant uint8

// Skill grants.
const (
	GrantRead Grant = iota + 1
	GrantExec
	grantEnd
)

// Agent is an agent descriptor.
type Agent struct {
	Name        string
	Doc         string
	Kind        AgentKind
	Model       int32 // Models index, or None
	Instruction int32 // Chunks index of the instruction template, or None
	Tools       []uint32
	Skills      []SkillGrant
	Policies    []uint32 // Policies indexes, at most one per PolicyKind
	MaxTurns    uint32   // 0 = the runtime's default
	SubAgents   []uint32 // chain, parallel, cycle members
	Until       int32    // cycle: Chunks index of the stop condition, or None
	Max         uint32   // cycle: iteration bound; 0 = none
	Graph       int32    // the graph a composition was lowered to, or None
	Attrs       []Attr
	Span        Span
}

// SkillGrant grants a skill to an agent.
type SkillGrant struct {
	Skill uint32
	Grant Grant
}

// Skill is a skill descriptor: a folder holding SKILL.md.
type Skill struct {
	Name  string
	Path  string // relative, slash-separated
	Attrs []Attr
	Span  Span
}

// PolicyKind says what a policy block configures.
type PolicyKind uint8

// Policy kinds.
const (
	PolicySummary PolicyKind = iota + 1
	PolicyCompaction
	PolicyRecall
	PolicyMemory
	PolicyEvolution
	policyKindEnd
)

// Policy is a named policy block.
type Policy struct {
	Kind  PolicyKind
	Name  string
	Attrs []Attr
	Span  Span
}

// AttrKind says how an attribute's value is given.
type AttrKind uint8

// Attribute value kinds.
const (
	AttrConst AttrKind = iota + 1 // Const: a constant
	AttrEnv                       // Env: resolved when the program is loaded, never at compile time
	AttrCode                      // Code: a chunk (no state; no locals unless the context provides them)
	AttrRef                       // Refs: exactly one reference
	AttrRefs                      // Refs: a list of references
	attrKindEnd
)

// Attr is a typed key/value attribute of a block. Only the field of its Kind
// may be non-zero.
type Attr struct {
	Name  string
	Kind  AttrKind
	Const uint32
	Env   EnvRef
	Code  uint32
	Refs  []Ref
	Span  Span
}

// EnvRef is `env(NAME, default)`: the value is read from the environment when
// the program is loaded (ResolveEnv) and parsed as Type.
type EnvRef struct {
	Var        string
	HasDefault bool
	Default    string
	Type       uint32 // Types index: string, secret, int, float, bool, duration, or an optional of one
}

// RefKind says which table a Ref indexes.
type RefKind uint8

// Reference kinds.
const (
	RefGraph RefKind = iota + 1
	RefAgent
	RefTool
	RefModel
	RefSkill
	RefPolicy
	refKindEnd
)

// Ref names an element of a program table.
type Ref struct {
	Kind  RefKind
	Index uint32
}

// ProtocolKind names a served protocol.
type ProtocolKind uint8

// Protocols.
const (
	ProtoAGUI ProtocolKind = iota + 1
	ProtoA2A
	ProtoOpenAI
	ProtoMCP
	protocolKindEnd
)

// Serve is the serve block.
type Serve struct {
	Run       Ref // a graph or agent; Kind 0 = not given (the runtime selects)
	Protocols []Protocol
	Attrs     []Attr
	Span      Span
}

// Protocol is one served protocol endpoint.
type Protocol struct {
	Kind  ProtocolKind
	Path  string // URL path, e.g. "/agui"
	Attrs []Attr // protocol options (a2a name and skills, openai model name, ...)
	Span  Span
}

// Test is a test block.
type Test struct {
	Name     string
	Run      Ref   // a graph, or an agent lowered to a graph (Agent.Graph)
	Input    int32 // Consts index of the input, or None
	Fixtures []Fixture
	Answers  []Answer
	Expects  []Expect
	Attrs    []Attr
	Span     Span
}

// Fixture scripts a model or tool from a file.
type Fixture struct {
	Target Ref    // RefModel or RefTool
	Path   string // relative, slash-separated
}

// Answer scripts the value that resumes an interrupt node of the run graph.
type Answer struct {
	Node  uint32 // node index in the run graph
	Value uint32 // Consts index
	Span  Span
}

// ExpectKind says what an expectation checks.
type ExpectKind uint8

// Expectation kinds.
const (
	ExpectCond  ExpectKind = iota + 1 // Code returns true on the final state
	ExpectOrder                       // visited(First) before visited(Then)
	expectKindEnd
)

// Expect is one expectation of a test.
type Expect struct {
	Kind  ExpectKind
	Code  int32  // ExpectCond: Chunks index of a bool chunk over the run graph's state; else None
	First uint32 // ExpectOrder: node index in the run graph
	Then  uint32 // ExpectOrder: node index in the run graph
	Span  Span
}

// Start returns the index of g's start node, or -1.
func (g *Graph) Start() int { return g.find(NodeStart) }

// End returns the index of g's end node, or -1.
func (g *Graph) End() int { return g.find(NodeEnd) }

func (g *Graph) find(k NodeKind) int {
	for i := range g.Nodes {
		if g.Nodes[i].Kind == k {
			return i
		}
	}
	return -1
}

// RunGraph returns the graph a test or serve target runs: the graph itself,
// or the graph an agent was lowered to; -1 if none.
func (p *Program) RunGraph(r Ref) int {
	switch r.Kind {
	case RefGraph:
		if int(r.Index) < len(p.Graphs) {
			return int(r.Index)
		}
	case RefAgent:
		if int(r.Index) < len(p.Agents) {
			return int(p.Agents[r.Index].Graph)
		}
	}
	return -1
}

// DefaultGraph is the graph a run that names no runnable runs
// (Runnable("")); -1 when that is ambiguous or there is none.
func (p *Program) DefaultGraph() int {
	gi, _ := p.Runnable("")
	return gi
}

// Runnable is the one rule for which graph a run of a runnable runs: the
// graph of the agent named name, else the graph named name; with name "",
// the serve block's run, else the only runnable (Runnables). ok is false
// (and gi -1) when there is no such runnable, or "" is ambiguous.
func (p *Program) Runnable(name string) (gi int, ok bool) {
	if name != "" {
		for i := range p.Agents {
			if p.Agents[i].Name == name && p.Agents[i].Graph >= 0 && int(p.Agents[i].Graph) < len(p.Graphs) {
				return int(p.Agents[i].Graph), true
			}
		}
		for i := range p.Graphs {
			if p.Graphs[i].Name == name {
				return i, true
			}
		}
		return -1, false
	}
	if p.Serve != nil && p.Serve.Run.Kind != 0 {
		if gi := p.RunGraph(p.Serve.Run); gi >= 0 {
			return gi, true
		}
	}
	if names := p.Runnables(); len(names) == 1 {
		return p.Runnable(names[0])
	}
	return -1, false
}

// Runnables lists the names a run may name, sorted: the agents that have a
// graph and the graphs that are not an agent's lowering.
func (p *Program) Runnables() []string {
	lowered := map[int32]bool{}
	var names []string
	for i := range p.Agents {
		if g := p.Agents[i].Graph; g >= 0 {
			lowered[g] = true
			names = append(names, p.Agents[i].Name)
		}
	}
	for i := range p.Graphs {
		if !lowered[int32(i)] {
			names = append(names, p.Graphs[i].Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ResolveEnv resolves an env reference at load time: lookup(Var) (for
// example os.LookupEnv), else the default, parsed as e's type. A secret type
// gives a secret value; an optional type gives null when the variable is
// unset and has no default.
func (p *Program) ResolveEnv(e EnvRef, lookup func(string) (string, bool)) (types.Value, error) {
	if int(e.Type) >= len(p.Types) {
		return types.Value{}, fmt.Errorf("env(%s): type %d out of range", e.Var, e.Type)
	}
	t := p.Types[e.Type]
	text, ok := lookup(e.Var)
	if !ok {
		if !e.HasDefault {
			if t.Kind() == types.KindOptional {
				return types.Value{}, nil
			}
			return types.Value{}, fmt.Errorf("environment variable %s is not set", e.Var)
		}
		text = e.Default
	}
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	bad := func(err error) (types.Value, error) {
		return types.Value{}, fmt.Errorf("environment variable %s: want %s: %w", e.Var, t, err)
	}
	switch t.Kind() {
	case types.KindString:
		return types.MakeString(text), nil
	case types.KindSecret:
		return types.MakeSecret(text), nil
	case types.KindInt:
		i, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return bad(err)
		}
		return types.MakeInt(i), nil
	case types.KindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return bad(err)
		}
		return types.MakeFloat(f), nil
	case types.KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return bad(err)
		}
		return types.MakeBool(b), nil
	case types.KindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			return bad(err)
		}
		return types.MakeDuration(d), nil
	case types.KindEnum:
		if !t.HasLiteral(text) {
			return bad(fmt.Errorf("%q is not one of the literals", text))
		}
		return types.MakeString(text), nil
	}
	return types.Value{}, fmt.Errorf("env(%s): type %s cannot come from the environment", e.Var, t)
}

// BindFuncs resolves the program's function names against a table built by
// the embedder (stdlib) and returns the implementations in Funcs order, so
// that CALL's index selects impls[index]. An unknown name is an error that
// names it.
func BindFuncs[F any](p *Program, table map[string]F) ([]F, error) {
	impls := make([]F, len(p.Funcs))
	var missing []string
	for i, name := range p.Funcs {
		f, ok := table[name]
		if !ok {
			missing = append(missing, strconv.Quote(name))
			continue
		}
		impls[i] = f
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("program uses unknown builtin function %s", strings.Join(missing, ", "))
	}
	return impls, nil
}

func (r Reducer) String() string {
	return types.EnumName(r, []string{"", "replace", "append", "merge", "sum", "max", "min"}, "reducer")
}

func (k NodeKind) String() string {
	return types.EnumName(k, []string{"", "start", "end", "llm", "tool", "agent", "graph", "set", "map", "interrupt", "join", "wait"}, "nodekind")
}

func (e Effect) String() string {
	return types.EnumName(e, []string{"", "read_only", "idempotent", "side_effect"}, "effect")
}

func (k CallKind) String() string {
	return types.EnumName(k, []string{"", "llm", "tool", "agent", "graph"}, "callkind")
}

func (m JoinMode) String() string { return types.EnumName(m, []string{"", "all", "any"}, "joinmode") }

func (k EdgeKind) String() string {
	return types.EnumName(k, []string{"", "always", "when", "otherwise"}, "edgekind")
}

func (k ImplKind) String() string {
	return types.EnumName(k, []string{"", "builtin", "http", "exec", "agent", "mcp"}, "implkind")
}

func (k AgentKind) String() string {
	return types.EnumName(k, []string{"", "llm", "chain", "parallel", "cycle"}, "agentkind")
}

func (g Grant) String() string { return types.EnumName(g, []string{"", "read", "exec"}, "grant") }

func (k PolicyKind) String() string {
	return types.EnumName(k, []string{"", "summary", "compaction", "recall", "memory", "evolution"}, "policykind")
}

func (k AttrKind) String() string {
	return types.EnumName(k, []string{"", "const", "env", "code", "ref", "refs"}, "attrkind")
}

func (k RefKind) String() string {
	return types.EnumName(k, []string{"", "graph", "agent", "tool", "model", "skill", "policy"}, "refkind")
}

func (k ProtocolKind) String() string {
	return types.EnumName(k, []string{"", "agui", "a2a", "openai", "mcp"}, "protocol")
}

func (k ExpectKind) String() string {
	return types.EnumName(k, []string{"", "cond", "order"}, "expectkind")
}

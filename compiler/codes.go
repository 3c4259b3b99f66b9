package compiler

import "github.com/agentc/agentc/lang/diag"

// Codes owned by the compiler: T (types and expressions), G (graph structure
// and proofs), P (policies, tools, skills, models, serve and test blocks).
// Codes are append-only; spec/diagnostics.md is generated from the registry
// and each code's example under testdata/invalid.
const (
	TypeMismatch     diag.Code = "T301"
	InvalidOperation diag.Code = "T302"
	UnknownField     diag.Code = "T303"
	InvalidReducer   diag.Code = "T304"
	WrongArgCount    diag.Code = "T305"
	Unassigned       diag.Code = "T306"
	SecretEscapes    diag.Code = "T307"
	NotEnumMember    diag.Code = "T308"
	MissingToolArg   diag.Code = "T309"
	UnknownToolArg   diag.Code = "T310"
	BadInto          diag.Code = "T311"
	OptionalAccess   diag.Code = "T312"
	NotConstant      diag.Code = "T313"
	RecursiveType    diag.Code = "T314"
	FuncNotAllowed   diag.Code = "T315"
	InvalidListSize  diag.Code = "T316"

	UnreachableNode    diag.Code = "G401"
	NoPathToEnd        diag.Code = "G402"
	UnboundedCycle     diag.Code = "G403"
	NonExhaustive      diag.Code = "G404"
	MisplacedOtherwise diag.Code = "G405"
	MixedEdges         diag.Code = "G406"
	DuplicateEdge      diag.Code = "G407"
	StartEndMisuse     diag.Code = "G408"
	NeedsJoin          diag.Code = "G409"
	NeedlessJoin       diag.Code = "G410"
	JoinDeadlock       diag.Code = "G411"
	WriteConflict      diag.Code = "G412"
	InvalidBound       diag.Code = "G413"
	JoinRefire         diag.Code = "G414"
	InvalidMapBody     diag.Code = "G415"
	BudgetBelowMinimum diag.Code = "G416"
	BudgetUnbounded    diag.Code = "G417"

	LiteralSecret       diag.Code = "P501"
	InvalidValue        diag.Code = "P502"
	BadPath             diag.Code = "P503"
	FileMissing         diag.Code = "P504"
	ToolInputRecord     diag.Code = "P505"
	UnknownBuiltin      diag.Code = "P506"
	RecursiveCall       diag.Code = "P507"
	UnknownErrorKind    diag.Code = "P508"
	CacheSideEffect     diag.Code = "P509"
	CompactionOverlap   diag.Code = "P510"
	ClauseNotAllowed    diag.Code = "P511"
	NoInputBinding      diag.Code = "P512"
	InvalidExpect       diag.Code = "P513"
	SkillFile           diag.Code = "P514"
	ShellInterpolation  diag.Code = "P515"
	WeakToolEffect      diag.Code = "P516"
	MCPNotPinned        diag.Code = "P517"
	MCPLockInvalid      diag.Code = "P518"
	MCPToolGone         diag.Code = "P519"
	MCPArgRequired      diag.Code = "P520"
	MCPArgType          diag.Code = "P521"
	MCPOutputDrift      diag.Code = "P522"
	MCPWeakEffect       diag.Code = "P523"
	FallbackCycle       diag.Code = "P524"
	FallbackUnsupported diag.Code = "P525"
	FallbackWindow      diag.Code = "P526"
)

func init() {
	diag.Register(
		diag.CodeInfo{Code: TypeMismatch, Severity: diag.Error, Title: "type mismatch", Doc: "A value's type is not assignable where it is used: an attribute, a tool argument, a state default, a set value, a test input or answer, a list element."},
		diag.CodeInfo{Code: InvalidOperation, Severity: diag.Error, Title: "invalid operation", Doc: "An operator or selector does not apply to its operand types: arithmetic on strings, `and` on non-bool values, `in` against a non-container, ordering of unordered values, comparison of unrelated types, indexing a record."},
		diag.CodeInfo{Code: UnknownField, Severity: diag.Error, Title: "unknown field", Doc: "A selector or record literal names a field the record type does not have."},
		diag.CodeInfo{Code: InvalidReducer, Severity: diag.Error, Title: "invalid reducer", Doc: "A state field's reducer does not fit its type: append needs a list, merge a map or record, sum an int, float or duration, max/min an ordered type; reducers other than replace need a non-optional field."},
		diag.CodeInfo{Code: WrongArgCount, Severity: diag.Error, Title: "wrong number of arguments", Doc: "A function is called with too few or too many arguments."},
		diag.CodeInfo{Code: Unassigned, Severity: diag.Error, Title: "field may be unassigned", Doc: "A state field is read where it may not have been written: it has no default, and some path from start to the reading node does not write it (or, for an optional field, the read selects through it). The detail shows one such path."},
		diag.CodeInfo{Code: SecretEscapes, Severity: diag.Error, Title: "secret escapes", Doc: "A secret would be stored, interpolated or logged: a state field of type secret, or a secret value interpolated into a string."},
		diag.CodeInfo{Code: NotEnumMember, Severity: diag.Error, Title: "not an enum member", Doc: "A string literal compared with, assigned to or tested for membership in an enum value is not one of the enum's literals."},
		diag.CodeInfo{Code: MissingToolArg, Severity: diag.Error, Title: "missing tool argument", Doc: "A tool node does not set a field of the tool's input record that has no default and is not optional (also for sub-graph calls)."},
		diag.CodeInfo{Code: UnknownToolArg, Severity: diag.Error, Title: "unknown tool argument", Doc: "A tool node sets a field the tool's input record does not have (also for sub-graph calls)."},
		diag.CodeInfo{Code: BadInto, Severity: diag.Error, Title: "invalid into target", Doc: "A node's output cannot be stored in its `into` field under the field's reducer, or the node produces no value (set, join, a sub-graph without an output binding)."},
		diag.CodeInfo{Code: OptionalAccess, Severity: diag.Error, Title: "selection through optional", Doc: "A selector reads through an optional value nested inside a record. Only top-level state fields are narrowed by definite assignment; compare the nested value with null instead."},
		diag.CodeInfo{Code: NotConstant, Severity: diag.Error, Title: "not a constant", Doc: "A value that must be known at compile time is not a literal: a state or record default, an enum literal, an env() argument."},
		diag.CodeInfo{Code: RecursiveType, Severity: diag.Error, Title: "recursive type", Doc: "A named type refers to itself, directly or through other named types."},
		diag.CodeInfo{Code: FuncNotAllowed, Severity: diag.Error, Title: "function not allowed here", Doc: "A function is called outside the places it belongs: env() only in model, serve and tool blocks; summary triggers only in `trigger`; visited() only in tests."},
		diag.CodeInfo{Code: InvalidListSize, Severity: diag.Error, Title: "invalid list size", Doc: "A `max N` list size is not a whole number from 1 to 2147483647, is declared on a field that is not a list (or on a record field rather than a state field), or a list literal written to the field (its default, a set value, a test input) holds more than N elements."},

		diag.CodeInfo{Code: UnreachableNode, Severity: diag.Error, Title: "unreachable node", Doc: "No path of edges (including catch and else routes) leads from start to the node."},
		diag.CodeInfo{Code: NoPathToEnd, Severity: diag.Error, Title: "no path to end", Doc: "No path leads from the node to end: it has no out-edges, or all its paths loop forever."},
		diag.CodeInfo{Code: UnboundedCycle, Severity: diag.Error, Title: "unbounded cycle", Doc: "A cycle of edges contains no edge with `max N`, so nothing bounds how often it runs."},
		diag.CodeInfo{Code: NonExhaustive, Severity: diag.Error, Title: "switch not exhaustive", Doc: "The `when` edges of a node have no `otherwise` and their conditions are not provably total (a bool tested both ways, or every member of an enum)."},
		diag.CodeInfo{Code: MisplacedOtherwise, Severity: diag.Error, Title: "misplaced otherwise", Doc: "An `otherwise` edge is not the last edge of its source's switch, is repeated, or has no `when` edges before it."},
		diag.CodeInfo{Code: MixedEdges, Severity: diag.Error, Title: "mixed edges", Doc: "One source has both unconditional edges (fan-out) and `when`/`otherwise` edges (a switch). Route through an intermediate node."},
		diag.CodeInfo{Code: DuplicateEdge, Severity: diag.Error, Title: "duplicate edge", Doc: "An edge repeats another edge of the same source, or a `when` condition repeats an earlier one, so the later edge never fires."},
		diag.CodeInfo{Code: StartEndMisuse, Severity: diag.Error, Title: "misuse of start or end", Doc: "An edge leads into start or out of end, or the graph has no edge out of start."},
		diag.CodeInfo{Code: NeedsJoin, Severity: diag.Error, Title: "concurrent in-edges need a join", Doc: "A node has in-edges from branches that may run concurrently, so it would run once per arriving branch. Make it a `join all` or `join any` node."},
		diag.CodeInfo{Code: NeedlessJoin, Severity: diag.Warning, Title: "join without concurrent predecessors", Doc: "A join node's predecessors never run concurrently; it behaves like a plain node."},
		diag.CodeInfo{Code: JoinDeadlock, Severity: diag.Error, Title: "join deadlock", Doc: "A `join all` waits for a predecessor that a condition, catch route or loop exit can skip in a wave where the join is still activated, so the join would wait forever. The message names the branch that skips it."},
		diag.CodeInfo{Code: WriteConflict, Severity: diag.Error, Title: "concurrent writes", Doc: "Two nodes that may run in the same superstep write one state field whose reducer is replace. Declare a reducer (append, merge, sum, max, min) or serialize the nodes."},
		diag.CodeInfo{Code: InvalidBound, Severity: diag.Error, Title: "invalid bound", Doc: "A `max N` loop bound is below 1."},
		diag.CodeInfo{Code: JoinRefire, Severity: diag.Warning, Title: "join predecessor may complete twice", Doc: "A join predecessor lies on a cycle that does not pass through the join, so it may complete more than once per wave; the join counts only its first completion."},
		diag.CodeInfo{Code: BudgetBelowMinimum, Severity: diag.Error, Title: "budget below the cheapest path", Doc: "A budget's `model_calls` is below the fewest model calls any run makes on its way from start to end (each llm call at least one, a catch route none): every run would stop with `budget_exceeded`."},
		diag.CodeInfo{Code: BudgetUnbounded, Severity: diag.Warning, Title: "budget without a bound", Doc: "A runnable with a budget has no upper bound the compiler can prove: a map over a list of unknown size, or an agent whose tools run agents (a reply may call them any number of times). The budget still holds at run time; the compiler cannot tell whether a run fits in it."},
		diag.CodeInfo{Code: InvalidMapBody, Severity: diag.Error, Title: "invalid map body", Doc: "A map node's body is not a call (llm, tool, agent or graph), or the map iterates over something that is not a list."},

		diag.CodeInfo{Code: LiteralSecret, Severity: diag.Error, Title: "literal secret", Doc: "A secret attribute (api_key) is written as a literal. Secrets come only from env()."},
		diag.CodeInfo{Code: InvalidValue, Severity: diag.Error, Title: "invalid value", Doc: "An attribute or policy value is out of range or not one of the allowed words (temperature outside [0, 2], a ratio outside (0, 1], retry 0, a backoff minimum above its maximum, an unknown provider, a serve path used twice)."},
		diag.CodeInfo{Code: BadPath, Severity: diag.Error, Title: "invalid path", Doc: "A skill folder or fixture path is absolute or uses backslashes, a skill folder leaves the module root, or a fixture path leaves the folder of the file that names it."},
		diag.CodeInfo{Code: FileMissing, Severity: diag.Error, Title: "file not found", Doc: "A skill folder has no SKILL.md, or a test fixture file does not exist."},
		diag.CodeInfo{Code: ToolInputRecord, Severity: diag.Error, Title: "tool input is not a record", Doc: "A tool's input type must be a record (models call tools with JSON objects); its output must not contain a secret."},
		diag.CodeInfo{Code: UnknownBuiltin, Severity: diag.Error, Title: "unknown builtin", Doc: "`run = builtin.NAME` names no builtin tool implementation."},
		diag.CodeInfo{Code: RecursiveCall, Severity: diag.Error, Title: "recursive composition", Doc: "An agent composition contains itself, or a graph calls itself through sub-graph nodes."},
		diag.CodeInfo{Code: UnknownErrorKind, Severity: diag.Error, Title: "unknown error kind", Doc: "A `retry ... on [...]` list names an error kind the runtime does not raise."},
		diag.CodeInfo{Code: CacheSideEffect, Severity: diag.Warning, Title: "cached side effect", Doc: "A node whose effect is side_effect is cached: a cache hit skips the side effect."},
		diag.CodeInfo{Code: CompactionOverlap, Severity: diag.Error, Title: "tool both kept and cleaned", Doc: "A compaction policy lists a tool in both `keep` and `force_clean`."},
		diag.CodeInfo{Code: ClauseNotAllowed, Severity: diag.Error, Title: "clause not allowed", Doc: "A node clause does not apply to the node's kind (into on set or join, retry on a map outside its body, any clause on a join), or is repeated."},
		diag.CodeInfo{Code: NoInputBinding, Severity: diag.Error, Title: "runnable has no input", Doc: "A test gives an input to a graph that has no `input` binding."},
		diag.CodeInfo{Code: InvalidExpect, Severity: diag.Error, Title: "invalid expectation", Doc: "`expect A before B` needs visited(node) on both sides."},
		diag.CodeInfo{Code: SkillFile, Severity: diag.Error, Title: "invalid SKILL.md", Doc: "A skill's SKILL.md does not start with a YAML front matter between `---` lines, the YAML does not parse, a key is unknown or repeated, a value has the wrong type, or name (lower-case letters, digits, - and _) or description is missing. The position is in SKILL.md; the related location is the skill declaration."},
		diag.CodeInfo{Code: ShellInterpolation, Severity: diag.Error, Title: "input in a shell script", Doc: "An exec command runs a shell or an interpreter with code from an argument (`sh -c SCRIPT`, also bash, zsh, dash, ksh, fish, csh, busybox; python -c; perl, ruby and node -e; an option cluster such as -ec counts) and that argument is not a constant string: an interpolated value would be parsed as code (shell injection). Keep the script constant and pass values as the arguments after it (`[\"sh\", \"-c\", \"echo \\\"$1\\\"\", \"sh\", \"{input.x}\"]`)."},
		diag.CodeInfo{Code: WeakToolEffect, Severity: diag.Error, Title: "tool effect weaker than its agent", Doc: "A tool run by an agent (`run = agent NAME`) declares an effect weaker than the agent's, the strongest of what the agent can reach (its tools, its agents, `side_effect` for an `exec` skill grant). The effect decides whether a crash may re-run the call: declare the agent's effect or a stronger one."},
		diag.CodeInfo{Code: MCPNotPinned, Severity: diag.Warning, Title: "MCP server not pinned", Doc: "A `run = mcp` tool's server has no pinned tool list: the declaring file has no lock file next to it (`x.agent` → `x.mcp.lock`), or the lock file does not list the server. Its calls are checked against the declaration only. Run `agentc mcp lock FILE` to pin the server's tools and schemas (spec/tools.md \"Pinned schemas\")."},
		diag.CodeInfo{Code: MCPLockInvalid, Severity: diag.Error, Title: "invalid MCP lock file", Doc: "The lock file next to the declaring file does not decode: not JSON, an unknown member, another format version, a server without exactly one of url and command, a server or tool listed twice, a schema that is not a JSON object. Rewrite it with `agentc mcp lock FILE`."},
		diag.CodeInfo{Code: MCPToolGone, Severity: diag.Error, Title: "MCP tool gone", Doc: "The pinned tool list of the tool's server has no tool of the name the `mcp` block's `tool` gives: the server dropped or renamed it. Reported at the declaration and at each node that calls it."},
		diag.CodeInfo{Code: MCPArgRequired, Severity: diag.Error, Title: "required MCP argument missing", Doc: "The pinned input schema requires an argument that the tool's declared input does not have (or has as optional without a default), or that a tool node does not give and the input gives no default for: the server added a required argument."},
		diag.CodeInfo{Code: MCPArgType, Severity: diag.Error, Title: "MCP argument does not match", Doc: "An argument's declared type does not fit the pinned input schema's property (its type or enum changed, or the server no longer has the argument and forbids others). Reported at the declaration's input and at the argument of each tool node that gives it."},
		diag.CodeInfo{Code: MCPOutputDrift, Severity: diag.Error, Title: "MCP output does not match", Doc: "The tool's declared output type cannot hold what the pinned output schema says the server returns: a member the output needs is not in the schema, or a type differs. A `string` output takes the result's text and is not checked."},
		diag.CodeInfo{Code: MCPWeakEffect, Severity: diag.Error, Title: "effect weaker than a destructive hint", Doc: "A `run = mcp` tool declares `effect = read_only` or `idempotent`, but the pinned annotations mark the server's tool destructive (`destructiveHint: true`): a crash could re-run the call. Drop the effect (it then defaults from the annotations), or keep it with `effect_override = \"why\"` in the `mcp` block."},
		diag.CodeInfo{Code: FallbackCycle, Severity: diag.Error, Title: "fallback to itself", Doc: "A `fallback` list names the model it belongs to: a model's own name, or, on an agent, the agent's model. (A model named twice is N202.)"},
		diag.CodeInfo{Code: FallbackUnsupported, Severity: diag.Error, Title: "fallback cannot stand in", Doc: "A fallback model lacks what a call of the agent needs: `tool_calls = false` where the agent has tools, or `structured_output = false` where the answer is decoded as a type (the agent's `output`, or an llm node's `into` type). Reported at the fallback, or at the node's `into`."},
		diag.CodeInfo{Code: FallbackWindow, Severity: diag.Error, Title: "fallback window too small", Doc: "A fallback model's `context_window` is smaller than that of the agent's model: the history and the context policies are sized for the agent's model."},
	)
}

package bytecode

import (
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// This file builds, by hand and through the builder API the compiler uses,
// the program for LANGUAGE.md's worked example (examples/support). It is the
// fixture for the round-trip, golden, verify and fuzz tests.

type tb struct {
	testing.TB
	pb *ProgramBuilder
}

func (t *tb) must(err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (t *tb) cnst(v types.Value) uint32 {
	t.Helper()
	i, err := t.pb.Const(v)
	t.must(err)
	return i
}

func (t *tb) enum(name string, lits ...string) *types.Type {
	t.Helper()
	e, err := types.NewEnum(name, lits)
	t.must(err)
	return e
}

func (t *tb) record(name string, fields ...types.Field) *types.Type {
	t.Helper()
	r, err := types.NewRecord(name, fields)
	t.must(err)
	return r
}

// chunk builds a chunk with emit and finishes it.
func (t *tb) chunk(name string, state int32, locals uint32, line uint32, emit func(c *ChunkBuilder)) uint32 {
	t.Helper()
	c := t.pb.NewChunk(name, state, locals)
	c.SetSpan(Span{File: 0, StartLine: line, StartCol: 5, EndLine: line, EndCol: 40, StartOff: line * 50, EndOff: line*50 + 35})
	emit(c)
	i, err := c.Finish()
	t.must(err)
	return i
}

func sp(line, col uint32) Span {
	return Span{File: 0, StartLine: line, StartCol: col, EndLine: line, EndCol: col + 10, StartOff: line * 50, EndOff: line*50 + 10}
}

func str(s string) types.Value { return types.MakeString(s) }

func attrConst(t *tb, name string, v types.Value) Attr {
	return Attr{Name: name, Kind: AttrConst, Const: t.cnst(v)}
}

func supportProgram(tt testing.TB) *Program {
	t := &tb{TB: tt, pb: NewProgramBuilder()}
	pb := t.pb
	p := pb.Program()
	p.Workflow = "support"
	p.Doc = "Investigates production TLS errors and writes a report"
	pb.File("examples/support/support.agent")

	// Types.
	triage := t.record("Triage",
		types.Field{Name: "verdict", Type: t.enum("", "certificate", "network", "other")},
		types.Field{Name: "hosts", Type: types.ListOf(types.StringType)})
	decision := t.record("Decision",
		types.Field{Name: "approved", Type: types.BoolType},
		types.Field{Name: "feedback", Type: types.OptionalOf(types.StringType)})
	tStr := pb.Type(types.StringType)
	tTriage := pb.Type(types.OptionalOf(triage))
	tList := pb.Type(types.ListOf(types.StringType))
	tDecision := pb.Type(decision)
	tDecisionOpt := pb.Type(types.OptionalOf(decision))

	// State.
	p.States = []State{{Name: "Case", Span: sp(31, 1), Fields: []StateField{
		{Name: "question", Type: tStr, Reducer: ReduceReplace, Span: sp(32, 3)},
		{Name: "triage", Type: tTriage, Reducer: ReduceReplace, Span: sp(33, 3)},
		{Name: "evidence", Type: tList, Reducer: ReduceAppend, Span: sp(34, 3)},
		{Name: "report", Type: tStr, HasDefault: true, Default: t.cnst(str("")), Reducer: ReduceReplace, Span: sp(35, 3)},
		{Name: "decision", Type: tDecisionOpt, Reducer: ReduceReplace, Span: sp(36, 3)},
	}}}
	const (
		fQuestion = iota
		fTriage
		fEvidence
		fReport
		fDecision
	)

	// Models, tools, skills, policies, agents.
	p.Models = []Model{{Name: "fast", Provider: "openai", Span: sp(5, 1), Attrs: []Attr{
		attrConst(t, "name", str("gpt-4o-mini")),
		{Name: "base_url", Kind: AttrEnv, Env: EnvRef{Var: "OPENAI_BASE_URL", HasDefault: true, Type: tStr}},
		{Name: "api_key", Kind: AttrEnv, Env: EnvRef{Var: "OPENAI_API_KEY", Type: pb.Type(types.SecretType)}},
		attrConst(t, "context_window", types.MakeInt(128000)),
	}}}
	certIn := t.record("", types.Field{Name: "host", Type: types.StringType},
		types.Field{Name: "port", Type: types.IntType, HasDefault: true, Default: types.MakeInt(443)})
	certOut := t.record("", types.Field{Name: "chain", Type: types.ListOf(types.StringType)},
		types.Field{Name: "expires", Type: types.StringType})
	logURL := t.chunk("tool.log_dump.url", None, 1, 20, func(c *ChunkBuilder) {
		c.Const(str("https://logs.internal/"))
		c.Emit(LOADLOCAL, 0)
		c.Emit(FIELD, t.cnst(str("service")))
		c.Emit(INTERP, 2)
		c.Emit(RETURN, 0)
	})
	p.Tools = []Tool{
		{Name: "cert_scan", Doc: "Reads the certificate chain of a host", Input: pb.Type(certIn), Output: pb.Type(certOut),
			Effect: EffectReadOnly, Impl: ToolImpl{Kind: ImplBuiltin, Builtin: "tls_chain"}, Span: sp(14, 1)},
		{Name: "log_dump", Doc: "Fetches recent error logs", Input: pb.Type(t.record("", types.Field{Name: "service", Type: types.StringType})),
			Output: tStr, Effect: EffectReadOnly, Span: sp(20, 1),
			Impl: ToolImpl{Kind: ImplHTTP, Method: "GET", URL: logURL, Headers: []Attr{
				{Name: "Authorization", Kind: AttrEnv, Env: EnvRef{Var: "LOGS_TOKEN", Type: pb.Type(types.SecretType)}},
			}}},
		{Name: "session_search", Doc: "Searches the session history", Input: pb.Type(t.record("", types.Field{Name: "query", Type: types.StringType})),
			Output: pb.Type(types.JSONType), Effect: EffectReadOnly, Impl: ToolImpl{Kind: ImplBuiltin, Builtin: "session_search"}},
		{Name: "restart", Doc: "Restarts a service", Input: pb.Type(t.record("", types.Field{Name: "service", Type: types.StringType})),
			Output: tStr, Effect: EffectSideEffect, Span: sp(26, 1),
			Impl: ToolImpl{Kind: ImplExec, Timeout: 10 * time.Second, Argv: []uint32{
				t.chunk("tool.restart.argv.0", None, 0, 26, func(c *ChunkBuilder) { c.Const(str("systemctl")); c.Emit(RETURN, 0) }),
				t.chunk("tool.restart.argv.1", None, 1, 26, func(c *ChunkBuilder) {
					c.Emit(LOADLOCAL, 0)
					c.Emit(FIELD, t.cnst(str("service")))
					c.Emit(RETURN, 0)
				}),
			}}},
	}
	p.Skills = []Skill{{Name: "diagnostics", Path: "skills/cert-diagnostics", Span: sp(28, 1)}}
	ratio := t.chunk("summary.rolling.trigger", None, 0, 38, func(c *ChunkBuilder) {
		c.Const(types.MakeFloat(0.5))
		c.Call("context_ratio", 1)
		c.Emit(RETURN, 0)
	})
	p.Policies = []Policy{
		{Kind: PolicySummary, Name: "rolling", Span: sp(38, 1), Attrs: []Attr{
			{Name: "trigger", Kind: AttrCode, Code: ratio},
			attrConst(t, "min_tokens", types.MakeInt(2000)),
			{Name: "model", Kind: AttrRef, Refs: []Ref{{Kind: RefModel, Index: 0}}},
		}},
		{Kind: PolicyCompaction, Name: "careful", Span: sp(39, 1), Attrs: []Attr{
			{Name: "force_clean", Kind: AttrRefs, Refs: []Ref{{Kind: RefTool, Index: 1}}},
			{Name: "keep", Kind: AttrRefs, Refs: []Ref{{Kind: RefTool, Index: 0}}},
			attrConst(t, "sync_ratio", types.MakeFloat(0.7)),
		}},
		{Kind: PolicyRecall, Name: "everywhere", Span: sp(41, 1), Attrs: []Attr{
			attrConst(t, "search", types.MakeBool(true)),
			attrConst(t, "preload", types.MakeInt(3)),
		}},
	}
	meta := t.chunk("agent.investigator.metadata", None, 0, 50, func(c *ChunkBuilder) {
		c.Const(str("tls"))
		c.Const(types.MakeInt(2))
		c.Emit(NEG, 0)
		c.Emit(CONV, pb.Type(types.FloatType))
		c.Emit(MAKELIST, 1)
		c.Const(str("k"))
		c.Emit(TRUE, 0)
		c.Emit(NOT, 0)
		c.Emit(MAKEMAP, 1)
		c.Emit(MAKERECORD, pb.Type(t.record("Meta",
			types.Field{Name: "area", Type: types.StringType},
			types.Field{Name: "weights", Type: types.ListOf(types.FloatType)},
			types.Field{Name: "flags", Type: types.MapOf(types.BoolType)})))
		c.Emit(RETURN, 0)
	})
	p.Agents = []Agent{{Name: "investigator", Kind: AgentLLM, Model: 0, Span: sp(43, 1),
		Instruction: int32(t.chunk("agent.investigator.instruction", None, 0, 46, func(c *ChunkBuilder) {
			c.Const(str("You investigate TLS incidents. Use cert_scan for evidence. Cite event ids.\n" +
				"Reply with JSON like {\"verdict\": \"...\"} when asked to triage.\n"))
			c.Emit(RETURN, 0)
		})),
		Tools:    []uint32{0, 1, 2},
		Skills:   []SkillGrant{{Skill: 0, Grant: GrantRead}},
		Policies: []uint32{0, 1, 2},
		MaxTurns: 8,
		Until:    None,
		Graph:    None,
		Attrs:    []Attr{{Name: "metadata", Kind: AttrCode, Code: meta}},
	}}

	// The graph.
	const (
		nStart = iota
		nEnd
		nTriage
		nScan
		nWrite
		nApprove
		nFallback
	)
	prompt := func(line uint32, text string, field uint32) uint32 {
		return t.chunk("investigate.prompt", 0, 0, line, func(c *ChunkBuilder) {
			c.Const(str(text))
			c.Emit(LOAD, field)
			c.Emit(INTERP, 2)
			c.Emit(RETURN, 0)
		})
	}
	isCert := t.chunk("investigate.triage.edge.0", 0, 0, 65, func(c *ChunkBuilder) {
		c.Emit(LOAD, fTriage)
		c.Emit(FIELD, t.cnst(str("verdict")))
		c.Const(str("certificate"))
		c.Emit(EQ, 0)
		c.Emit(RETURN, 0)
	})
	hosts := t.chunk("investigate.scan.list", 0, 0, 57, func(c *ChunkBuilder) {
		c.Emit(LOAD, fTriage)
		c.Emit(FIELD, t.cnst(str("hosts")))
		c.Emit(RETURN, 0)
	})
	host := t.chunk("investigate.scan.arg.host", 0, 1, 58, func(c *ChunkBuilder) {
		c.Emit(LOADLOCAL, 0)
		c.Emit(RETURN, 0)
	})
	approved := t.chunk("investigate.approve.edge.0", 0, 0, 70, func(c *ChunkBuilder) {
		c.Emit(LOAD, fDecision)
		c.Emit(FIELD, t.cnst(str("approved")))
		c.Emit(RETURN, 0)
	})
	couldNot := t.chunk("investigate.fallback.set.report", 0, 0, 63, func(c *ChunkBuilder) {
		c.Const(str("Could not reach "))
		c.Emit(LOAD, fTriage)
		c.Emit(FIELD, t.cnst(str("hosts")))
		c.Emit(INTERP, 2)
		c.Emit(RETURN, 0)
	})
	publish := t.chunk("investigate.approve.prompt", 0, 0, 62, func(c *ChunkBuilder) {
		c.Const(str("Publish this report?"))
		c.Emit(RETURN, 0)
	})
	always := func(to uint32, line uint32) Edge {
		return Edge{Kind: EdgeAlways, Cond: None, Target: to, Else: None, Span: sp(line, 3)}
	}
	noRetry := Retry{}
	p.Graphs = []Graph{{Name: "investigate", State: 0, Input: fQuestion, Output: fReport, Span: sp(55, 1), Nodes: []Node{
		nStart: {Name: "start", Kind: NodeStart, Into: None, Catch: None, Effect: EffectReadOnly,
			Edges: []Edge{always(nTriage, 65)}},
		nEnd: {Name: "end", Kind: NodeEnd, Into: None, Catch: None, Effect: EffectReadOnly},
		nTriage: {Name: "triage", Kind: NodeLLM, Span: sp(56, 3), Into: fTriage, Catch: None, Effect: EffectSideEffect, Retry: noRetry,
			Call: Call{Kind: CallLLM, Callee: 0, Args: []Arg{{Name: "prompt", Code: prompt(56, "Triage: ", fQuestion)}}},
			Edges: []Edge{
				{Kind: EdgeWhen, Cond: int32(isCert), Target: nScan, Else: None, Span: sp(66, 3)},
				{Kind: EdgeOtherwise, Cond: None, Target: nEnd, Else: None, Span: sp(67, 3)},
			}},
		nScan: {Name: "scan", Kind: NodeMap, Span: sp(57, 3), Into: fEvidence, Effect: EffectReadOnly,
			Call: Call{Kind: CallTool, Callee: 0, Args: []Arg{{Name: "host", Code: host}}},
			Map:  MapSpec{Var: "h", List: hosts, Concurrency: 4},
			Retry: Retry{MaxAttempts: 3, BackoffMin: 200 * time.Millisecond, BackoffMax: 5 * time.Second, Jitter: true,
				On: []string{"timeout", "unavailable"}},
			Timeout: 30 * time.Second, Catch: nFallback, Cache: true, CacheTTL: time.Hour,
			Edges: []Edge{always(nWrite, 68)}},
		nWrite: {Name: "write", Kind: NodeLLM, Span: sp(60, 3), Into: fReport, Catch: None, Effect: EffectSideEffect,
			Call:  Call{Kind: CallLLM, Callee: 0, Args: []Arg{{Name: "prompt", Code: prompt(60, "Write the report from ", fEvidence)}}},
			Edges: []Edge{always(nApprove, 69)}},
		nApprove: {Name: "approve", Kind: NodeInterrupt, Span: sp(61, 3), Into: fDecision, Catch: None, Effect: EffectReadOnly,
			Interrupt: InterruptSpec{Prompt: publish, Resume: tDecision},
			Edges: []Edge{
				{Kind: EdgeWhen, Cond: int32(approved), Target: nEnd, Else: None, Span: sp(70, 3)},
				{Kind: EdgeOtherwise, Cond: None, Target: nWrite, Max: 3, Else: nEnd, Span: sp(71, 3)},
			}},
		nFallback: {Name: "fallback", Kind: NodeSet, Span: sp(63, 3), Into: None, Catch: None, Effect: EffectReadOnly,
			Set:   []Assign{{Field: fReport, Code: couldNot}},
			Edges: []Edge{always(nEnd, 72)}},
	}}}

	// Serve.
	p.Serve = &Serve{Run: Ref{Kind: RefGraph, Index: 0}, Span: sp(75, 1), Protocols: []Protocol{
		{Kind: ProtoAGUI, Path: "/agui"},
		{Kind: ProtoA2A, Path: "/a2a", Attrs: []Attr{
			attrConst(t, "name", str("cert-investigator")),
			attrConst(t, "skills", types.MakeList([]types.Value{str("tls-incident")})),
		}},
		{Kind: ProtoOpenAI, Path: "/v1", Attrs: []Attr{attrConst(t, "model", str("support"))}},
	}}

	// Test.
	yes, err := types.MakeRecord(decision.Shape(), []types.Value{types.MakeBool(true), {}})
	t.must(err)
	lenPositive := t.chunk("test.0.expect.1", 0, 0, 88, func(c *ChunkBuilder) {
		c.Emit(LOAD, fEvidence)
		c.Call("len", 1)
		c.Const(types.MakeInt(0))
		c.Emit(GT, 0)
		c.Emit(RETURN, 0)
	})
	// triage.verdict == "certificate" and len(evidence) > 0, short-circuit.
	both := t.chunk("test.0.expect.2", 0, 0, 89, func(c *ChunkBuilder) {
		done := c.NewLabel()
		c.Emit(LOAD, fTriage)
		c.Emit(FIELD, t.cnst(str("verdict")))
		c.Const(str("certificate"))
		c.Emit(EQ, 0)
		c.Emit(DUP, 0)
		c.Jump(JMPIFFALSE, done)
		c.Emit(POP, 0)
		c.Emit(LOAD, fEvidence)
		c.Call("len", 1)
		c.Const(types.MakeInt(0))
		c.Emit(GT, 0)
		c.Bind(done)
		c.Emit(RETURN, 0)
	})
	p.Tests = []Test{{Name: "expired intermediate is reported", Run: Ref{Kind: RefGraph, Index: 0}, Span: sp(82, 1),
		Input:    int32(t.cnst(str("prod.example.com fails with x509: certificate signed by unknown authority"))),
		Fixtures: []Fixture{{Target: Ref{Kind: RefModel, Index: 0}, Path: "testdata/expired.yaml"}},
		Answers:  []Answer{{Node: nApprove, Value: t.cnst(yes), Span: sp(86, 3)}},
		Expects: []Expect{
			{Kind: ExpectCond, Code: int32(isCert), Span: sp(87, 3)},
			{Kind: ExpectCond, Code: int32(lenPositive), Span: sp(88, 3)},
			{Kind: ExpectCond, Code: int32(both), Span: sp(89, 3)},
			{Kind: ExpectOrder, Code: None, First: nScan, Then: nWrite, Span: sp(90, 3)},
		},
	}}
	return p
}

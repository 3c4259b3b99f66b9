package runtime

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// Invocation is the work order of one external request against a run: an
// AG-UI request, an OpenAI request, a CLI run, a resume (spec/runner.md).
// The Runner reads it and never modifies it.
type Invocation struct {
	// ID identifies the invocation in its events; "inv_<ULID>" when empty
	// (protocol adapters pass their request id).
	ID string
	// User and Session name the session (the app is the Runner's); the
	// session is created on first use.
	User, Session string
	// Input is the user's message. It is written to the runnable's input
	// field: as is for a string field, decoded as JSON for other types.
	// Ignored for a resume.
	Input string
	// Runnable names the graph or agent to run. Empty: the serve block's
	// run, else the only runnable. Ignored for a resume (the run's runnable
	// is kept).
	Runnable string
	// Resume, when set, continues an interrupted (or canceled, failed, or
	// needs_decision) run of this session instead of starting a new one.
	Resume *ResumeRequest
	// Sampling, when set, is the request's sampling parameters for the
	// model calls this invocation makes (the llm loop's requests). The
	// input event records it.
	Sampling *Sampling
	// ClientTools are tools the caller runs itself (an OpenAI request's
	// function tools): every llm call of the invocation offers them to its
	// model after the agent's own; a reply that calls one pauses the call
	// until the caller sends the results (clienttools.go). Their names must
	// not be the program's tools' (ErrInvalidInvocation).
	ClientTools []ToolSpec
	// Files are the files and images the request carries (files.go):
	// stored as artifacts of the session when the invocation is admitted,
	// recorded in the input event, and given as images to the llm calls
	// whose model takes them.
	Files []InputFile
	// Deadline, when set, bounds the run's wall time: at it the run is
	// canceled, as when its caller's ctx is done, but its events still
	// reach the caller, run_finished (canceled) included. A server's
	// per-run limit is one (server.Limits.RunTimeout): the run's own
	// context carries it, not a context of the caller's around it.
	Deadline time.Time
	// Records, when set, makes the documents a new run's admission writes
	// with it, in the same write, given the run's id (a protocol's record
	// of the request that started it: AG-UI's runId). Only on a Runner
	// that admits new runs in one write (AdmitsInOneWrite) and for a new
	// run: else Start fails with ErrInvalidInvocation. An IfAbsent record
	// whose key exists fails Start with an error wrapping
	// store.ErrDocExists, and nothing of the run is written.
	Records func(run string) []store.DocOp
}

// Sampling is a request's sampling parameters (spec/serve.md, "Sampling
// parameters"). A set field replaces the model declaration's value, except
// MaxTokens, which may lower the declared max_tokens but never exceed it.
// The protocol adapter checks the ranges; the Runner does not.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"` // 0: none
	Stop        []string `json:"stop,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// apply writes s's values over the declaration's in req.
func (s *Sampling) apply(req *ModelRequest) {
	if s == nil {
		return
	}
	if s.Temperature != nil {
		req.Temperature = s.Temperature
	}
	if s.TopP != nil {
		req.TopP = s.TopP
	}
	if s.MaxTokens > 0 && (req.MaxTokens <= 0 || s.MaxTokens < req.MaxTokens) {
		req.MaxTokens = s.MaxTokens
	}
	if len(s.Stop) > 0 {
		req.Stop = s.Stop
	}
	if s.Seed != nil {
		req.Seed = s.Seed
	}
}

// ResumeRequest continues a run.
type ResumeRequest struct {
	// Run is the run id (run_<ULID>).
	Run string `json:"run"`
	// Values answer pending interrupts by id: "graph/node" as the interrupt
	// event reports it, or the bare node name (AnswerTarget). Each is
	// decoded as the interrupt's declared type.
	Values map[string]json.RawMessage `json:"values,omitempty"`
	// Decisions settle side effects of a needs_decision run, by the
	// decision's id.
	Decisions map[string]DecisionRequest `json:"decisions,omitempty"`
	// Upgrade moves a run waiting on another program to the Runner's
	// (program.go; at least RunnerConfig.Upgrade applies).
	Upgrade Upgrade `json:"-"`
}

// AnswerTarget finds the pending interrupt a key of ResumeRequest.Values
// answers in a run of runnable root: i is its index in pending (-1: none),
// whose ids id returns, and full its id. A key without "/" is a node of
// root; one with is a full id or, failing that, a path relative to root
// ("fan/2/sub/approve").
func AnswerTarget[T any](root, key string, pending []T, id func(T) string) (full string, i int) {
	full = key
	if !strings.Contains(full, "/") {
		full = root + "/" + key
	}
	i = slices.IndexFunc(pending, func(p T) bool { return id(p) == full })
	if i < 0 && full == key {
		full = root + "/" + key
		i = slices.IndexFunc(pending, func(p T) bool { return id(p) == full })
	}
	return full, i
}

// DecisionRequest settles one side effect that may or may not have
// happened: Action "rerun" (call it again with the same idempotency key),
// "result" (it happened; Value is its result) or "fail" (the attempt
// failed, no further retries).
type DecisionRequest struct {
	Action string          `json:"action"`
	Value  json.RawMessage `json:"value,omitempty"`
}

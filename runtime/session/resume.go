package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// ErrNoRun: the run to resume does not exist.
var ErrNoRun = errors.New("session: no run to resume")

// Resume builds the resume of run (a run id; "latest" is resolved by the
// caller through Runner.LatestResumable, one rule for every front end) with
// value answering its pending interrupts: every one of them, or, when value
// is an object keyed by interrupt ids or node names and more than one is
// pending, each its own. A run that waits on no interrupt (cut off while
// running, or needing a decision) takes no value. It returns the request and
// the session the run belongs to. Errors that name no run wrap ErrNoRun.
func (s *Service) Resume(ctx context.Context, run string, value json.RawMessage) (*runtime.ResumeRequest, store.SessionKey, error) {
	id := run
	r, err := s.st.GetRun(ctx, id)
	if err != nil {
		return nil, store.SessionKey{}, &noRunError{msg: fmt.Sprintf("run %s: %v", id, err), err: err}
	}
	evs, err := s.RunEvents(ctx, r, EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}})
	if err != nil {
		return nil, store.SessionKey{}, err
	}
	var pending []runtime.InterruptInfo
	if len(evs) > 0 && r.Status == store.RunInterrupted {
		pending = evs[len(evs)-1].Interrupts
	}
	vals := map[string]json.RawMessage{}
	var obj map[string]json.RawMessage
	if json.Unmarshal(value, &obj) == nil && len(pending) > 1 {
		for _, p := range pending {
			if v, ok := obj[p.ID]; ok {
				vals[p.ID] = v
			} else if v, ok := obj[p.Node]; ok {
				vals[p.ID] = v
			}
		}
	}
	if len(vals) == 0 && len(value) > 0 {
		for _, p := range pending {
			vals[p.ID] = value
		}
	}
	return &runtime.ResumeRequest{Run: id, Values: vals}, r.Session, nil
}

// noRunError is an ErrNoRun whose message is msg alone.
type noRunError struct {
	msg string
	err error
}

func (e *noRunError) Error() string   { return e.msg }
func (e *noRunError) Unwrap() []error { return []error{ErrNoRun, e.err} }

// ErrBadDecision: a decision names no pending side effect, or its action or
// value is malformed.
var ErrBadDecision = errors.New("session: bad decision")

// Decide adds to req the decisions written as "ID=ACTION" or
// "ID=done:JSON" (the CLI's --decide), for run, a run in needs_decision.
// ID is a decision id as run_finished reports it, or the bare node name
// when one decision of that node is pending. ACTION is done (the side
// effect happened; its result is the JSON after "done:"; "result:" is the
// same), retry (call it again with the same idempotency key; "rerun" is
// the same) or fail (the attempt failed, no further retries): the words of
// runtime.DecisionAnswer, which every front end shares.
func (s *Service) Decide(ctx context.Context, req *runtime.ResumeRequest, specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	answers := make([]namedAnswer, 0, len(specs))
	for _, spec := range specs {
		name, action, ok := strings.Cut(spec, "=")
		if !ok || name == "" || action == "" {
			return fmt.Errorf("%w: %q: want ID=done:JSON, ID=retry or ID=fail", ErrBadDecision, spec)
		}
		verb, value, hasValue := strings.Cut(action, ":")
		switch verb {
		case "result":
			verb = runtime.DecisionDone
		case "rerun":
			verb = runtime.DecisionRetry
		}
		if verb == runtime.DecisionDone && (!hasValue || !json.Valid([]byte(value))) {
			return fmt.Errorf("%w: %s=%s needs the side effect's result as JSON after %q (e.g. %s=done:{\"ok\":true})", ErrBadDecision, name, verb, verb+":", name)
		}
		if hasValue && verb != runtime.DecisionDone {
			return fmt.Errorf("%w: %s=%s takes no value", ErrBadDecision, name, verb)
		}
		a := runtime.DecisionAnswer{Decision: verb}
		if hasValue {
			a.Result = json.RawMessage(value)
		}
		d, err := a.Request()
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadDecision, name, err)
		}
		answers = append(answers, namedAnswer{name, d})
	}
	return s.decide(ctx, req, answers)
}

// DecideAnswers adds to req the decisions of answers, keyed by decision id
// or node name as Decide's specs are, each a runtime.DecisionAnswer in
// JSON (runtime.ParseDecisionAnswer): the inspector API's and the
// protocols' spelling of --decide.
func (s *Service) DecideAnswers(ctx context.Context, req *runtime.ResumeRequest, answers map[string]json.RawMessage) error {
	converted := make(map[string]runtime.DecisionRequest, len(answers))
	for _, name := range slices.Sorted(maps.Keys(answers)) { // the first bad one, by name
		d, err := runtime.ParseDecisionAnswer(answers[name])
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadDecision, name, err)
		}
		converted[name] = d
	}
	return s.DecideRequests(ctx, req, converted)
}

// DecideRequests is DecideAnswers for answers already converted
// (runtime.ParseDecisionAnswer).
func (s *Service) DecideRequests(ctx context.Context, req *runtime.ResumeRequest, answers map[string]runtime.DecisionRequest) error {
	list := make([]namedAnswer, 0, len(answers))
	for name, d := range answers {
		list = append(list, namedAnswer{name, d})
	}
	slices.SortFunc(list, func(a, b namedAnswer) int { return strings.Compare(a.name, b.name) })
	return s.decide(ctx, req, list)
}

type namedAnswer struct {
	name string
	d    runtime.DecisionRequest
}

// decide resolves each answer's name against the run's pending decisions.
func (s *Service) decide(ctx context.Context, req *runtime.ResumeRequest, answers []namedAnswer) error {
	r, err := s.st.GetRun(ctx, req.Run)
	if err != nil {
		return &noRunError{msg: fmt.Sprintf("run %s: %v", req.Run, err), err: err}
	}
	if r.Status != store.RunStatus(runtime.StatusNeedsDecision) {
		return fmt.Errorf("%w: run %s is %s, not %s", ErrBadDecision, req.Run, r.Status, runtime.StatusNeedsDecision)
	}
	evs, err := s.RunEvents(ctx, r, EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}})
	if err != nil {
		return err
	}
	var pending []runtime.DecisionInfo
	if len(evs) > 0 {
		pending = evs[len(evs)-1].Decisions
	}
	for _, a := range answers {
		id, err := resolveDecision(a.name, pending)
		if err != nil {
			return err
		}
		if req.Decisions == nil {
			req.Decisions = map[string]runtime.DecisionRequest{}
		}
		if _, dup := req.Decisions[id]; dup {
			return fmt.Errorf("%w: %s is decided twice", ErrBadDecision, id)
		}
		req.Decisions[id] = a.d
	}
	return nil
}

// resolveDecision returns the id of the pending decision name names: its
// id, or its node when one decision of that node is pending.
func resolveDecision(name string, pending []runtime.DecisionInfo) (string, error) {
	id := ""
	var ids []string
	for _, p := range pending {
		ids = append(ids, p.ID)
		if p.ID == name {
			return name, nil
		}
		if p.Node == name {
			if id != "" {
				return "", fmt.Errorf("%w: node %s has several pending decisions; name one by id (%s)", ErrBadDecision, name, strings.Join(idsOf(pending, name), ", "))
			}
			id = p.ID
		}
	}
	if id == "" {
		return "", fmt.Errorf("%w: %s is not a pending decision (pending: %s)", ErrBadDecision, name, strings.Join(ids, ", "))
	}
	return id, nil
}

func idsOf(pending []runtime.DecisionInfo, node string) []string {
	var out []string
	for _, p := range pending {
		if p.Node == node {
			out = append(out, p.ID)
		}
	}
	return out
}

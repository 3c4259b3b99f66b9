package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	evs, err := s.Events(ctx, r.Session, EventFilter{Run: id, Kinds: []runtime.EventKind{runtime.EventRunFinished}})
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

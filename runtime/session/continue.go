package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// Request is a run a person asks for on a command line (agentc run): a
// new run of Runnable (empty: the default) with Input in session (User,
// Session), or, with Resume, the continuation of that run (a run id or
// "latest") with Value answering its interrupts, Decide settling its side
// effects and Upgrade moving it to the current program.
type Request struct {
	User, Session, Input, Runnable string
	Resume, Value                  string
	Decide                         []string
	Upgrade                        bool
}

// Check reports the first flag that does not fit the others.
func (q Request) Check() error {
	switch {
	case q.Value != "" && q.Resume == "":
		return errors.New("--value needs --resume")
	case len(q.Decide) > 0 && q.Resume == "":
		return errors.New("--decide needs --resume")
	case q.Upgrade && q.Resume == "":
		return errors.New("--upgrade needs --resume")
	case q.Resume == "" && q.Input == "":
		return errors.New("--input is required")
	case q.Value != "" && !json.Valid([]byte(q.Value)):
		return fmt.Errorf("--value is not valid JSON: %s", q.Value)
	case q.Runnable != "" && q.Resume != "":
		return errors.New("--run starts a run of that runnable: a resumed run keeps its own, drop --run")
	}
	return nil
}

// Invocation is q's invocation of r: a new run, or Continue's.
func (s *Service) Invocation(ctx context.Context, r *runtime.Runner, q Request) (runtime.Invocation, error) {
	if q.Resume == "" {
		return runtime.Invocation{User: q.User, Session: q.Session, Input: q.Input, Runnable: q.Runnable}, nil
	}
	inv, err := s.Continue(ctx, r, q.User, q.Session, q.Resume, json.RawMessage(q.Value), q.Decide)
	if err == nil && q.Upgrade {
		inv.Resume.Upgrade = runtime.UpgradeRequired
	}
	return inv, err
}

// Invalid reports whether err is the request's fault (a run to resume
// that does not exist or cannot resume, a bad decision, an invocation the
// Runner refuses), not the store's or the run's.
func Invalid(err error) bool {
	for _, e := range []error{ErrNoRun, ErrBadDecision, runtime.ErrInvalidInvocation, runtime.ErrUnknownRunnable, runtime.ErrInvalidResume, runtime.ErrNotResumable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Continue is the invocation that continues run for a person who names it
// (agentc run --resume): run is a run id, or "latest" for the newest run of
// the session (user, session) that can resume (Runner.LatestResumable);
// value answers its pending interrupts (Resume) and decide settles its
// pending side effects (Decide). The invocation runs in the session the
// run belongs to. Errors in the request (no such run, no run to resume, a
// bad decision) wrap ErrNoRun or ErrBadDecision; any other is the store's.
func (s *Service) Continue(ctx context.Context, r *runtime.Runner, user, session, run string, value json.RawMessage, decide []string) (runtime.Invocation, error) {
	if run == "latest" {
		id, err := r.LatestResumable(ctx, user, session)
		if err != nil {
			return runtime.Invocation{}, &noRunError{msg: err.Error(), err: err}
		}
		run = id
	}
	req, key, err := s.Resume(ctx, run, value)
	if err == nil {
		err = s.Decide(ctx, req, decide)
	}
	if err != nil {
		return runtime.Invocation{}, err
	}
	return runtime.Invocation{User: key.User, Session: key.Session, Resume: req}, nil
}

// RunToResume is the run a person names to continue (run id, or "latest"
// of the session (user, session) of app, as Continue resolves it) read
// before any Runner of the process drives a run: what a process that
// chooses its assembly by the run reads first. Errors wrap ErrNoRun.
func (s *Service) RunToResume(ctx context.Context, app, user, session, run string) (store.Run, error) {
	if run == "latest" {
		id, err := runtime.LatestResumableIn(ctx, s.st, app, user, session)
		if err != nil {
			return store.Run{}, &noRunError{msg: err.Error(), err: err}
		}
		run = id
	}
	r, err := s.st.GetRun(ctx, run)
	if err != nil {
		return store.Run{}, &noRunError{msg: fmt.Sprintf("run %s: %v", run, err), err: err}
	}
	return r, nil
}

// Hint tells a person what a run that stopped needs, from its
// run_finished event: the interrupts it waits on (each prompt, and the
// JSON Schema of its answer with an example value) or the side effects it
// needs decisions on, and the command that continues it — cmd (say
// "agentc run FILE") with --resume and --value or --decide. It is "" for a
// run that needs nothing (completed, failed, canceled).
func Hint(fin *runtime.Event, cmd string) string {
	var b strings.Builder
	switch fin.Status {
	case runtime.StatusInterrupted:
		fmt.Fprintf(&b, "run %s is waiting (session %s, user %s)\n", fin.Run, fin.Session, fin.User)
		for _, in := range fin.Interrupts {
			fmt.Fprintf(&b, "  interrupt %s: %s\n", in.ID, in.Prompt)
			if in.Schema != nil {
				schema, _ := json.Marshal(in.Schema)
				fmt.Fprintf(&b, "    answer: JSON of schema %s, e.g. %s\n", schema, runtime.SchemaExample(in.Schema))
			}
		}
		for _, tm := range fin.Timers {
			what := "timeout of " + tm.ID
			if tm.Wait {
				what = "wait " + tm.ID
			}
			fmt.Fprintf(&b, "  timer: %s, due %s\n", what, tm.Due.Format(time.RFC3339Nano))
		}
		if len(fin.Interrupts) == 0 && len(fin.Timers) > 0 {
			fmt.Fprintf(&b, "resume after %s with: %s --resume %s (agentc serve resumes it then by itself)\n",
				fin.Timers[0].Due.Format(time.RFC3339Nano), cmd, fin.Run)
			break
		}
		example := "JSON"
		if len(fin.Interrupts) == 1 && fin.Interrupts[0].Schema != nil {
			example = shellQuote(string(runtime.SchemaExample(fin.Interrupts[0].Schema)))
		}
		fmt.Fprintf(&b, "resume with: %s --resume %s --value %s\n", cmd, fin.Run, example)
	case runtime.StatusNeedsDecision:
		fmt.Fprintf(&b, "run %s needs decisions on side effects that may have happened:\n", fin.Run)
		for _, d := range fin.Decisions {
			fmt.Fprintf(&b, "  decision %s (node %s, attempt %d)\n", d.ID, d.Node, d.Attempt)
		}
		fmt.Fprintf(&b, "settle with: %s --resume %s --decide ID=done:RESULT_JSON|retry|fail\n", cmd, fin.Run)
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell (single quotes).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

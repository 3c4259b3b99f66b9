package inspect

// The text forms of the results, as agentc's inspection commands print
// them without --json.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
)

// Line is the session's line in a listing: user, session, events, when it
// was last updated.
func (s Session) Line() string {
	return fmt.Sprintf("%s\t%s\t%d events\tupdated %s", s.User, s.Session, s.Events, s.Updated.Format(time.RFC3339))
}

// String is the session with a line per run.
func (s Session) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s (user %s, app %s)\n", s.Session, s.User, s.App)
	fmt.Fprintf(&b, "created %s, updated %s, %d events\n", s.Created.Format(time.RFC3339), s.Updated.Format(time.RFC3339), s.Events)
	for _, r := range s.Runs {
		fmt.Fprintf(&b, "  %s\n", r.Line())
	}
	return b.String()
}

// Line is the run's line: id, runnable, status, then its cost in USD when
// known and its tokens when any call reported usage.
func (r Run) Line() string {
	out := r.ID + "\t" + r.Runnable + "\t" + r.Status
	if r.Cost != nil {
		out += "\tcost $" + strconv.FormatFloat(*r.Cost, 'f', -1, 64)
	}
	if r.Usage != nil {
		out += fmt.Sprintf("\ttokens %d in, %d out", r.Usage.PromptTokens, r.Usage.CompletionTokens)
		if r.Usage.CachedTokens > 0 {
			out += fmt.Sprintf(", %d cached", r.Usage.CachedTokens)
		}
	}
	return out
}

// EventLine is a ledger event's line: sequence, kind, node and Summary.
func EventLine(e *runtime.Event) string {
	return fmt.Sprintf("%d\t%s\t%s\t%s", e.Seq, e.Kind, e.Node, Summary(e))
}

// Line is the checkpoint's line: step, kind, the nodes finished ("-":
// none), time and size.
func (cp Checkpoint) Line() string {
	ns := "-"
	if len(cp.Nodes) > 0 {
		ns = strings.Join(cp.Nodes, ",")
	}
	return fmt.Sprintf("%d\t%s\t%s\t%s\t%d bytes", cp.Step, cp.Kind, ns, cp.Time.Format(time.RFC3339), cp.Bytes)
}

// String says whether the replay reached the run's state, else where it
// diverged and a line per differing field.
func (r Replay) String() string {
	if r.Identical {
		return fmt.Sprintf("replay of %s reached step %d: identical state\n", r.Run, r.Step)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replay of %s diverges at step %d (replay reached step %d, the run committed step %d):\n", r.Run, r.DivergedAt, r.Step, r.WantStep)
	for _, d := range r.Diverged {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}

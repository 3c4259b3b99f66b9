package retention

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// TestReport: a dry run reports the plan's deletions as would-be ones and
// counts nothing deleted; a pass reports what it deleted and its error.
func TestReport(t *testing.T) {
	k := store.SessionKey{App: "a", User: "u", Session: "s"}
	run := Item{Kind: KindRun, Reason: ReasonMaxAge, Why: "old", Session: k, Run: "run_1", Status: store.RunCompleted}
	kept := Item{Kind: KindSession, Reason: ReasonResumable, Why: "waits", Session: k}
	pl := &Plan{App: "a", Policy: Policy{MaxRuns: 1}, Delete: []Item{run}, Keep: []Item{kept}}
	dry := NewReport(pl, Result{}, true, nil)
	if dry.Deleted["run"] != 0 || len(dry.Delete) != 1 || !strings.Contains(dry.String(), "  would delete run run_1") ||
		!strings.Contains(dry.String(), "  kept session ") || !strings.HasSuffix(dry.String(), "would delete 1 runs, 0 sessions, 0 idempotency records, 0 task records\n") {
		t.Errorf("dry run: %+v\n%s", dry, dry)
	}
	done := NewReport(pl, Result{Deleted: []Item{run}}, false, errors.New("boom"))
	if done.Deleted["run"] != 1 || done.Error != "boom" || !strings.Contains(done.String(), "  deleted run run_1 (session ") {
		t.Errorf("pass: %+v\n%s", done, done)
	}
}

package evolution

import (
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// TestCandidateText: a candidate's line and its review form.
func TestCandidateText(t *testing.T) {
	c := &Candidate{ID: "cand_1", Status: "pending", Agent: "helper", Run: "run_1", Evidence: []string{"e1", "e2"},
		Session: store.SessionKey{App: "a", User: "u", Session: "s"}, Revision: 2, Dir: "skills/x", Reason: "too broad",
		Proposal: Proposal{Name: "x", Description: "does x", WhenToUse: "when x", Steps: []string{"one", "two"}, Script: "echo a\necho b\n"},
		Gates:    []GateResult{{Gate: "spec", Passed: true}, {Gate: "safety", Detail: "rm -rf"}}}
	line := "cand_1\tpending\tx\trev 2\t" + c.Session.String()
	if got := c.Line(); got != line {
		t.Errorf("line %q, want %q", got, line)
	}
	want := line + "\n  description: does x\n  when to use: when x\n  step 1: one\n  step 2: two\n" +
		"  script:\n    echo a\n    echo b\n  agent: helper  run: run_1\n  evidence: e1, e2\n" +
		"  gate spec: passed \n  gate safety: held rm -rf\n  folder: skills/x\n  reason: too broad\n"
	if got := c.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

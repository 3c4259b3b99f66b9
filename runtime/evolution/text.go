package evolution

import (
	"fmt"
	"strings"
)

// Line is the candidate's line in a listing: id, status, skill name,
// revision and session.
func (c *Candidate) Line() string {
	return fmt.Sprintf("%s\t%s\t%s\trev %d\t%s", c.ID, c.Status, c.Proposal.Name, c.Revision, c.Session.String())
}

// String is the candidate for review: its line, then the proposal
// (description, when to use, steps, script), its agent, run and evidence,
// each gate's verdict, its folder and the reason it was decided.
func (c *Candidate) String() string {
	var b strings.Builder
	p := c.Proposal
	fmt.Fprintf(&b, "%s\n  description: %s\n  when to use: %s\n", c.Line(), p.Description, p.WhenToUse)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "  step %d: %s\n", i+1, s)
	}
	if p.Script != "" {
		fmt.Fprintf(&b, "  script:\n    %s\n", strings.ReplaceAll(strings.TrimRight(p.Script, "\n"), "\n", "\n    "))
	}
	fmt.Fprintf(&b, "  agent: %s  run: %s\n  evidence: %s\n", c.Agent, c.Run, strings.Join(c.Evidence, ", "))
	for _, g := range c.Gates {
		verdict := "passed"
		if !g.Passed {
			verdict = "held"
		}
		fmt.Fprintf(&b, "  gate %s: %s %s\n", g.Gate, verdict, g.Detail)
	}
	fmt.Fprintf(&b, "  folder: %s\n", c.Dir)
	if c.Reason != "" {
		fmt.Fprintf(&b, "  reason: %s\n", c.Reason)
	}
	return b.String()
}

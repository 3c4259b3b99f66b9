package evolution

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/agentc/agentc/compiler/skillmd"
)

// Proposal is what the reviewer drafts: a candidate skill.
type Proposal struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	WhenToUse   string   `json:"when_to_use"`
	Steps       []string `json:"steps"`
	Script      string   `json:"script,omitempty"` // optional: becomes scripts/run.sh
	Tags        []string `json:"tags,omitempty"`
	// Score is the reviewer's estimate in [0, 1] that the skill makes the
	// task succeed; nil when it gave none (the effectiveness gate then
	// keeps the candidate pending evaluation).
	Score *float64 `json:"score,omitempty"`
}

// GateResult is the verdict of one gate.
type GateResult struct {
	Gate   string `json:"gate"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Gate names, in their default order.
const (
	GateSpec          = "spec"
	GateSafety        = "safety"
	GateEffectiveness = "effectiveness"
	GateHuman         = "human"
)

// DefaultGates are the gates of a policy that names none.
var DefaultGates = []string{GateSpec, GateSafety, GateEffectiveness}

// specGate checks structure: a valid name, a description, when-to-use, at
// least two steps, and a SKILL.md that parses.
func specGate(p *Proposal) GateResult {
	var probs []string
	if !skillmd.NameRE.MatchString(p.Name) {
		probs = append(probs, fmt.Sprintf("name %q is not lower-case letters, digits, - or _ (at most 64)", p.Name))
	}
	if regexp.MustCompile(`^\d+$|-\d+$`).MatchString(p.Name) {
		probs = append(probs, "name must not be or end in a number")
	}
	if strings.TrimSpace(p.Description) == "" {
		probs = append(probs, "no description")
	}
	if strings.TrimSpace(p.WhenToUse) == "" {
		probs = append(probs, "no when_to_use")
	}
	steps := 0
	for _, s := range p.Steps {
		if strings.TrimSpace(s) != "" {
			steps++
		}
	}
	if steps < 2 {
		probs = append(probs, fmt.Sprintf("%d step(s); at least 2", steps))
	}
	if len(probs) == 0 {
		md, err := render(p)
		if err != nil {
			probs = append(probs, err.Error())
		} else if _, ps := skillmd.Parse("SKILL.md", md); len(ps) > 0 {
			probs = append(probs, "SKILL.md: "+ps[0].Error())
		}
	}
	if len(probs) > 0 {
		return GateResult{Gate: GateSpec, Detail: strings.Join(probs, "; ")}
	}
	return GateResult{Gate: GateSpec, Passed: true}
}

// pattern is one safety rule.
type pattern struct {
	what string
	re   *regexp.Regexp
}

// safetyPatterns find credentials, user-specific facts, destructive
// commands and path traversal in a candidate's text.
var safetyPatterns = []pattern{
	{"an OpenAI-style API key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)},
	{"an AWS access key id", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a GitHub token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`)},
	{"a JSON Web Token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	{"a credential assignment", regexp.MustCompile(`(?i)\b(password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*['"]?[^\s'"$<{]{6,}`)},
	{"a bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}`)},
	{"an e-mail address (a user-specific fact)", regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`)},
	{"a phone number (a user-specific fact)", regexp.MustCompile(`\+\d{1,3}[\s.-]?\(?\d{2,4}\)?[\s.-]?\d{3,4}[\s.-]?\d{3,4}\b`)},
	{"a home directory (a user-specific fact)", regexp.MustCompile(`(/home/|/Users/|C:\\Users\\)[A-Za-z0-9._-]+`)},
	{"a recursive forced delete of a root or home", regexp.MustCompile(`\brm\s+(-[A-Za-z]*\s+)*-[A-Za-z]*[rR][A-Za-z]*\s+(-[A-Za-z]+\s+)*(/|~|\$HOME|\*)(\s|$|/\*)`)},
	{"chmod 777", regexp.MustCompile(`\bchmod\s+(-R\s+)?0?777\b`)},
	{"a write to a block device", regexp.MustCompile(`>\s*/dev/(sd|nvme|hd|disk)`)},
	{"a disk format or wipe", regexp.MustCompile(`\b(mkfs(\.\w+)?|wipefs|shred)\b|\bdd\s+[^\n]*of=/dev/`)},
	{"a fork bomb", regexp.MustCompile(`:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`)},
	{"a shutdown or reboot", regexp.MustCompile(`\b(shutdown|reboot|halt|poweroff)\b`)},
	{"a pipe from the network into a shell", regexp.MustCompile(`\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z)?sh\b`)},
	{"path traversal", regexp.MustCompile(`(^|[\s"'=/])\.\.(/|\\)`)},
	{"a system path", regexp.MustCompile(`(^|[\s"'=])/(etc|root|proc|sys|boot|var/lib)/`)},
}

// safetyGate rejects a candidate whose text matches a safety pattern. user
// is the session's user id: its appearance is a user-specific fact.
func safetyGate(p *Proposal, user string) GateResult {
	text := strings.Join(append([]string{p.Name, p.Description, p.WhenToUse, p.Script}, p.Steps...), "\n")
	var found []string
	for _, pt := range safetyPatterns {
		if pt.re.MatchString(text) {
			found = append(found, pt.what)
		}
	}
	if len(user) >= 3 && regexp.MustCompile(`(?i)\b`+regexp.QuoteMeta(user)+`\b`).MatchString(text) {
		found = append(found, "the user's id (a user-specific fact)")
	}
	if len(found) > 0 {
		return GateResult{Gate: GateSafety, Detail: "found " + strings.Join(found, ", ")}
	}
	return GateResult{Gate: GateSafety, Passed: true}
}

// effectiveness is the effectiveness gate's verdict: pass, reject (the run
// failed), or wait (no score or below min).
type effectiveness int

const (
	effPass effectiveness = iota
	effReject
	effWait
)

func effectivenessGate(p *Proposal, runOK bool, minScore float64) (GateResult, effectiveness) {
	switch {
	case !runOK:
		return GateResult{Gate: GateEffectiveness, Detail: "the reviewed run did not complete"}, effReject
	case p.Score == nil:
		return GateResult{Gate: GateEffectiveness, Detail: "no score yet; pending evaluation"}, effWait
	case *p.Score < minScore:
		return GateResult{Gate: GateEffectiveness, Detail: fmt.Sprintf("score %.2f below %.2f; pending evaluation", *p.Score, minScore)}, effWait
	}
	return GateResult{Gate: GateEffectiveness, Passed: true, Detail: fmt.Sprintf("score %.2f", *p.Score)}, effPass
}

// render is the candidate's SKILL.md.
func render(p *Proposal) ([]byte, error) {
	var body strings.Builder
	fmt.Fprintf(&body, "# %s\n\n%s\n\n## When to use\n\n%s\n\n## Steps\n\n", p.Name, strings.TrimSpace(p.Description), strings.TrimSpace(p.WhenToUse))
	n := 0
	for _, s := range p.Steps {
		if s = strings.TrimSpace(s); s != "" {
			n++
			fmt.Fprintf(&body, "%d. %s\n", n, strings.Join(strings.Fields(s), " "))
		}
	}
	if p.Script != "" {
		body.WriteString("\nThe script `scripts/run.sh` automates the steps.\n")
	}
	return skillmd.Render(&skillmd.File{
		Front: skillmd.Front{Name: p.Name, Description: strings.Join(strings.Fields(p.Description), " "),
			Tags: p.Tags, WhenToUse: strings.Join(strings.Fields(p.WhenToUse), " ")},
		Body: body.String(),
	})
}

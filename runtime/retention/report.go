package retention

import (
	"fmt"
	"strings"
)

// Report is one app's pass as agentc prune prints it: its plan, what
// applying it did (nothing on a dry run) and the pass's error. Its JSON is
// prune --json's object per app; String is the text form.
type Report struct {
	App     string         `json:"app"`
	Policy  string         `json:"policy"`
	DryRun  bool           `json:"dry_run"`
	Delete  []Item         `json:"delete"`
	Keep    []Item         `json:"keep"`
	Skipped []Item         `json:"skipped,omitempty"`
	Deleted map[string]int `json:"deleted"`
	Error   string         `json:"error,omitempty"`

	deleted []Item // the items deleted (the plan's on a dry run)
}

// NewReport is the report of pl and of res, what applying it did (zero on
// a dry run), and err, the pass's error.
func NewReport(pl *Plan, res Result, dryRun bool, err error) Report {
	rep := Report{App: pl.App, Policy: pl.Policy.String(), DryRun: dryRun, Delete: pl.Delete, Keep: pl.Keep, Skipped: res.Skipped,
		Deleted: map[string]int{}, deleted: res.Deleted}
	for _, k := range []Kind{KindRun, KindSession, KindIdempotency, KindRecord} {
		rep.Deleted[string(k)] = res.Count(k)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	if dryRun {
		rep.deleted = pl.Delete
	}
	return rep
}

// String is the app and its policy, a line per item deleted (on a dry
// run: that would be), kept and skipped with why, and the totals.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "app %s: %s\n", r.App, r.Policy)
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	for _, it := range r.deleted {
		fmt.Fprintf(&b, "  %s %s: %s\n", verb, it, it.Why)
	}
	for _, it := range r.Keep {
		fmt.Fprintf(&b, "  kept %s: %s\n", it, it.Why)
	}
	for _, it := range r.Skipped {
		fmt.Fprintf(&b, "  skipped %s: %s\n", it, it.Why)
	}
	fmt.Fprintf(&b, "  %s %d runs, %d sessions, %d idempotency records, %d task records\n", verb,
		Count(r.deleted, KindRun), Count(r.deleted, KindSession), Count(r.deleted, KindIdempotency), Count(r.deleted, KindRecord))
	return b.String()
}

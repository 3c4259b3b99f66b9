package pebble

import (
	"fmt"
	"strings"
)

// String is the report as agentc store check prints it: one line with
// what the store holds when it is sound, else the number of problems and
// a line per problem.
func (r *Report) String() string {
	if r.OK() {
		return fmt.Sprintf("store %s: ok (%d WALs, %d tables, %d keys: %d sessions, %d events, %d runs, %d checkpoints, %d journal entries)\n",
			r.Dir, r.WALs, r.Tables, r.Keys, r.Sessions, r.Events, r.Runs, r.Checkpoints, r.Journal)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "store %s: %d problems\n", r.Dir, len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

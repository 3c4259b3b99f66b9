package store

import (
	"strings"
	"unicode/utf8"
)

// Notifications of a store that several processes share (the PostgreSQL
// store; spec/storage.md, "Wake-ups"). Such a store tells the processes
// that follow channel RunsChannel of every write that changes what a
// follower of a run reads: in the transaction of each step commit and of
// each run's end it sends CommitNotice(run), so the notification is
// delivered once the write is visible, and not at all when it rolls back.
// The processes use the same channel for their own notices about runs
// ("cancel RUN", "orphan RUN": the runtime's run ownership).

// RunsChannel is the channel of the notifications about runs.
const RunsChannel = "runs"

// commitVerb starts a CommitNotice.
const commitVerb = "commit"

// maxNoticeRun bounds the run id a notice names; a longer one is left out
// (a notification's payload is short: PostgreSQL refuses 8000 bytes).
const maxNoticeRun = 1024

// CommitNotice is the payload announcing a commit of run: "commit RUN", or
// "commit" alone when run cannot travel in a payload (not valid UTF-8,
// holding a NUL or a space, or long), which a follower takes as a commit of
// any run.
func CommitNotice(run string) string {
	if run == "" || len(run) > maxNoticeRun || !utf8.ValidString(run) || strings.ContainsAny(run, "\x00 ") {
		return commitVerb
	}
	return commitVerb + " " + run
}

// ParseNotice splits a payload on RunsChannel into its verb and run ("" when
// it names none).
func ParseNotice(payload string) (verb, run string) {
	verb, run, _ = strings.Cut(payload, " ")
	return verb, run
}

// IsCommitNotice reports whether verb is that of a CommitNotice.
func IsCommitNotice(verb string) bool { return verb == commitVerb }

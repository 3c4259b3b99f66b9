#!/bin/sh
# Drafts report.md for team $1 in the working directory (the run's
# workspace). With --final the draft is marked final.
team=${1:?usage: draft.sh TEAM [--final]}
state=draft
[ "$2" = "--final" ] && state=final
cat > report.md <<REPORT
# Weekly status: $team ($state)

## Done
- Closed the sprint's tickets.

## Next
- Plan the next sprint.

## Risks
- None known.
REPORT
echo "drafted report.md ($state)"

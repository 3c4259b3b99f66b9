#!/usr/bin/env bash
# The run inspector's browser suite (spec/inspector.md): Debian's Chromium
# driven by playwright-core (npm ci from the committed lockfile; no browser
# is downloaded) against the real agentc binary. Screenshots of each page go
# to $SCREENSHOTS (default test/browser/screenshots), printed at the end.
#
#   test/browser/run.sh              builds .bin/agentc when AGENTC_BIN is unset
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
here=$(pwd)
root=$(cd ../.. && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if [ -n "${CI:-}" ]; then
    echo "FAIL: no Chromium at $chromium (test/all.sh installs Debian's chromium)" >&2
    exit 1
  fi
  echo "skip: no Chromium at $chromium (set CHROMIUM, or apt-get install chromium; in CI this fails)"
  exit 0
fi
if [ -z "${AGENTC_BIN:-}" ]; then
  mkdir -p "$root/.bin"
  (cd "$root" && go build -o .bin/agentc ./cmd/agentc)
  export AGENTC_BIN="$root/.bin/agentc"
fi
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --ignore-scripts
export SCREENSHOTS=${SCREENSHOTS:-$here/screenshots}
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
node inspector.test.mjs
echo "browser screenshots: $SCREENSHOTS"

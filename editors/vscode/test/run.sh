#!/usr/bin/env bash
# Scope snapshots of the agentc TextMate grammar, tokenized by the real VS
# Code engine. Installs the pinned engine from package-lock.json (npm ci)
# unless node_modules already holds exactly those versions, so a second run
# works offline. UPDATE=1 rewrites snapshots/*.snap.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

installed() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [p, meta] of Object.entries(lock.packages)) {
      if (!p) continue;
      let v;
      try { v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version; } catch { process.exit(1); }
      if (v !== meta.version) process.exit(1);
    }
  '
}

if ! installed; then
  npm ci --no-audit --no-fund
fi
exec node --test scopes.test.mjs client.test.mjs

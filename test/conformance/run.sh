#!/usr/bin/env bash
# Runs every official-client conformance suite (test/conformance/*/run.mjs)
# against the real binary: builds agentc, serves examples/support/support.agent
# on a free loopback port with a temporary data directory and a token, waits
# for /healthz, runs each suite with AGENTC_URL and AGENTC_TOKEN (and AGENTC_BIN,
# the binary, for suites that start it themselves: mcp's stdio checks, and
# mcpserver, which runs agentc workflows against an MCP server written with the
# official TypeScript SDK), and stops the server. Exits non-zero when a suite fails or the server does not stop cleanly.
#
# Each suite's node_modules must be installed (test/all.sh runs `npm ci` in
# every suite directory first; run it yourself when calling this directly).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$(pwd)
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/agentc" ./cmd/agentc

token="conf-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
# A free port: bind port 0, read the address the server reports.
unset OPENAI_API_KEY # the scripted model: hermetic, no network
"$work/agentc" serve examples/support/support.agent --addr 127.0.0.1:0 --data "$work/data" \
  --token "$token=conformance" --log off 2>"$work/server.log" &
server_pid=$!

url=""
for _ in $(seq 1 200); do
  url=$(sed -n 's/^agentc: serving .* on \(http:\/\/127\.0\.0\.1:[0-9]*\) .*/\1/p' "$work/server.log" | head -1)
  if [ -n "$url" ] && curl -fsS "$url/healthz" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    cat "$work/server.log" >&2
    echo "FAIL: agentc serve exited" >&2
    exit 1
  fi
  url=""
  sleep 0.05
done
if [ -z "$url" ]; then
  cat "$work/server.log" >&2
  echo "FAIL: agentc serve did not become healthy" >&2
  exit 1
fi
echo "agentc serve at $url"

status=0
for suite in "$root"/test/conformance/*/run.mjs; do
  [ -e "$suite" ] || continue
  dir=$(dirname "$suite")
  name=$(basename "$dir")
  echo "== conformance: $name"
  if ! (cd "$dir" && AGENTC_URL="$url" AGENTC_TOKEN="$token" AGENTC_BIN="$work/agentc" node run.mjs); then
    echo "FAIL: conformance suite $name" >&2
    status=1
  fi
done

kill -TERM "$server_pid"
if ! wait "$server_pid"; then
  cat "$work/server.log" >&2
  echo "FAIL: agentc serve did not shut down cleanly" >&2
  status=1
fi
server_pid=""
exit $status

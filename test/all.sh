#!/usr/bin/env bash
# Runs every check agentc has, from a fresh clone: installs what it needs
# (Go modules; npm packages from committed lockfiles), then vet, gofmt, tidy,
# golden freshness, `go test -race ./...`, short fuzz runs, the CLI on the
# examples, and the conformance suites. .ci/run calls exactly this script.
#
#   test/all.sh            everything
#   FUZZTIME=30s test/all.sh   longer fuzz budget per target (default 5s)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fuzztime=${FUZZTIME:-5s}
started=$SECONDS
# In CI, what a test needs from the machine must be there: the isolation tests
# fail, rather than skip, where commands cannot be confined.
if [ -n "${CI:-}" ]; then export AGENTC_REQUIRE_CONFINEMENT=1; fi
step() { printf '\n== %s (at %ds)\n' "$*" $((SECONDS - started)); }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "go modules"
go version
go mod download
go mod verify >/dev/null

step "system tools (vim and neovim for the editor-syntax checks)"
if ! command -v vim >/dev/null || ! command -v nvim >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq vim neovim >/dev/null) ||
      echo "warning: could not install vim/neovim; their syntax checks will be skipped"
  else
    echo "warning: vim/neovim missing and not root; their syntax checks will be skipped"
  fi
fi

step "chromium (Debian's, for the run inspector's browser suite)"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
      echo "warning: could not install chromium"
  fi
  [ -x /usr/bin/chromium ] || { [ -z "${CI:-}" ] || fail "no /usr/bin/chromium: the browser suite needs Debian's chromium"; echo "warning: no chromium; the browser suite will skip (fails in CI)"; }
fi

step "go vet"
go vet ./...

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
[ -z "$unformatted" ] || fail "gofmt would change: $unformatted"

step "go mod tidy"
go mod tidy -diff || fail "go.mod/go.sum are not tidy (run: go mod tidy)"

step "postgresql: a throwaway cluster on 127.0.0.1 for the PostgreSQL store's tests"
# The tests read AGENTC_TEST_POSTGRES; in CI they fail without it. A URL set
# by the caller is used as is; otherwise Debian's postgresql is installed when
# missing and a temporary cluster is started and removed at exit.
pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
pg_stop() {
  [ -n "${pg_dir:-}" ] || return 0
  $pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
if [ -z "${AGENTC_TEST_POSTGRES:-}" ]; then
  if { ! command -v psql >/dev/null || [ -z "$(pg_bindir)" ]; } && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    # postgresql-common first, told not to create (and start) a main cluster:
    # the tests use their own.
    (apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common >/dev/null &&
      sed -ri 's/^#? *(create_main_cluster) .*$/\1 = false/' /etc/postgresql-common/createcluster.conf &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) ||
      echo "warning: could not install postgresql"
  fi
  pg_bin=$(pg_bindir)
  if [ -z "$pg_bin" ]; then
    echo "warning: no initdb under /usr/lib/postgresql/*/bin; the PostgreSQL store's tests will skip (fail in CI)"
  else
    pg_dir=$(mktemp -d /tmp/agentc-pg.XXXXXX)
    trap pg_stop EXIT
    pg_as=""
    if [ "$(id -u)" = 0 ]; then # initdb refuses root
      chown postgres: "$pg_dir"
      pg_as="runuser -u postgres --"
    fi
    $pg_as "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust -E UTF8 --locale=C >"$pg_dir/initdb.log" 2>&1 ||
      { cat "$pg_dir/initdb.log"; fail "initdb"; }
    printf 'host all all 127.0.0.1/32 trust\n' | $pg_as tee "$pg_dir/data/pg_hba.conf" >/dev/null
    pg_port=""
    for _ in 1 2 3 4 5 6 7 8; do
      port=$((20000 + RANDOM % 40000))
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue # taken
      if $pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$pg_dir" start >/dev/null; then
        pg_port=$port
        break
      fi
    done
    [ -n "$pg_port" ] || { cat "$pg_dir/server.log" 2>/dev/null; fail "could not start postgres"; }
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres agentc_test || fail "createdb"
    export AGENTC_TEST_POSTGRES="postgres://postgres@127.0.0.1:$pg_port/agentc_test?sslmode=disable"
    echo "postgres $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port ($pg_dir)"
  fi
fi

step "golden freshness (tests rewritten with -update must change nothing)"
golden_pkgs=$(grep -rl --include='*_test.go' 'flag.Bool("update"' . | xargs -r -n1 dirname | sort -u)
before=$(git status --porcelain 2>/dev/null || true)
# One go test for them all: their packages run two at a time, not one
# after another (cmd/agentc's alone is most of the step). Its output is
# shown when it fails: which test, and why.
golden_log=$(mktemp)
# shellcheck disable=SC2086 # one argument per package
go test $golden_pkgs -run . -count=1 -update >"$golden_log" 2>&1 ||
  { grep -v '^ok ' "$golden_log" | tail -200; rm -f "$golden_log"; fail "go test <golden packages> -update"; }
rm -f "$golden_log"
after=$(git status --porcelain 2>/dev/null || true)
if [ "$before" != "$after" ]; then
  git --no-pager diff --stat || true
  fail "golden files are stale: run 'go test <pkg> -update' and commit the result"
fi

step "build agentc"
mkdir -p "$root/.bin"
go build -o "$root/.bin/agentc" ./cmd/agentc
export PATH="$root/.bin:$PATH"

step "examples: validate, fmt --check, and every test block offline"
agentc validate examples/
agentc fmt --check examples/
agentc test examples/

step "go test -race ./..."
go test -race -count=1 ./...

step "fuzz (each target for $fuzztime, two at a time)"
# fuzz_one PKG TARGET fuzzes one target; it prints one line when it passes
# and the log's tail when it fails. Two run at once: most of a target's
# wall time is building its package with the fuzzer's instrumentation and
# starting its workers, not the -fuzztime itself.
fuzz_one() {
  local pkg=$1 target=$2 log
  log=$(mktemp)
  if ! go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s >"$log" 2>&1; then
    # Go 1.26's fuzz coordinator can report the -fuzztime deadline itself as a
    # failure (go.dev/issue/75804): a bare "context deadline exceeded" with no
    # input written. A real crash, hang or panic always writes its input to
    # testdata/fuzz and fails here; the bare deadline is retried once and then
    # reported, never counted as a found bug.
    if ! grep -q 'Failing input written' "$log" && grep -q 'context deadline exceeded' "$log"; then
      echo "note $target: the toolchain's fuzztime deadline race (go.dev/issue/75804); running it again"
      if ! go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s >"$log" 2>&1; then
        if grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
          tail -40 "$log"
          echo "FAIL: fuzz $target in $pkg"
          rm -f "$log"
          return 1
        fi
        echo "note $target: the deadline race again, no failing input; not a finding"
      fi
    else
      tail -40 "$log"
      echo "FAIL: fuzz $target in $pkg"
      rm -f "$log"
      return 1
    fi
  fi
  rm -f "$log"
  echo "ok   $target ($pkg)"
}
export -f fuzz_one
export fuzztime
grep -rnoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | sort | while IFS=: read -r file _ decl; do
  echo "$(dirname "$file") ${decl#func }"
done | xargs -P 2 -L 1 bash -c 'fuzz_one "$0" "$1"' || fail "fuzz (a target failed: its log is above)"
if [ -x editors/vscode/test/run.sh ]; then
  step "editor grammar: TextMate scope snapshots (npm ci from the lockfile)"
  editors/vscode/test/run.sh
fi

if [ -x test/conformance/run.sh ]; then
  step "conformance: official clients against agentc serve (npm ci from each lockfile)"
  for lock in test/conformance/*/package-lock.json; do
    [ -e "$lock" ] || continue
    (cd "$(dirname "$lock")" && npm ci --no-audit --no-fund) || fail "npm ci in $(dirname "$lock")"
  done
  test/conformance/run.sh || fail "conformance suites"
fi

step "browser: the run inspector in Chromium (npm ci from the lockfile; screenshots under test/browser/screenshots)"
(cd test/browser && npm ci --no-audit --no-fund --ignore-scripts) || fail "npm ci in test/browser"
AGENTC_BIN="$root/.bin/agentc" SCREENSHOTS="$root/test/browser/screenshots" test/browser/run.sh || fail "browser suite"

step "done"

#!/usr/bin/env bash
# scripts/test.sh: the one command that runs every hsd test (CI runs it via .ci/run).
#
# Steps: install missing Debian packages (scripts/deps.sh), build the whole
# workspace, start a private MariaDB (scripts/mariadb.sh; stopped again on exit
# unless it was already running before this script), export
# HSD_TEST_MYSQL_URL so the MariaDB tests always run (never skipped), run
# `cargo test --workspace`, then the compat steps, the Python client's tests
# (clients/python, in a venv under target/), the Go client's tests
# (clients/go), and the bench smoke steps.
# Any failure, including MariaDB failing to start, fails the whole run.
#
# Usage: scripts/test.sh                run everything
#        scripts/test.sh --setup-only   deps + MariaDB start/env only, no cargo
#                                       (checks the machine, stops MariaDB again)
# Environment: HSD_MARIADB_DIR (private MariaDB directory, default target/mariadb),
#   HSD_MARIADB_TIMEOUT; see scripts/mariadb.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

setup_only=0
case "${1:-}" in
    --setup-only) setup_only=1 ;;
    "") ;;
    *) echo "usage: $0 [--setup-only]" >&2; exit 2 ;;
esac

START=$SECONDS
section() {
    echo
    echo "=================================================================="
    echo "== $* (t+$((SECONDS - START))s)"
    echo "=================================================================="
}

section "dependencies (scripts/deps.sh)"
bash "$ROOT/scripts/deps.sh"

if [[ $setup_only -eq 0 ]]; then
    section "build: cargo build --workspace --all-targets"
    cargo build --workspace --all-targets
fi

section "private MariaDB (scripts/mariadb.sh start)"
# Stop MariaDB on exit only if this script started it: a developer's running
# instance is reused and left alone.
stop_mariadb=1
if bash "$ROOT/scripts/mariadb.sh" status >/dev/null 2>&1; then
    stop_mariadb=0
fi
on_exit() {
    local rc=$?
    if [[ $stop_mariadb -eq 1 ]]; then
        echo
        echo "== stopping private MariaDB"
        bash "$ROOT/scripts/mariadb.sh" stop || true
    fi
    if [[ $rc -eq 0 ]]; then
        echo "== test.sh: ALL OK ($((SECONDS - START))s)"
    else
        echo "== test.sh: FAILED with exit code $rc ($((SECONDS - START))s)" >&2
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash "$ROOT/scripts/mariadb.sh" start
eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
: "${HSD_TEST_MYSQL_URL:?scripts/mariadb.sh env did not set HSD_TEST_MYSQL_URL}"
export HSD_TEST_MYSQL_URL HSD_MARIADB_PORT HSD_MARIADB_SOCKET HSD_MARIADB_DIR
echo "HSD_TEST_MYSQL_URL=$HSD_TEST_MYSQL_URL"
mariadb --no-defaults -h127.0.0.1 -P"$HSD_MARIADB_PORT" -uhsd -phsd hsdtest \
    -N -e 'select concat("connected as hsd to ", version())'

if [[ $setup_only -eq 1 ]]; then
    section "--setup-only: skipping cargo test and smoke steps"
    exit 0
fi

section "unit and integration tests: cargo test --workspace (incl. the fuzz corpora, replayed)"
cargo test --workspace

# --- compat and bench smoke (added by their owners) ---
# Each step: a `section "..."` header, then commands that fail the run on error.
# MariaDB is running and HSD_TEST_MYSQL_URL is exported here.

section "compat: third-party clients (hs4j, node-handlersocket, nc) on the embedded store"
HSD_BIN="$ROOT/target/debug/hsd" bash "$ROOT/compat/run.sh" sqlite

section "compat: third-party clients (hs4j, node-handlersocket, nc) on MariaDB"
HSD_BIN="$ROOT/target/debug/hsd" bash "$ROOT/compat/run.sh" mysql

section "python client: pytest against hsd (embedded store, MariaDB) and the original plugin"
# A venv under target/ with the client (clients/python) and its test tools
# from PyPI; the tests start their own hsd processes from target/debug/hsd
# and use the private MariaDB and its plugin (HSD_TEST_MYSQL_URL,
# HSD_HS_ORIGINAL_PORT[_WR], exported above). Nothing may be skipped.
PYVENV=$ROOT/target/pyclient-venv
[[ -x "$PYVENV/bin/python" ]] || python3 -m venv "$PYVENV" \
    || { echo "python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$PYVENV/bin/python" -m pip install -q --disable-pip-version-check "$ROOT/clients/python[test]" mypy==2.4.1
"$PYVENV/bin/python" -m mypy --strict --cache-dir "$ROOT/target/mypy-cache" "$ROOT/clients/python/src/hsd_client"
pylog=$ROOT/target/pyclient-pytest.log
(cd "$ROOT/clients/python" && HSD_BIN="$ROOT/target/debug/hsd" \
    "$PYVENV/bin/python" -m pytest -p no:cacheprovider -q -rsxX tests) 2>&1 | tee "$pylog"
if grep -Eq '[0-9]+ (skipped|xpassed)' "$pylog"; then
    echo "python client: a test was skipped or unexpectedly passed (see above)" >&2
    exit 1
fi

section "go client: go vet and go test -race against hsd (embedded store, MariaDB) and the original plugin"
# clients/go, standard library only. The tests start their own hsd processes
# from target/debug/hsd, use the private MariaDB and its plugin (the variables
# exported above; under CI a missing one fails the test) and build and run the
# README's programs (TestReadmeExamples). gofmt must have nothing to say, and
# nothing may be skipped.
GO=$(command -v go || true)
if [[ -z "$GO" && -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go; fi
[[ -n "$GO" ]] || { echo "go client: no go on PATH (install Go 1.26 from https://go.dev/dl/)" >&2; exit 1; }
"$GO" version
unformatted=$(cd "$ROOT/clients/go" && "$("$GO" env GOROOT)/bin/gofmt" -l .)
[[ -z "$unformatted" ]] || { echo "go client: gofmt would change: $unformatted" >&2; exit 1; }
(cd "$ROOT/clients/go" && "$GO" vet ./...)
golog=$ROOT/target/goclient-test.log
if ! (cd "$ROOT/clients/go" && HSD_BIN="$ROOT/target/debug/hsd" "$GO" test -race -count=1 -v ./...) >"$golog" 2>&1; then
    grep -Ev '^ *(=== (RUN|PAUSE|CONT)|--- PASS)' "$golog" >&2 || true
    echo "go client: tests failed (whole log: $golog)" >&2
    exit 1
fi
grep -E '^(ok|FAIL|\?) ' "$golog"
echo "go client: $(grep -c -- '--- PASS' "$golog") tests and subtests passed"
if grep -q -- '--- SKIP' "$golog"; then
    grep -A2 -- '--- SKIP' "$golog" >&2
    echo "go client: a test was skipped (see above)" >&2
    exit 1
fi

section "bench smoke: scripts/bench.sh --quick (every system and workload; checks it runs, not how fast)"
bash "$ROOT/scripts/bench.sh" --quick --profile debug --json "$ROOT/target/bench-quick.json"

# --- end of compat and bench smoke ---

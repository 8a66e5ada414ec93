#!/usr/bin/env bash
# scripts/test.sh: the one command that runs every hsd test (CI runs it via .ci/run).
#
# Steps: install missing Debian packages (scripts/deps.sh), build the whole
# workspace and its tests, start a private MariaDB (scripts/mariadb.sh) and a
# private MySQL 8.0.31 (scripts/mysql8.sh), each stopped again on exit unless
# it was already running before this script, and export HSD_TEST_MYSQL_URL
# (MariaDB) and HSD_TEST_MYSQL8_URL so neither half is ever skipped. Then two
# halves run side by side:
#   - MariaDB and the rest (foreground): every test of the workspace build
#     (crates/hsd's from their binaries, as built; its
#     tests/hostile and tests/conformance from their binaries in the
#     background beside the others: both mostly wait; so do the suites
#     that start MariaDBs of their own, in a lane of their own, which the
#     replication half then follows, and the longest suites, in the heavy
#     lane, which the bench smoke (scripts/bench.sh --quick) and the
#     Debian package's test then follow), then the README's quick starts
#     (scripts/readme-check.py), the Python client's tests (clients/python,
#     in a venv under target/ made while cargo builds), the Go client's
#     tests (clients/go, go vet and go test -race), then the memcached
#     clients (compat/memcached: pymemcache and gomemcache, on all three
#     backends) and libmemcached's memcapable (tests/memcached_memcapable),
#     beside a lane with the compat steps (hs4j, node-handlersocket, nc)
#     and the original plugin's regression tests against the plugin and
#     hsd (scripts/plugin-regtest.sh);
#   - MySQL 8 (background, output in target/test-mysql8.log, printed when it
#     ends): the MySQL backend's suites (the mysql_* tests and the
#     both-backend protocol, operations and crash tests) run again with
#     HSD_TEST_MYSQL_URL naming MySQL 8, then the Python client's tests and
#     hs4j and node-handlersocket (compat/run.sh) against hsd on MySQL 8.
#     Tests that need the original plugin stay MariaDB-only: it cannot load
#     into MySQL.
#   - replication (background, in the private-server lane once its suites
#     are done,
#     output in target/test-replication-half.log): a MariaDB GTID primary with two
#     replicas (scripts/replication.sh), the same on MySQL 8.0.31 with
#     gtid_mode=ON (HSD_REPL_FLAVOR=mysql8, target/replication-mysql8) and
#     a 3-node Galera cluster (scripts/galera.sh), started while cargo
#     builds, and the suites of crates/cluster-tests against them
#     (tests/replication.rs on both flavors, the MySQL run without the
#     three tests that compare with the original plugin and followed by
#     the row cache's MySQL 8 tests on that set's primary, gtid_mode ON;
#     and tests/galera.rs; all three side by side: each has its own
#     servers).
#   - the Debian package (in the heavy lane, output in
#     target/test-package.log): scripts/test-package.sh packs the debug
#     build, installs it, verifies and runs its unit's command line, runs
#     `hsd check` on good and bad configs, upgrades and purges it (root
#     only, as CI runs; it refuses a machine where hsd is installed).
#   - Vitess (scripts/vitess.sh, started with the others: its first start
#     builds vttestserver, vtcombo and mysqlctl with Go, minutes on a cold
#     Go cache, while cargo builds): vtgate in front of the keyspace `ks` in
#     two shards; HSD_TEST_VITESS_URL is exported for tests/vitess.rs, which
#     runs with crates/hsd's suites, and Vitess is stopped right after.
# Any failure, in any half, including a server failing to start, fails the
# whole run.
#
# Usage: scripts/test.sh                run everything
#        scripts/test.sh --setup-only   deps + both servers' start/env only, no
#                                       cargo (checks the machine, stops them)
# Environment: HSD_MARIADB_DIR (private MariaDB directory, default
#   target/mariadb), HSD_MARIADB_TIMEOUT; HSD_MYSQL8_DIR (default
#   target/mysql8), HSD_MYSQL8_DIST; see scripts/mariadb.sh, scripts/mysql8.sh.
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

# Every server starts while cargo builds: the private MariaDB, MySQL 8
# (fetched with Maven and unpacked first), the replicated set-ups. Each is
# stopped on exit only if this script started it: a developer's running
# instance is reused and left alone.
mkdir -p "$ROOT/target"
stop_mariadb=1
bash "$ROOT/scripts/mariadb.sh" status >/dev/null 2>&1 && stop_mariadb=0
stop_mysql8=1
bash "$ROOT/scripts/mysql8.sh" status >/dev/null 2>&1 && stop_mysql8=0
stop_repl=1
bash "$ROOT/scripts/replication.sh" status >/dev/null 2>&1 && stop_repl=0
# The MySQL 8 replicated set: scripts/replication.sh's mysql8 flavor in a
# directory of its own.
REPL8_DIR=$ROOT/target/replication-mysql8
repl8() { HSD_REPL_FLAVOR=mysql8 HSD_REPL_DIR=$REPL8_DIR bash "$ROOT/scripts/replication.sh" "$@"; }
stop_repl8=1
repl8 status >/dev/null 2>&1 && stop_repl8=0
stop_galera=1
bash "$ROOT/scripts/galera.sh" status >/dev/null 2>&1 && stop_galera=0
stop_vitess=1
bash "$ROOT/scripts/vitess.sh" status >/dev/null 2>&1 && stop_vitess=0
mariadb_start_log=$ROOT/target/mariadb-start.log
mysql8_start_log=$ROOT/target/mysql8-start.log
repl_start_log=$ROOT/target/replication-start.log
repl8_start_log=$ROOT/target/replication-mysql8-start.log
galera_start_log=$ROOT/target/galera-start.log
vitess_start_log=$ROOT/target/vitess-start.log
bash "$ROOT/scripts/mariadb.sh" start >"$mariadb_start_log" 2>&1 &
mariadb_start_pid=$!
{ bash "$ROOT/scripts/mysql8.sh" fetch && bash "$ROOT/scripts/mysql8.sh" start; } >"$mysql8_start_log" 2>&1 &
mysql8_start_pid=$!
bash "$ROOT/scripts/replication.sh" start >"$repl_start_log" 2>&1 &
repl_start_pid=$!
# (It fetches MySQL 8.0.31 itself when absent, under mysql8.sh's lock.)
repl8 start >"$repl8_start_log" 2>&1 &
repl8_start_pid=$!
bash "$ROOT/scripts/galera.sh" start >"$galera_start_log" 2>&1 &
galera_start_pid=$!
bash "$ROOT/scripts/vitess.sh" start >"$vitess_start_log" 2>&1 &
vitess_start_pid=$!
# The Python client's venv, shared by both halves (the client, its test tools
# and pymemcache from PyPI): made beside the build, mostly network.
PYVENV=$ROOT/target/pyclient-venv
pyvenv_log=$ROOT/target/pyvenv-setup.log
{ { [[ -x "$PYVENV/bin/python" ]] || python3 -m venv "$PYVENV"; } &&
    "$PYVENV/bin/python" -m pip install -q --disable-pip-version-check "$ROOT/clients/python[test]" \
        mypy==2.4.1 pymemcache==4.0.0; } >"$pyvenv_log" 2>&1 &
pyvenv_pid=$!
start_pids=("$mariadb_start_pid" "$mysql8_start_pid" "$repl_start_pid" "$repl8_start_pid" "$galera_start_pid"
    "$vitess_start_pid" "$pyvenv_pid")
# Until the full exit handler is set (after the build): never leave them
# running.
early_exit() {
    local rc=$?
    wait "${start_pids[@]}" 2>/dev/null || true
    [[ $stop_mariadb -eq 1 ]] && bash "$ROOT/scripts/mariadb.sh" stop >/dev/null 2>&1
    [[ $stop_mysql8 -eq 1 ]] && bash "$ROOT/scripts/mysql8.sh" stop >/dev/null 2>&1
    [[ $stop_repl -eq 1 ]] && bash "$ROOT/scripts/replication.sh" stop >/dev/null 2>&1
    [[ $stop_repl8 -eq 1 ]] && repl8 stop >/dev/null 2>&1
    [[ $stop_galera -eq 1 ]] && bash "$ROOT/scripts/galera.sh" stop >/dev/null 2>&1
    [[ $stop_vitess -eq 1 ]] && bash "$ROOT/scripts/vitess.sh" stop >/dev/null 2>&1
    exit "$rc"
}
trap early_exit EXIT

# Clippy lints the workspace's crates as they build: clippy-driver is their
# compiler (what `cargo clippy` does over a check build), with -D warnings.
# A separate `cargo clippy` checked every crate a second time (120 s of a
# CI run on 2 cores, after the build). Every cargo call below inherits
# these; without them the workspace's crates would build again.
export RUSTC_WORKSPACE_WRAPPER=clippy-driver
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

if [[ $setup_only -eq 0 ]]; then
    section "lint gate: cargo fmt --check, the crates' arrows"
    cargo fmt --all -- --check
    bash "$ROOT/scripts/crate-arrows.sh"

    section "build with clippy: cargo build --workspace --all-targets, clippy -D warnings (workspace lints in Cargo.toml) on every workspace crate, and the tests"
    cargo build --workspace --all-targets
    cargo test --workspace --no-run
fi

section "private MariaDB and MySQL 8 (started while cargo built)"
mysql8_pid=""
hostile_pid=""
conformance_pid=""
compat_pid=""
private_pid=""
heavy_pid=""
on_exit() {
    local rc=$?
    if [[ -n "$private_pid" ]] && kill -0 "$private_pid" 2>/dev/null; then
        kill -TERM -- "-$private_pid" 2>/dev/null || kill -TERM "$private_pid" 2>/dev/null || true
        wait "$private_pid" 2>/dev/null || true
    fi
    if [[ -n "$heavy_pid" ]] && kill -0 "$heavy_pid" 2>/dev/null; then
        kill -TERM -- "-$heavy_pid" 2>/dev/null || kill -TERM "$heavy_pid" 2>/dev/null || true
        wait "$heavy_pid" 2>/dev/null || true
    fi
    if [[ -n "$compat_pid" ]] && kill -0 "$compat_pid" 2>/dev/null; then
        kill -TERM -- "-$compat_pid" 2>/dev/null || kill -TERM "$compat_pid" 2>/dev/null || true
        wait "$compat_pid" 2>/dev/null || true
    fi
    if [[ -n "$hostile_pid" ]] && kill -0 "$hostile_pid" 2>/dev/null; then
        kill -TERM -- "-$hostile_pid" 2>/dev/null || kill -TERM "$hostile_pid" 2>/dev/null || true
        wait "$hostile_pid" 2>/dev/null || true
    fi
    if [[ -n "$conformance_pid" ]] && kill -0 "$conformance_pid" 2>/dev/null; then
        kill -TERM -- "-$conformance_pid" 2>/dev/null || kill -TERM "$conformance_pid" 2>/dev/null || true
        wait "$conformance_pid" 2>/dev/null || true
    fi
    if [[ -n "$mysql8_pid" ]] && kill -0 "$mysql8_pid" 2>/dev/null; then
        echo "== stopping the MySQL 8 half (pid $mysql8_pid)"
        kill -TERM -- "-$mysql8_pid" 2>/dev/null || kill -TERM "$mysql8_pid" 2>/dev/null || true
        wait "$mysql8_pid" 2>/dev/null || true
    fi
    wait "${start_pids[@]}" 2>/dev/null || true
    if [[ $stop_repl -eq 1 ]]; then
        echo "== stopping the replicated MariaDB"
        bash "$ROOT/scripts/replication.sh" stop || true
    fi
    if [[ $stop_repl8 -eq 1 ]]; then
        echo "== stopping the replicated MySQL 8"
        repl8 stop || true
    fi
    if [[ $stop_galera -eq 1 ]]; then
        echo "== stopping the Galera cluster"
        bash "$ROOT/scripts/galera.sh" stop || true
    fi
    if [[ $stop_vitess -eq 1 ]]; then
        echo "== stopping Vitess"
        bash "$ROOT/scripts/vitess.sh" stop || true
    fi
    if [[ $stop_mariadb -eq 1 ]]; then
        echo
        echo "== stopping private MariaDB"
        bash "$ROOT/scripts/mariadb.sh" stop || true
    fi
    if [[ $stop_mysql8 -eq 1 ]]; then
        echo "== stopping private MySQL 8"
        bash "$ROOT/scripts/mysql8.sh" stop || true
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

# wait_started NAME PID LOG: the background start of NAME, its log shown.
wait_started() {
    if ! wait "$2"; then
        cat "$3" >&2
        echo "scripts/$1.sh start failed (log above)" >&2
        exit 1
    fi
    cat "$3"
    echo "($1 ready by t+$((SECONDS - START))s)"
}
wait_started mariadb "$mariadb_start_pid" "$mariadb_start_log"
eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
: "${HSD_TEST_MYSQL_URL:?scripts/mariadb.sh env did not set HSD_TEST_MYSQL_URL}"
export HSD_TEST_MYSQL_URL HSD_MARIADB_PORT HSD_MARIADB_SOCKET HSD_MARIADB_DIR
echo "HSD_TEST_MYSQL_URL=$HSD_TEST_MYSQL_URL"
mariadb --no-defaults -h127.0.0.1 -P"$HSD_MARIADB_PORT" -uhsd -phsd hsdtest \
    -N -e 'select concat("connected as hsd to ", version())'

wait_started mysql8 "$mysql8_start_pid" "$mysql8_start_log"
eval "$(bash "$ROOT/scripts/mysql8.sh" env)"
: "${HSD_TEST_MYSQL8_URL:?scripts/mysql8.sh env did not set HSD_TEST_MYSQL8_URL}"
export HSD_TEST_MYSQL8_URL HSD_MYSQL8_PORT HSD_MYSQL8_SOCKET HSD_MYSQL8_DIR HSD_MYSQL8_CA
echo "HSD_TEST_MYSQL8_URL=$HSD_TEST_MYSQL8_URL"
mariadb --no-defaults -h127.0.0.1 -P"$HSD_MYSQL8_PORT" -uhsd -phsd hsdtest \
    -N -e 'select concat("connected as hsd to MySQL ", version())'

wait_started replication "$repl_start_pid" "$repl_start_log"
wait_started replication "$repl8_start_pid" "$repl8_start_log"
wait_started galera "$galera_start_pid" "$galera_start_log"
eval "$(bash "$ROOT/scripts/replication.sh" env)"
eval "$(bash "$ROOT/scripts/galera.sh" env)"
export HSD_REPL_PRIMARY_URL HSD_REPL_REPLICA_URLS HSD_REPL_DIR HSD_REPL_HS_PORT HSD_REPL_HS_PORT_WR
export HSD_GALERA_URLS HSD_GALERA_DIR
echo "HSD_REPL_PRIMARY_URL=$HSD_REPL_PRIMARY_URL HSD_REPL_REPLICA_URLS=$HSD_REPL_REPLICA_URLS"
echo "HSD_GALERA_URLS=$HSD_GALERA_URLS"

wait_started vitess "$vitess_start_pid" "$vitess_start_log"
eval "$(bash "$ROOT/scripts/vitess.sh" env)"
: "${HSD_TEST_VITESS_URL:?scripts/vitess.sh env did not set HSD_TEST_VITESS_URL}"
export HSD_TEST_VITESS_URL HSD_VITESS_PORT HSD_VITESS_KEYSPACE HSD_VITESS_HTTP HSD_VITESS_DIR
echo "HSD_TEST_VITESS_URL=$HSD_TEST_VITESS_URL"

if [[ $setup_only -eq 1 ]]; then
    section "--setup-only: skipping cargo test and smoke steps"
    exit 0
fi

# The Python client's venv (started with the servers), before either half uses it.
if ! wait "$pyvenv_pid"; then
    cat "$pyvenv_log" >&2
    echo "the Python venv could not be made (Debian: apt-get install python3-venv; log above)" >&2
    exit 1
fi
echo "python venv ready: $PYVENV (t+$((SECONDS - START))s)"

# no_skips LOG WHAT: fails when pytest's log shows a skipped or xpassed test.
no_skips() {
    if grep -Eq '[0-9]+ (skipped|xpassed)' "$1"; then
        echo "$2: a test was skipped or unexpectedly passed (see above)" >&2
        return 1
    fi
}

# The hsd test binaries cargo built (name, path): the MySQL 8 half runs them
# directly, so that no second cargo competes for the build lock.
# Asked of the whole workspace, as it was built: `-p hsd` alone unifies
# features differently and would build hsd and every test again (two
# minutes, unseen, in a run of 2026-12-07).
test_artifacts=$ROOT/target/test-artifacts.jsonl
cargo test --workspace --no-run --message-format=json 2>/dev/null >"$test_artifacts"
# test_bins_of CRATE [KINDS]: "name path" of each test executable of the
# crate; KINDS (default: test, its tests/ suites) may be lib,bin (its unit
# tests, named lib:NAME and bin:NAME).
test_bins_of() {
    python3 -c 'import json,sys
crate, kinds = sys.argv[1], sys.argv[2].split(",")
for line in open(sys.argv[3]):
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m.get("executable")
            and m["profile"]["test"]
            and m["target"]["kind"][0] in kinds
            and "/crates/" + crate + "/" in m["target"]["src_path"]):
        name = m["target"]["name"]
        if kinds != ["test"]:
            name = m["target"]["kind"][0] + ":" + name
        print(name, m["executable"])' "$1" "${2:-test}" "$test_artifacts"
}
hsd_test_bins=$(test_bins_of hsd)

# The MySQL 8 half: every step runs, and the half fails if any did.
mysql8_half() {
    local failed=0 bin name filter
    local started=$SECONDS
    echo "== MySQL 8 half: $HSD_TEST_MYSQL8_URL"
    # (binary, filter): the MySQL backend's own suites whole; the
    # both-backend suites' mysql halves.
    for spec in "mysql_types -" "mysql_consistency -" "mysql_ddl -" "mysql_metadata_locks -" "mysql_grouping -" \
        "protocol ::mysql" "operations ::mysql" "crash ::mysql"; do
        read -r name filter <<<"$spec"
        bin=$(awk -v n="$name" '$1 == n {print $2}' <<<"$hsd_test_bins")
        if [[ -z "$bin" ]]; then
            echo "MySQL 8 half: no test binary $name" >&2
            failed=1
            continue
        fi
        echo
        echo "== MySQL 8: tests/$name.rs ${filter/#-/(all)} (t+$((SECONDS - started))s)"
        local args=()
        [[ "$filter" != - ]] && args=("$filter")
        (cd "$ROOT/crates/hsd" && HSD_TEST_MYSQL_URL=$HSD_TEST_MYSQL8_URL "$bin" "${args[@]}") \
            || { echo "MySQL 8: tests/$name.rs FAILED" >&2; failed=1; }
    done
    echo
    echo "== MySQL 8: python client against hsd on MySQL 8 (t+$((SECONDS - started))s)"
    local pylog8=$ROOT/target/pyclient-pytest-mysql8.log
    if (cd "$ROOT/clients/python" && HSD_BIN="$ROOT/target/debug/hsd" \
            HSD_TEST_MYSQL_URL=$HSD_TEST_MYSQL8_URL \
            "$PYVENV/bin/python" -m pytest -p no:cacheprovider -q -rsxX -k hsd-mysql tests) \
            >"$pylog8" 2>&1; then
        cat "$pylog8"
        no_skips "$pylog8" "python client on MySQL 8" || failed=1
    else
        cat "$pylog8"
        echo "MySQL 8: python client tests FAILED" >&2
        failed=1
    fi
    echo
    echo "== MySQL 8: compat (hs4j, node-handlersocket, nc) against hsd on MySQL 8 (t+$((SECONDS - started))s)"
    HSD_BIN="$ROOT/target/debug/hsd" HSD_TEST_MYSQL_URL=$HSD_TEST_MYSQL8_URL \
        bash "$ROOT/compat/run.sh" mysql || { echo "MySQL 8: compat FAILED" >&2; failed=1; }
    echo
    echo "== MySQL 8 half done in $((SECONDS - started))s: $([[ $failed -eq 0 ]] && echo OK || echo FAILED)"
    return "$failed"
}

mysql8_log=$ROOT/target/test-mysql8.log
# Its own process group, so that an interrupted run can stop all of it.
set -m
mysql8_half >"$mysql8_log" 2>&1 &
mysql8_pid=$!
mysql8_started=$((SECONDS - START))
set +m
echo "MySQL 8 half running in the background (pid $mysql8_pid, log $mysql8_log)"


# suite_in_background NAME: runs tests/NAME.rs from its binary in the
# background, in its own process group (so that an interrupted run can stop
# all of it), output in target/test-NAME.log; its pid goes to NAME_pid.
suite_in_background() {
    local name=$1 bin
    bin=$(awk -v n="$name" '$1 == n {print $2}' <<<"$hsd_test_bins")
    [[ -n "$bin" ]] || { echo "no $name test binary" >&2; exit 1; }
    set -m
    (cd "$ROOT/crates/hsd" && "$bin") >"$ROOT/target/test-$name.log" 2>&1 &
    printf -v "${name}_pid" '%s' "$!"
    set +m
    echo "tests/$name running in the background (pid $!, log target/test-$name.log)"
}

# wait_suite NAME: waits for it, prints its summary, fails the run if it failed.
wait_suite() {
    local name=$1 pid_var=${1}_pid rc=0 log=$ROOT/target/test-$1.log
    wait "${!pid_var}" || rc=$?
    printf -v "$pid_var" '%s' ""
    grep -vE '^\[hsd\]' "$log" | grep -E '^(test |test result|failures:|---- )' || true
    if [[ $rc -ne 0 ]]; then
        grep -vE '^\[hsd\]' "$log" | tail -n 150 >&2
        echo "tests/$name FAILED (exit $rc; whole log $log)" >&2
        exit 1
    fi
}

# The hostile suite (about half of the workspace's test time, most of it
# spent waiting on timeouts) and the conformance suite (a minute and a half,
# most of it waiting on the servers it compares) run beside the other
# suites. Vitess, which some conformance tests use, stops once it is done.
suite_in_background hostile
suite_in_background conformance

# The replication half: its three runs side by side (each has its servers),
# run from their binaries (no second cargo competes for the build lock).
# It runs in the private-server lane (below), once that lane's suites are
# done.
cluster_test_bins=$(test_bins_of cluster-tests)
# Measured alone on 2 cores (2026-12-07): the MariaDB run and Galera 76 s;
# with the MySQL 8 run beside them 155 s (its suite 137 s, then the row
# cache's mysql8_* tests 19 s), which the foreground's client and smoke
# steps, run meanwhile, mostly cover.
# The tests of tests/replication.rs that compare with the original plugin,
# which MySQL cannot load: not run on the MySQL 8 set.
plugin_only_replication_tests=(hsd_writes_replicate_the_plugins_do_not
    conformance_short_run_with_reads_on_replicas lockstep_clients_on_replicas_answer_as_the_original)
row_cache_bin=$(awk '$1 == "mysql_row_cache" {print $2}' <<<"$hsd_test_bins")
replication_half() {
    local started=$SECONDS failed=0 run name bin pids=() runs=() args
    for run in replication replication-mysql8 galera; do
        name=${run%-mysql8}
        bin=$(awk -v n="$name" '$1 == n {print $2}' <<<"$cluster_test_bins")
        if [[ -z "$bin" ]]; then
            echo "replication half: no test binary $name" >&2
            failed=1
            continue
        fi
        args=()
        if [[ $run == replication-mysql8 ]]; then
            for t in "${plugin_only_replication_tests[@]}"; do args+=(--skip "$t"); done
        fi
        (
            # The MySQL 8 run: the replication env of that set instead, and
            # after the suite the row cache's MySQL 8 tests on its primary
            # (gtid_mode ON: reads after hsd's writes compare GTIDs there).
            if [[ $run == replication-mysql8 ]]; then
                unset HSD_REPL_HS_PORT HSD_REPL_HS_PORT_WR
                eval "$(repl8 env)"
            fi
            cd "$ROOT/crates/cluster-tests" && HSD_BIN="$ROOT/target/debug/hsd" "$bin" "${args[@]}" \
                >"$ROOT/target/test-$run.log" 2>&1 || exit 1
            if [[ $run == replication-mysql8 ]]; then
                echo "== tests/mysql_row_cache.rs mysql8_* on the MySQL 8 GTID primary" >>"$ROOT/target/test-$run.log"
                cd "$ROOT/crates/hsd" && HSD_TEST_MYSQL8_URL=$HSD_REPL_PRIMARY_URL "$row_cache_bin" mysql8_ \
                    >>"$ROOT/target/test-$run.log" 2>&1
            fi
        ) &
        pids+=($!)
        runs+=("$run")
    done
    for i in "${!pids[@]}"; do
        if wait "${pids[$i]}"; then
            echo "== ${runs[$i]}: OK (t+$((SECONDS - started))s)"
            grep -E '^test result' "$ROOT/target/test-${runs[$i]}.log" || true
        else
            echo "== ${runs[$i]}: FAILED (full log target/test-${runs[$i]}.log)" >&2
            grep -vE '^\[hsd\]' "$ROOT/target/test-${runs[$i]}.log" | tail -n 80 >&2
            failed=1
        fi
    done
    echo "== replication half done in $((SECONDS - started))s: $([[ $failed -eq 0 ]] && echo OK || echo FAILED)"
    return "$failed"
}

# The suites that start MariaDBs of their own (PrivateMariadb) share no
# server with the others: they run one after another in a lane beside the
# rest (about a hundred seconds, most of it waiting on those servers and on
# timeouts). mysql_stalls, which needs no server of its own, runs in the
# heavy lane (below).
private_lane_suites=(mysql_in_doubt mysql_outage mysql_binlog_filters mysql_lower_case_names
    mysql_session_tracking mysql_tls)
# run_suites LANE NAME...: crates/hsd's tests/NAME.rs from their binaries,
# one after another, each named with its start time; fails (after running
# them all) when any failed or has no binary.
run_suites() {
    local lane=$1 started=$SECONDS failed=0 name bin
    shift
    for name in "$@"; do
        bin=$(awk -v n="$name" '$1 == n {print $2}' <<<"$hsd_test_bins")
        if [[ -z "$bin" ]]; then
            echo "$lane: no test binary $name" >&2
            failed=1
            continue
        fi
        echo "== tests/$name.rs (t+$((SECONDS - started))s)"
        (cd "$ROOT/crates/hsd" && "$bin") || { echo "tests/$name.rs FAILED" >&2; failed=1; }
    done
    echo "== $lane's suites done in $((SECONDS - started))s: $([[ $failed -eq 0 ]] && echo OK || echo FAILED)"
    return "$failed"
}
private_lane() {
    local failed=0
    run_suites "private-server lane" "${private_lane_suites[@]}" || failed=1
    local rc=0
    replication_half >"$repl_log" 2>&1 || rc=$?
    echo "$rc" >"$repl_rc_file"
    return "$failed"
}
private_log=$ROOT/target/test-private-lane.log
repl_log=$ROOT/target/test-replication-half.log
repl_rc_file=$ROOT/target/test-replication-half.rc
rm -f "$repl_rc_file"
set -m
private_lane >"$private_log" 2>&1 &
private_pid=$!
set +m
echo "private-server lane (${private_lane_suites[*]}) running in the background (pid $private_pid, log $private_log)"

# The longest of crates/hsd's suites run in a lane of their own beside the
# foreground's (they mostly wait, on stalls, timeouts and servers: 218 s of
# the 471 s the foreground took in one stream in a CI run of 2026-12-08,
# where vmstat showed the CPU idle half the time); the bench smoke and the
# Debian package's test follow them in that lane. Output in
# target/test-heavy-lane.log, target/test-bench-smoke.log and
# target/test-package.log, printed at the end.
heavy_lane_suites=(mysql_stalls mysql_row_cache crash memcached_races mysql_slow_readers mysql_servers)
heavy_log=$ROOT/target/test-heavy-lane.log
package_log=$ROOT/target/test-package.log
package_rc_file=$ROOT/target/test-package.rc
rm -f "$package_rc_file"
heavy_lane() {
    local started=$SECONDS failed=0
    run_suites "heavy lane" "${heavy_lane_suites[@]}" || failed=1
    # The bench smoke: scripts/bench.sh --quick, every system and workload
    # (checks it runs, not how fast). --no-build: the workspace build made
    # both binaries; bench.sh's own `cargo build -p hsd -p hsbench` unifies
    # features differently and would rebuild hsd. One connection count (8;
    # --quick alone takes 1 and 32), depths 1 and 16.
    echo "== bench smoke (t+$((SECONDS - started))s; log target/test-bench-smoke.log)"
    if bash "$ROOT/scripts/bench.sh" --quick --conns 8 --no-build --profile debug \
            --json "$ROOT/target/bench-quick.json" >"$ROOT/target/test-bench-smoke.log" 2>&1; then
        echo "== bench smoke: OK"
    else
        echo "bench smoke FAILED" >&2
        failed=1
    fi
    # The Debian package of the debug build just tested: install, unit, hsd
    # check, upgrade, purge (a minute or two, mostly dpkg and lintian).
    echo "== Debian package test (t+$((SECONDS - started))s; log $package_log)"
    local rc=0
    bash "$ROOT/scripts/test-package.sh" >"$package_log" 2>&1 || rc=$?
    echo "$rc" >"$package_rc_file"
    echo "== heavy lane done in $((SECONDS - started))s: $([[ $failed -eq 0 ]] && echo OK || echo FAILED)"
    return "$failed"
}
section "unit and integration tests: cargo test --workspace (incl. the fuzz corpora, replayed), all but tests/hostile, tests/conformance, the private-server lane and the heavy lane"
# Suites that count the shared MariaDB's global statements (Com_commit,
# Com_stmt_execute, Innodb_deadlocks) run first, before the heavy lane
# adds its writers to that server (half a minute).
counting_suites=(mysql_grouping mysql_consistency mysql_nontransactional)
other_hsd_tests=()
while read -r name _; do
    # tests/memcached_memcapable runs with the memcached clients (below).
    case " hostile conformance memcached_memcapable ${private_lane_suites[*]} ${heavy_lane_suites[*]} ${counting_suites[*]} " in
        *" $name "*) ;;
        *) other_hsd_tests+=("$name") ;;
    esac
done <<<"$hsd_test_bins"
# hsd's own from the binaries the workspace build made: `cargo test -p hsd`
# unifies features differently and rebuilt mysql_common, hsd-mysql and hsd
# with every test (5m19s in a CI run of 2026-12-07).
run_hsd_test() {
    local name=$1 bin=$2
    echo "== crates/hsd: $name (${bin##*/})"
    (cd "$ROOT/crates/hsd" && "$bin") || { echo "crates/hsd: $name FAILED" >&2; exit 1; }
}
for name in "${counting_suites[@]}"; do
    run_hsd_test "tests/$name.rs" "$(awk -v n="$name" '$1 == n {print $2}' <<<"$hsd_test_bins")"
done
set -m
heavy_lane >"$heavy_log" 2>&1 &
heavy_pid=$!
set +m
echo "heavy lane (${heavy_lane_suites[*]}) running in the background (pid $heavy_pid, log $heavy_log)"
cargo test --workspace --exclude hsd-cluster-tests --exclude hsd
while read -r name bin; do
    run_hsd_test "$name" "$bin"
done < <(test_bins_of hsd lib,bin)
for name in "${other_hsd_tests[@]}"; do
    run_hsd_test "tests/$name.rs" "$(awk -v n="$name" '$1 == n {print $2}' <<<"$hsd_test_bins")"
done

section "tests/conformance (background since the suites began): waiting for it"
wait_suite conformance
# tests/vitess.rs and tests/conformance ran above: Vitess's three processes go now.
if [[ $stop_vitess -eq 1 ]]; then
    bash "$ROOT/scripts/vitess.sh" stop
    stop_vitess=0
fi

section "tests/hostile (background since the suites began): waiting for it"
wait_suite hostile


# --- compat and bench smoke (added by their owners) ---
# Each step: a `section "..."` header, then commands that fail the run on error.
# MariaDB is running and HSD_TEST_MYSQL_URL is exported here.

# The third-party clients and the original plugin's regression tests (about
# a minute and a half, mostly JVM and node start-ups and waiting on the
# servers) run beside the client steps below. (They once starved the Go
# client's cut-connection test, which now goes on until enough gets were
# answered under cuts.) Output in target/test-compat-lane.log, printed when
# it ends.
compat_lane() {
    local started=$SECONDS failed=0
    echo "== compat: third-party clients (hs4j, node-handlersocket, nc) on the embedded store"
    HSD_BIN="$ROOT/target/debug/hsd" bash "$ROOT/compat/run.sh" sqlite || failed=1
    echo
    echo "== compat: third-party clients (hs4j, node-handlersocket, nc) on MariaDB (t+$((SECONDS - started))s)"
    HSD_BIN="$ROOT/target/debug/hsd" bash "$ROOT/compat/run.sh" mysql || failed=1
    echo
    echo "== the original plugin's regression tests against the plugin and hsd (t+$((SECONDS - started))s)"
    # regtest/ from MariaDB's Debian source package (downloaded once into
    # ~/.cache/hsd/plugin-regtest/), over the Perl client built from it;
    # every test against the plugin, then against hsd on the same MariaDB.
    HSD_BIN="$ROOT/target/debug/hsd" bash "$ROOT/scripts/plugin-regtest.sh" || failed=1
    echo "== compat lane done in $((SECONDS - started))s: $([[ $failed -eq 0 ]] && echo OK || echo FAILED)"
    return "$failed"
}
compat_log=$ROOT/target/test-compat-lane.log
set -m
compat_lane >"$compat_log" 2>&1 &
compat_pid=$!
compat_started=$((SECONDS - START))
set +m
echo "compat lane (hs4j, node-handlersocket, nc, the plugin's regression tests) running in the background (pid $compat_pid, log $compat_log)"

section "README quick starts and docs/memcached.md's container example, run as written (scripts/readme-check.py)"
# The demo, the nc and Python sessions of "Try it", its hsd sql lines and
# the memcached door's commands, each answer compared with the README's
# (about two seconds).
HSD_BIN="$ROOT/target/debug/hsd" python3 "$ROOT/scripts/readme-check.py"

section "python client: pytest against hsd (embedded store, MariaDB) and the original plugin"
# A venv under target/ with the client (clients/python) and its test tools
# from PyPI; the tests start their own hsd processes from target/debug/hsd
# and use the private MariaDB and its plugin (HSD_TEST_MYSQL_URL,
# HSD_HS_ORIGINAL_PORT[_WR], exported above). Nothing may be skipped.
"$PYVENV/bin/python" -m mypy --strict --cache-dir "$ROOT/target/mypy-cache" "$ROOT/clients/python/src/hsd_client"
pylog=$ROOT/target/pyclient-pytest.log
(cd "$ROOT/clients/python" && HSD_BIN="$ROOT/target/debug/hsd" \
    "$PYVENV/bin/python" -m pytest -p no:cacheprovider -q -rsxX tests) 2>&1 | tee "$pylog"
no_skips "$pylog" "python client" || exit 1

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


section "memcached clients: pymemcache, gomemcache and memcapable against hsd's memcached port (embedded store, MariaDB, MySQL 8)"
# compat/memcached: each test starts its own hsd with --memcached-address over
# a fresh table on every backend (the variables exported above; under CI a
# missing one is an error). Nothing may be skipped.
mclog=$ROOT/target/memcached-clients.log
(cd "$ROOT/compat/memcached" && HSD_BIN="$ROOT/target/debug/hsd" \
    "$PYVENV/bin/python" -m pytest -p no:cacheprovider -q -rsxX .) 2>&1 | tee "$mclog"
no_skips "$mclog" "pymemcache" || exit 1
unformatted=$(cd "$ROOT/compat/memcached/go" && "$("$GO" env GOROOT)/bin/gofmt" -l .)
[[ -z "$unformatted" ]] || { echo "gomemcache test: gofmt would change: $unformatted" >&2; exit 1; }
(cd "$ROOT/compat/memcached/go" && "$GO" vet ./... \
    && HSD_BIN="$ROOT/target/debug/hsd" "$GO" test -count=1 -v ./...) 2>&1 | tee -a "$mclog"
grep -q -- '--- SKIP' "$mclog" && { echo "gomemcache: a test was skipped" >&2; exit 1; }
# memcapable (libmemcached's conformance tests, Debian's memccapable): every
# ascii and binary test on each backend (crates/hsd/tests/memcached_memcapable.rs;
# about 7 s), the pass counts in the log.
(cd "$ROOT/crates/hsd" && "$(awk '$1 == "memcached_memcapable" {print $2}' <<<"$hsd_test_bins")" --nocapture) 2>&1 | tee -a "$mclog" \
    | grep -E 'memcapable -|test result'
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "memcapable: a test failed (log $mclog)" >&2; exit 1; }


# --- end of compat and bench smoke ---

section "compat lane (background since t+${compat_started}s): waiting for it, then its log"
compat_rc=0
wait "$compat_pid" || compat_rc=$?
compat_pid=""
cat "$compat_log"
if [[ $compat_rc -ne 0 ]]; then
    echo "the compat lane FAILED (exit $compat_rc; log above, also in $compat_log)" >&2
    exit 1
fi

section "heavy lane, the bench smoke and the Debian package (background since the suites began): waiting for it, then their logs"
heavy_rc=0
wait "$heavy_pid" || heavy_rc=$?
heavy_pid=""
grep -vE '^\[hsd\]' "$heavy_log" | grep -E '^(== |test result|failures:|---- |bench smoke)' || true
grep -E 'req/s|data check|done' "$ROOT/target/test-bench-smoke.log" | tail -n 60 || true
if [[ $heavy_rc -ne 0 ]]; then
    grep -vE '^\[hsd\]' "$heavy_log" | tail -n 150 >&2
    tail -n 40 "$ROOT/target/test-bench-smoke.log" >&2 || true
    echo "the heavy lane FAILED (exit $heavy_rc; whole log $heavy_log)" >&2
    exit 1
fi
cat "$package_log"
package_rc=$(cat "$package_rc_file" 2>/dev/null || echo "none")
if [[ $package_rc != 0 ]]; then
    echo "the Debian package test FAILED (exit $package_rc; log above, also in $package_log)" >&2
    exit 1
fi

section "private-server lane, then the replication half (background since the suites began): waiting for it, then their logs"
private_rc=0
wait "$private_pid" || private_rc=$?
private_pid=""
grep -vE '^\[hsd\]' "$private_log" | grep -E '^(== |test result|failures:|---- )' || true
if [[ $private_rc -ne 0 ]]; then
    grep -vE '^\[hsd\]' "$private_log" | tail -n 150 >&2
    echo "the private-server lane FAILED (exit $private_rc; whole log $private_log)" >&2
    exit 1
fi
cat "$repl_log"
repl_rc=$(cat "$repl_rc_file" 2>/dev/null || echo "none")
if [[ $repl_rc != 0 ]]; then
    echo "the replication half FAILED (exit $repl_rc; log above, also in $repl_log)" >&2
    exit 1
fi

section "MySQL 8 half (background since t+${mysql8_started}s): waiting for it, then its log"
mysql8_rc=0
wait "$mysql8_pid" || mysql8_rc=$?
mysql8_pid=""
cat "$mysql8_log"
if [[ $mysql8_rc -ne 0 ]]; then
    echo "the MySQL 8 half FAILED (exit $mysql8_rc; log above, also in $mysql8_log)" >&2
    exit 1
fi

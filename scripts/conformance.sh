#!/usr/bin/env bash
# scripts/conformance.sh: a long differential run of hsd against the original
# HandlerSocket plugin, of hsd on MySQL 8 against hsd on MariaDB, or of hsd
# on Vitess against hsd on one MySQL 8, with fresh seeds.
#
# Starts (or reuses) the private MariaDB of scripts/mariadb.sh, which loads the
# original plugin (not for `vitess`), for `mysql8` and `vitess` the private MySQL 8.0.31 of
# scripts/mysql8.sh, for `vitess` the Vitess of scripts/vitess.sh; builds hsd and hs-conformance; then runs hs-conformance,
# which starts hsd itself, sends the same seeded request streams to both
# sides, compares every answer and the rows left behind, and prints figures
# and, for each class of difference, a reduced transcript. Exit code 1 when
# anything differs.
#
# Usage: scripts/conformance.sh [mysql|sqlite|mysql8|vitess|both|all] [extra hs-conformance args]
#   mysql   the plugin vs hsd on MariaDB
#   sqlite  the plugin vs hsd's embedded store
#   mysql8  hsd on MariaDB (which answers as the plugin) vs hsd on MySQL 8
#   vitess  hsd on one MySQL 8 vs hsd on a two-shard Vitess keyspace, every
#           table of the suite sharded (docs/vitess.md, "Conformance")
#   both    mysql, then sqlite (the default); all: mysql, sqlite, mysql8, vitess
#   100000 requests each, a fresh seed from the clock.
#   e.g.  scripts/conformance.sh mysql --requests 20000 --seed 42
# Environment: HSD_MARIADB_DIR, HSD_MYSQL8_DIR, HSD_VITESS_DIR (see
#   scripts/mariadb.sh, scripts/mysql8.sh, scripts/vitess.sh), CONFORMANCE_REQUESTS.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

which=${1:-both}
case "$which" in
    mysql|sqlite|mysql8|vitess|both|all) shift || true ;;
    -*) which=both ;;
    *) echo "usage: $0 [mysql|sqlite|mysql8|vitess|both|all] [hs-conformance args]" >&2; exit 2 ;;
esac
requests=${CONFORMANCE_REQUESTS:-100000}

cargo build -j2 -p hsd -p hs-conformance
# The Vitess run compares hsd on Vitess with hsd on MySQL 8: no MariaDB.
if [[ $which != vitess ]]; then
    bash "$ROOT/scripts/mariadb.sh" start
    eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
    export HSD_TEST_MYSQL_URL HSD_HS_ORIGINAL_PORT HSD_HS_ORIGINAL_PORT_WR
fi
if [[ $which == mysql8 || $which == vitess || $which == all ]]; then
    bash "$ROOT/scripts/mysql8.sh" start
    eval "$(bash "$ROOT/scripts/mysql8.sh" env)"
    export HSD_TEST_MYSQL8_URL
fi
if [[ $which == vitess || $which == all ]]; then
    bash "$ROOT/scripts/vitess.sh" start
    eval "$(bash "$ROOT/scripts/vitess.sh" env)"
    export HSD_TEST_VITESS_URL
fi

rc=0
run() {
    local backend=$1
    shift
    echo "== hs-conformance --backend $backend (started $(date -u +%FT%TZ))"
    local data="$ROOT/target/conformance/$backend-data"
    rm -rf "$data"
    "$ROOT/target/debug/hs-conformance" --backend "$backend" --hsd "$ROOT/target/debug/hsd" \
        --data-dir "$data" --requests "$requests" "$@" || rc=$?
}
if [[ $which == mysql || $which == both || $which == all ]]; then run mysql "$@"; fi
if [[ $which == sqlite || $which == both || $which == all ]]; then run sqlite "$@"; fi
if [[ $which == mysql8 || $which == all ]]; then run mysql8 "$@"; fi
if [[ $which == vitess || $which == all ]]; then run vitess "$@"; fi
exit "$rc"

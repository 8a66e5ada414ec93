#!/usr/bin/env bash
# scripts/stall-stress.sh: the server-stall check of tests/mysql_stalls.rs,
# run many times (CI runs it 3 times per --write-groups setting). Each run:
# 4 clients pipeline inserts on hsd's write port while a private MariaDB is
# stopped with SIGSTOP ten times, for spells shorter and longer than
# --mysql-timeout; then every answer is compared with the table.
#
# Usage: scripts/stall-stress.sh [RUNS]   (RUNS per setting, default 20)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/common.sh
SCRIPT_NAME=stall-stress.sh
source scripts/lib/common.sh
runs=${1:-20}
[[ "$runs" =~ ^[0-9]+$ ]] || die "usage: $0 [RUNS]"
bash scripts/mariadb.sh start >/dev/null
eval "$(bash scripts/mariadb.sh env)"
export HSD_TEST_MYSQL_URL
say "stall check: $runs runs per --write-groups setting"
HSD_STALL_ROUNDS=$runs cargo test -p hsd --test mysql_stalls -- --nocapture 2>&1 \
    | grep -vE '^\[hsd\]|^[0-9T:.-]+Z +(INFO|WARN|DEBUG)'

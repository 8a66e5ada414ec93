#!/usr/bin/env bash
# scripts/bench-vitess.sh: hsd on Vitess against SQL through vtgate and hsd
# on one MySQL 8.0.31 (docs/vitess.md, "Figures").
#
# Needs Vitess (scripts/vitess.sh start) and MySQL 8 (scripts/mysql8.sh
# start) running, and release builds of hsd and hsbench (built here with
# nice when missing). Loads hsbench's data set (rows 1..N of id, name,
# email, created) into ks.user (sharded by hash(id)) and into
# hsdbench.user on MySQL 8, starts one hsd on each, then runs get and
# update at 16 x 1, 64 x 1 and 64 x 16 (connections x depth) for
#   hsd-vitess   hsd --backend vtgate      (CPU: hsd, vtcombo, mysqld)
#   sql-vitess   prepared SQL to vtgate    (CPU: vtcombo, mysqld; depth 1 only)
#   hsd-mysql8   hsd --backend MySQL 8     (CPU: hsd, mysqld)
# each run under `flock /tmp/hsd-bench.lock` (one benchmark at a time on
# the machine). CPU per request is hsbench's exact figure for all of a
# system's processes, split between them by their shares of CPU over the
# whole run. Output: target/bench-vitess/raw.jsonl and results.md.
#
# Usage: scripts/bench-vitess.sh [--rows N] [--duration S]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=20000
DURATION=5
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        *) echo "usage: $0 [--rows N] [--duration S]" >&2; exit 2 ;;
    esac
done
OUT=$ROOT/target/bench-vitess
mkdir -p "$OUT"
: >"$OUT/raw.jsonl"

say() { echo "bench-vitess.sh: $*" >&2; }
die() { echo "bench-vitess.sh: ERROR: $*" >&2; exit 1; }

eval "$(bash "$ROOT/scripts/vitess.sh" env)"
eval "$(bash "$ROOT/scripts/mysql8.sh" env)"
HSD=$ROOT/target/release/hsd
HSBENCH=$ROOT/target/release/hsbench
if [[ ! -x "$HSD" || ! -x "$HSBENCH" ]]; then
    (cd "$ROOT" && nice -n 10 cargo build --release -p hsd -p hsbench)
fi

vtgate_sql() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$HSD_VITESS_PORT" -uhsd -phsd "$@"; }
VITESS_DIR=$HSD_VITESS_DIR
VTCOMBO=$(pgrep -P "$(cat "$VITESS_DIR/vttestserver.pid")" -x vtcombo) || die "no vtcombo"
VT_MYSQLD=$(cat "$VITESS_DIR"/data/vt_*/mysql.pid)
M8_MYSQLD=$(cat "$HSD_MYSQL8_DIR/mysqld.pid")

say "loading $ROWS rows into ks.user (sharded by hash(id)) and hsdbench.user (MySQL 8)"
vtgate_sql ks -e "DROP TABLE IF EXISTS user; CREATE TABLE user (id BIGINT PRIMARY KEY, name VARCHAR(64), \
    email VARCHAR(128), created DATETIME) ENGINE=InnoDB"
# The vschema entry outlives the table: "already defined" after a first run.
vtgate_sql ks -e "ALTER VSCHEMA ON ks.user ADD VINDEX hash(id) USING hash" 2>&1 | grep -v "already defined" >&2 || true
"$HSBENCH" load --system mysql --mysql-url "$HSD_TEST_VITESS_URL/ks" --keys "$ROWS" >/dev/null
mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$HSD_MYSQL8_PORT" -uhsd -phsd \
    -e "DROP DATABASE IF EXISTS hsdbench"
"$HSBENCH" load --system mysql --mysql-url "$HSD_TEST_MYSQL8_URL/hsdbench" --keys "$ROWS" >/dev/null

pids=()
start_hsd() { # NAME URL -> "pid read write" on stdout
    local log=$OUT/hsd-$1.log port port_wr
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    port_wr=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$HSD" serve --backend "$2" --port "$port" --port-wr "$port_wr" --data-dir "$OUT/data-$1" \
        >"$log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 100); do
        grep -q "hsd ready" "$log" && break
        sleep 0.1
    done
    grep -q "hsd ready" "$log" || die "hsd $1 did not start (log $log)"
    echo "$pid $port $port_wr"
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
read -r HSD_V PORT_V PORT_WR_V < <(start_hsd vitess "$HSD_TEST_VITESS_URL")
pids+=("$HSD_V")
read -r HSD_M PORT_M PORT_WR_M < <(start_hsd mysql8 "$HSD_TEST_MYSQL8_URL")
pids+=("$HSD_M")

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run SYSTEM WORKLOAD C D PIDS... -- hsbench args
run() {
    local system=$1 workload=$2 c=$3 d=$4
    shift 4
    local procs=() args=()
    while [[ $1 != -- ]]; do procs+=("$1"); shift; done
    shift
    args=("$@")
    local before=() after=() p i json
    for p in "${procs[@]}"; do before+=("$(ticks "$p")"); done
    json=$(flock /tmp/hsd-bench.lock "$HSBENCH" run "${args[@]}" --workload "$workload" \
        -c "$c" -d "$d" --keys "$ROWS" --duration "$DURATION" --warmup 1 --json \
        --server-pid "$(IFS=,; echo "${procs[*]}")")
    for p in "${procs[@]}"; do after+=("$(ticks "$p")"); done
    local shares=""
    for i in "${!procs[@]}"; do
        shares+="$(cat "/proc/${procs[$i]}/comm"):$(( after[i] - before[i] )) "
    done
    python3 - "$system" "$shares" "$json" >>"$OUT/raw.jsonl" <<'EOF'
import json, sys
system, shares, report = sys.argv[1], sys.argv[2].split(), json.loads(sys.argv[3])
ticks = {}
for s in shares:
    name, t = s.rsplit(":", 1)
    ticks[name] = ticks.get(name, 0) + int(t)
total = sum(ticks.values()) or 1
cpu = report.get("cpu_us_per_req") or 0.0
report["system"] = system
report["cpu_by_process"] = {k: round(cpu * v / total, 1) for k, v in ticks.items()}
print(json.dumps(report))
EOF
    say "$system $workload ${c}x$d: $(tail -n 1 "$OUT/raw.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(round(r["rps"]), "req/s,", r["cpu_by_process"], "us/req, errors", r["errors"])')"
}

hs_args() { echo --system hs --host 127.0.0.1 --port "$1" --db "$2"; }
for workload in get update; do
    for point in "16 1" "64 1" "64 16"; do
        read -r c d <<<"$point"
        if [[ $workload == get ]]; then pv=$PORT_V; pm=$PORT_M; else pv=$PORT_WR_V; pm=$PORT_WR_M; fi
        # shellcheck disable=SC2046
        run hsd-vitess "$workload" "$c" "$d" "$HSD_V" "$VTCOMBO" "$VT_MYSQLD" -- $(hs_args "$pv" ks)
        # shellcheck disable=SC2046
        run hsd-mysql8 "$workload" "$c" "$d" "$HSD_M" "$M8_MYSQLD" -- $(hs_args "$pm" hsdbench)
        if [[ $d == 1 ]]; then
            run sql-vitess "$workload" "$c" "$d" "$VTCOMBO" "$VT_MYSQLD" -- \
                --system mysql --mysql-url "$HSD_TEST_VITESS_URL/ks" --mysql-prepared
        fi
    done
done

python3 - "$OUT/raw.jsonl" >"$OUT/results.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| workload | c x d | system | req/s | p50 us | p99 us | CPU us/req by process | errors |")
print("| --- | --- | --- | ---: | ---: | ---: | --- | ---: |")
for r in rows:
    cpu = ", ".join(f"{k} {v}" for k, v in r["cpu_by_process"].items())
    print(f"| {r['workload']} | {r['connections']} x {r['depth']} | {r['system']} | {r['rps']:.0f} "
          f"| {r['p50_us']:.0f} | {r['p99_us']:.0f} | {cpu} | {r['errors']} |")
EOF
cat "$OUT/results.md"

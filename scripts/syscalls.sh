#!/usr/bin/env bash
# scripts/syscalls.sh: system calls per request (get, or update on the write
# ports), the original plugin (mariadbd) against hsd on its embedded store,
# at 1x1, 16x1 and 256x1.
# `perf stat` counts the syscall tracepoints of every thread of the server
# process over a whole `hsbench run` (3 s, no warm-up); the table divides
# by the requests hsbench completed. Needs the bench data of a previous
# `scripts/bench.sh` run: MariaDB's bench.user in target/bench-mariadb and
# an embedded bench.user (DATA, default target/bench/hsd-embedded-data).
# Release build. Usage: scripts/syscalls.sh [DATA] [get|update]
# (prints a markdown table)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DATA=${1:-target/bench/hsd-embedded-data}
WORKLOAD=${2:-get}
case "$WORKLOAD" in get|update) ;; *) echo "syscalls.sh: workload get or update, not $WORKLOAD" >&2; exit 2 ;; esac
export HSD_MARIADB_DIR=$ROOT/target/bench-mariadb
OUT=$(mktemp -d)
bash scripts/mariadb.sh start >/dev/null
eval "$(bash scripts/mariadb.sh env)"
./target/release/hsd serve --address 127.0.0.1 --port 0 --port-wr 0 --data-dir "$DATA" >"$OUT/hsd.log" 2>&1 &
HPID=$!
cleanup() { kill "$HPID" 2>/dev/null || true; bash scripts/mariadb.sh stop >/dev/null 2>&1 || true; rm -rf "$OUT"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q '^hsd: listening' "$OUT/hsd.log" && break; sleep 0.1; done
HPORT=$(sed -nE 's/.* read=[^ ]*:([0-9]+) .*/\1/p' "$OUT/hsd.log")
HPORT_WR=$(sed -nE 's/.* write=[^ ]*:([0-9]+) .*/\1/p' "$OUT/hsd.log")
MPID=$(cat "$HSD_MARIADB_DIR/mariadbd.pid")
CALLS=(recvfrom sendto read write readv writev recvmsg sendmsg epoll_wait epoll_pwait epoll_ctl futex poll ppoll sched_yield pread64 pwrite64 fsync fdatasync io_uring_enter)
EV=raw_syscalls:sys_enter
for c in "${CALLS[@]}"; do EV+=",syscalls:sys_enter_$c"; done
for sys in original embedded; do
    if [[ $sys == original ]]; then PID=$MPID PORT=$HSD_HS_ORIGINAL_PORT PORT_WR=$HSD_HS_ORIGINAL_PORT_WR
    else PID=$HPID PORT=$HPORT PORT_WR=$HPORT_WR; fi
    [[ $WORKLOAD == update ]] && PORT=$PORT_WR
    for c in 1 16 256; do
        perf stat -x, -e "$EV" -p "$PID" -o "$OUT/$sys-$c.perf" &
        PP=$!
        sleep 0.3
        ./target/release/hsbench run --system hs --port "$PORT" --db bench --table user --workload "$WORKLOAD" \
            -c "$c" -d 1 --duration 3 --warmup 0 --keys 200000 --json >"$OUT/$sys-$c.json"
        kill -INT "$PP"; wait "$PP" 2>/dev/null || true
    done
done
python3 - "$OUT" "${CALLS[@]}" <<'PY'
import json, sys
out, calls = sys.argv[1], sys.argv[2:]
print("| server | point | req/s | all | " + " | ".join(calls) + " |")
print("| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in calls) + " |")
for s in ["original", "embedded"]:
    for c in [1, 16, 256]:
        j = json.load(open(f"{out}/{s}-{c}.json"))
        n = {}
        for line in open(f"{out}/{s}-{c}.perf"):
            p = line.strip().split(",")
            if len(p) > 2 and p[0].isdigit():
                n[p[2].replace("syscalls:sys_enter_", "")] = int(p[0])
        cols = [n.get("raw_syscalls:sys_enter", 0)] + [n.get(k, 0) for k in calls]
        print(f"| {s} | {c}x1 | {j['rps']:.0f} | " + " | ".join(f"{v / j['requests']:.2f}" for v in cols) + " |")
PY

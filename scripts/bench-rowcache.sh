#!/usr/bin/env bash
# scripts/bench-rowcache.sh: the row cache's two workloads beside SQL and the
# original plugin (docs/benchmarks.md, "The row cache": issue goals).
#
#   zipf   gets at 16 x 1 (connections x depth), Zipfian keys (theta 0.99,
#          key 1 hottest) over --rows rows (default 1,000,000), the cache
#          smaller than the table: one hsd per --cache-mib size, warmed 8 s,
#          then three rounds, systems interleaved.
#   mixed  90% gets, 10% updates (hsbench --workload mixed) at 64 x 1 over
#          20,000 rows cached whole (--row-cache-mib 256), uniform keys; hsd
#          with and without the cache, SQL (prepared, autocommit) and the
#          original plugin, each on one connection per client (hsd and the
#          plugin: their write port), three rounds, interleaved.
# Systems: sql (prepared statements to MariaDB), hsd (hsd serve --backend
# MariaDB, cache on), hsd-nocache (mixed only), orig (the plugin).
# CPU per request is split by process (hsd, mariadbd) from /proc over each
# run; hits, entries and bytes of the cache come from hsd's metrics.
#
# MariaDB: a private instance in target/bench-mariadb (scripts/mariadb.sh,
# innodb_flush_log_at_trx_commit=1, binary log on as the cache needs),
# stopped at the end. Takes the benchmark lock (/tmp/hsd-bench.lock) for
# the whole run. Release builds of hsd and hsbench (built when missing).
#
# Usage: scripts/bench-rowcache.sh [zipf|mixed|all] [--rows N]
#            [--cache-mib 16,24] [--duration S]
# Output: target/bench-rowcache/results.md (and the raw JSON lines).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
what=all
rows=1000000
cache_mib=16,24
duration=3
while [[ $# -gt 0 ]]; do
    case "$1" in
        zipf|mixed|all) what=$1; shift ;;
        --rows) rows=$2; shift 2 ;;
        --cache-mib) cache_mib=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        *) echo "usage: $0 [zipf|mixed|all] [--rows N] [--cache-mib A,B] [--duration S]" >&2; exit 2 ;;
    esac
done

# One benchmark at a time on this machine; the lock is this script's
# descriptor 8, which the servers started below must not inherit (a MariaDB
# holding it would keep the lock after this script ends).
exec 8>/tmp/hsd-bench.lock
flock 8

BIN=$ROOT/target/release
if [[ ! -x $BIN/hsd || ! -x $BIN/hsbench ]]; then
    nice -n 10 cargo build --release -p hsd -p hsbench
fi
OUT=$ROOT/target/bench-rowcache
rm -rf "$OUT"
mkdir -p "$OUT"
export HSD_MARIADB_DIR=$ROOT/target/bench-mariadb
hsd_pids=()
cleanup() {
    for p in "${hsd_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    bash "$ROOT/scripts/mariadb.sh" stop >/dev/null 2>&1 8>&- || true
}
trap cleanup EXIT
bash "$ROOT/scripts/mariadb.sh" start >/dev/null 8>&-
eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
MPID=$(cat "$HSD_MARIADB_DIR/mariadbd.pid")
SQL=(mariadb --no-defaults -h127.0.0.1 -P"$HSD_MARIADB_PORT" -uhsd -phsd)

# start_hsd DIR ARGS...: starts hsd on MariaDB; sets HPID, HP (read port),
# HPW (write port), AD (admin address).
start_hsd() {
    local dir=$1
    shift
    mkdir -p "$dir"
    "$BIN/hsd" serve --address 127.0.0.1 --port 0 --port-wr 0 --backend "$HSD_TEST_MYSQL_URL" \
        --data-dir "$dir/data" --admin-address 127.0.0.1:0 "$@" >"$dir/hsd.log" 2>&1 8>&- &
    HPID=$!
    hsd_pids+=("$HPID")
    for _ in $(seq 100); do grep -q "^hsd: listening" "$dir/hsd.log" && break; sleep 0.1; done
    HP=$(sed -nE 's/.* read=[^ ]*:([0-9]+) .*/\1/p' "$dir/hsd.log")
    HPW=$(sed -nE 's/.* write=[^ ]*:([0-9]+).*/\1/p' "$dir/hsd.log")
    AD=$(sed -nE 's/.* admin=([^ ]*).*/\1/p' "$dir/hsd.log")
    [[ -n $HP && -n $HPW && -n $AD ]] || { cat "$dir/hsd.log" >&2; exit 1; }
}

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME HSD_PID ARGS...: one hsbench run; appends a JSON line with
# hsd's and mariadbd's CPU per request apart (µs; hsd 0 when none).
run() {
    local name=$1 hpid=$2
    shift 2
    local h0=0 h1=0 m0 m1 json
    [[ $hpid != - ]] && h0=$(ticks "$hpid")
    m0=$(ticks "$MPID")
    json=$("$BIN/hsbench" run --json "$@")
    m1=$(ticks "$MPID")
    [[ $hpid != - ]] && h1=$(ticks "$hpid")
    python3 - "$name" "$((h1 - h0))" "$((m1 - m0))" "$(getconf CLK_TCK)" "$json" <<'EOF' | tee -a "$OUT/raw.jsonl"
import json, sys
name, dh, dm, hz, raw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
r = json.loads(raw)
# Ticks over the whole run (warm-up included) per measured request is
# too high; scale by the measured share of the run's requests instead:
# hsbench's own figure is exact for the sum, so split it by the shares.
total = dh + dm
cpu = r.get("cpu_us_per_req") or 0.0
r["name"] = name
r["cpu_hsd_us"] = round(cpu * dh / total, 1) if total else 0.0
r["cpu_mariadbd_us"] = round(cpu * dm / total, 1) if total else 0.0
print(json.dumps(r))
EOF
}

metrics() {
    curl -s "http://$AD/metrics" | grep -E "^hsd_row_cache_(hits_total|misses_total|entries|bytes|fills_total) " \
        | tr '\n' ' '
    echo
}

if [[ $what == zipf || $what == all ]]; then
    "${SQL[@]}" -e "DROP DATABASE IF EXISTS rcz"
    "$BIN/hsbench" load --system mysql --mysql-url "$HSD_TEST_MYSQL_URL" --db rcz --table user \
        --rows "$rows" --connections 4 | tail -n 1
    common=(--workload get -c 16 -d 1 --warmup 1 --keys "$rows" --dist zipf --zipf-theta 0.99
        --db rcz --table user)
    IFS=, read -ra sizes <<<"$cache_mib"
    for mib in "${sizes[@]}"; do
        start_hsd "$OUT/zipf-$mib" --row-cache-mib "$mib"
        # Each run draws its own keys (--seed): the head of the distribution
        # repeats, the tail differs, as a new day's traffic would.
        "$BIN/hsbench" run --system hs --port "$HP" "${common[@]}" --duration 8 --seed 100 >/dev/null
        echo "zipf cache $mib MiB after warming: $(metrics)" | tee -a "$OUT/metrics.txt"
        for round in 1 2 3; do
            run "zipf-$mib sql" - --system mysql --mysql-url "$HSD_TEST_MYSQL_URL" --mysql-prepared \
                "${common[@]}" --duration "$duration" --server-pid "$MPID" --seed "$round"
            run "zipf-$mib hsd" "$HPID" --system hs --port "$HP" "${common[@]}" \
                --duration "$duration" --server-pid "$HPID,$MPID" --seed "$round"
            run "zipf-$mib orig" - --system hs --port "$HSD_HS_ORIGINAL_PORT" "${common[@]}" \
                --duration "$duration" --server-pid "$MPID" --seed "$round"
        done
        echo "zipf cache $mib MiB at the end: $(metrics)" | tee -a "$OUT/metrics.txt"
        kill "$HPID"
        wait "$HPID" 2>/dev/null || true
    done
fi

if [[ $what == mixed || $what == all ]]; then
    "${SQL[@]}" -e "DROP DATABASE IF EXISTS rcm"
    "$BIN/hsbench" load --system mysql --mysql-url "$HSD_TEST_MYSQL_URL" --db rcm --table user \
        --rows 20000 --connections 4 | tail -n 1
    common=(--workload mixed --update-percent 10 -c 64 -d 1 --warmup 2 --keys 20000
        --db rcm --table user)
    start_hsd "$OUT/mixed-cache" --row-cache-mib 256
    cache=(--port "$HPW" --server-pid "$HPID,$MPID")
    cache_pid=$HPID
    cache_ad=$AD
    start_hsd "$OUT/mixed-nocache"
    nocache=(--port "$HPW" --server-pid "$HPID,$MPID")
    nocache_pid=$HPID
    for round in 1 2 3; do
        run "mixed sql" - --system mysql --mysql-url "$HSD_TEST_MYSQL_URL" --mysql-prepared \
            "${common[@]}" --duration "$duration" --server-pid "$MPID"
        run "mixed hsd" "$cache_pid" --system hs "${cache[@]}" "${common[@]}" --duration "$duration"
        run "mixed hsd-nocache" "$nocache_pid" --system hs "${nocache[@]}" "${common[@]}" \
            --duration "$duration"
        run "mixed orig" - --system hs --port "$HSD_HS_ORIGINAL_PORT_WR" "${common[@]}" \
            --duration "$duration" --server-pid "$MPID"
    done
    AD=$cache_ad
    echo "mixed, cache at the end: $(metrics)" | tee -a "$OUT/metrics.txt"
fi

# The median round of each (name), as a table.
python3 - "$OUT/raw.jsonl" <<'EOF' | tee "$OUT/results.md"
import json, sys, statistics
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["name"], []).append(r)
print("| run | req/s (median of rounds) | rounds | errors | CPU µs/req hsd · mariadbd |")
print("| --- | ---: | --- | ---: | --- |")
for name, rs in runs.items():
    rs.sort(key=lambda r: r["rps"])
    m = rs[len(rs) // 2]
    rounds = ", ".join(f"{r['rps'] / 1000:.1f}k" for r in rs)
    print(f"| {name} | {m['rps'] / 1000:.1f}k | {rounds} | {sum(r['errors'] for r in rs)} "
          f"| {m['cpu_hsd_us']} · {m['cpu_mariadbd_us']} |")
EOF

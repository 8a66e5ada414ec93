#!/usr/bin/env bash
# scripts/bench.sh: hsd side by side with memcached, Redis and MariaDB SQL.
#
# One load generator (crates/hsbench), one run, everything on 127.0.0.1:
#   hs-original   MariaDB's own HandlerSocket plugin (the original), on the
#                 same private MariaDB and table as hsd-mysql and mysql-sql
#   hsd-embedded  hsd serve on its embedded SQLite store
#   hsd-mysql     hsd serve --backend mysql://... serving MariaDB's table
#   memcached     memcached (Debian package), one string per row
#   redis         redis-server (Debian package), persistence off
#   mysql-sql     the same MariaDB table over SQL (prepared statements)
#   hsd-mc-embedded  hsd's memcached port (docs/memcached.md) on its
#                 embedded store, one container over the table (key id,
#                 values name, email, created joined by a tab, as the
#                 memcached system's value): memcached clients' view of it
#   hsd-mc-mysql  the same on MariaDB's table
# and, only when named in --systems (docs/replication.md):
#   hsd-repl-primary   hsd serve --backend PRIMARY --replica R1 --replica R2
#                      --read-from primary, on a GTID primary with two
#                      replicas (scripts/replication.sh, own directory
#                      $HSD_BENCH_REPL_DIR, default target/bench-replication)
#   hsd-repl-replicas  the same hsd with --read-from replicas
# Their server CPU is hsd's plus all three mariadbd's.
# MariaDB is a private instance (scripts/mariadb.sh) in its own directory,
# $HSD_BENCH_MARIADB_DIR (default target/bench-mariadb), with
# innodb_flush_log_at_trx_commit=1. Each system gets the same data set (rows
# 1..N of hsbench's data.rs: id, name, email, created), and every workload
# reads or writes the same columns: get (one row by key: name, email,
# created), multiget10 (10 keys per request: HS IN / memcached multi-key get /
# MGET / SQL IN), insert (one row), update (one column: name; memcached and
# Redis can only rewrite the whole value).
#
# Sweep: connections 1, 16, 64, 256 x depth 1, 16 (depth 1 only for
# mysql-sql: its protocol cannot pipeline); each point RUNS times, the run with
# the median throughput is kept. The whole sweep is repeated RUNS times (so a
# point's runs lie minutes apart) and within a point the systems take turns,
# so machine noise hits them alike. Server CPU (utime+stime from /proc, for
# hsd-mysql hsd's plus mariadbd's, for hs-original and mysql-sql mariadbd's)
# is reported per request, and also split by process (hsd's apart from
# mariadbd's) in results.json (cpu_by_process) and results.md, which also
# has a depth-1 table (1, 16, 64, 256 x 1 for get, update and insert on
# every system, as far as the sweep has them). A full run takes
# about 15 minutes on 2 cores (plus the build), --quick about one.
#
# Usage: scripts/bench.sh [--quick] [--json FILE] [options]
#   --quick           every system and workload at a few points, 100k rows,
#                     short runs (a smoke test: scripts/test.sh runs it)
#   --json FILE       write [{system, workload, connections, depth, rps,
#                     p50_us, p99_us, cpu_us_per_req, cpu_by_process}, ...]
#                     (medians; cpu_by_process: {"hsd": µs, "mariadbd": µs})
#   --out DIR         working directory (default target/bench or target/bench-quick):
#                     raw.jsonl (every run), results.json, results.md (tables),
#                     throughput.png (chart), machine.txt, logs
#   --chart FILE      also copy the chart there (e.g. docs/bench-throughput.png)
#   --io-bound        data much larger than memory (issue: the I/O-bound case):
#                     20,000,000 rows unless --rows says otherwise; MariaDB
#                     with a 256 MiB buffer pool and innodb_flush_method=O_DIRECT
#                     (its reads reach the disk); hsd-embedded in a memory
#                     cgroup of 256 MiB + 64 MiB for hsd itself, which also
#                     bounds the OS page cache its SQLite file may use; get
#                     and insert at 16 and 64 connections x depth 1 and 16 for
#                     hs-original, hsd-embedded, hsd-mysql and mysql-sql;
#                     what the page cache held of each system's files is
#                     written to DIR/page-cache.txt (fincore)
#   --perf            after the sweep, perf-record hsd under `get`, each backend
#                     at 1 x 1 and at 64 x 16 (hsd-mysql: hsd and mariadbd)
#                     into DIR/perf-get.md
#   --delay-us N      MariaDB as if on another host: every connection to it
#                     (hsd-mysql's backend links, mysql-sql's clients and
#                     hs-original's, whose plugin lives in mariadbd) passes
#                     through `hsbench delay-proxy`, N µs each way (a round
#                     trip of 2N µs more); hsd-embedded, memcached and Redis
#                     are reached directly, as servers beside the application
#   --rows N  --duration S  --warmup S  --runs N
#   --baseline BIN    an A/B of two builds: another hsd binary (say, built
#                     from the commit before a change, in a worktree) runs
#                     beside this tree's as hsd-embedded-base / hsd-mysql-base,
#                     for each of hsd-embedded / hsd-mysql in --systems, with
#                     its own data and the same points, taking turns with it
#   --systems LIST    comma-separated subset (default: all five)
#   --workloads LIST  comma-separated subset of get,multiget10,insert,update
#   --conns LIST  --depths LIST   override the sweep
#   --profile release|debug   which cargo build to use (default release;
#                     test.sh uses debug to spare CI a second build)
#   --no-build        use the binaries already built
#   --nice N          run servers and load generator at this niceness (default
#                     -10 as root, so that other work on a shared machine
#                     disturbs the figures less; 0 to leave priorities alone)
#   --hsd-args "..."  extra flags for both hsd servers (e.g. "--threads 4")
#   --hsd-mysql-args "..."  extra flags for the hsd-mysql server only
# Everything this script starts (memcached, redis-server, hsd, and MariaDB
# unless it was already running) it stops on exit.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
T0=$SECONDS

quick=0
json_out=""
out_dir=""
chart_copy=""
do_perf=0
io_bound=0
rows="" duration="" warmup="" runs=""
systems="hs-original,hsd-embedded,hsd-mysql,memcached,redis,mysql-sql"
workloads="get,multiget10,update,insert"
conns="" depths=""
profile=release
build=1
nice_level=""
hsd_args=""
hsd_mysql_args=""
baseline=""
delay_us=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1 ;;
        --json) json_out=${2:?--json FILE}; shift ;;
        --out) out_dir=${2:?}; shift ;;
        --chart) chart_copy=${2:?}; shift ;;
        --perf) do_perf=1 ;;
        --io-bound) io_bound=1 ;;
        --delay-us) delay_us=${2:?--delay-us N}; shift ;;
        --rows) rows=${2:?}; shift ;;
        --duration) duration=${2:?}; shift ;;
        --warmup) warmup=${2:?}; shift ;;
        --runs) runs=${2:?}; shift ;;
        --systems) systems=${2:?}; shift ;;
        --workloads) workloads=${2:?}; shift ;;
        --conns) conns=${2:?}; shift ;;
        --depths) depths=${2:?}; shift ;;
        --profile) profile=${2:?}; shift ;;
        --no-build) build=0 ;;
        --nice) nice_level=${2:?}; shift ;;
        --hsd-args) hsd_args=${2?}; shift ;;
        --hsd-mysql-args) hsd_mysql_args=${2?}; shift ;;
        --baseline) baseline=$(realpath "${2:?--baseline BIN}"); shift ;;
        -h|--help) usage ;;
        *) echo "bench.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

if [[ $io_bound -eq 1 ]]; then
    : "${rows:=20000000}" "${duration:=5}" "${warmup:=1}" "${runs:=3}"
    : "${conns:=16,64}" "${depths:=1,16}"
    : "${out_dir:=target/bench-io}"
    [[ "$systems" == "hs-original,hsd-embedded,hsd-mysql,memcached,redis,mysql-sql" ]] \
        && systems="hs-original,hsd-embedded,hsd-mysql,mysql-sql"
    [[ "$workloads" == "get,multiget10,update,insert" ]] && workloads="get,insert"
    export HSD_BENCH_MARIADB_BUFFER_POOL=${HSD_BENCH_MARIADB_BUFFER_POOL:-256M}
    export HSD_MARIADB_FLUSH_METHOD=O_DIRECT
    mode=io-bound
elif [[ $quick -eq 1 ]]; then
    : "${rows:=100000}" "${duration:=0.4}" "${warmup:=0.1}" "${runs:=1}"
    : "${conns:=1,32}" "${depths:=1,16}"
    : "${out_dir:=target/bench-quick}"
    mode=quick
else
    : "${rows:=1000000}" "${duration:=1.5}" "${warmup:=0.3}" "${runs:=3}"
    : "${conns:=1,16,64,256}" "${depths:=1,16}"
    : "${out_dir:=target/bench}"
    mode=full
fi
case "$profile" in release|debug) ;; *) echo "bench.sh: --profile release|debug" >&2; exit 2 ;; esac
BIN=$ROOT/target/$profile
mkdir -p "$out_dir"
OUT=$(realpath "$out_dir")
[[ -n "$json_out" ]] && json_out=$(realpath -m "$json_out")
[[ -n "$chart_copy" ]] && chart_copy=$(realpath -m "$chart_copy")
if [[ -n "$baseline" ]]; then
    [[ -x "$baseline" ]] || { echo "bench.sh: --baseline $baseline is not an executable" >&2; exit 2; }
    for s in hsd-embedded hsd-mysql; do
        [[ ",$systems," == *",$s,"* ]] && systems="$systems,$s-base"
    done
fi
IFS=, read -r -a SYSTEMS <<<"$systems"
IFS=, read -r -a WORKLOADS <<<"$workloads"
IFS=, read -r -a CONNS <<<"$conns"
IFS=, read -r -a DEPTHS <<<"$depths"
for s in "${SYSTEMS[@]}"; do
    case "$s" in hs-original|hsd-embedded|hsd-mysql|memcached|redis|mysql-sql|hsd-repl-primary|hsd-repl-replicas|hsd-mc-embedded|hsd-mc-mysql) ;;
        hsd-embedded-base|hsd-mysql-base) [[ -n "$baseline" ]] || { echo "bench.sh: $s needs --baseline BIN" >&2; exit 2; } ;;
        *) echo "bench.sh: unknown system $s" >&2; exit 2 ;; esac
done
for w in "${WORKLOADS[@]}"; do
    case "$w" in get|multiget10|insert|update) ;;
        *) echo "bench.sh: unknown workload $w" >&2; exit 2 ;; esac
done
want() { [[ ",$systems," == *",$1,"* ]]; }

say() { printf 'bench.sh [%4ds]: %s\n' "$((SECONDS - T0))" "$*" >&2; }
die() { printf 'bench.sh: ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- cleanup
PIDS=()          # processes this script started (killed on exit)
stop_mariadb=0
stop_repl=0
REPL_DIR=$(realpath -m "${HSD_BENCH_REPL_DIR:-$ROOT/target/bench-replication}")
repl() { HSD_REPL_DIR=$REPL_DIR HSD_REPL_BUFFER_POOL=${HSD_BENCH_REPL_BUFFER_POOL:-512M} \
    bash "$ROOT/scripts/replication.sh" "$@"; }
MDB_DIR=$(realpath -m "${HSD_BENCH_MARIADB_DIR:-$ROOT/target/bench-mariadb}")
mdb() { HSD_MARIADB_DIR=$MDB_DIR HSD_MARIADB_BUFFER_POOL=${HSD_BENCH_MARIADB_BUFFER_POOL:-1G} \
    bash "$ROOT/scripts/mariadb.sh" "$@"; }

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ $stop_mariadb -eq 1 ]]; then
        mdb stop >/dev/null 2>&1 || mdb stop || true
    fi
    [[ -n "$CGROUP" ]] && rmdir "$CGROUP" 2>/dev/null
    if [[ $stop_repl -eq 1 ]]; then
        repl stop >/dev/null 2>&1 || repl stop || true
    fi
    if [[ $rc -eq 0 ]]; then
        say "done ($mode, $((SECONDS - T0)) s)"
    else
        echo "bench.sh: FAILED with exit code $rc after $((SECONDS - T0)) s" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- helpers
free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() { # host port seconds pid what
    local deadline=$(( SECONDS + $3 ))
    while (( SECONDS < deadline )); do
        if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
        kill -0 "$4" 2>/dev/null || die "$5 exited during startup (log: $OUT/$5.log)"
        sleep 0.1
    done
    die "$5 did not listen on $1:$2 within $3 s (log: $OUT/$5.log)"
}

# limit_memory PID BYTES: moves PID (all its threads) into a memory cgroup of
# its own, which bounds its memory and the page cache its files take (pages
# are charged to the cgroup of the process that brings them in).
CGROUP=""
limit_memory() {
    local pid=$1 bytes=$2 cg
    if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        cg=/sys/fs/cgroup/hsd-bench-$$
        mkdir -p "$cg" && echo "$bytes" >"$cg/memory.max" && echo "$pid" >"$cg/cgroup.procs"
    elif [[ -d /sys/fs/cgroup/memory ]]; then
        cg=/sys/fs/cgroup/memory/hsd-bench-$$
        mkdir -p "$cg" && echo "$bytes" >"$cg/memory.limit_in_bytes" && echo "$pid" >"$cg/cgroup.procs"
    else
        die "--io-bound needs a memory cgroup (v1 or v2) to bound hsd's page cache"
    fi || die "cannot put pid $pid in a memory cgroup of $bytes bytes (run as root)"
    CGROUP=$cg
}

# start_hsd NAME ARGS...: starts hsd serve on free ports; sets HSD_PID,
# HSD_RPORT, HSD_WPORT from its "hsd: listening read=... write=..." line.
start_hsd() {
    local name=$1; shift
    local log=$OUT/$name.log line deadline
    : >"$log"
    # shellcheck disable=SC2086  # word-split the extra flags on purpose
    local exe=$BIN/hsd
    [[ $name == *-base ]] && exe=$baseline
    "${NICE[@]}" "$exe" serve --address 127.0.0.1 --port 0 --port-wr 0 "$@" $hsd_args \
        >"$log" 2>&1 </dev/null &
    HSD_PID=$!
    PIDS+=("$HSD_PID")
    deadline=$(( SECONDS + 30 ))
    line=""
    while (( SECONDS < deadline )); do
        line=$(grep -m1 '^hsd: listening ' "$log" || true)
        [[ -n "$line" ]] && break
        kill -0 "$HSD_PID" 2>/dev/null || { cat "$log" >&2; die "$name (hsd) exited during startup"; }
        sleep 0.1
    done
    [[ -n "$line" ]] || { cat "$log" >&2; die "$name (hsd) did not start within 30 s"; }
    HSD_RPORT=$(sed -E 's/.* read=[^ ]*:([0-9]+) .*/\1/' <<<"$line")
    HSD_WPORT=$(sed -E 's/.* write=[^ ]*:([0-9]+) .*/\1/' <<<"$line")
    HSD_MCPORT=""
    [[ $line == *" memcached="* ]] && HSD_MCPORT=$(sed -E 's/.* memcached=[^ ]*:([0-9]+).*/\1/' <<<"$line")
    say "$name: pid $HSD_PID, read port $HSD_RPORT, write port $HSD_WPORT"
}

# ---------------------------------------------------------------- setup
say "mode $mode: rows $rows, duration ${duration}s (+${warmup}s warm-up), runs $runs, connections ${conns}, depths ${depths}"
say "systems: $systems; workloads: $workloads; output: $OUT"
bash "$ROOT/scripts/deps.sh" >&2
if [[ $build -eq 1 ]]; then
    say "cargo build ($profile): hsd, hsbench"
    if [[ $profile == release ]]; then
        cargo build --release -p hsd -p hsbench >&2
    else
        cargo build -p hsd -p hsbench >&2
    fi
fi
[[ -x "$BIN/hsd" && -x "$BIN/hsbench" ]] || die "$BIN/hsd or $BIN/hsbench missing (build first)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [[ -z "$nice_level" ]]; then
    if [[ $(id -u) -eq 0 ]]; then nice_level=-10; else nice_level=0; fi
fi
# NICE: prefix for every process the benchmark measures or drives.
NICE=(nice -n "$nice_level")
# renice_all PID: every thread of PID (threads made later inherit it from
# their creating thread).
renice_all() {
    local t
    [[ "$nice_level" == 0 ]] && return 0
    for t in /proc/"$1"/task/*; do
        renice -n "$nice_level" -p "${t##*/}" >/dev/null 2>&1 || true
    done
}
# Debian's python3 (scripts/deps.sh) when present: a version-manager shim
# costs a quarter second per start.
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3

RAW=$OUT/raw.jsonl
: >"$RAW"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command: scripts/bench.sh $mode rows=$rows duration=$duration warmup=$warmup runs=$runs conns=$conns depths=$depths profile=$profile"
    echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)')"
    echo "nproc: $(nproc)"
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|Hypervisor|L2|L3)' || true
    free -m | sed -n 2p | awk '{print "memory: " $2 " MiB total, " $7 " MiB available"}'
    echo "kernel: $(uname -r)"
    echo "memcached: $(memcached -V 2>/dev/null)"
    echo "redis: $(redis-server --version 2>/dev/null | awk '{print $3}')"
    echo "mariadb: $(mariadbd --version 2>/dev/null | sed 's/.*Ver //')"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

NCPU=$(nproc)
KEYS=$rows
DB=bench
TABLE=user
declare -A SPID RPORT WPORT   # per system: server pid(s), read port, write port

# MariaDB (for mysql-sql, hsd-mysql and the original plugin)
if want mysql-sql || want hsd-mysql || want hs-original || want hsd-mc-mysql; then
    if mdb status >/dev/null 2>&1; then
        [[ $io_bound -eq 1 ]] && die "--io-bound starts MariaDB with its own buffer pool and flush method: stop the one in $MDB_DIR first (HSD_MARIADB_DIR=$MDB_DIR scripts/mariadb.sh stop)"
        say "MariaDB in $MDB_DIR already runs: reusing it (left running)"
    else
        stop_mariadb=1
    fi
    # mariadbd inherits the niceness from the script that starts it.
    HSD_MARIADB_DIR=$MDB_DIR HSD_MARIADB_BUFFER_POOL=${HSD_BENCH_MARIADB_BUFFER_POOL:-1G} \
        "${NICE[@]}" bash "$ROOT/scripts/mariadb.sh" start >&2
    eval "$(mdb env)"
    MYSQL_URL=$HSD_TEST_MYSQL_URL
    MDB_PID=$(cat "$MDB_DIR/mariadbd.pid")
    say "MariaDB: pid $MDB_PID, $MYSQL_URL"
    mdb sql -e "DROP DATABASE IF EXISTS $DB" >&2
    say "loading $rows rows into MariaDB $DB.$TABLE (InnoDB)"
    "$BIN/hsbench" load --system mysql --mysql-url "$MYSQL_URL" --db "$DB" --table "$TABLE" \
        --rows "$rows" --connections 4 >&2
    mdb sql -e "ANALYZE TABLE $DB.$TABLE" >/dev/null
    SPID[mysql-sql]=$MDB_PID
    renice_all "$MDB_PID"
fi

# delayed PORT: sets DELAYED to a port that reaches 127.0.0.1:PORT through
# a delay proxy (--delay-us), or to PORT itself without one.
delayed() {
    DELAYED=$1
    [[ $delay_us -eq 0 ]] && return
    local port
    port=$(free_port)
    "${NICE[@]}" "$BIN/hsbench" delay-proxy --listen "127.0.0.1:$port" --to "127.0.0.1:$1" \
        --delay-us "$delay_us" >"$OUT/delay-proxy-$1.log" 2>&1 &
    PIDS+=("$!")
    wait_port 127.0.0.1 "$port" 15 "$!" "delay-proxy-$1"
    DELAYED=$port
}

if [[ -n "${MYSQL_URL:-}" && $delay_us -gt 0 ]]; then
    mdb_port=${MYSQL_URL##*:}
    mdb_port=${mdb_port%%/*}
    delayed "$mdb_port"
    MYSQL_URL=${MYSQL_URL/:$mdb_port/:$DELAYED}
    say "MariaDB through a delay proxy (+$delay_us µs each way): $MYSQL_URL"
fi

if want hs-original; then
    # scripts/mariadb.sh loads the plugin on two ports of its own.
    : "${HSD_HS_ORIGINAL_PORT:?the private MariaDB did not report the ports of the plugin}"
    wait_port 127.0.0.1 "$HSD_HS_ORIGINAL_PORT" 15 "$MDB_PID" mariadb
    SPID[hs-original]=$MDB_PID
    delayed "$HSD_HS_ORIGINAL_PORT"
    RPORT[hs-original]=$DELAYED
    delayed "$HSD_HS_ORIGINAL_PORT_WR"
    WPORT[hs-original]=$DELAYED
    say "hs-original: the plugin in mariadbd $MDB_PID, read port $HSD_HS_ORIGINAL_PORT, write port $HSD_HS_ORIGINAL_PORT_WR"
fi

if want memcached; then
    port=$(free_port)
    as_user=()
    [[ $(id -u) -eq 0 ]] && as_user=(-u root)
    # -t: one worker thread per core, as hsd's default. -m: room for every row.
    "${NICE[@]}" memcached "${as_user[@]}" -l 127.0.0.1 -p "$port" -U 0 -t "$NCPU" -c 4096 -m 2048 \
        >"$OUT/memcached.log" 2>&1 </dev/null &
    SPID[memcached]=$!
    PIDS+=("${SPID[memcached]}")
    wait_port 127.0.0.1 "$port" 15 "${SPID[memcached]}" memcached
    RPORT[memcached]=$port WPORT[memcached]=$port
    say "memcached: pid ${SPID[memcached]}, port $port; loading $rows rows"
    "$BIN/hsbench" load --system memcached --port "$port" --rows "$rows" >&2
fi

if want redis; then
    port=$(free_port)
    mkdir -p "$OUT/redis"
    # Persistence off (no RDB snapshots, no AOF): the fastest Redis can be;
    # its write figures are not durable, unlike hsd's and MariaDB's.
    "${NICE[@]}" redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
        --maxclients 4096 --dir "$OUT/redis" --daemonize no --logfile "$OUT/redis.log" \
        </dev/null >/dev/null 2>&1 &
    SPID[redis]=$!
    PIDS+=("${SPID[redis]}")
    wait_port 127.0.0.1 "$port" 15 "${SPID[redis]}" redis
    RPORT[redis]=$port WPORT[redis]=$port
    say "redis: pid ${SPID[redis]}, port $port; loading $rows rows"
    "$BIN/hsbench" load --system redis --port "$port" --rows "$rows" >&2
fi

for emb in hsd-embedded hsd-embedded-base; do
    want "$emb" || continue
    data=$OUT/$emb-data
    rm -rf "$data"
    "$BIN/hsd" sql --data-dir "$data" "$DB" \
        "CREATE TABLE $TABLE (id INTEGER PRIMARY KEY, name TEXT, email TEXT, created TEXT)"
    embedded_args=()
    # Data far larger than memory: no memory-mapped reads (docs/benchmarks.md,
    # the I/O-bound point: mapped, they thrash).
    [[ $io_bound -eq 1 ]] && embedded_args=(--sqlite-mmap-mib 0)
    start_hsd "$emb" --data-dir "$data" "${embedded_args[@]}"
    SPID[$emb]=$HSD_PID RPORT[$emb]=$HSD_RPORT WPORT[$emb]=$HSD_WPORT
    if [[ $io_bound -eq 1 ]]; then
        # As much memory for SQLite's file as InnoDB's buffer pool has, plus
        # hsd's own; the load below runs inside the bound too.
        limit_memory "$HSD_PID" $(( (256 + 64) << 20 ))
        say "hsd-embedded: in memory cgroup $CGROUP (320 MiB: 256 for the page cache of its file, 64 for hsd)"
    fi
    say "loading $rows rows into $emb over HandlerSocket inserts"
    "$BIN/hsbench" load --system hs --port "$HSD_WPORT" --db "$DB" --table "$TABLE" --rows "$rows" >&2
done

for hm in hsd-mysql hsd-mysql-base; do
    want "$hm" || continue
    # Failing here fails the run: a missing hsd-mysql is never skipped quietly.
    # shellcheck disable=SC2086
    start_hsd "$hm" --backend "$MYSQL_URL" --data-dir "$OUT/$hm-data" $hsd_mysql_args
    SPID[$hm]=$HSD_PID,$MDB_PID RPORT[$hm]=$HSD_RPORT WPORT[$hm]=$HSD_WPORT
done

# hsd's memcached port: one container over the bench table, the value
# columns joined by a tab as the memcached system's values are.
mc_config() {
    printf '[memcached]\nseparator = "\\t"\n\n[[memcached.containers]]\nname = "default"\ndb_schema = "%s"\ndb_table = "%s"\nkey_columns = "id"\nvalue_columns = "name,email,created"\n' \
        "$DB" "$TABLE" >"$1"
}
if want hsd-mc-embedded; then
    data=$OUT/hsd-mc-embedded-data
    rm -rf "$data"
    "$BIN/hsd" sql --data-dir "$data" "$DB" \
        "CREATE TABLE $TABLE (id INTEGER PRIMARY KEY, name TEXT, email TEXT, created TEXT)"
    mc_config "$OUT/hsd-mc-embedded.toml"
    start_hsd hsd-mc-embedded --data-dir "$data" --config "$OUT/hsd-mc-embedded.toml" \
        --memcached-address 127.0.0.1:0
    SPID[hsd-mc-embedded]=$HSD_PID RPORT[hsd-mc-embedded]=$HSD_MCPORT WPORT[hsd-mc-embedded]=$HSD_MCPORT
    say "loading $rows rows into hsd-mc-embedded over HandlerSocket inserts"
    "$BIN/hsbench" load --system hs --port "$HSD_WPORT" --db "$DB" --table "$TABLE" --rows "$rows" >&2
fi
if want hsd-mc-mysql; then
    mc_config "$OUT/hsd-mc-mysql.toml"
    # shellcheck disable=SC2086
    start_hsd hsd-mc-mysql --backend "$MYSQL_URL" --data-dir "$OUT/hsd-mc-mysql-data" \
        --config "$OUT/hsd-mc-mysql.toml" --memcached-address 127.0.0.1:0 $hsd_mysql_args
    SPID[hsd-mc-mysql]=$HSD_PID,$MDB_PID RPORT[hsd-mc-mysql]=$HSD_MCPORT WPORT[hsd-mc-mysql]=$HSD_MCPORT
fi

# A GTID primary with two replicas, and hsd in front of it twice: reads on
# the primary, reads on the replicas.
if want hsd-repl-primary || want hsd-repl-replicas; then
    if repl status >/dev/null 2>&1; then
        say "replicated MariaDB in $REPL_DIR already runs: reusing it (left running)"
    else
        stop_repl=1
    fi
    HSD_REPL_DIR=$REPL_DIR HSD_REPL_BUFFER_POOL=${HSD_BENCH_REPL_BUFFER_POOL:-512M} \
        "${NICE[@]}" bash "$ROOT/scripts/replication.sh" start >&2
    eval "$(repl env)"
    REPL_PIDS=$(cat "$REPL_DIR"/s1/mariadbd.pid "$REPL_DIR"/s2/mariadbd.pid "$REPL_DIR"/s3/mariadbd.pid | paste -sd,)
    for p in ${REPL_PIDS//,/ }; do renice_all "$p"; done
    repl sql 1 -e "DROP DATABASE IF EXISTS $DB" >&2
    say "loading $rows rows into the replicated primary $DB.$TABLE; the replicas follow"
    "$BIN/hsbench" load --system mysql --mysql-url "$HSD_REPL_PRIMARY_URL" --db "$DB" --table "$TABLE" \
        --rows "$rows" --connections 4 >&2
    repl sql 1 -e "ANALYZE TABLE $DB.$TABLE" >/dev/null
    repl sync 600 >&2
    r1=${HSD_REPL_REPLICA_URLS%%,*} r2=${HSD_REPL_REPLICA_URLS#*,}
    for from in primary replicas; do
        want "hsd-repl-$from" || continue
        start_hsd "hsd-repl-$from" --backend "$HSD_REPL_PRIMARY_URL" --replica "$r1" --replica "$r2" \
            --read-from "$from" --data-dir "$OUT/hsd-repl-$from-data"
        SPID[hsd-repl-$from]=$HSD_PID,$REPL_PIDS
        RPORT[hsd-repl-$from]=$HSD_RPORT WPORT[hsd-repl-$from]=$HSD_WPORT
    done
fi

# Same data everywhere: a few rows must read back identically from every system.
check_args=(--keys "1,2,$((rows / 2)),$((rows - 1)),$rows")
for s in "${SYSTEMS[@]}"; do
    case "$s" in
        hsd-*|hs-original|memcached|redis) check_args+=(--system "$s=${RPORT[$s]}") ;;
        mysql-sql) check_args+=(--system "$s=$HSD_MARIADB_PORT") ;;
    esac
done
"$PY" "$ROOT/scripts/bench_report.py" check --db "$DB" --table "$TABLE" "${check_args[@]}" >&2 \
    || die "the systems do not hold the same data"
say "data check: every system returns the same rows"
echo "load average after loading: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# ---------------------------------------------------------------- sweep
# proc_names PIDS: the command names of a comma-separated pid list, in its
# order ("hsd,mariadbd"): the report splits server CPU by them.
proc_names() {
    local pid name names=()
    for pid in ${1//,/ }; do
        name=$(cat "/proc/$pid/comm" 2>/dev/null || echo "pid$pid")
        # A --baseline binary has its own file name.
        [[ $name == hsd* ]] && name=hsd
        names+=("$name")
    done
    (IFS=,; echo "${names[*]}")
}

# run_point SYSTEM WORKLOAD CONNS DEPTH RUN
run_point() {
    local sys=$1 wl=$2 c=$3 d=$4 run=$5 port args out rc load t_start wall
    args=(--workload "$wl" -c "$c" -d "$d" --duration "$duration" --warmup "$warmup"
          --keys "$KEYS" --server-pid "${SPID[$sys]}" --json --timeout 20)
    case "$sys" in
        hsd-mc-*) args+=(--system memcached --port "${RPORT[$sys]}" --key-prefix "") ;;
        hsd-*|hs-original)
            if [[ $wl == insert || $wl == update ]]; then port=${WPORT[$sys]}; else port=${RPORT[$sys]}; fi
            args+=(--system hs --port "$port" --db "$DB" --table "$TABLE") ;;
        memcached|redis) args+=(--system "$sys" --port "${RPORT[$sys]}") ;;
        mysql-sql) args+=(--system mysql --mysql-url "$MYSQL_URL" --db "$DB" --table "$TABLE" --mysql-prepared) ;;
    esac
    load=$(cut -d' ' -f1 /proc/loadavg)
    t_start=$EPOCHREALTIME
    rc=0
    out=$("${NICE[@]}" "$BIN/hsbench" run "${args[@]}" 2>"$OUT/hsbench.err") || rc=$?
    if [[ $rc -ne 0 ]]; then
        cat "$OUT/hsbench.err" >&2
        echo "$out" >&2
        die "hsbench failed (exit $rc) for $sys $wl c=$c d=$d"
    fi
    wall=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b - a}')
    printf '{"label":"%s","run":%d,"load1":%s,"wall_s":%s,"procs":"%s","result":%s}\n' \
        "$sys" "$run" "$load" "$wall" "$(proc_names "${SPID[$sys]}")" "$out" >>"$RAW"
    field() { sed -E "s/.*\"$1\":([^,}]*).*/\1/" <<<"$out"; }
    printf '%-13s %-10s c=%-3s d=%-2s %9.0f req/s  p50 %8.1f us  p99 %8.1f us  cpu %6.2f us/req\n' \
        "$sys" "$wl" "$c" "$d" "$(field rps)" "$(field p50_us)" "$(field p99_us)" "$(field cpu_us_per_req)" >&2
}

npoints=0
for wl in "${WORKLOADS[@]}"; do for c in "${CONNS[@]}"; do for d in "${DEPTHS[@]}"; do
    for s in "${SYSTEMS[@]}"; do
        [[ $s == mysql-sql && $d != 1 ]] && continue
        npoints=$((npoints + 1))
    done
done; done; done
say "sweep: $npoints points x $runs runs"
t_sweep=$SECONDS
# Runs outermost: a point's runs lie minutes apart, so a burst of other work
# on the machine spoils at most one of them and the median drops it. Within a
# point the systems take turns back to back.
for run in $(seq 1 "$runs"); do
    for wl in "${WORKLOADS[@]}"; do
        for c in "${CONNS[@]}"; do
            for d in "${DEPTHS[@]}"; do
                for s in "${SYSTEMS[@]}"; do
                    [[ $s == mysql-sql && $d != 1 ]] && continue
                    run_point "$s" "$wl" "$c" "$d" "$run"
                done
            done
        done
    done
    say "run $run of $runs done"
done
say "sweep took $((SECONDS - t_sweep)) s"
if [[ $io_bound -eq 1 ]]; then
    {
        echo "What the OS page cache held at the end of the sweep (fincore: resident / file size)"
        echo "MariaDB (innodb_flush_method=O_DIRECT, buffer pool $HSD_BENCH_MARIADB_BUFFER_POOL):"
        fincore "$MDB_DIR"/data/"$DB"/*.ibd 2>&1 || true
        if want hsd-embedded; then
            echo "hsd-embedded (memory cgroup $CGROUP):"
            fincore "$OUT"/hsd-embedded-data/*.sqlite* 2>&1 || true
            for f in memory.current memory.max memory.usage_in_bytes memory.limit_in_bytes; do
                [[ -f "$CGROUP/$f" ]] && echo "$f: $(cat "$CGROUP/$f")"
            done
        fi
        du -sh "$MDB_DIR/data/$DB" "$OUT/hsd-embedded-data" 2>/dev/null || true
    } >"$OUT/page-cache.txt"
    cat "$OUT/page-cache.txt" >&2
fi
echo "load average at end of sweep: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# ---------------------------------------------------------------- profile
# perf_get SYSTEM CONNS DEPTH: perf-record hsd (and for hsd-mysql also
# mariadbd) while hsbench runs `get` against SYSTEM.
perf_get() {
    local sys=$1 c=$2 d=$3 name="$1-$2x$3" data perf_pid pids
    data=$OUT/perf-$name.data
    pids=${SPID[$sys]}
    say "perf: $sys under get, $c connections x depth $d, 5 s (pids $pids)"
    perf record -F 999 -g -o "$data" -p "$pids" -- sleep 5.5 >"$OUT/perf-$name.log" 2>&1 &
    perf_pid=$!
    sleep 0.3
    "${NICE[@]}" "$BIN/hsbench" run --system hs --port "${RPORT[$sys]}" --db "$DB" --table "$TABLE" \
        --workload get -c "$c" -d "$d" --duration 5 --warmup 0 --keys "$KEYS" \
        --server-pid "$pids" --json >"$OUT/perf-$name-run.json"
    wait "$perf_pid" || true
    perf report -i "$data" --no-children --stdio --sort comm,dso,symbol -g none 2>/dev/null \
        | grep -v '^#' | grep -v '^$' >"$OUT/perf-$name-flat.txt"
    {
        echo "## $sys, get, $c connections x depth $d (perf record -F 999 -g; pids $pids)"
        echo
        echo "load generator result: $(cat "$OUT/perf-$name-run.json")"
        echo
        "$PY" "$ROOT/scripts/bench_report.py" perfsum "$OUT/perf-$name-flat.txt"
        echo
        echo "top symbols (self time):"
        echo '```'
        head -30 "$OUT/perf-$name-flat.txt" | sed -E 's/ +- +- *$//; s/ +$//'
        echo '```'
        echo
    } >>"$OUT/perf-get.md"
}
if [[ $do_perf -eq 1 ]]; then
    command -v perf >/dev/null || die "--perf needs perf (Debian: linux-perf)"
    : >"$OUT/perf-get.md"
    for sys in hsd-embedded hsd-mysql; do
        want "$sys" || continue
        perf_get "$sys" 1 1
        perf_get "$sys" 64 16
    done
    say "perf summary: $OUT/perf-get.md"
fi

# ---------------------------------------------------------------- report
report_args=(report --raw "$RAW" --out "$OUT" --machine "$OUT/machine.txt")
[[ -n "$json_out" ]] && report_args+=(--json "$json_out")
"$PY" "$ROOT/scripts/bench_report.py" "${report_args[@]}"
if command -v gnuplot >/dev/null 2>&1; then
    for chart in throughput ratio; do
        [[ -s "$OUT/$chart.gp" ]] || continue
        gnuplot "$OUT/$chart.gp" 2>"$OUT/gnuplot.err" || { cat "$OUT/gnuplot.err" >&2; die "gnuplot failed"; }
        [[ -s "$OUT/$chart.png" ]] || die "no $chart chart written"
    done
    if [[ -n "$chart_copy" ]]; then
        cp "$OUT/throughput.png" "$chart_copy"
        [[ -s "$OUT/ratio.png" ]] && cp "$OUT/ratio.png" "$(dirname "$chart_copy")/bench-ratio.png"
    fi
else
    die "gnuplot missing (scripts/deps.sh installs gnuplot-nox)"
fi
say "results: $OUT/results.md, $OUT/results.json, chart $OUT/throughput.png${json_out:+, $json_out}"

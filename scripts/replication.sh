#!/usr/bin/env bash
# scripts/replication.sh: a PRIVATE replicated MariaDB for hsd's tests and
# benchmarks: a GTID primary with two replicas, all on 127.0.0.1.
#
# Never touches the system MariaDB service. Everything lives in one directory,
# $HSD_REPL_DIR (default: <repo>/target/replication):
#     template/      a data directory made once by mariadb-install-db
#     s1/ s2/ s3/    the three servers (data/, my.cnf, error.log, port, ...)
#     primary        the number of the server that should take writes
#     hs-ports       the original HandlerSocket plugin's ports on s1
#     env            shell exports for callers, present while started
#     lock           flock file serialising every verb that changes something
#
# Each server has its own server_id (1, 2, 3), a binary log with
# log_slave_updates (so any of them can become the primary) and ROW format.
# s1 starts as the primary (read_only=OFF); s2 and s3 replicate from it with
# master_use_gtid=slave_pos and read_only=ON. s1 also loads the original
# HandlerSocket plugin (handlersocket.so), so a test can compare its writes
# with hsd's (MDEV-33967: the plugin's writes never reach the binary log).
#
# The account hsd/hsd (@127.0.0.1, @localhost) has every privilege except
# SUPER and READ_ONLY ADMIN: a read-only server refuses its writes, as it
# would an application's. repl/repl is the replication account.
#
# `start` writes <dir>/env:
#     export HSD_REPL_PRIMARY_URL=mysql://hsd:hsd@127.0.0.1:<s1 port>
#     export HSD_REPL_REPLICA_URLS=mysql://hsd:hsd@127.0.0.1:<s2>,mysql://...:<s3>
#     export HSD_REPL_PORT_1=<port> HSD_REPL_PORT_2=<port> HSD_REPL_PORT_3=<port>
#     export HSD_REPL_HS_PORT=<plugin read port> HSD_REPL_HS_PORT_WR=<plugin write port>
#     export HSD_REPL_DIR=<dir>
# The URLs name the servers as started (s1 primary); after `promote` the roles
# differ, which is the point: hsd learns roles from the servers.
#
# Usage:
#   scripts/replication.sh start         start, or reuse a running set whose
#                                        three servers answer; otherwise build
#                                        a fresh one (s1 primary)
#   scripts/replication.sh reset         stop, throw the data away, build fresh
#   scripts/replication.sh stop          stop all three; no-op when not running
#   scripts/replication.sh env           print the exports
#   scripts/replication.sh status        each server: port, pid, read_only,
#                                        GTID position, SQL thread
#   scripts/replication.sh stop-node N   clean shutdown of server N (1..3)
#   scripts/replication.sh kill-node N   kill -9 server N (a crash)
#   scripts/replication.sh freeze N      SIGSTOP server N (a hung server: its
#                                        port still accepts connections)
#   scripts/replication.sh thaw N        SIGCONT it
#   scripts/replication.sh start-node N  start server N again on its port; a
#                                        replica is pointed at the current
#                                        primary
#   scripts/replication.sh promote N     make N the primary: the old primary
#                                        (if it answers) turns read-only first
#                                        and N catches up with it; N stops
#                                        replicating and turns writable; every
#                                        other running server replicates from N
#   scripts/replication.sh read-only N on|off   set N's read_only (off on a
#                                        replica makes two writable servers)
#   scripts/replication.sh stop-sql N    stop N's replication SQL thread
#   scripts/replication.sh start-sql N   start it again
#   scripts/replication.sh delay N SECS  N applies each transaction SECS
#                                        seconds after the primary wrote it
#                                        (MASTER_DELAY; 0 ends the delay)
#   scripts/replication.sh sync [SECS]   wait until every running replica has
#                                        applied the primary's binary log
#   scripts/replication.sh port N        print server N's port
#   scripts/replication.sh sql N ...     the mariadb client as root on N
# Environment: HSD_REPL_DIR, HSD_REPL_TIMEOUT (start/stop wait, default 60 s),
#   HSD_REPL_BUFFER_POOL (default 32M).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_NAME=replication.sh
TIMEOUT=${HSD_REPL_TIMEOUT:-60}
# shellcheck source=lib/mariadb-node.sh
source "$ROOT/scripts/lib/mariadb-node.sh"

DIR=$(realpath -m "${HSD_REPL_DIR:-$ROOT/target/replication}")
TEMPLATE=$DIR/template
ENVFILE=$DIR/env
PRIMARYFILE=$DIR/primary
HSPORTFILE=$DIR/hs-ports
BUFFER_POOL=${HSD_REPL_BUFFER_POOL:-32M}
NODES=(1 2 3)

node_dir() { echo "$DIR/s$1"; }

check_node() {
    [[ "${1:-}" =~ ^[123]$ ]] || die "a server number 1, 2 or 3 is needed (got '${1:-}')"
}

current_primary() {
    local p=1
    [[ -f "$PRIMARYFILE" ]] && p=$(cat "$PRIMARYFILE")
    echo "$p"
}

write_cnf() {
    local n=$1 dir ro=ON hs_read hs_write
    dir=$(node_dir "$n")
    [[ "$(current_primary)" == "$n" ]] && ro=OFF
    cat >"$dir/my.cnf" <<EOF
# written by scripts/replication.sh; rewritten on every start
[mariadbd]
datadir=$dir/data
tmpdir=$dir/tmp
socket=$(node_sock "$dir")
pid-file=$dir/mariadbd.pid
log-error=$dir/error.log
port=$(node_port "$dir")
bind-address=127.0.0.1
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
max_connections=500
innodb_buffer_pool_size=$BUFFER_POOL
innodb_log_file_size=16M
# Test data: a crash of mariadbd (not of the machine) loses nothing with 2.
innodb_flush_log_at_trx_commit=2
sync_binlog=0
performance_schema=OFF
server_id=$n
log_bin=binlog
relay_log=relay
log_slave_updates=ON
binlog_format=ROW
read_only=$ro
EOF
    if [[ "$n" == 1 ]]; then
        read -r hs_read hs_write <"$HSPORTFILE"
        cat >>"$dir/my.cnf" <<EOF
# The original HandlerSocket plugin (see scripts/mariadb.sh for the options).
plugin-maturity=beta
plugin-load-add=handlersocket.so
loose-handlersocket-address=127.0.0.1
loose-handlersocket-port=$hs_read
loose-handlersocket-port-wr=$hs_write
loose-handlersocket-threads=1
loose-handlersocket-threads-wr=1
loose-handlersocket-plain-secret=
loose-handlersocket-plain-secret-wr=
EOF
    fi
}

# The plugin's two ports, kept across rebuilds while they are free (so a
# `reset` leaves every address as it was).
pick_hs_ports() {
    local r="" w=""
    [[ -f "$HSPORTFILE" ]] && read -r r w <"$HSPORTFILE"
    if [[ -z "$r" || -z "$w" ]] || port_in_use "$r" || port_in_use "$w"; then
        r=$(pick_port)
        w=$(pick_port)
    else
        PICKED_PORTS+="$r $w "
    fi
    echo "$r $w" >"$HSPORTFILE"
}

# launch N [keep-port]: starts server N, retrying on another port when it
# lost its port while starting (unless the port must be kept).
launch() {
    local n=$1 keep=${2:-} dir rc attempt
    dir=$(node_dir "$n")
    for attempt in 1 2 3; do
        if [[ -z "$keep" ]]; then
            keep_or_pick_port "$dir/port" >/dev/null
        elif port_in_use "$(node_port "$dir")"; then
            die "s$n: its port $(node_port "$dir") is taken by another program"
        fi
        write_cnf "$n"
        rc=0
        node_launch "$dir" || rc=$?
        [[ $rc -eq 0 ]] && return 0
        if [[ $rc -eq 2 && -z "$keep" ]]; then
            say "s$n: port taken while starting (attempt $attempt); picking another"
            rm -f "$dir/port"
            continue
        fi
        die "s$n did not start (log: $dir/error.log)"
    done
    die "s$n could not bind a port after 3 attempts"
}

url() { echo "mysql://hsd:hsd@127.0.0.1:$(node_port "$(node_dir "$1")")"; }

write_env() {
    local tmp=$ENVFILE.tmp hs_read hs_write
    read -r hs_read hs_write <"$HSPORTFILE"
    {
        echo "# private replicated MariaDB from scripts/replication.sh"
        printf 'export HSD_REPL_PRIMARY_URL=%q\n' "$(url 1)"
        printf 'export HSD_REPL_REPLICA_URLS=%q\n' "$(url 2),$(url 3)"
        for n in "${NODES[@]}"; do
            printf 'export HSD_REPL_PORT_%s=%q\n' "$n" "$(node_port "$(node_dir "$n")")"
        done
        printf 'export HSD_REPL_HS_PORT=%q\n' "$hs_read"
        printf 'export HSD_REPL_HS_PORT_WR=%q\n' "$hs_write"
        printf 'export HSD_REPL_DIR=%q\n' "$DIR"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

# point N AT [current_pos|slave_pos]: server N replicates from server AT.
point() {
    local n=$1 at=$2 mode=${3:-slave_pos}
    node_query "$(node_dir "$n")" "
        STOP SLAVE;
        CHANGE MASTER TO master_host='127.0.0.1', master_port=$(node_port "$(node_dir "$at")"),
            master_user='repl', master_password='repl', master_use_gtid=$mode,
            master_connect_retry=1;
        START SLAVE;" || die "s$n: could not replicate from s$at"
}

all_answer() {
    local n
    for n in "${NODES[@]}"; do node_answers "$(node_dir "$n")" || return 1; done
}

do_build() {
    local n pids=() rc=0
    do_stop_all
    make_template "$TEMPLATE"
    echo 1 >"$PRIMARYFILE"
    pick_hs_ports
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")"
        node_fresh_data "$(node_dir "$n")" "$TEMPLATE"
        rm -f "$(node_dir "$n")/error.log"
        keep_or_pick_port "$(node_dir "$n")/port" >/dev/null
    done
    # The three start together (each waits for its own).
    for n in "${NODES[@]}"; do
        (launch "$n" keep) &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    [[ $rc -eq 0 ]] || die "a server did not start"
    local host
    host=$(uname -n | sed "s/'//g")
    # Accounts on s1 only: they reach the replicas through replication (the
    # replicas start from an empty position, so they apply s1's whole log).
    {
        echo "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$host', ''@'localhost', ''@'$host';"
        hsd_user_sql
        echo "CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';"
        echo "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';"
    } | node_sql "$(node_dir 1)" || die "could not create the accounts on s1"
    for n in 2 3; do
        node_query "$(node_dir "$n")" "SET GLOBAL gtid_slave_pos = '';" || die "s$n: gtid_slave_pos"
        point "$n" 1 slave_pos
    done
    do_sync 60
    write_env
    say "ready: primary $(url 1), replicas $(url 2) $(url 3)"
}

do_start() {
    if all_answer && [[ -f "$PRIMARYFILE" && -f "$HSPORTFILE" ]]; then
        say "already running; reusing it (primary: s$(current_primary))"
        write_env
        return 0
    fi
    do_build
}

do_stop_all() {
    local n
    for n in "${NODES[@]}"; do
        [[ -d "$(node_dir "$n")" ]] && node_stop "$(node_dir "$n")"
    done
    rm -f "$ENVFILE"
}

do_stop() {
    do_stop_all
    say "stopped"
}

# The running replica servers (every running server but the primary).
running_replicas() {
    local n p
    p=$(current_primary)
    for n in "${NODES[@]}"; do
        [[ "$n" == "$p" ]] && continue
        node_answers "$(node_dir "$n")" && echo "$n"
    done
    return 0
}

do_sync() {
    local secs=${1:-60} p pos n
    p=$(current_primary)
    node_answers "$(node_dir "$p")" || die "the primary s$p does not answer"
    pos=$(node_query "$(node_dir "$p")" "SELECT @@gtid_binlog_pos")
    for n in $(running_replicas); do
        wait_covers "$n" "$pos" "$secs" || die "s$n did not reach the primary's position $pos within ${secs}s"
    done
}

do_start_node() {
    local n=$1 dir p
    dir=$(node_dir "$n")
    [[ -f "$dir/port" ]] || die "s$n was never started; run: $0 start"
    if node_answers "$dir"; then say "s$n already runs"; return 0; fi
    launch "$n" keep
    p=$(current_primary)
    if [[ "$n" != "$p" ]]; then
        # It may have been down while another server was promoted.
        local at
        at=$(node_query "$dir" "SHOW SLAVE STATUS" | awk -F'\t' '{print $4}')
        if [[ "$at" != "$(node_port "$(node_dir "$p")")" ]]; then
            point "$n" "$p" current_pos
        fi
    fi
    say "s$n started on port $(node_port "$dir")"
}

# covers HAVE WANT: every domain-server-seq of WANT has a GTID of the same
# domain with at least its sequence number in HAVE (as MASTER_GTID_WAIT
# compares, but on any position).
covers() {
    local have=$1 want=$2 g d n h ok
    for g in ${want//,/ }; do
        d=${g%%-*} n=${g##*-} ok=0
        for h in ${have//,/ }; do
            [[ "${h%%-*}" == "$d" && "${h##*-}" -ge "$n" ]] && ok=1
        done
        [[ $ok -eq 1 ]] || return 1
    done
    return 0
}

# wait_covers N POS SECS: waits until server N's gtid_current_pos covers POS
# (a former primary's own transactions are in its binlog position, not in
# its slave position, which MASTER_GTID_WAIT would wait on).
wait_covers() {
    local n=$1 pos=$2 secs=$3 deadline
    deadline=$(( SECONDS + secs ))
    while (( SECONDS < deadline )); do
        covers "$(node_query "$(node_dir "$n")" "SELECT @@gtid_current_pos")" "$pos" && return 0
        sleep 0.1
    done
    return 1
}

do_promote() {
    local n=$1 old pos got m
    old=$(current_primary)
    if [[ "$old" != "$n" ]] && node_answers "$(node_dir "$old")"; then
        # A switchover: nothing may be written on the old primary once the
        # new one has caught up with it.
        node_query "$(node_dir "$old")" "SET GLOBAL read_only = ON"
        pos=$(node_query "$(node_dir "$old")" "SELECT @@gtid_binlog_pos")
        wait_covers "$n" "$pos" 30 || die "s$n did not catch up with s$old ($pos)"
    fi
    node_query "$(node_dir "$n")" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF" \
        || die "s$n: could not stop replicating"
    echo "$n" >"$PRIMARYFILE"
    for m in "${NODES[@]}"; do
        [[ "$m" == "$n" ]] && continue
        node_answers "$(node_dir "$m")" || continue
        node_query "$(node_dir "$m")" "SET GLOBAL read_only = ON"
        if [[ "$m" == "$old" ]]; then point "$m" "$n" current_pos; else point "$m" "$n" slave_pos; fi
    done
    say "s$n is the primary"
}

do_status() {
    local n dir pid rc=0
    for n in "${NODES[@]}"; do
        dir=$(node_dir "$n")
        if pid=$(node_pid "$dir") && node_answers "$dir"; then
            local info sql
            info=$(node_query "$dir" "SELECT @@read_only, @@gtid_current_pos")
            sql=$(node_query "$dir" "SHOW SLAVE STATUS" | awk -F'\t' '{print "io=" $11 " sql=" $12}')
            echo "s$n: running pid $pid port $(node_port "$dir") read_only=$(cut -f1 <<<"$info") gtid=$(cut -f2 <<<"$info") ${sql:-not replicating}"
        else
            echo "s$n: not running (dir $dir)"
            rc=1
        fi
    done
    echo "primary (by this script): s$(current_primary)"
    return $rc
}

cmd=${1:-}
shift || true
case "$cmd" in
    start) with_lock "$DIR/lock" do_start ;;
    reset) with_lock "$DIR/lock" do_build ;;
    stop) with_lock "$DIR/lock" do_stop ;;
    stop-node) check_node "${1:-}"; with_lock "$DIR/lock" node_stop "$(node_dir "$1")" ;;
    kill-node) check_node "${1:-}"; with_lock "$DIR/lock" node_kill "$(node_dir "$1")" ;;
    freeze|thaw)
        check_node "${1:-}"
        pid=$(node_pid "$(node_dir "$1")") || die "s$1 is not running"
        if [[ $cmd == freeze ]]; then kill -STOP "$pid"; else kill -CONT "$pid"; fi
        ;;
    start-node) check_node "${1:-}"; with_lock "$DIR/lock" do_start_node "$1" ;;
    promote) check_node "${1:-}"; with_lock "$DIR/lock" do_promote "$1" ;;
    read-only)
        check_node "${1:-}"
        case "${2:-}" in on|ON|1) v=ON ;; off|OFF|0) v=OFF ;; *) die "read-only N on|off" ;; esac
        node_query "$(node_dir "$1")" "SET GLOBAL read_only = $v"
        ;;
    stop-sql) check_node "${1:-}"; node_query "$(node_dir "$1")" "STOP SLAVE SQL_THREAD" ;;
    start-sql) check_node "${1:-}"; node_query "$(node_dir "$1")" "START SLAVE SQL_THREAD" ;;
    delay)
        check_node "${1:-}"
        [[ "${2:-}" =~ ^[0-9]+$ ]] || die "delay N SECS"
        node_query "$(node_dir "$1")" "STOP SLAVE; CHANGE MASTER TO master_delay = $2; START SLAVE"
        ;;
    sync) do_sync "${1:-60}" ;;
    port) check_node "${1:-}"; node_port "$(node_dir "$1")" ;;
    env)
        [[ -f "$ENVFILE" ]] || die "not started (no $ENVFILE); run: $0 start"
        cat "$ENVFILE"
        ;;
    status) do_status ;;
    sql) check_node "${1:-}"; n=$1; shift; node_sql "$(node_dir "$n")" "$@" ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac

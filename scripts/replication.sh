#!/usr/bin/env bash
# scripts/replication.sh: a PRIVATE replicated MariaDB, or MySQL 8.0.31, for
# hsd's tests and benchmarks: a GTID primary with two replicas, all on
# 127.0.0.1.
#
# Two flavors, chosen by HSD_REPL_FLAVOR when a set is built and remembered
# in <dir>/flavor (later verbs on that directory need no variable):
#     mariadb   (default) MariaDB 10.11, master_use_gtid=slave_pos, the
#               original HandlerSocket plugin on s1;
#                default dir <repo>/target/replication
#     mysql8    MySQL 8.0.31 (the mysqld scripts/mysql8.sh fetches) with
#               gtid_mode=ON, enforce_gtid_consistency=ON and
#               SOURCE_AUTO_POSITION; no plugin (it cannot load into MySQL);
#                default dir <repo>/target/replication-mysql8
#
# Never touches the system MariaDB service. Everything lives in one directory,
# $HSD_REPL_DIR:
#     template/      a data directory made once by mariadb-install-db
#     s1/ s2/ s3/    the three servers (data/, my.cnf, error.log, port, ...)
#     primary        the number of the server that should take writes
#     hs-ports       the original HandlerSocket plugin's ports on s1
#     env            shell exports for callers, present while started
#     flavor         mariadb or mysql8
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
# SUPER and READ_ONLY ADMIN (MySQL: SUPER and CONNECTION_ADMIN, and it has
# GRANT OPTION): a read-only server refuses its writes, as it would an
# application's. repl/repl is the
# replication account. MySQL 8 runs as the account mysql when run as root.
#
# `start` writes <dir>/env:
#     export HSD_REPL_PRIMARY_URL=mysql://hsd:hsd@127.0.0.1:<s1 port>
#     export HSD_REPL_REPLICA_URLS=mysql://hsd:hsd@127.0.0.1:<s2>,mysql://...:<s3>
#     export HSD_REPL_PORT_1=<port> HSD_REPL_PORT_2=<port> HSD_REPL_PORT_3=<port>
#     export HSD_REPL_HS_PORT=<plugin read port> HSD_REPL_HS_PORT_WR=<plugin write port>
#     export HSD_REPL_DIR=<dir> HSD_REPL_FLAVOR=<flavor>
# (mysql8: no HSD_REPL_HS_PORT*, there is no plugin.)
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
#                                        (it also reaches MySQL 8's socket)
# Environment: HSD_REPL_FLAVOR, HSD_REPL_DIR, HSD_REPL_TIMEOUT (start/stop
#   wait, default 60 s), HSD_REPL_BUFFER_POOL (default 32M); mysql8 also
#   HSD_MYSQL8_DIST (see scripts/mysql8.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_NAME=replication.sh
TIMEOUT=${HSD_REPL_TIMEOUT:-60}

# The flavor: asked, else the one the directory was built with, else mariadb.
FLAVOR=${HSD_REPL_FLAVOR:-}
if [[ -n "${HSD_REPL_DIR:-}" && -z "$FLAVOR" && -f "$HSD_REPL_DIR/flavor" ]]; then
    FLAVOR=$(cat "$HSD_REPL_DIR/flavor")
fi
FLAVOR=${FLAVOR:-mariadb}
case "$FLAVOR" in
    mariadb) DEFAULT_DIR=$ROOT/target/replication ;;
    mysql8) DEFAULT_DIR=$ROOT/target/replication-mysql8 ;;
    *) echo "$SCRIPT_NAME: ERROR: HSD_REPL_FLAVOR must be mariadb or mysql8 (got '$FLAVOR')" >&2; exit 2 ;;
esac
DIR=$(realpath -m "${HSD_REPL_DIR:-$DEFAULT_DIR}")
if [[ -f "$DIR/flavor" && "$(cat "$DIR/flavor")" != "$FLAVOR" ]]; then
    echo "$SCRIPT_NAME: ERROR: $DIR holds a $(cat "$DIR/flavor") set, not $FLAVOR" >&2
    exit 2
fi

# mysql8: the server scripts/mysql8.sh fetches, run as mysql when we are root.
RUN_AS=root
if [[ "$FLAVOR" == mysql8 ]]; then
    MYSQL8_BASE=$(realpath -m "${HSD_MYSQL8_DIST:-$ROOT/target/mysql8-dist}")/mysql-8.0.31
    NODE_DAEMON=(env "LD_LIBRARY_PATH=$MYSQL8_BASE/bin:$MYSQL8_BASE/lib/private" "$MYSQL8_BASE/bin/mysqld")
    [[ $(id -u) -eq 0 ]] && RUN_AS=mysql
fi
# shellcheck source=lib/mariadb-node.sh
source "$ROOT/scripts/lib/mariadb-node.sh"
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
    if [[ "$FLAVOR" == mysql8 ]]; then
        write_cnf_mysql8 "$n" "$dir" "$ro"
        return
    fi
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

# MySQL 8.0.31's options: GTIDs on (the mode hsd's replica routing and row
# cache rely on there), log_replica_updates so any server can become the
# primary, and the node files where lib/mariadb-node.sh looks for them.
write_cnf_mysql8() {
    local n=$1 dir=$2 ro=$3
    cat >"$dir/my.cnf" <<EOF
# written by scripts/replication.sh (flavor mysql8); rewritten on every start
[mysqld]
basedir=$MYSQL8_BASE
lc-messages-dir=$MYSQL8_BASE/share
datadir=$dir/data
tmpdir=$dir/tmp
socket=$(node_sock "$dir")
pid-file=$dir/mariadbd.pid
log-error=$dir/error.log
port=$(node_port "$dir")
bind-address=127.0.0.1
mysqlx=OFF
skip-name-resolve
character-set-server=utf8mb4
max_connections=500
innodb_buffer_pool_size=$BUFFER_POOL
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=2
sync_binlog=0
performance_schema=OFF
server_id=$n
log_bin=binlog
relay_log=relay
log_replica_updates=ON
binlog_format=ROW
binlog_row_image=FULL
gtid_mode=ON
enforce_gtid_consistency=ON
read_only=$ro
EOF
}

# The template of the mysql8 flavor: `mysqld --initialize-insecure` once
# (root@localhost without a password, reached through the socket only).
make_template_mysql8() {
    local tdir=$1
    [[ -d "$tdir/data/mysql" ]] && return 0
    [[ -x "$MYSQL8_BASE/bin/mysqld" ]] || bash "$ROOT/scripts/mysql8.sh" fetch \
        || die "could not fetch MySQL 8.0.31 (scripts/mysql8.sh fetch)"
    say "initialising a template data directory (mysqld --initialize-insecure)"
    rm -rf "$tdir"
    mkdir -p "$tdir/data"
    [[ "$RUN_AS" == root ]] || chown -R "$RUN_AS" "$tdir"
    if ! "${NODE_DAEMON[@]}" --no-defaults --user="$RUN_AS" --basedir="$MYSQL8_BASE" \
            --datadir="$tdir/data" --initialize-insecure --innodb-log-file-size=16M \
            --log-error="$tdir/initialize.log" >/dev/null 2>&1; then
        cat "$tdir/initialize.log" >&2 || true
        rm -rf "$tdir/data"
        die "mysqld --initialize-insecure failed (log above)"
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
        node_launch "$dir" "$RUN_AS" || rc=$?
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
        echo "# private replicated $FLAVOR from scripts/replication.sh"
        printf 'export HSD_REPL_PRIMARY_URL=%q\n' "$(url 1)"
        printf 'export HSD_REPL_REPLICA_URLS=%q\n' "$(url 2),$(url 3)"
        for n in "${NODES[@]}"; do
            printf 'export HSD_REPL_PORT_%s=%q\n' "$n" "$(node_port "$(node_dir "$n")")"
        done
        if [[ "$FLAVOR" == mariadb ]]; then
            printf 'export HSD_REPL_HS_PORT=%q\n' "$hs_read"
            printf 'export HSD_REPL_HS_PORT_WR=%q\n' "$hs_write"
        fi
        printf 'export HSD_REPL_DIR=%q\n' "$DIR"
        printf 'export HSD_REPL_FLAVOR=%q\n' "$FLAVOR"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

# point N AT [current_pos|slave_pos]: server N replicates from server AT
# (mysql8: by GTID auto-positioning, whatever the mode).
point() {
    local n=$1 at=$2 mode=${3:-slave_pos}
    if [[ "$FLAVOR" == mysql8 ]]; then
        # GTID auto-positioning covers both modes: a server asks for what
        # its gtid_executed lacks.
        node_query "$(node_dir "$n")" "
            STOP REPLICA;
            CHANGE REPLICATION SOURCE TO source_host='127.0.0.1', source_port=$(node_port "$(node_dir "$at")"),
                source_user='repl', source_password='repl', source_auto_position=1,
                source_connect_retry=1, get_source_public_key=1;
            START REPLICA;" || die "s$n: could not replicate from s$at"
        return
    fi
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
    do_stop_all kill
    mkdir -p "$DIR"
    echo "$FLAVOR" >"$DIR/flavor"
    if [[ "$FLAVOR" == mysql8 ]]; then make_template_mysql8 "$TEMPLATE"; else make_template "$TEMPLATE"; fi
    echo 1 >"$PRIMARYFILE"
    pick_hs_ports
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")"
        node_fresh_data "$(node_dir "$n")" "$TEMPLATE"
        # Each MySQL server makes its own server_uuid when auto.cnf is absent
        # (copies sharing one would refuse to replicate from each other).
        rm -f "$(node_dir "$n")/data/auto.cnf"
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
    if [[ "$FLAVOR" == mysql8 ]]; then
        {
            hsd_user_sql_mysql8
            echo "CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';"
            echo "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';"
        } | node_sql "$(node_dir 1)" || die "could not create the accounts on s1"
    else
        {
            echo "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$host', ''@'localhost', ''@'$host';"
            hsd_user_sql
            echo "CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';"
            echo "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';"
        } | node_sql "$(node_dir 1)" || die "could not create the accounts on s1"
    fi
    for n in 2 3; do
        if [[ "$FLAVOR" == mariadb ]]; then
            node_query "$(node_dir "$n")" "SET GLOBAL gtid_slave_pos = '';" || die "s$n: gtid_slave_pos"
        fi
        point "$n" 1 slave_pos
    done
    do_sync 60
    write_env
    say "ready: primary $(url 1), replicas $(url 2) $(url 3)"
}

# hsd's account on MySQL 8 (caching_sha2_password, the default): every
# privilege but SUPER and CONNECTION_ADMIN, either of which lets a session
# write on a read_only server; WITH GRANT OPTION as scripts/mysql8.sh's, for
# the row cache's tests that make accounts of their own (it can grant
# nothing it lacks).
hsd_user_sql_mysql8() {
    cat <<'EOF'
CREATE USER IF NOT EXISTS 'hsd'@'127.0.0.1' IDENTIFIED BY 'hsd';
CREATE USER IF NOT EXISTS 'hsd'@'localhost' IDENTIFIED BY 'hsd';
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'localhost' WITH GRANT OPTION;
REVOKE SUPER, CONNECTION_ADMIN ON *.* FROM 'hsd'@'127.0.0.1';
REVOKE SUPER, CONNECTION_ADMIN ON *.* FROM 'hsd'@'localhost';
CREATE DATABASE IF NOT EXISTS hsdtest CHARACTER SET utf8mb4;
EOF
}

do_start() {
    if all_answer && [[ -f "$PRIMARYFILE" && -f "$HSPORTFILE" ]]; then
        say "already running; reusing it (primary: s$(current_primary))"
        write_env
        return 0
    fi
    do_build
}

# do_stop_all [kill]: clean shutdowns; with `kill`, kill -9 (for a rebuild,
# which throws the data away: a MySQL 8 primary takes about 10 s to shut
# down cleanly, three rebuilds per run of the suite).
do_stop_all() {
    local n stop=node_stop
    [[ "${1:-}" == kill ]] && stop=node_kill
    for n in "${NODES[@]}"; do
        [[ -d "$(node_dir "$n")" ]] && "$stop" "$(node_dir "$n")"
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
    pos=$(own_position "$p")
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

# own_position N: the GTIDs server N has logged (MariaDB: gtid_binlog_pos;
# MySQL: gtid_executed, its line breaks dropped).
own_position() {
    if [[ "$FLAVOR" == mysql8 ]]; then
        node_query "$(node_dir "$1")" "SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')"
    else
        node_query "$(node_dir "$1")" "SELECT @@gtid_binlog_pos"
    fi
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
# its slave position, which MASTER_GTID_WAIT would wait on). MySQL: until
# its gtid_executed contains POS.
wait_covers() {
    local n=$1 pos=$2 secs=$3 deadline
    deadline=$(( SECONDS + secs ))
    while (( SECONDS < deadline )); do
        if [[ "$FLAVOR" == mysql8 ]]; then
            [[ "$(node_query "$(node_dir "$n")" "SELECT GTID_SUBSET('$pos', @@GLOBAL.gtid_executed)")" == 1 ]] \
                && return 0
        else
            covers "$(node_query "$(node_dir "$n")" "SELECT @@gtid_current_pos")" "$pos" && return 0
        fi
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
        pos=$(own_position "$old")
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
            if [[ "$FLAVOR" == mysql8 ]]; then
                info=$(node_query "$dir" "SELECT @@read_only, REPLACE(@@GLOBAL.gtid_executed, '\n', '')")
            else
                info=$(node_query "$dir" "SELECT @@read_only, @@gtid_current_pos")
            fi
            sql=$(node_query "$dir" "SHOW SLAVE STATUS" | awk -F'\t' '{print "io=" $11 " sql=" $12}')
            echo "s$n: running pid $pid port $(node_port "$dir") read_only=$(cut -f1 <<<"$info") gtid=$(cut -f2 <<<"$info") ${sql:-not replicating}"
        else
            echo "s$n: not running (dir $dir)"
            rc=1
        fi
    done
    echo "primary (by this script): s$(current_primary); flavor $FLAVOR"
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

#!/usr/bin/env bash
# scripts/galera.sh: a PRIVATE three-node MariaDB Galera cluster (galera-4)
# for hsd's tests and benchmarks, all on 127.0.0.1.
#
# Never touches the system MariaDB service. Everything lives in one directory,
# $HSD_GALERA_DIR (default: <repo>/target/galera, or /tmp/hsd-galera-<hash>
# when user mysql cannot reach the checkout):
#     template/      a data directory made once by mariadb-install-db
#     g1/ g2/ g3/    the three nodes (data/, my.cnf, error.log, port, ...)
#     env            shell exports for callers, present while started
#     lock           flock file serialising every verb that changes something
#
# Each node has four free ports: SQL (g?/port), group communication
# (g?/gport), incremental state transfer (g?/istport) and state snapshot
# transfer (g?/sstport). g1 bootstraps the cluster; g2 and g3 join it one
# after the other by rsync state transfer. The servers run as the OS user
# `mysql` (the rsync transfer script runs as the server's user and expects
# it), so the node directories are owned by mysql.
#
# The account hsd/hsd (@127.0.0.1, @localhost) has every privilege except
# SUPER and READ_ONLY ADMIN, and database hsdtest exists.
#
# `start` writes <dir>/env:
#     export HSD_GALERA_URLS=mysql://hsd:hsd@127.0.0.1:<g1>,...<g2>,...<g3>
#     export HSD_GALERA_PORT_1=<port> HSD_GALERA_PORT_2=<port> HSD_GALERA_PORT_3=<port>
#     export HSD_GALERA_DIR=<dir>
#
# Usage:
#   scripts/galera.sh start          start, or reuse a cluster whose three
#                                    nodes answer and are Synced; otherwise
#                                    build a fresh one
#   scripts/galera.sh reset          stop, throw the data away, build fresh
#   scripts/galera.sh stop           stop all nodes; no-op when not running
#   scripts/galera.sh env            print the exports
#   scripts/galera.sh status         each node: port, pid, state, cluster status
#   scripts/galera.sh stop-node N    clean shutdown of node N (1..3)
#   scripts/galera.sh kill-node N    kill -9 node N (a crash)
#   scripts/galera.sh start-node N   start node N again; it joins the running
#                                    nodes (state transfer) and is waited for
#                                    until Synced
#   scripts/galera.sh isolate N      cut N off the others (gmcast.isolate): it
#                                    leaves the primary component
#   scripts/galera.sh rejoin N       end the isolation; waits until Synced
#   scripts/galera.sh desync N       SET GLOBAL wsrep_desync=ON (not Synced)
#   scripts/galera.sh resync N       wsrep_desync=OFF; waits until Synced
#   scripts/galera.sh wait-synced N [SECS]  wait until N is Synced
#   scripts/galera.sh port N         print node N's SQL port
#   scripts/galera.sh sql N ...      the mariadb client as root on N
# Environment: HSD_GALERA_DIR, HSD_GALERA_TIMEOUT (start/stop wait, default
#   90 s), HSD_GALERA_BUFFER_POOL (default 32M).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_NAME=galera.sh
TIMEOUT=${HSD_GALERA_TIMEOUT:-90}
# shellcheck source=lib/mariadb-node.sh
source "$ROOT/scripts/lib/mariadb-node.sh"

# The servers run as user mysql, which must reach the directory: when the
# checkout lies where it may not (e.g. under /root), the default moves to
# /tmp.
searchable_by() {
    local d=$2
    while [[ "$d" != / ]]; do
        if [[ -d "$d" ]] && ! su -s /bin/sh "$1" -c "test -x '$d'" 2>/dev/null; then
            return 1
        fi
        d=$(dirname "$d")
    done
}
if [[ -n "${HSD_GALERA_DIR:-}" ]]; then
    DIR=$(realpath -m "$HSD_GALERA_DIR")
elif searchable_by mysql "$ROOT/target"; then
    DIR=$ROOT/target/galera
else
    DIR=/tmp/hsd-galera-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)
fi
TEMPLATE=$DIR/template
ENVFILE=$DIR/env
BUFFER_POOL=${HSD_GALERA_BUFFER_POOL:-32M}
PROVIDER=${HSD_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
RUN_AS=mysql
NODES=(1 2 3)

[[ -f "$PROVIDER" ]] || die "$PROVIDER not found (Debian package galera-4); run scripts/deps.sh"
id "$RUN_AS" >/dev/null 2>&1 || die "OS user $RUN_AS missing (it comes with mariadb-server)"
command -v rsync >/dev/null 2>&1 || die "rsync not found (state transfer); run scripts/deps.sh"

node_dir() { echo "$DIR/g$1"; }

check_node() {
    [[ "${1:-}" =~ ^[123]$ ]] || die "a node number 1, 2 or 3 is needed (got '${1:-}')"
}

# The server runs as $RUN_AS: every directory above the nodes must let it
# through.
check_path_access() {
    searchable_by "$RUN_AS" "$DIR" \
        || die "a directory above $DIR is not searchable by user $RUN_AS (chmod o+x it, or set HSD_GALERA_DIR)"
}

cluster_address() {
    local n list=""
    for n in "${NODES[@]}"; do
        list+="${list:+,}127.0.0.1:$(cat "$(node_dir "$n")/gport")"
    done
    echo "gcomm://$list"
}

write_cnf() {
    local n=$1 dir
    dir=$(node_dir "$n")
    cat >"$dir/my.cnf" <<EOF
# written by scripts/galera.sh; rewritten on every start
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
innodb_flush_log_at_trx_commit=2
innodb_autoinc_lock_mode=2
default_storage_engine=InnoDB
binlog_format=ROW
performance_schema=OFF
server_id=$((10 + n))
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=hsd-test
wsrep_cluster_address=$(cluster_address)
wsrep_node_name=g$n
wsrep_node_address=127.0.0.1:$(cat "$dir/gport")
wsrep_node_incoming_address=127.0.0.1:$(node_port "$dir")
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$(cat "$dir/sstport")
wsrep_slave_threads=2
# Loopback: a node that stops answering is suspected after 2 s and dropped
# after 4 s, so the failure tests stay short.
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$(cat "$dir/gport");ist.recv_addr=127.0.0.1:$(cat "$dir/istport");gcache.size=32M;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.install_timeout=PT4S;gmcast.peer_timeout=PT2S;pc.wait_prim_timeout=PT10S"
EOF
}

pick_ports() {
    local n=$1 dir f
    dir=$(node_dir "$n")
    for f in port gport istport sstport; do
        keep_or_pick_port "$dir/$f" >/dev/null
    done
}

node_status() {
    node_query "$(node_dir "$1")" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '$2'" 2>/dev/null
}

synced() {
    node_answers "$(node_dir "$1")" \
        && [[ "$(node_status "$1" WSREP_LOCAL_STATE_COMMENT)" == Synced ]] \
        && [[ "$(node_status "$1" WSREP_CLUSTER_STATUS)" == Primary ]] \
        && [[ "$(node_status "$1" WSREP_READY)" == ON ]]
}

do_wait_synced() {
    local n=$1 secs=${2:-$TIMEOUT} deadline
    deadline=$(( SECONDS + secs ))
    while (( SECONDS < deadline )); do
        synced "$n" && return 0
        sleep 0.2
    done
    log_tail "$(node_dir "$n")/error.log"
    die "g$n is not Synced in the primary component after ${secs}s"
}

# recovered_position N: after a crash (grastate.dat says seqno -1), the
# position InnoDB recovers to, as `uuid:seqno`, found by a
# `mariadbd --wsrep-recover` run (what Debian's galera_recovery does): with
# it the node rejoins by incremental transfer instead of a full copy.
recovered_position() {
    local dir
    dir=$(node_dir "$1")
    grep -q '^seqno: *-1' "$dir/data/grastate.dat" 2>/dev/null || return 0
    : >"$dir/recover.log"
    chown "$RUN_AS" "$dir/recover.log"
    mariadbd --defaults-file="$dir/my.cnf" --user="$RUN_AS" --wsrep-recover \
        --log-error="$dir/recover.log" </dev/null >/dev/null 2>&1 9>&- || return 0
    sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' "$dir/recover.log" | tail -n 1
}

# launch N [--wsrep-new-cluster]: starts node N (its ports were picked).
launch() {
    local n=$1 dir args=() pos
    dir=$(node_dir "$n")
    write_cnf "$n"
    if [[ "${2:-}" == --wsrep-new-cluster ]]; then
        # A fresh data directory: bootstrapping from it is safe.
        args+=(--wsrep-new-cluster)
    else
        pos=$(recovered_position "$n")
        [[ -n "$pos" ]] && args+=(--wsrep-start-position="$pos")
    fi
    node_launch "$dir" "$RUN_AS" "${args[@]}" || die "g$n did not start (log: $dir/error.log)"
    do_wait_synced "$n"
}

url() { echo "mysql://hsd:hsd@127.0.0.1:$(node_port "$(node_dir "$1")")"; }

write_env() {
    local tmp=$ENVFILE.tmp n
    {
        echo "# private Galera cluster from scripts/galera.sh"
        printf 'export HSD_GALERA_URLS=%q\n' "$(url 1),$(url 2),$(url 3)"
        for n in "${NODES[@]}"; do
            printf 'export HSD_GALERA_PORT_%s=%q\n' "$n" "$(node_port "$(node_dir "$n")")"
        done
        printf 'export HSD_GALERA_DIR=%q\n' "$DIR"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

do_build() {
    local n host
    do_stop_all
    check_path_access
    make_template "$TEMPLATE" "$RUN_AS"
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")"
        node_fresh_data "$(node_dir "$n")" "$TEMPLATE"
        rm -f "$(node_dir "$n")/error.log"
        pick_ports "$n"
        chown -R "$RUN_AS" "$(node_dir "$n")"
    done
    launch 1 --wsrep-new-cluster
    host=$(uname -n | sed "s/'//g")
    {
        echo "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$host', ''@'localhost', ''@'$host';"
        hsd_user_sql
    } | node_sql "$(node_dir 1)" || die "could not create the accounts on g1"
    # One joiner at a time: a donor serves one state transfer at once.
    launch 2
    launch 3
    write_env
    say "ready: $(url 1) $(url 2) $(url 3)"
}

do_start() {
    local n ok=1
    for n in "${NODES[@]}"; do synced "$n" || ok=0; done
    if [[ $ok -eq 1 ]]; then
        say "already running; reusing it"
        write_env
        return 0
    fi
    do_build
}

do_stop_all() {
    local n
    # Last node first, so the first keeps the newest state (not needed for
    # our fresh builds, but what a cluster wants).
    for n in 3 2 1; do
        [[ -d "$(node_dir "$n")" ]] && node_stop "$(node_dir "$n")"
    done
    rm -f "$ENVFILE"
}

do_stop() {
    do_stop_all
    say "stopped"
}

do_start_node() {
    local n=$1 dir m others=0
    dir=$(node_dir "$n")
    [[ -f "$dir/port" ]] || die "g$n was never started; run: $0 start"
    if node_answers "$dir"; then say "g$n already runs"; return 0; fi
    for m in "${NODES[@]}"; do
        [[ "$m" != "$n" ]] && synced "$m" && others=1
    done
    [[ $others -eq 1 ]] || die "no other node is Synced for g$n to join; run: $0 reset"
    local f
    for f in port gport istport sstport; do
        port_in_use "$(cat "$dir/$f")" && die "g$n: its port $(cat "$dir/$f") ($f) is taken"
    done
    launch "$n"
    say "g$n joined"
}

do_status() {
    local n dir pid rc=0
    for n in "${NODES[@]}"; do
        dir=$(node_dir "$n")
        if pid=$(node_pid "$dir") && node_answers "$dir"; then
            echo "g$n: running pid $pid port $(node_port "$dir") state=$(node_status "$n" WSREP_LOCAL_STATE_COMMENT) cluster=$(node_status "$n" WSREP_CLUSTER_STATUS) size=$(node_status "$n" WSREP_CLUSTER_SIZE) ready=$(node_status "$n" WSREP_READY)"
        else
            echo "g$n: not running (dir $dir)"
            rc=1
        fi
    done
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
    start-node) check_node "${1:-}"; with_lock "$DIR/lock" do_start_node "$1" ;;
    isolate)
        check_node "${1:-}"
        node_query "$(node_dir "$1")" "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'"
        ;;
    rejoin)
        check_node "${1:-}"
        node_query "$(node_dir "$1")" "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"
        do_wait_synced "$1"
        ;;
    desync) check_node "${1:-}"; node_query "$(node_dir "$1")" "SET GLOBAL wsrep_desync = ON" ;;
    resync)
        check_node "${1:-}"
        node_query "$(node_dir "$1")" "SET GLOBAL wsrep_desync = OFF"
        do_wait_synced "$1"
        ;;
    wait-synced) check_node "${1:-}"; do_wait_synced "$1" "${2:-$TIMEOUT}" ;;
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

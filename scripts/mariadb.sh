#!/usr/bin/env bash
# scripts/mariadb.sh: a PRIVATE MariaDB instance for hsd's tests and benchmarks.
#
# Never touches the system MariaDB service. Everything lives in one directory,
# $HSD_MARIADB_DIR (default: <repo>/target/mariadb):
#     data/          datadir, created by mariadb-install-db on first start
#     tmp/           tmpdir
#     my.cnf         server options (rewritten on every start)
#     mariadbd.pid   pid file, error.log  server log
#     port           the TCP port this instance uses (kept across stop/start)
#     hs-ports       the original HandlerSocket plugin's read and write ports
#     env            shell exports for callers, present while started
#     lock           flock file serialising start/stop/restart/kill
#     tls/           ca.pem, server-cert.pem (names localhost and 127.0.0.1),
#                    server-key.pem: made by openssl on the first start and
#                    kept; the server offers TLS with them only when started
#                    with HSD_MARIADB_TLS=1 (the TLS tests' own instance), so
#                    that hsd's default ssl-mode=PREFERRED stays a plain link
#                    for the other tests and the benchmarks
# The socket is <dir>/mariadbd.sock, or under /tmp when that path is too long
# for a unix socket.
#
# mariadbd listens on 127.0.0.1 on a free port (picked at the first start and
# reused afterwards while it is free; `restart` insists on it). It loads the
# original HandlerSocket plugin (Debian ships it as handlersocket.so), which
# the conformance suite and the benchmark use as the reference, on two more
# free ports with no secrets. `start` creates the user hsd/hsd (@127.0.0.1 and
# @localhost, ALL PRIVILEGES) and database hsdtest, and writes <dir>/env:
#     export HSD_TEST_MYSQL_URL=mysql://hsd:hsd@127.0.0.1:<port>
#     export HSD_MARIADB_PORT=<port> HSD_MARIADB_SOCKET=<sock> HSD_MARIADB_DIR=<dir>
#     export HSD_HS_ORIGINAL_PORT=<plugin read port> HSD_HS_ORIGINAL_PORT_WR=<plugin write port>
#     export HSD_MARIADB_CA=<dir>/tls/ca.pem
#
# Usage:
#   scripts/mariadb.sh start     start (or reuse a running instance); fails loudly
#   scripts/mariadb.sh stop      clean shutdown; no-op when not running
#   scripts/mariadb.sh restart   stop + start on the SAME port and data dir
#   scripts/mariadb.sh kill      kill -9 mariadbd (crash tests); `start` recovers it
#   scripts/mariadb.sh env       print the exports: eval "$(scripts/mariadb.sh env)"
#   scripts/mariadb.sh status    say whether it runs; exit 0 if it answers
#   scripts/mariadb.sh sql ...   run the mariadb client as root on the socket
# Environment: HSD_MARIADB_DIR, HSD_MARIADB_TIMEOUT (start/stop wait, default 60 s),
#   HSD_MARIADB_BUFFER_POOL (default 256M), HSD_MARIADB_TLS=1 (offer TLS),
#   HSD_MARIADB_FLUSH_METHOD (innodb_flush_method, e.g. O_DIRECT: the
#   benchmark's I/O-bound point keeps the OS page cache out of InnoDB's reads),
#   HSD_MARIADB_OPTIONS (more server options, one per line, appended to
#   my.cnf: a test's own instance with, e.g., innodb_rollback_on_timeout=ON).
set -euo pipefail

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${HSD_MARIADB_DIR:-$ROOT/target/mariadb}
DIR=$(realpath -m "$DIR")
DATA=$DIR/data
TMPD=$DIR/tmp
CNF=$DIR/my.cnf
PIDFILE=$DIR/mariadbd.pid
LOG=$DIR/error.log
PORTFILE=$DIR/port
HSPORTFILE=$DIR/hs-ports
ENVFILE=$DIR/env
LOCK=$DIR/lock
SOCK=$DIR/mariadbd.sock
if (( ${#SOCK} > 100 )); then   # sun_path is 108 bytes
    SOCK=/tmp/hsd-mariadb-$(printf '%s' "$DIR" | md5sum | cut -c1-12).sock
fi
TIMEOUT=${HSD_MARIADB_TIMEOUT:-60}
LOCK_WAIT=$((TIMEOUT + 30))
SCRIPT_NAME=mariadb.sh
# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
BUFFER_POOL=${HSD_MARIADB_BUFFER_POOL:-256M}
FLUSH_METHOD=${HSD_MARIADB_FLUSH_METHOD:-}
# The plugin's worker threads for its read port (the write port has one): the
# original's default is 16; two cores gain nothing from more than two.
HS_THREADS=${HSD_MARIADB_HS_THREADS:-2}

for bin in mariadbd mariadb-install-db mariadb mariadb-admin flock; do
    command -v "$bin" >/dev/null 2>&1 || die "$bin not found; run scripts/deps.sh"
done

# Root on the private instance: root@localhost with an empty password
# (mariadb-install-db --auth-root-authentication-method=normal, so it works for
# any OS user); setup_users drops the TCP root accounts, so only the socket
# in the instance directory reaches it.
admin() { mariadb-admin --no-defaults --protocol=socket --socket="$SOCK" -uroot --connect-timeout=2 "$@"; }
client() { mariadb --no-defaults --protocol=socket --socket="$SOCK" -uroot "$@"; }

pid_of_server() {
    local pid
    [[ -f "$PIDFILE" ]] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    # make sure the pid was not recycled by some other program
    [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == mariadbd || "$(cat /proc/"$pid"/comm 2>/dev/null)" == mysqld ]] || return 1
    echo "$pid"
}

answers() { admin ping >/dev/null 2>&1; }

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
    local port=$1 tmp=$ENVFILE.tmp hs_read hs_write
    read -r hs_read hs_write <"$HSPORTFILE"
    {
        echo "# private MariaDB from scripts/mariadb.sh"
        printf 'export HSD_TEST_MYSQL_URL=%q\n' "mysql://hsd:hsd@127.0.0.1:$port"
        printf 'export HSD_MARIADB_PORT=%q\n' "$port"
        printf 'export HSD_MARIADB_SOCKET=%q\n' "$SOCK"
        printf 'export HSD_MARIADB_DIR=%q\n' "$DIR"
        printf 'export HSD_HS_ORIGINAL_PORT=%q\n' "$hs_read"
        printf 'export HSD_HS_ORIGINAL_PORT_WR=%q\n' "$hs_write"
        printf 'export HSD_MARIADB_CA=%q\n' "$DIR/tls/ca.pem"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

# The plugin's two ports, kept across restarts while they are free.
pick_hs_ports() {
    local server_port=$1 hs_read="" hs_write=""
    if [[ -f "$HSPORTFILE" ]]; then
        read -r hs_read hs_write <"$HSPORTFILE" || true
        if [[ -z "$hs_read" || -z "$hs_write" ]] || port_in_use "$hs_read" || port_in_use "$hs_write"; then
            hs_read="" hs_write=""
        fi
    fi
    while [[ -z "$hs_read" || "$hs_write" == "$hs_read" || "$hs_read" == "$server_port" || "$hs_write" == "$server_port" ]]; do
        hs_read=$(pick_port)
        hs_write=$(pick_port)
    done
    echo "$hs_read $hs_write" >"$HSPORTFILE"
}

write_cnf() {
    local port=$1 hs_read hs_write TLS_CNF="# TLS off (HSD_MARIADB_TLS=1 turns it on)"
    if [[ "${HSD_MARIADB_TLS:-0}" == 1 ]]; then
        TLS_CNF="ssl-ca=$DIR/tls/ca.pem
ssl-cert=$DIR/tls/server-cert.pem
ssl-key=$DIR/tls/server-key.pem"
    fi
    read -r hs_read hs_write <"$HSPORTFILE"
    cat >"$CNF" <<EOF
# written by scripts/mariadb.sh; rewritten on every start
[mariadbd]
datadir=$DATA
tmpdir=$TMPD
socket=$SOCK
pid-file=$PIDFILE
log-error=$LOG
port=$port
bind-address=127.0.0.1
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
max_connections=1000
innodb_flush_log_at_trx_commit=1
innodb_buffer_pool_size=$BUFFER_POOL
${FLUSH_METHOD:+innodb_flush_method=$FLUSH_METHOD}
# The binary log as hsd's binlog reader needs it (row events with full
# images). Always on: reads do not touch it, and with sync_binlog=0 (the
# default) a commit costs one more buffered write, not one more fsync.
server-id=1
log-bin=mariadb-bin
binlog_format=ROW
binlog_row_image=FULL
binlog_expire_logs_seconds=86400
$TLS_CNF
${HSD_MARIADB_OPTIONS:-}
# The original HandlerSocket plugin: rated beta, so MariaDB wants the
# maturity lowered; both secrets set (empty) explicitly, since 10.11 fills
# unset ones with random bytes and then every request answers 3 1 unauth.
plugin-maturity=beta
plugin-load-add=handlersocket.so
loose-handlersocket-address=127.0.0.1
loose-handlersocket-port=$hs_read
loose-handlersocket-port-wr=$hs_write
loose-handlersocket-threads=$HS_THREADS
loose-handlersocket-threads-wr=1
loose-handlersocket-plain-secret=
loose-handlersocket-plain-secret-wr=
EOF
}

# A CA and a server certificate it signs, naming localhost and 127.0.0.1.
make_tls() {
    local t=$DIR/tls
    [[ -s $t/ca.pem && -s $t/server-cert.pem && -s $t/server-key.pem ]] && return 0
    command -v openssl >/dev/null 2>&1 || die "openssl not found; run scripts/deps.sh"
    rm -rf "$t"
    mkdir -p "$t"
    {
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=hsd test CA" \
            -keyout "$t/ca-key.pem" -out "$t/ca.pem" &&
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout "$t/server-key.pem" -out "$t/server.csr" &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$t/ext.cnf" &&
        openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca-key.pem" \
            -CAcreateserial -days 3650 -extfile "$t/ext.cnf" -out "$t/server-cert.pem"
    } >"$t/openssl.log" 2>&1 || { cat "$t/openssl.log" >&2; rm -rf "$t"; die "making TLS files failed"; }
    chmod 644 "$t"/*.pem
}

init_datadir() {
    [[ -d "$DATA/mysql" ]] && return 0
    say "initialising $DATA (mariadb-install-db)"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    local user_opt=()
    [[ $(id -u) -eq 0 ]] && user_opt=(--user=root)
    if ! mariadb-install-db --defaults-file="$CNF" "${user_opt[@]}" \
            --auth-root-authentication-method=normal --skip-test-db \
            >"$DIR/install-db.log" 2>&1; then
        cat "$DIR/install-db.log" >&2
        rm -rf "$DATA"
        die "mariadb-install-db failed (log above, also in $DIR/install-db.log)"
    fi
}

setup_users() {
    local host
    host=$(uname -n | sed "s/'//g")
    client <<EOF || { log_tail; die "could not create user hsd / database hsdtest"; }
DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$host', ''@'localhost', ''@'$host';
CREATE USER IF NOT EXISTS 'hsd'@'127.0.0.1' IDENTIFIED BY 'hsd';
CREATE USER IF NOT EXISTS 'hsd'@'localhost' IDENTIFIED BY 'hsd';
ALTER USER 'hsd'@'127.0.0.1' IDENTIFIED BY 'hsd';
ALTER USER 'hsd'@'localhost' IDENTIFIED BY 'hsd';
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'localhost' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS hsdtest CHARACTER SET utf8mb4;
EOF
}

# start [required-port]
do_start() {
    local want=${1:-} pid port attempt bgpid deadline
    if pid=$(pid_of_server); then
        if answers; then
            port=$(cat "$PORTFILE")
            say "already running (pid $pid, port $port); reusing it"
            setup_users
            write_env "$port"
            return 0
        fi
        # running but not answering yet (someone else's start in progress, or
        # recovering): wait for it below rather than starting a second one.
        say "mariadbd pid $pid exists but does not answer yet; waiting"
        deadline=$(( SECONDS + TIMEOUT ))
        while (( SECONDS < deadline )); do
            answers && break
            alive "$pid" || break
            sleep 0.2
        done
        if answers; then
            port=$(cat "$PORTFILE"); setup_users; write_env "$port"; return 0
        fi
        log_tail
        die "mariadbd pid $pid exists but does not answer on $SOCK; run '$0 kill' or '$0 stop' first"
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
                if port_in_use "$port"; then
                    say "previous port $port is taken now; picking another"
                    port=""
                fi
            fi
            [[ -n "$port" ]] || port=$(pick_port)
        fi
        echo "$port" >"$PORTFILE"
        pick_hs_ports "$port"
        make_tls
        write_cnf "$port"
        init_datadir

        local user_opt=()
        [[ $(id -u) -eq 0 ]] && user_opt=(--user=root)
        # max_connections=1000 wants many fds; take what the hard limit allows.
        ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
        say "starting mariadbd on 127.0.0.1:$port (dir $DIR)"
        : >>"$LOG"
        local logpos
        logpos=$(stat -c %s "$LOG")
        # All fds redirected/closed: the daemon must not hold the caller's
        # stdout (e.g. a $(...) or a CI pipe) nor our flock fd 9.
        mariadbd --defaults-file="$CNF" "${user_opt[@]}" </dev/null >>"$LOG" 2>&1 9>&- &
        bgpid=$!

        deadline=$(( SECONDS + TIMEOUT ))
        while (( SECONDS < deadline )); do
            if answers; then
                break
            fi
            if ! alive "$bgpid"; then
                break
            fi
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
            die "mariadbd did not answer within ${TIMEOUT}s (killed it)"
        fi
        wait "$bgpid" 2>/dev/null || true
        # Lost a race for the port? Try another one (unless the port is required).
        if [[ -z "$want" ]] && tail -c +"$((logpos + 1))" "$LOG" | grep -q 'Bind on TCP/IP port'; then
            say "port $port was taken while starting (attempt $attempt); retrying"
            rm -f "$PORTFILE"
            continue
        fi
        log_tail
        die "mariadbd exited during startup"
    done
    log_tail
    die "mariadbd could not bind a port after 3 attempts"
}

do_stop() {
    local pid deadline
    if ! pid=$(pid_of_server); then
        say "not running"
        rm -f "$ENVFILE" "$PIDFILE"
        return 0
    fi
    say "stopping mariadbd (pid $pid)"
    admin shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    deadline=$(( SECONDS + TIMEOUT ))
    while alive "$pid" && (( SECONDS < deadline )); do
        sleep 0.2
    done
    if alive "$pid"; then
        say "still running after ${TIMEOUT}s; SIGTERM"
        kill -TERM "$pid" 2>/dev/null || true
        sleep 5
        if alive "$pid"; then
            say "still running; SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
            while alive "$pid"; do sleep 0.1; done
        fi
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
    say "kill -9 mariadbd (pid $pid)"
    kill -9 "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.05; done
    # pid file, socket and env file stay behind, as after a real crash; the
    # next start (or restart) recovers the data on the same port.
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
    env)
        [[ -f "$ENVFILE" ]] || die "not started (no $ENVFILE); run: $0 start"
        pid_of_server >/dev/null || say "warning: mariadbd is not running (killed?); env from last start"
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

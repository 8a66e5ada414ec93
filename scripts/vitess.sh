#!/usr/bin/env bash
# scripts/vitess.sh: a PRIVATE Vitess for hsd's tests: vtgate in front of the
# keyspace `ks` sharded in two (-80, 80-) and the unsharded keyspace `seq`
# that holds Vitess sequences (the AUTO_INCREMENT of sharded tables), on the
# MySQL 8.0.31 that scripts/mysql8.sh unpacks (docs/vitess.md).
#
# Vitess is built once from the Go module proxy: scripts/vitess/go.mod
# requires vitess.io/vitess v0.24.4 (`go install ...@version` is refused: its
# go.mod has exclude directives) and lists vttestserver, vtcombo and mysqlctl
# as tools; `go build` puts them in $HSD_VITESS_DIR/root/bin, with the
# module's config/ beside them (VTROOT). A stamp file names what was built, so
# a later start builds nothing. vttestserver runs one mysqld (both shards are
# databases in it: vt_ks_-80, vt_ks_80-) and one vtcombo (vtgate and the
# tablets in one process); `seq` is one more database in it (vt_seq_0).
#
# Everything lives in $HSD_VITESS_DIR (default <repo>/target/vitess), owned
# by `mysql` when run as root (mysqlctl refuses to run as root):
#     root/          VTROOT: bin/, config/, vthook/mysqld_shutdown
#     data/          VTDATAROOT (vttestserver --data-dir): the mysqld datadir
#     extra.cnf      mysqld options added to Vitess's own (loopback only)
#     schema/ks/vschema.json  the keyspace's first vschema: sharded, with the
#                    vindexes tables are sharded by (tables are added with
#                    ALTER VSCHEMA); schema/seq/vschema.json: unsharded
#     vttestserver.log, vttestserver.pid, port (the base port), env, lock
# Ports: base (vtcombo http), base+1 (grpc), base+2 (mysqld), base+3 (vtgate's
# MySQL protocol: what hsd and the tests use).
#
# vtgate runs without authentication (vttestserver's choice): any user and
# password log in, and every user may run vschema DDL. `env` prints
#     export HSD_TEST_VITESS_URL=mysql://hsd:hsd@127.0.0.1:<base+3>
#     export HSD_VITESS_PORT=<base+3> HSD_VITESS_KEYSPACE=ks
#     export HSD_VITESS_SEQUENCE_KEYSPACE=seq
#     export HSD_VITESS_HTTP=127.0.0.1:<base>   (vtgate's /debug/vars)
#
# The hook vthook/mysqld_shutdown stops mysqld with SIGTERM (the dist has no
# mysqladmin, which mysqlctl runs without a hook; mysqld was left running).
#
# Usage (the verbs of scripts/mysql8.sh):
#   scripts/vitess.sh start     build if needed, start (or reuse a running one)
#   scripts/vitess.sh stop      stop vttestserver, vtcombo and mysqld
#   scripts/vitess.sh env       print the exports: eval "$(scripts/vitess.sh env)"
#   scripts/vitess.sh status    say whether it runs; exit 0 if vtgate answers
#   scripts/vitess.sh build     only build (and time it)
# Environment: HSD_VITESS_DIR, HSD_MYSQL8_DIST (the MySQL dist, as
#   scripts/mysql8.sh), HSD_VITESS_TIMEOUT (start/stop wait, default 120 s),
#   HSD_VITESS_TRANSACTION_MODE (vtgate's, default MULTI; docs/vitess.md).
set -euo pipefail

export PATH="$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULE=$ROOT/scripts/vitess
VITESS_VERSION=v0.24.4
MYSQL_VERSION=8.0.31
DIST=$(realpath -m "${HSD_MYSQL8_DIST:-$ROOT/target/mysql8-dist}")
MYSQL_BASE=$DIST/mysql-$MYSQL_VERSION
DIR=$(realpath -m "${HSD_VITESS_DIR:-$ROOT/target/vitess}")
VTROOT=$DIR/root
DATA=$DIR/data
LOG=$DIR/vttestserver.log
PIDFILE=$DIR/vttestserver.pid
PORTFILE=$DIR/port
ENVFILE=$DIR/env
LOCK=$DIR/lock
STAMP=$VTROOT/bin/built
TIMEOUT=${HSD_VITESS_TIMEOUT:-120}
LOCK_WAIT=$((TIMEOUT + 900))
SCRIPT_NAME=vitess.sh
# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
TRANSACTION_MODE=${HSD_VITESS_TRANSACTION_MODE:-MULTI}
TOOLS=(vttestserver vtcombo mysqlctl)

# What a build is for: the Vitess version and the module's files.
build_id() { cat "$MODULE/go.mod" "$MODULE/go.sum" | md5sum | cut -c1-16; }

built() {
    [[ -f "$STAMP" && "$(cat "$STAMP")" == "$(build_id)" ]] || return 1
    local t
    for t in "${TOOLS[@]}"; do [[ -x "$VTROOT/bin/$t" ]] || return 1; done
}

# Built tools are kept per build in the user's cache as well (like Go's own
# module and build caches), so that a fresh clone links nothing again:
# linking the three binaries is most of a build on a warm Go cache.
CACHE=${HSD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hsd}/vitess

from_cache() {
    local kept=$CACHE/$(build_id) t
    for t in "${TOOLS[@]}"; do [[ -x "$kept/bin/$t" ]] || return 1; done
    [[ -d "$kept/config" ]] || return 1
    mkdir -p "$VTROOT/bin"
    cp "$kept/bin/"* "$VTROOT/bin/" && rm -rf "$VTROOT/config" && cp -r "$kept/config" "$VTROOT/config" ||
        return 1
    build_id >"$STAMP"
    say "Vitess $VITESS_VERSION tools taken from $kept"
}

to_cache() {
    local kept=$CACHE/$(build_id) t
    mkdir -p "$kept.tmp/bin" || return 0
    for t in "${TOOLS[@]}"; do cp "$VTROOT/bin/$t" "$kept.tmp/bin/" || return 0; done
    cp -r "$VTROOT/config" "$kept.tmp/config" || return 0
    rm -rf "$kept" && mv "$kept.tmp" "$kept" || true
}

do_build() {
    built && return 0
    from_cache && built && return 0
    command -v go >/dev/null 2>&1 || die "go not found (Go 1.26 builds Vitess $VITESS_VERSION)"
    mkdir -p "$VTROOT/bin"
    say "building Vitess $VITESS_VERSION (${TOOLS[*]}) with $(go version | cut -d' ' -f3); minutes on a cold cache"
    local start=$SECONDS pkgs=() t
    for t in "${TOOLS[@]}"; do pkgs+=("vitess.io/vitess/go/cmd/$t"); done
    (cd "$MODULE" && nice -n 10 go build -o "$VTROOT/bin/" "${pkgs[@]}") \
        || die "go build of Vitess failed"
    # Vitess reads config/ (my.cnf pieces, init_db.sql) under VTROOT.
    local src
    src=$(cd "$MODULE" && go list -m -f '{{.Dir}}' vitess.io/vitess) || die "go list of the Vitess module failed"
    rm -rf "$VTROOT/config"
    cp -r "$src/config" "$VTROOT/config"
    chmod -R u+w,a+rX "$VTROOT/config"
    build_id >"$STAMP"
    to_cache
    say "built in $((SECONDS - start)) s"
}

need_tools() {
    [[ -x "$MYSQL_BASE/bin/mysqld" ]] || bash "$ROOT/scripts/mysql8.sh" fetch
    [[ -x "$MYSQL_BASE/bin/mysqld" ]] || die "no mysqld in $MYSQL_BASE (scripts/mysql8.sh fetch)"
    for bin in mariadb flock; do
        command -v "$bin" >/dev/null 2>&1 || bash "$ROOT/scripts/deps.sh"
        command -v "$bin" >/dev/null 2>&1 || die "$bin not found; run scripts/deps.sh"
    done
    if [[ $(id -u) -eq 0 ]] && ! id mysql >/dev/null 2>&1; then
        say "creating the system account mysql (mysqlctl refuses to run as root)"
        useradd --system --no-create-home --shell /usr/sbin/nologin mysql \
            || die "could not create the account mysql"
    fi
}

# vttestserver (and so mysqlctl and mysqld) runs as mysql when we are root.
# Run in the background only: it replaces the (sub)shell it runs in, so
# that the pid of `&` is vttestserver's.
run_as() {
    if [[ $(id -u) -eq 0 ]]; then
        exec setpriv --reuid=mysql --regid=mysql --init-groups -- "$@"
    else
        exec "$@"
    fi
}

own_dir() {
    [[ $(id -u) -eq 0 ]] && chown -R mysql: "$DIR/data" "$DIR/schema" "$DIR/extra.cnf" "$LOG" 2>/dev/null
    return 0
}

pid_of_server() {
    local pid
    [[ -f "$PIDFILE" ]] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == vttestserver ]] || return 1
    echo "$pid"
}

# A base port with the three after it free too, below the kernel's range
# of ephemeral ports (which any client's connection may take meanwhile).
pick_base_port() {
    local p i free low=32768
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    (( low > 21000 )) || low=32768
    for _ in $(seq 1 200); do
        p=$(( 20000 + (RANDOM % ((low - 20004) / 4)) * 4 ))
        free=1
        for i in 0 1 2 3; do port_in_use $((p + i)) && { free=0; break; }; done
        (( free )) && { echo "$p"; return; }
    done
    die "could not find four free ports"
}

vtgate_port() { echo $(( $(cat "$PORTFILE") + 3 )); }

# The serving primaries vtgate knows (3: ks -80, ks 80-, seq 0).
primaries() {
    [[ -f "$PORTFILE" ]] || { echo 0; return; }
    mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$(vtgate_port)" -uhsd -phsd -N \
        -e 'SHOW VITESS_TABLETS' 2>/dev/null | grep -c PRIMARY || true
}

answers() { [[ "$(primaries)" == 3 ]]; }

write_env() {
    local port=$1 tmp=$ENVFILE.tmp
    {
        echo "# private Vitess $VITESS_VERSION from scripts/vitess.sh"
        printf 'export HSD_TEST_VITESS_URL=%q\n' "mysql://hsd:hsd@127.0.0.1:$port"
        printf 'export HSD_VITESS_PORT=%q\n' "$port"
        printf 'export HSD_VITESS_KEYSPACE=%q\n' ks
        printf 'export HSD_VITESS_SEQUENCE_KEYSPACE=%q\n' seq
        printf 'export HSD_VITESS_HTTP=%q\n' "127.0.0.1:$((port - 3))"
        printf 'export HSD_VITESS_DIR=%q\n' "$DIR"
    } >"$tmp"
    mv "$tmp" "$ENVFILE"
}

write_files() {
    mkdir -p "$VTROOT/vthook" "$DATA"
    cat >"$DIR/extra.cnf" <<EOF
# written by scripts/vitess.sh; added to Vitess's own my.cnf pieces
bind-address=127.0.0.1
mysqlx=OFF
performance_schema=OFF
max_connections=1000
EOF
    # mysqlctl runs this to stop mysqld (the dist has no mysqladmin).
    cat >"$VTROOT/vthook/mysqld_shutdown" <<'EOF'
#!/usr/bin/env bash
# Stops the mysqld of this VTDATAROOT (written by scripts/vitess.sh).
set -u
for pidfile in "$VTDATAROOT"/vt_*/mysql.pid; do
    [[ -f "$pidfile" ]] || continue
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done
exit 0
EOF
    chmod 755 "$VTROOT/vthook/mysqld_shutdown"
    # The keyspace is sharded from the start (vtgate otherwise takes it for
    # an unsharded one and refuses DDL on its two shards), with the vindexes
    # tables are sharded by: `hash` for integers, `xxhash` for any column,
    # `unicode_loose_xxhash` for text under a case-insensitive collation
    # (ALTER VSCHEMA ON ks.t ADD VINDEX hash(id)). `seq` is unsharded: the
    # sequence tables live there (ALTER VSCHEMA ADD SEQUENCE seq.t_seq).
    mkdir -p "$DIR/schema/ks" "$DIR/schema/seq"
    echo '{"sharded": true, "vindexes": {"hash": {"type": "hash"}, "xxhash": {"type": "xxhash"}, "unicode_loose_xxhash": {"type": "unicode_loose_xxhash"}}}' \
        >"$DIR/schema/ks/vschema.json"
    echo '{"sharded": false}' >"$DIR/schema/seq/vschema.json"
}

do_start() {
    local pid base deadline
    do_build
    need_tools
    if pid=$(pid_of_server) && [[ "$(primaries)" == 2 ]]; then
        # Started by this script before it added the keyspace seq.
        say "a Vitess without the keyspace seq runs (pid $pid); starting anew"
        do_stop
    fi
    if pid=$(pid_of_server); then
        deadline=$(( SECONDS + TIMEOUT ))
        until answers || ! alive "$pid" || (( SECONDS >= deadline )); do sleep 0.5; done
        if answers; then
            write_env "$(vtgate_port)"
            say "already running (pid $pid, vtgate port $(vtgate_port)); reusing it"
            return 0
        fi
        log_tail
        die "vttestserver pid $pid runs but vtgate does not answer; run '$0 stop' first"
    fi
    local attempt
    for attempt in 1 2 3; do
        start_once && return 0
        # mysqld or vtgate lost its port to another program meanwhile.
        grep -q 'Address already in use' "$LOG" "$DATA"/vt_*/error.log 2>/dev/null || break
        say "a port was taken while starting (attempt $attempt); retrying on others"
    done
    log_tail
    die "vtgate did not answer within ${TIMEOUT}s"
}

# One try on fresh ports; stops what it started when it fails.
start_once() {
    local pid base deadline
    # A fresh keyspace each start: the tests make their own tables.
    compgen -G "$DATA/vt_*/mysql.pid" >/dev/null && do_stop
    rm -rf "$DATA" "$ENVFILE"
    write_files
    base=$(pick_base_port)
    echo "$base" >"$PORTFILE"
    : >"$LOG"
    own_dir
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    say "starting vttestserver: keyspace ks in 2 shards and seq in 1, vtgate on 127.0.0.1:$((base + 3)) (dir $DIR)"
    # No fd of ours may stay open in the daemons (a $(...) or CI pipe, the flock fd).
    VTROOT=$VTROOT VTDATAROOT=$DATA VT_MYSQL_ROOT=$MYSQL_BASE \
        LD_LIBRARY_PATH="$MYSQL_BASE/bin:$MYSQL_BASE/lib/private" \
        run_as "$VTROOT/bin/vttestserver" \
        --port "$base" \
        --data-dir "$DATA" \
        --keyspaces ks,seq --num-shards 2,1 \
        --mysql-bind-host 127.0.0.1 --vtcombo-bind-host 127.0.0.1 --grpc-bind-address 127.0.0.1 \
        --tablet-hostname 127.0.0.1 \
        --extra-my-cnf "$DIR/extra.cnf" \
        --schema-dir "$DIR/schema" \
        --vschema-ddl-authorized-users % \
        --transaction-mode "$TRANSACTION_MODE" \
        --replica-count 0 --rdonly-count 0 \
        --gateway-initial-tablet-timeout 2s \
        </dev/null >>"$LOG" 2>&1 8>&- 9>&- &
    pid=$!
    echo "$pid" >"$PIDFILE"
    deadline=$(( SECONDS + TIMEOUT ))
    while (( SECONDS < deadline )); do
        answers && break
        alive "$pid" || break
        sleep 0.5
    done
    if answers; then
        write_env "$(vtgate_port)"
        say "ready: mysql://hsd:hsd@127.0.0.1:$(vtgate_port) (pid $pid)"
        return 0
    fi
    do_stop
    return 1
}

# What vttestserver started: its children (vtcombo, mysqlctl) and mysqld
# (whose pid file mysqlctl keeps in the data directory).
started_pids() {
    local pid=${1:-} f
    [[ -n "$pid" ]] && pgrep -P "$pid" 2>/dev/null || true
    for f in "$DATA"/vt_*/mysql.pid; do
        [[ -f "$f" ]] && cat "$f" 2>/dev/null
    done
    return 0
}

still_alive() {
    local p
    for p in "$@"; do alive "$p" && echo "$p"; done
    return 0
}

do_stop() {
    local pid deadline p left=()
    if pid=$(pid_of_server); then
        mapfile -t left < <(started_pids "$pid")
        say "stopping vttestserver (pid $pid)"
        # SIGINT: its own handler tears the cluster down (vtcombo, then
        # mysqld through the hook, then the data directory); on SIGTERM the
        # Vitess library's handler exits first and leaves mysqld running.
        kill -INT "$pid" 2>/dev/null || true
        deadline=$(( SECONDS + TIMEOUT ))
        while alive "$pid" && (( SECONDS < deadline )); do sleep 0.2; done
        alive "$pid" && { say "vttestserver still running after ${TIMEOUT}s; SIGKILL"; kill -9 "$pid" 2>/dev/null || true; }
    else
        say "vttestserver not running"
        mapfile -t left < <(started_pids "")
    fi
    # Whatever it left behind (it was killed, or its teardown failed).
    for p in $(still_alive "${left[@]}"); do
        say "stopping left-over $(cat /proc/"$p"/comm 2>/dev/null) (pid $p)"
        kill -TERM "$p" 2>/dev/null || true
    done
    deadline=$(( SECONDS + 30 ))
    while [[ -n "$(still_alive "${left[@]}")" ]] && (( SECONDS < deadline )); do sleep 0.2; done
    for p in $(still_alive "${left[@]}"); do kill -9 "$p" 2>/dev/null || true; done
    rm -f "$ENVFILE" "$PIDFILE"
    say "stopped"
}

cmd=${1:-}
shift || true
case "$cmd" in
    start) with_lock "$LOCK" do_start ;;
    stop) with_lock "$LOCK" do_stop ;;
    build) with_lock "$LOCK" do_build ;;
    env)
        [[ -f "$ENVFILE" ]] || die "not started (no $ENVFILE); run: $0 start"
        pid_of_server >/dev/null || say "warning: vttestserver is not running; env from last start"
        cat "$ENVFILE"
        ;;
    status)
        if pid=$(pid_of_server) && answers; then
            echo "running: pid $pid, vtgate port $(vtgate_port), dir $DIR"
        else
            echo "not running (dir $DIR)"
            exit 1
        fi
        ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac

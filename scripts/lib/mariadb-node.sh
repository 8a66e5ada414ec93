# scripts/lib/mariadb-node.sh: helpers for scripts that run several private
# mariadbd instances ("nodes") at once: scripts/replication.sh (a GTID primary
# with replicas) and scripts/galera.sh (a Galera cluster). Sourced, not run.
#
# A node is a directory holding everything of one mariadbd:
#     data/ tmp/ my.cnf mariadbd.pid error.log port
# and is addressed by that directory. Like scripts/mariadb.sh, nothing here
# touches the system MariaDB service: every mariadbd listens on 127.0.0.1 on a
# free port and is reached as root through its own socket only.
#
# The caller sets SCRIPT_NAME (for messages) and TIMEOUT (seconds to wait for
# a start or a stop) before using these functions. NODE_DAEMON is the
# server command node_launch runs (default: mariadbd); scripts/replication.sh
# sets it to MySQL 8.0.31's mysqld for its mysql8 flavor (the same client,
# socket and pid-file conventions serve both servers).

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

LOCK_WAIT=$((TIMEOUT * 3 + 30))
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

for _bin in mariadbd mariadb-install-db mariadb mariadb-admin flock; do
    command -v "$_bin" >/dev/null 2>&1 || die "$_bin not found; run scripts/deps.sh"
done
unset _bin
[[ -n "${NODE_DAEMON[*]:-}" ]] || NODE_DAEMON=(mariadbd)

# The socket of a node: in its directory, or under /tmp when that path is
# too long for a unix socket (sun_path is 108 bytes).
node_sock() {
    local sock=$1/mariadbd.sock
    if (( ${#sock} > 100 )); then
        sock=/tmp/hsd-node-$(printf '%s' "$1" | md5sum | cut -c1-12).sock
    fi
    echo "$sock"
}

node_admin() {
    local dir=$1; shift
    mariadb-admin --no-defaults --protocol=socket --socket="$(node_sock "$dir")" -uroot \
        --connect-timeout=2 "$@"
}

# node_sql DIR [client args...]: the mariadb client as root on the node's socket.
node_sql() {
    local dir=$1; shift
    mariadb --no-defaults --protocol=socket --socket="$(node_sock "$dir")" -uroot \
        --connect-timeout=5 "$@"
}

# node_query DIR SQL: one statement, its answer as bare tab-separated text.
node_query() {
    node_sql "$1" -N -B -e "$2"
}

# node_pid DIR: the pid of the node's running mariadbd (checked against a
# recycled pid), or failure.
node_pid() {
    local pidfile=$1/mariadbd.pid pid comm
    [[ -f "$pidfile" ]] || return 1
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    comm=$(cat /proc/"$pid"/comm 2>/dev/null) || return 1
    [[ "$comm" == mariadbd || "$comm" == mysqld ]] || return 1
    echo "$pid"
}

node_answers() { node_admin "$1" ping >/dev/null 2>&1; }

node_port() { cat "$1/port" 2>/dev/null; }

# Ports handed out by pick_port in this process: a port picked for one node
# is not listening yet when the next one is picked, so remember them.
PICKED_PORTS=" "

pick_port() {
    local p
    for _ in $(seq 1 200); do
        p=""
        if command -v python3 >/dev/null 2>&1; then
            p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null) || p=""
        fi
        [[ -n "$p" ]] || p=$(( 20000 + RANDOM % 30000 ))
        if ! port_in_use "$p" && [[ "$PICKED_PORTS" != *" $p "* ]]; then
            PICKED_PORTS+="$p "
            echo "$p"
            return
        fi
    done
    die "could not find a free port"
}

# keep_or_pick_port FILE: the port recorded in FILE when it is still free,
# else a new one (recorded).
keep_or_pick_port() {
    local file=$1 p=""
    [[ -f "$file" ]] && p=$(cat "$file")
    if [[ -z "$p" ]] || port_in_use "$p" || [[ "$PICKED_PORTS" == *" $p "* ]]; then
        p=$(pick_port)
    else
        PICKED_PORTS+="$p "
    fi
    echo "$p" >"$file"
    echo "$p"
}

# make_template DIR CNF_EXTRA: a data directory made by mariadb-install-db
# once, copied into every node (faster than installing each). Cached.
make_template() {
    local tdir=$1 user=${2:-root}
    [[ -d "$tdir/data/mysql" ]] && return 0
    say "initialising a template data directory (mariadb-install-db)"
    rm -rf "$tdir"
    mkdir -p "$tdir/data"
    cat >"$tdir/my.cnf" <<EOF
[mariadbd]
datadir=$tdir/data
innodb_log_file_size=16M
innodb_buffer_pool_size=32M
skip-log-bin
EOF
    [[ "$user" == root ]] || chown -R "$user" "$tdir"
    if ! mariadb-install-db --defaults-file="$tdir/my.cnf" --user="$user" \
            --auth-root-authentication-method=normal --skip-test-db \
            >"$tdir/install-db.log" 2>&1; then
        cat "$tdir/install-db.log" >&2
        rm -rf "$tdir/data"
        die "mariadb-install-db failed (log above)"
    fi
}

# node_fresh_data NODE_DIR TEMPLATE_DIR: replaces the node's data with a copy
# of the template.
node_fresh_data() {
    local dir=$1 tdir=$2
    rm -rf "$dir/data" "$dir/tmp"
    mkdir -p "$dir/tmp"
    cp -a --sparse=always "$tdir/data" "$dir/data"
}

# node_launch DIR [USER [EXTRA-ARGS...]]: starts NODE_DAEMON with DIR/my.cnf
# (already written) and waits until it answers or dies. The node's port is
# in DIR/port. Returns 0 when it answers, 2 when it lost its port to
# another program while starting (the caller picks another and retries), 1
# otherwise.
node_launch() {
    local dir=$1 user=${2:-root} bgpid deadline logpos log=$1/error.log
    shift 2 || shift $#
    rm -f "$dir/mariadbd.pid" "$(node_sock "$dir")"
    mkdir -p "$dir/tmp"
    : >>"$log"
    [[ "$user" == root ]] || chown -R "$user" "$dir"
    logpos=$(stat -c %s "$log")
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    # Every fd redirected or closed: the daemon must not hold the caller's
    # stdout (a $(...) or a CI pipe) nor the caller's flock fd 9.
    "${NODE_DAEMON[@]}" --defaults-file="$dir/my.cnf" --user="$user" "$@" </dev/null >>"$log" 2>&1 9>&- 8>&- &
    bgpid=$!
    deadline=$(( SECONDS + TIMEOUT ))
    while (( SECONDS < deadline )); do
        node_answers "$dir" && return 0
        alive "$bgpid" || break
        sleep 0.2
    done
    node_answers "$dir" && return 0
    if alive "$bgpid"; then
        log_tail "$dir/error.log"
        kill -9 "$bgpid" 2>/dev/null || true
        wait "$bgpid" 2>/dev/null || true
        say "mariadbd in $dir did not answer within ${TIMEOUT}s (killed it)"
        return 1
    fi
    wait "$bgpid" 2>/dev/null || true
    if tail -c +"$((logpos + 1))" "$log" | grep -q 'Bind on TCP/IP port'; then
        return 2
    fi
    log_tail "$dir/error.log"
    say "mariadbd in $dir exited during startup"
    return 1
}

# node_stop DIR: clean shutdown (SIGKILL after TIMEOUT); no-op when not running.
node_stop() {
    local dir=$1 pid deadline
    pid=$(node_pid "$dir") || { rm -f "$dir/mariadbd.pid"; return 0; }
    node_admin "$dir" shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    deadline=$(( SECONDS + TIMEOUT ))
    while alive "$pid" && (( SECONDS < deadline )); do
        sleep 0.1
    done
    if alive "$pid"; then
        say "mariadbd $pid ($dir) still running after ${TIMEOUT}s; SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
        while alive "$pid"; do sleep 0.1; done
    fi
    rm -f "$dir/mariadbd.pid"
}

# node_kill DIR: kill -9, as a crash; files stay as a crash leaves them.
node_kill() {
    local dir=$1 pid
    pid=$(node_pid "$dir") || return 0
    kill -9 "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.05; done
}

# hsd's account on a node, made by the caller on the node that writes (it
# reaches the others through replication or Galera). All privileges except
# READ_ONLY ADMIN (and SUPER, which includes it on 10.11): a read-only server
# then refuses hsd's writes, as it would an application's, so a write that
# raced a role change fails instead of splitting the data.
hsd_user_sql() {
    cat <<'EOF'
CREATE USER IF NOT EXISTS 'hsd'@'127.0.0.1' IDENTIFIED BY 'hsd';
CREATE USER IF NOT EXISTS 'hsd'@'localhost' IDENTIFIED BY 'hsd';
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'hsd'@'localhost';
REVOKE SUPER, READ_ONLY ADMIN ON *.* FROM 'hsd'@'127.0.0.1';
REVOKE SUPER, READ_ONLY ADMIN ON *.* FROM 'hsd'@'localhost';
CREATE DATABASE IF NOT EXISTS hsdtest CHARACTER SET utf8mb4;
EOF
}

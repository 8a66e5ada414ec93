# scripts/lib/common.sh: what every script that runs a private server shares
# (scripts/mariadb.sh, scripts/mysql8.sh, scripts/vitess.sh and, through
# lib/mariadb-node.sh, scripts/replication.sh and scripts/galera.sh).
# Sourced, not run. The caller sets SCRIPT_NAME (for messages) first, and
# LOCK_WAIT (seconds with_lock waits for the lock) before using with_lock.

say() { echo "${SCRIPT_NAME:?}: $*" >&2; }
die() { echo "${SCRIPT_NAME:?}: ERROR: $*" >&2; exit 1; }

# log_tail [FILE]: the last 40 lines of a server's log (default $LOG), on
# stderr, when a start or a step failed.
log_tail() {
    local log=${1:-$LOG}
    if [[ -f "$log" ]]; then
        echo "----- last 40 lines of $log -----" >&2
        tail -n 40 "$log" >&2
        echo "----- end of $log -----" >&2
    fi
}

# alive PID: the process exists and is not a zombie (a server we killed may
# linger as one until init reaps it).
alive() {
    kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null) || return 1
    [[ -n "$state" && "$state" != Z ]]
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# with_lock LOCKFILE CMD...: runs CMD holding an exclusive flock on fd 9, so
# that two starts or stops of the same servers never interleave (tests start
# them concurrently); waits LOCK_WAIT seconds at most.
with_lock() {
    local lock=$1; shift
    mkdir -p "$(dirname "$lock")"
    exec 9>"$lock"
    flock -w "${LOCK_WAIT:?}" 9 || die "timed out waiting for $lock"
    "$@"
}

#!/usr/bin/env bash
# compat/run.sh BACKEND: drive hsd with third-party HandlerSocket clients, used
# exactly as their authors published them.
#
#   BACKEND = sqlite   hsd's embedded store, in a fresh data directory
#   BACKEND = mysql    the MariaDB at $HSD_TEST_MYSQL_URL (scripts/mariadb.sh;
#                      scripts/test.sh exports it), in fresh databases
#
# Steps: build hsd unless $HSD_BIN names one; create the test tables
# (compat/schema.sql) in databases hscompat_java and hscompat_node, plus the
# demo table for the nc session; start two hsd processes on free loopback
# ports, one open and one with secrets on both ports; then run
#   1. compat/java  hs4j 0.1 (Maven Central) with JUnit 5, via `mvn -q -B test`
#   2. compat/node  node-handlersocket 0.1.0 (npm) with `node --test`
#   3. compat/nc    the spec's section-10 session typed into netcat
# and stop hsd. Every client runs even when an earlier one failed; the script
# prints one summary line per client and exits non-zero if any failed (or
# skipped a test: nothing is optional here).
#
# It installs what it needs: missing Debian packages through scripts/deps.sh
# (maven, JDK, node, npm, netcat-openbsd), Maven artifacts into ~/.m2 on the
# first run, npm packages with `npm ci` from the committed package-lock.json.
#
# Environment: HSD_BIN (hsd binary; default: cargo build -p hsd, target/debug/hsd),
#   HSD_TEST_MYSQL_URL (mysql backend), COMPAT_KEEP=1 (keep the work directory
#   with hsd's logs), COMPAT_ONLY="java node nc" (run a subset, by hand only).
set -euo pipefail

BACKEND=${1:-}
case "$BACKEND" in
    sqlite | mysql) ;;
    *) echo "usage: $0 sqlite|mysql" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMPAT=$ROOT/compat
ONLY=${COMPAT_ONLY:-java node nc}
START=$SECONDS
say() { echo "compat[$BACKEND]: $*"; }
die() { echo "compat[$BACKEND]: ERROR: $*" >&2; exit 1; }
strip_ansi() { sed -e 's/\x1b\[[0-9;]*m//g' -e '/^[[:space:]]*$/d'; }

# --- tools ------------------------------------------------------------------
need_deps=0
for cmd in mvn javac node npm nc; do
    command -v "$cmd" >/dev/null 2>&1 || need_deps=1
done
if [[ $need_deps -eq 1 ]]; then
    say "installing missing tools with scripts/deps.sh"
    bash "$ROOT/scripts/deps.sh"
fi

if [[ -z "${HSD_BIN:-}" ]]; then
    say "cargo build -p hsd"
    (cd "$ROOT" && cargo build -q -p hsd)
    HSD_BIN=$ROOT/target/debug/hsd
fi
[[ -x "$HSD_BIN" ]] || die "no hsd binary at $HSD_BIN"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hsd-compat-$BACKEND.XXXXXX")
PIDS=()
cleanup() {
    local rc=$?
    for pid in "${PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    if [[ "${COMPAT_KEEP:-0}" == 1 || $rc -ne 0 ]]; then
        echo "compat[$BACKEND]: work directory (hsd logs) kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- databases ----------------------------------------------------------------
DATA=$WORK/data
mkdir -p "$DATA"
DBS=(hscompat_java hscompat_node)
NC_DB=test
HSD_ARGS=(--data-dir "$DATA" --address 127.0.0.1 --port 0 --port-wr 0)

if [[ $BACKEND == sqlite ]]; then
    schema=$(sed 's/@AUTOINC_PK@/INTEGER PRIMARY KEY AUTOINCREMENT/' "$COMPAT/schema.sql")
    for db in "${DBS[@]}"; do
        "$HSD_BIN" sql --data-dir "$DATA" -- "$db" "$schema" >/dev/null \
            || die "loading compat/schema.sql into $db"
    done
    # test.user for the nc session comes from --demo.
    MAIN_EXTRA=(--demo)
else
    URL=${HSD_TEST_MYSQL_URL:-}
    [[ -n "$URL" ]] || die "HSD_TEST_MYSQL_URL is not set (scripts/mariadb.sh start; eval \"\$(scripts/mariadb.sh env)\")"
    re='^mysql://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?(/.*)?$'
    [[ "$URL" =~ $re ]] || die "cannot parse HSD_TEST_MYSQL_URL (want mysql://user:password@host:port)"
    M_USER=${BASH_REMATCH[1]} M_PASS=${BASH_REMATCH[3]} M_HOST=${BASH_REMATCH[4]} M_PORT=${BASH_REMATCH[6]:-3306}
    command -v mariadb >/dev/null 2>&1 || bash "$ROOT/scripts/deps.sh"
    mysql_run() {
        MYSQL_PWD=$M_PASS mariadb --no-defaults --protocol=TCP -h "$M_HOST" -P "$M_PORT" -u "$M_USER" "$@"
    }
    schema=$(sed 's/@AUTOINC_PK@/INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY/' "$COMPAT/schema.sql")
    NC_DB=hscompat_nc
    for db in "${DBS[@]}" "$NC_DB"; do
        mysql_run -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`" \
            || die "creating database $db on MariaDB"
    done
    for db in "${DBS[@]}"; do
        mysql_run "$db" <<<"$schema" || die "loading compat/schema.sql into $db"
    done
    # The demo rows the section-10 session reads (--demo is embedded-store only).
    mysql_run "$NC_DB" <<'SQL' || die "creating $NC_DB.user"
CREATE TABLE user (
  user_id INTEGER NOT NULL PRIMARY KEY,
  user_name VARCHAR(64),
  user_email VARCHAR(128),
  created DATETIME
);
CREATE INDEX user_email ON user (user_email);
INSERT INTO user VALUES
  (99, 'Nadia Jensen', 'nadia.jensen99@example.com', '2010-01-02 02:12:27'),
  (100, 'Ada Novak', 'ada.novak100@example.com', '2010-01-02 02:28:20'),
  (101, 'Hiro Silva', 'hiro.silva101@example.com', '2010-01-02 02:44:13'),
  (102, 'Oskar Costa', 'oskar.costa102@example.com', '2010-01-02 03:00:06');
SQL
    HSD_ARGS+=(--backend "$URL")
    MAIN_EXTRA=()
fi

# --- hsd ------------------------------------------------------------------------
SECRET=r$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
SECRET_WR=w$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$SECRET" >"$WORK/secret"
printf '%s\n' "$SECRET_WR" >"$WORK/secret-wr"

# start_hsd NAME ARGS...: starts hsd, waits for its ready line, sets
# ${NAME}_READ and ${NAME}_WRITE to the ports.
start_hsd() {
    local name=$1
    shift
    local out=$WORK/$name.stdout err=$WORK/$name.log
    "$HSD_BIN" serve "${HSD_ARGS[@]}" "$@" >"$out" 2>"$err" &
    local pid=$!
    PIDS+=("$pid")
    local line=""
    for _ in $(seq 1 1200); do # up to 120 s (a debug build creating the demo table)
        line=$(head -n1 "$out" 2>/dev/null || true)
        [[ "$line" == "hsd: listening "* ]] && break
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "----- hsd ($name) stderr -----" >&2
            cat "$err" >&2
            die "hsd ($name) exited before it was ready"
        fi
        sleep 0.1
    done
    [[ "$line" == "hsd: listening "* ]] || { cat "$err" >&2; die "hsd ($name) not ready after 120 s"; }
    local rport wport
    rport=$(sed -n 's/.* read=[^ ]*:\([0-9]*\) .*/\1/p' <<<"$line")
    wport=$(sed -n 's/.* write=[^ ]*:\([0-9]*\) .*/\1/p' <<<"$line")
    [[ -n "$rport" && -n "$wport" ]] || die "cannot parse hsd's ready line: $line"
    printf -v "${name}_READ" '%s' "$rport"
    printf -v "${name}_WRITE" '%s' "$wport"
    say "hsd ($name) pid $pid: $line"
}

start_hsd MAIN "${MAIN_EXTRA[@]}"
start_hsd AUTH --plain-secret-file "$WORK/secret" --plain-secret-wr-file "$WORK/secret-wr"

declare -A RESULT
failed=0

# --- 1. Java: hs4j --------------------------------------------------------------
run_java() {
    local dir=$COMPAT/java log=$WORK/maven.log
    rm -rf "$dir/target/surefire-reports"
    say "hs4j: mvn -q -B test (first run downloads from Maven Central into ~/.m2)"
    local rc=0
    (cd "$dir" && mvn -q -B -Dstyle.color=never test \
        -Dhsd.host=127.0.0.1 -Dhsd.port="$MAIN_READ" -Dhsd.portWr="$MAIN_WRITE" \
        -Dhsd.authPort="$AUTH_READ" -Dhsd.authPortWr="$AUTH_WRITE" \
        -Dhsd.secret="$SECRET" -Dhsd.secretWr="$SECRET_WR" \
        -Dhsd.db=hscompat_java -Dhsd.backend="$BACKEND") >"$log" 2>&1 || rc=$?
    strip_ansi <"$log"
    local counts
    counts=$(cat "$dir"/target/surefire-reports/*.txt 2>/dev/null \
        | sed -n 's/^Tests run: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\), Skipped: \([0-9]*\).*/\1 \2 \3 \4/p' \
        | awk '{t+=$1; f+=$2+$3; s+=$4} END {printf "%d %d %d", t, f, s}' || true)
    local total fail skip
    read -r total fail skip <<<"${counts:-0 0 0}"
    local pass=$((total - fail - skip))
    if [[ $rc -eq 0 && $total -gt 0 && $fail -eq 0 && $skip -eq 0 ]]; then
        RESULT[java]="OK      $pass passed, $fail failed, $skip skipped"
    else
        RESULT[java]="FAILED  $pass passed, $fail failed, $skip skipped (mvn exit $rc)"
        failed=1
    fi
}

# --- 2. Node: node-handlersocket ---------------------------------------------------
run_node() {
    local dir=$COMPAT/node log=$WORK/node-test.log tap=$WORK/node-test.tap
    say "node-handlersocket: npm ci, node --test"
    local rc=0
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$WORK/npm.log" 2>&1 || rc=$?
    if [[ $rc -ne 0 ]]; then
        grep -v 'Unknown user config' "$WORK/npm.log" >&2 || true
        RESULT[node]="FAILED  npm ci exit $rc"
        failed=1
        return
    fi
    (cd "$dir" && HSD_COMPAT_HOST=127.0.0.1 \
        HSD_COMPAT_PORT="$MAIN_READ" HSD_COMPAT_PORT_WR="$MAIN_WRITE" \
        HSD_COMPAT_AUTH_PORT="$AUTH_READ" HSD_COMPAT_AUTH_PORT_WR="$AUTH_WRITE" \
        HSD_COMPAT_SECRET="$SECRET" HSD_COMPAT_SECRET_WR="$SECRET_WR" \
        HSD_COMPAT_DB=hscompat_node HSD_COMPAT_BACKEND="$BACKEND" \
        timeout 300 node --test --test-concurrency=1 \
            --test-reporter=spec --test-reporter-destination="$log" \
            --test-reporter=tap --test-reporter-destination="$tap" \
            test/*.test.js) || rc=$?
    local pass fail skip
    pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n1 || true)
    fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n1 || true)
    skip=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n1 || true)
    pass=${pass:-0} fail=${fail:-0} skip=${skip:-0}
    if [[ $rc -eq 0 && $pass -gt 0 && $fail -eq 0 && $skip -eq 0 ]]; then
        RESULT[node]="OK      $pass passed, $fail failed, $skip skipped"
    else
        strip_ansi <"$log" >&2 || true
        RESULT[node]="FAILED  $pass passed, $fail failed, $skip skipped (node exit $rc)"
        failed=1
    fi
}

# --- 3. nc: the spec's section-10 session -------------------------------------------
run_nc() {
    say "nc: spec section 10 on $NC_DB.user"
    if bash "$COMPAT/nc/session.sh" 127.0.0.1 "$MAIN_READ" "$NC_DB"; then
        RESULT[nc]="OK      2 sessions (CR LF via nc -N, nc -C), 3 lines each, byte-exact"
    else
        RESULT[nc]="FAILED  see above"
        failed=1
    fi
}

for step in $ONLY; do
    case "$step" in
        java) run_java ;;
        node) run_node ;;
        nc) run_nc ;;
        *) die "unknown COMPAT_ONLY step $step" ;;
    esac
done

# hsd must still be up: a client that crashed it has failed.
for pid in "${PIDS[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "compat[$BACKEND]: hsd pid $pid died during the run; its log:" >&2
        cat "$WORK"/*.log >&2 || true
        failed=1
    fi
done

echo
echo "== compat summary, backend $BACKEND ($((SECONDS - START))s)"
[[ -n "${RESULT[java]:-}" ]] && echo "compat[$BACKEND] hs4j 0.1 (Java, Maven Central):  ${RESULT[java]}"
[[ -n "${RESULT[node]:-}" ]] && echo "compat[$BACKEND] node-handlersocket 0.1.0 (npm):  ${RESULT[node]}"
[[ -n "${RESULT[nc]:-}" ]] && echo "compat[$BACKEND] nc session (spec section 10):    ${RESULT[nc]}"
exit "$failed"

#!/usr/bin/env bash
# scripts/test-package.sh: the Debian package as an operator meets it, on
# this machine (scripts/test.sh runs it in the background; about 20 s).
#
# Builds the package (scripts/package.sh, by default from the tests' debug
# build, without cargo), installs it, verifies the unit (systemd-analyze
# verify), installs it again over itself with the conffile edited (the edit
# is kept), runs the unit's ExecStart line as the unit would (user hsd, no
# new privileges, no capabilities, NOTIFY_SOCKET) and checks that hsd says
# READY=1 and answers a HandlerSocket request over TCP; runs `hsd check` as
# the user hsd on the packaged config (exit 0) and on bad ones (exit 1 with
# the expected line, and `hsd serve` refusing with the same words); checks
# that every key of the packaged config is a `hsd serve` option that parses;
# then purges: with tables in /var/lib/hsd the data and the user stay,
# without them both go. Whatever happens, the package is purged at the end
# and what the test made is removed.
#
# There is no systemd running here (no PID 1 manager in the container):
# the sandboxing options are verified by systemd-analyze, not enforced.
#
# Needs root (dpkg -i installs /usr/bin/hsd) and a machine without the hsd
# package or user already: the test refuses to touch an operator's.
# Usage: scripts/test-package.sh [--profile release|debug] [--build]
#   (default: --profile debug, packing target/debug/hsd as built; --build
#   lets scripts/package.sh run cargo first)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

given=("$@")
profile=debug
build=--no-build
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile) profile=${2:?}; shift 2 ;;
        --build) build=; shift ;;
        *) echo "usage: $0 [--profile release|debug] [--build]" >&2; exit 2 ;;
    esac
done

say() { echo "test-package: $*"; }
fail() { echo "test-package: FAILED: $*" >&2; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
    # dpkg -i needs root: through sudo when it asks no password.
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        exec sudo -n --preserve-env=PATH bash "$0" "${given[@]}"
    fi
    fail "needs root, or sudo without a password (dpkg -i installs the package)"
fi
if dpkg-query -W -f='${Status}' hsd 2>/dev/null | grep -q 'installed'; then
    fail "the hsd package is installed on this machine: the test installs and purges it; remove it first (dpkg -P hsd)"
fi
getent passwd hsd >/dev/null && fail "a user hsd exists already: the test would remove it"
[[ -e /var/lib/hsd || -e /etc/hsd ]] && fail "/var/lib/hsd or /etc/hsd exists already: the test would remove it"
for tool in systemd-analyze setpriv runuser python3 dpkg-deb; do
    command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh installs it)"
done

work=$(mktemp -d /tmp/hsd-package-test.XXXXXX)
chmod 0755 "$work"
hsd_pid=""
listener_pid=""
cleanup() {
    local rc=$?
    [[ -n "$hsd_pid" ]] && kill -KILL "$hsd_pid" 2>/dev/null
    [[ -n "$listener_pid" ]] && kill "$listener_pid" 2>/dev/null
    dpkg -P hsd >/dev/null 2>&1 || true
    rm -rf /var/lib/hsd /etc/hsd "$work"
    if getent passwd hsd >/dev/null; then deluser --system --quiet hsd >/dev/null 2>&1 || true; fi
    if getent group hsd >/dev/null; then delgroup --system --quiet hsd >/dev/null 2>&1 || true; fi
    if [[ $rc -eq 0 ]]; then say "OK"; else echo "test-package: FAILED (exit $rc)" >&2; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# expect_line OUTPUT PATTERN WHAT: OUTPUT has a line matching PATTERN (grep -E).
expect_line() {
    grep -Eq -- "$2" <<<"$1" || { printf '%s\n' "$1" >&2; fail "$3: no line matching /$2/ (output above)"; }
}

say "building the package (scripts/package.sh --profile $profile $build)"
deb=$(bash "$ROOT/scripts/package.sh" --profile "$profile" $build | tail -n 1)
[[ -f "$deb" && "$deb" == */hsd_*_"$(dpkg --print-architecture)".deb ]] || fail "no package: $deb"
say "package $deb ($(du -h "$deb" | cut -f1))"

say "install: dpkg -i"
dpkg -i "$deb" >"$work/dpkg-install.log" 2>&1 || { cat "$work/dpkg-install.log" >&2; fail "dpkg -i"; }
for f in /usr/bin/hsd /lib/systemd/system/hsd.service /etc/hsd/hsd.toml \
    /usr/share/man/man1/hsd.1.gz /usr/share/doc/hsd/copyright /usr/share/doc/hsd/operations.md.gz \
    /usr/share/hsd/monitoring/hsd-dashboard.json /usr/share/hsd/monitoring/hsd-alerts.yml; do
    [[ -f "$f" ]] || fail "the package did not install $f"
done
dpkg-query -W -f='${Conffiles}' hsd | grep -q '/etc/hsd/hsd.toml' || fail "/etc/hsd/hsd.toml is not a conffile"
getent passwd hsd | grep -q ':/var/lib/hsd:/usr/sbin/nologin$' || fail "user hsd: $(getent passwd hsd)"
[[ $(stat -c '%U:%G %a' /etc/hsd/hsd.toml) == "root:hsd 640" ]] || fail "/etc/hsd/hsd.toml is $(stat -c '%U:%G %a' /etc/hsd/hsd.toml), not root:hsd 640 (it may hold secrets)"
# Every doc the config file names is shipped, with Debian's changelog.
for doc in $(grep -o 'docs/[a-z_-]*\.md' /etc/hsd/hsd.toml | sort -u) changelog; do
    doc=${doc#docs/}
    [[ -f /usr/share/doc/hsd/$doc.gz ]] || fail "the config file names $doc, which the package does not ship"
done
[[ $(stat -c '%U:%G %a' /var/lib/hsd) == "hsd:hsd 750" ]] || fail "/var/lib/hsd is $(stat -c '%U:%G %a' /var/lib/hsd)"
[[ -L /etc/systemd/system/multi-user.target.wants/hsd.service ]] || fail "the service was not enabled"
version=$(/usr/bin/hsd --version)
[[ "$version" =~ ^hsd\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ ([0-9a-f]{7,}|unknown)\)$ ]] || fail "hsd --version: $version"
say "$version"
man_text=$(MANWIDTH=80 man -l /usr/share/man/man1/hsd.1.gz 2>&1)
expect_line "$man_text" '^ +hsd check' "man hsd"

completion=/usr/share/bash-completion/completions/hsd
[[ -f "$completion" ]] || fail "the package did not install $completion"
words=$(bash -c "source $completion && COMP_WORDS=(hsd serve --memc) COMP_CWORD=2 && _hsd hsd --memc serve && printf '%s\n' \"\${COMPREPLY[@]}\"")
grep -qx -- '--memcached-address' <<<"$words" || fail "bash completion of 'hsd serve --memc' gave: $words"

say "lintian (Debian's package checker): no error"
lintian_out=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' || true)
[[ -n "$lintian_out" ]] && echo "$lintian_out"
! grep -q '^E:' <<<"$lintian_out" || fail "lintian reports errors on the package"

say "systemd-analyze verify hsd.service"
verify=$(systemd-analyze verify /lib/systemd/system/hsd.service 2>&1) || { echo "$verify" >&2; fail "systemd-analyze verify"; }
[[ -z "$verify" ]] || { echo "$verify" >&2; fail "systemd-analyze verify had something to say"; }
exposure=$(systemd-analyze security --offline=true /lib/systemd/system/hsd.service 2>&1 | sed -n 's/.*Overall exposure level for hsd.service: \([0-9.]*\).*/\1/p')
[[ -n "$exposure" ]] || fail "systemd-analyze security gave no exposure level"
python3 -c "import sys; sys.exit(0 if float('$exposure') <= 2.0 else 1)" \
    || fail "the unit's exposure level is $exposure (systemd-analyze security), above 2.0"
say "exposure level $exposure (systemd-analyze security; 0 best, 10 worst)"

say "upgrade over itself (dpkg -i again), the operator's edit of the conffile kept"
echo "# edited by the operator" >>/etc/hsd/hsd.toml
dpkg -i "$deb" >"$work/dpkg-upgrade.log" 2>&1 || { cat "$work/dpkg-upgrade.log" >&2; fail "dpkg -i over itself"; }
tail -n 1 /etc/hsd/hsd.toml | grep -q '^# edited by the operator$' || fail "the upgrade replaced the edited conffile"
[[ -L /etc/systemd/system/multi-user.target.wants/hsd.service ]] || fail "the upgrade disabled the service"

# The unit's command line, run as the unit runs it (no systemd here):
# user and group hsd, no new privileges, no capabilities at all, in
# /var/lib/hsd, with NOTIFY_SOCKET. The ports come from HSD_PORT and
# HSD_PORT_WR, as a drop-in would give them (free ones: other tests run).
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/hsd.service)
[[ "$exec_start" == "/usr/bin/hsd serve --config /etc/hsd/hsd.toml" ]] || fail "ExecStart is $exec_start"
read_port=$(free_port)
write_port=$(free_port)
while [[ "$write_port" == "$read_port" ]]; do write_port=$(free_port); done
# The unit's command line as the unit runs it; run in the background, the
# shell becomes hsd (exec), so $! is hsd's pid.
as_unit() {
    cd /var/lib/hsd
    exec env -i PATH=/usr/bin:/bin HSD_PORT="$read_port" HSD_PORT_WR="$write_port" \
        NOTIFY_SOCKET="$notify_sock" \
        setpriv --reuid hsd --regid hsd --init-groups --no-new-privs \
        --bounding-set -all --inh-caps -all --ambient-caps -all -- "$@"
}
# As the unit's user, in a clean environment, for `hsd check`, `hsd sql`
# and `hsd serve` on the bad configs.
as_hsd() {
    (cd /var/lib/hsd && env -i PATH=/usr/bin:/bin setpriv --reuid hsd --regid hsd --init-groups -- "$@")
}

say "a table made as the user hsd with hsd sql"
as_hsd /usr/bin/hsd sql --data-dir /var/lib/hsd test \
    "CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)" >/dev/null
[[ $(stat -c %U /var/lib/hsd/test.sqlite) == hsd ]] || fail "test.sqlite is not hsd's"

say "hsd check on the packaged config, as the user hsd: exit 0"
good=$(as_hsd env HSD_PORT="$read_port" HSD_PORT_WR="$write_port" /usr/bin/hsd check --config /etc/hsd/hsd.toml) || { echo "$good" >&2; fail "hsd check on the packaged config exited $?"; }
printf '%s\n' "$good" | sed 's/^/    /'
expect_line "$good" "^ok: read port \(--port\) 127\.0\.0\.1:$read_port is free$" "hsd check (good)"
expect_line "$good" '^ok: data directory /var/lib/hsd is writable' "hsd check (good)"
if grep -Eqv '^ok: ' <<<"$good"; then fail "hsd check on the packaged config found more than ok lines"; fi

say "ExecStart as the unit runs it: READY=1, a request answered, STOPPING=1 and exit 0 on SIGTERM"
notify_sock=$work/notify.sock
python3 - "$notify_sock" >"$work/notify.log" 2>&1 <<'PY' &
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)
s.settimeout(60)
print("listening", flush=True)
try:
    while True:
        msg = s.recv(4096).decode()
        for line in msg.splitlines():
            print(line, flush=True)
        if "STOPPING=1" in msg:
            break
except socket.timeout:
    print("timeout", flush=True)
PY
listener_pid=$!
for _ in $(seq 100); do grep -q listening "$work/notify.log" 2>/dev/null && break; sleep 0.05; done
# shellcheck disable=SC2086 # ExecStart is words, as systemd splits them
as_unit $exec_start >"$work/serve.out" 2>"$work/serve.err" &
hsd_pid=$!
for _ in $(seq 200); do
    grep -q '^READY=1$' "$work/notify.log" && break
    kill -0 "$hsd_pid" 2>/dev/null || { cat "$work/serve.err" >&2; fail "hsd exited before READY=1"; }
    sleep 0.1
done
grep -q '^READY=1$' "$work/notify.log" || { cat "$work/serve.err" >&2; fail "no READY=1 on NOTIFY_SOCKET in 20 s"; }
[[ $(ps -o user= -p "$hsd_pid") == hsd ]] || fail "hsd does not run as hsd: $(ps -o user= -p "$hsd_pid")"
grep -q '^CapBnd:[[:space:]]*0000000000000000$' "/proc/$hsd_pid/status" || fail "hsd runs with capabilities: $(grep Cap "/proc/$hsd_pid/status")"
grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$hsd_pid/status" || fail "hsd runs without no_new_privs"
answer=$(python3 - "$write_port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"P\t0\ttest\tkv\tPRIMARY\tk,v\n0\t+\t2\t7\tseven\n0\t=\t1\t7\n")
data = b""
while data.count(b"\n") < 3:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.decode().replace("\t", " ").strip().replace("\n", " | "))
PY
)
[[ "$answer" == "0 1 | 0 1 | 0 2 7 seven" ]] || fail "HandlerSocket answers: '$answer', want '0 1 | 0 1 | 0 2 7 seven'"
say "answered: $answer"
kill -TERM "$hsd_pid"
serve_rc=0
wait "$hsd_pid" || serve_rc=$?
hsd_pid=""
[[ $serve_rc -eq 0 ]] || { cat "$work/serve.err" >&2; fail "hsd exited $serve_rc on SIGTERM"; }
wait "$listener_pid" || true
listener_pid=""
grep -q '^STOPPING=1$' "$work/notify.log" || fail "no STOPPING=1 on NOTIFY_SOCKET: $(cat "$work/notify.log")"

say "hsd check on bad configs, as the user hsd: exit 1 and the line; hsd serve refuses in the same words"
busy_port=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$busy_port" &
listener_pid=$!
for _ in $(seq 100); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' "$busy_port" 2>/dev/null && break
    sleep 0.05
done
install -d -m 0755 "$work/root-only"
printf 'secret\n' >"$work/root-only/secret"
chmod 0600 "$work/root-only/secret"
# bad_config NAME PATTERN [KEY=VALUE...]: the packaged config with the
# free ports and the data dir, KEY=VALUE (TOML) set; `hsd check` must exit 1
# with a line matching PATTERN, `hsd serve` exit 1 saying the same.
bad_config() {
    local name=$1 want=$2 config=$work/$1.toml rc=0 out finding key
    shift 2
    declare -A set=([port]=$read_port [port-wr]=$write_port [data-dir]='"/var/lib/hsd"')
    for kv in "$@"; do set[${kv%%=*}]=${kv#*=}; done
    { grep -v '^data-dir = ' /etc/hsd/hsd.toml
      for key in "${!set[@]}"; do echo "$key = ${set[$key]}"; done; } >"$config"
    chmod 0644 "$config"
    out=$(as_hsd /usr/bin/hsd check --config "$config") || rc=$?
    [[ $rc -eq 1 ]] || { echo "$out" >&2; fail "$name: hsd check exited $rc, want 1"; }
    expect_line "$out" "$want" "hsd check ($name)"
    finding=$(grep -E -- "$want" <<<"$out" | head -n 1 | sed 's/^error: //')
    rc=0
    # (A serve that did not refuse would run: ended after 20 s, exit 124.)
    as_hsd timeout 20 /usr/bin/hsd serve --config "$config" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
    [[ $rc -eq 1 ]] || { cat "$work/$name.err" >&2; fail "$name: hsd serve exited $rc, want 1"; }
    grep -qxF -- "hsd: $finding" "$work/$name.err" \
        || { cat "$work/$name.err" >&2; fail "$name: hsd serve did not refuse with 'hsd: $finding'"; }
    say "  $name: $finding"
}
bad_config busy-port \
    "^error: cannot listen on 127\.0\.0\.1:$busy_port for the read port \(--port\) \(Address already in use" \
    "port=$busy_port"
bad_config same-ports \
    "^error: the write port \(--port-wr\) and the read port \(--port\) are both port $read_port: " \
    "port-wr=$read_port"
bad_config data-dir-not-writable "^error: data directory $work/root-only is not writable" \
    "data-dir=\"$work/root-only\""
bad_config tls-missing "^error: cannot read --tls-cert $work/none\.pem" \
    "tls-cert=\"$work/none.pem\"" "tls-key=\"$work/none.key\""
bad_config secret-unreadable "^error: cannot read --plain-secret-file $work/root-only/secret" \
    "plain-secret-file=\"$work/root-only/secret\""
bad_config unknown-key "^error: unknown key \"prot\" in .* line [0-9]+; did you mean \"port\"\?" "prot=9998"
kill "$listener_pid" 2>/dev/null || true
wait "$listener_pid" 2>/dev/null || true
listener_pid=""

say "every key of the packaged config is a hsd serve option, and each parses"
# The options are the file up to its memcached containers' example.
sed '/^# --- memcached containers/,$d' /etc/hsd/hsd.toml >"$work/options.toml"
grep -q '^#\[\[memcached.containers\]\]' /etc/hsd/hsd.toml || fail "the packaged config has no containers example"
keys=$(sed -nE 's/^#?([a-z][a-z-]*) = .*/\1/p' "$work/options.toml" | sort -u)
options=$(/usr/bin/hsd serve --help | sed -nE 's/^ +(-[a-z], )?--([a-z][a-z-]*)( |$).*/\2/p' \
    | grep -vxE 'config|verbose|help' | sort -u)
[[ "$keys" == "$options" ]] || fail "packaged config keys differ from hsd serve's options: $(diff <(echo "$keys") <(echo "$options") | grep '^[<>]' | tr '\n' ' ')"
while IFS= read -r line; do
    printf '%s\n' "${line#\#}" >"$work/one-key.toml"
    out=$(cd "$work" && /usr/bin/hsd check --config "$work/one-key.toml" --port 0 --port-wr 0 --data-dir "$work/data" 2>&1) || true
    if grep -qE "one-key\.toml line [0-9]+|one-key\.toml is not valid TOML" <<<"$out"; then
        fail "the packaged config's line '$line' does not parse: $out"
    fi
done < <(grep -E '^#?[a-z][a-z-]* = ' "$work/options.toml")
say "  $(wc -w <<<"$keys") keys"
# The containers' example, uncommented, is a config hsd takes.
{
    echo 'memcached-address = "127.0.0.1:0"'
    sed -n '/^# --- memcached containers/,$p' /etc/hsd/hsd.toml | sed -nE 's/^#([a-z_]+ = |\[)/\1/p'
} >"$work/containers.toml"
out=$(cd "$work" && /usr/bin/hsd check --config "$work/containers.toml" --port 0 --port-wr 0 --data-dir "$work/data" 2>&1) || true
if grep -qE "containers\.toml( line [0-9]+| is not valid TOML)|unknown key" <<<"$out"; then
    fail "the packaged config's containers example does not parse: $out"
fi
say "  the containers example parses ($(grep -c . "$work/containers.toml") lines)"

say "purge with tables in /var/lib/hsd: the data and the user hsd stay, the rest goes"
dpkg -P hsd >"$work/dpkg-purge.log" 2>&1 || { cat "$work/dpkg-purge.log" >&2; fail "dpkg -P"; }
for f in /usr/bin/hsd /lib/systemd/system/hsd.service /etc/hsd /usr/share/man/man1/hsd.1.gz \
    /usr/share/doc/hsd /usr/share/hsd /usr/share/bash-completion/completions/hsd /etc/systemd/system/multi-user.target.wants/hsd.service; do
    [[ ! -e "$f" && ! -L "$f" ]] || fail "purge left $f"
done
[[ -f /var/lib/hsd/test.sqlite ]] || fail "purge removed the data (/var/lib/hsd/test.sqlite)"
getent passwd hsd >/dev/null || fail "purge removed the user hsd, who owns the data kept"

say "purge with nothing in /var/lib/hsd: the directory and the user go too"
rm -rf /var/lib/hsd
dpkg -i "$deb" >"$work/dpkg-install2.log" 2>&1 || { cat "$work/dpkg-install2.log" >&2; fail "dpkg -i (again)"; }
dpkg -P hsd >"$work/dpkg-purge2.log" 2>&1 || { cat "$work/dpkg-purge2.log" >&2; fail "dpkg -P (again)"; }
[[ ! -e /var/lib/hsd ]] || fail "purge left an empty /var/lib/hsd"
getent passwd hsd >/dev/null && fail "purge left the user hsd with no data to own"
getent group hsd >/dev/null && fail "purge left the group hsd"
exit 0

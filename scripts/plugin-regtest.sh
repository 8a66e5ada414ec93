#!/usr/bin/env bash
# scripts/plugin-regtest.sh: the original HandlerSocket plugin's own regression
# tests (plugin/handler_socket/regtest/ in MariaDB's source: Perl scripts over
# the Perl client Net::HandlerSocket), run against the original plugin and
# against hsd, one after the other, over the same private MariaDB.
#
# Steps:
#   1. MariaDB's Debian source package from deb.debian.org over http: the .dsc
#      of the installed mariadb-server's version if the archive still has it,
#      else of another version apt knows, else of 10.11.14-0+deb12u2; the orig
#      tarball it names is downloaded once into ~/.cache/hsd/plugin-regtest/,
#      checked against the .dsc's SHA256, and only */plugin/handler_socket/*
#      is extracted from it (PLUGIN_REGTEST_VERSION=<debian version> picks
#      one by hand).
#   2. apt-get installs what is missing: curl, g++, the perl headers
#      (libperl-dev), DBI and DBD::mysql; scripts/deps.sh if MariaDB itself is.
#   3. Builds libhsclient and the XS module Net::HandlerSocket from that source
#      with g++ into target/plugin-regtest/build/<version>/ (a blib tree the
#      tests find through PERL5LIB; nothing is installed system-wide). The
#      sources include three MariaDB server headers (config.h, my_global.h,
#      my_alloca.h) for a few system headers and one typedef; the build writes
#      its own few-line stand-ins instead.
#   4. Runs every regtest/test_01_lib/testNN.pl against (a) the plugin of the
#      private MariaDB of scripts/mariadb.sh and (b) hsd (target/debug/hsd,
#      `cargo build -p hsd` unless HSD_BIN names one) serving that MariaDB on
#      two kernel-picked loopback ports. A test passes when it exits 0 within
#      PLUGIN_REGTEST_TIMEOUT seconds (default 30) and its stdout equals
#      testNN.expected byte for byte, or compat/plugin-regtest/testNN.expected
#      where that port exists (see compat/plugin-regtest/README.md).
#   5. Prints `testNN original|hsd ok|FAIL` per test and system, then
#      `plugin-regtest: N passed, M failed`; exits 1 when any failed.
#
# The tests are run from a copy in target/plugin-regtest/regtest/, pointed at
# a server by hstest.pm's environment variables (MYHOST, MYPORT, MYDBNAME,
# MYSQLUSER, MYSQLPASS, HSPORT for the read port). Three things cannot be set
# that way; the copy (and the copy the module is built from) is patched with
# sed for them, and the script stops if a pattern no longer matches:
#   - the write port: test*.pl call get_hs_connection(undef, 9999) with the
#     port written in; it becomes $ENV{HSPORT_WR}.
#   - the SQL driver: MariaDB's copy of hstest.pm connects through DBD::MariaDB,
#     which sends every byte >= 0x80 of a Perl string as two UTF-8 bytes, so
#     test03 and test04 (the bytes 0..255 in a binary column) fail on any
#     server; the expectations were made with DBD::mysql (the upstream
#     HandlerSocket's hstest.pm), which passes bytes as they are: DBI:mysql.
#   - NULL columns: HandlerSocket.xs puts the read-only &PL_sv_undef into the
#     arrays it returns; on this perl (5.36) test19's
#     `$fld = 'NULL' if !defined($fld)`, aliasing each element, dies with
#     "Modification of a read-only value" on the first NULL (on both servers;
#     the perl its expectation came from let it through): newSV(0) instead, a
#     fresh undef.
# The tests' database is hstestdb on the private MariaDB (dropped and created
# by every test). Runs take a lock: two at once would share that database.
# The first run downloads the orig tarball (about 110 MB), extracts and
# builds; later ones reuse all three and take about 25 s plus cargo's build.
#
# Usage: scripts/plugin-regtest.sh
# Environment: HSD_BIN, HSD_MARIADB_DIR (see scripts/mariadb.sh),
#   PLUGIN_REGTEST_VERSION, PLUGIN_REGTEST_TIMEOUT, PLUGIN_REGTEST_ONLY="03 19"
#   (a subset, by hand only).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_NAME=plugin-regtest.sh
# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

WORK=$ROOT/target/plugin-regtest
# Downloads outlive the clone (a fresh CI clone fetched 109 MB each run):
# the user's cache, as cargo's and Go's are; each file is checked against
# the .dsc's SHA256 before use.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/hsd/plugin-regtest
PORTS=$ROOT/compat/plugin-regtest
TIMEOUT=${PLUGIN_REGTEST_TIMEOUT:-30}
ARCHIVE=http://deb.debian.org
POOLS=(debian/pool/main/m/mariadb debian-security/pool/updates/main/m/mariadb)
FALLBACK_VERSION=10.11.14-0+deb12u2
START=$SECONDS
mkdir -p "$WORK" "$CACHE"

LOCK_WAIT=600
exec 8>"$WORK/lock"
flock -w "$LOCK_WAIT" 8 || die "another plugin-regtest run holds $WORK/lock"

# --- packages (step 2) ---------------------------------------------------------
SUDO=()
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); fi
apt_updated=0
apt_install() {
    say "apt-get install $*"
    local apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends)
    if ! "${apt[@]}" install "$@" </dev/null >"$WORK/apt.log" 2>&1; then
        if [[ $apt_updated -eq 0 ]]; then
            apt_updated=1
            say "apt-get install failed; apt-get update, then again"
            "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update </dev/null >>"$WORK/apt.log" 2>&1 || true
            "${apt[@]}" install "$@" </dev/null >>"$WORK/apt.log" 2>&1 && return 0
        fi
        tail -n 20 "$WORK/apt.log" >&2
        die "apt-get install $* failed (log: $WORK/apt.log)"
    fi
}
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[[ -f "$(perl -MConfig -e 'print $Config{archlibexp}')/CORE/perl.h" ]] || missing+=(libperl-dev)
command -v xsubpp >/dev/null 2>&1 || missing+=(perl)
perl -MDBI -e 1 2>/dev/null || missing+=(libdbi-perl)
perl -MDBD::mysql -e 1 2>/dev/null || missing+=(libdbd-mysql-perl)
[[ ${#missing[@]} -eq 0 ]] || apt_install "${missing[@]}"
if ! command -v mariadbd >/dev/null 2>&1 || ! command -v mariadb-install-db >/dev/null 2>&1; then
    say "MariaDB is missing: scripts/deps.sh"
    bash "$ROOT/scripts/deps.sh"
fi

# --- the source (step 1) ---------------------------------------------------------
# The .dsc's orig tarball: "<sha256> <size> <name>" from its Checksums-Sha256.
orig_of_dsc() {
    awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 }
         on && $3 ~ /\.orig\.tar\.(gz|xz|bz2)$/ { print $1, $2, $3; exit }' "$1"
}
# A version is usable from the cache when its handler_socket tree is complete.
srcdir_of() { echo "$WORK/src/$1/handler_socket"; }

candidates=()
if [[ -n "${PLUGIN_REGTEST_VERSION:-}" ]]; then
    candidates=("$PLUGIN_REGTEST_VERSION")
else
    installed=$(dpkg-query -W -f='${Version}' mariadb-server 2>/dev/null || true)
    [[ -n "$installed" ]] && candidates+=("${installed#*:}")
    while read -r v; do
        v=${v#*:}
        [[ " ${candidates[*]-} " == *" $v "* ]] || candidates+=("$v")
    done < <(apt-cache madison mariadb-server 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
    [[ " ${candidates[*]-} " == *" $FALLBACK_VERSION "* ]] || candidates+=("$FALLBACK_VERSION")
fi

VERSION="" DSC_URL=""
for v in "${candidates[@]}"; do
    if [[ -f "$(srcdir_of "$v")/.complete" ]]; then VERSION=$v; break; fi
done
if [[ -z "$VERSION" ]]; then
    for v in "${candidates[@]}"; do
        for pool in "${POOLS[@]}"; do
            url="$ARCHIVE/$pool/mariadb_$v.dsc"
            if curl -fsS -o /dev/null -I --retry 2 "$url" 2>/dev/null; then
                VERSION=$v DSC_URL=$url
                break 2
            fi
        done
        say "mariadb_$v.dsc is not in Debian's archive"
    done
    [[ -n "$VERSION" ]] || die "none of ${candidates[*]} has a source package on $ARCHIVE"
fi
SRC=$(srcdir_of "$VERSION")

if [[ ! -f "$SRC/.complete" ]]; then
    dsc=$CACHE/mariadb_$VERSION.dsc
    if [[ ! -s "$dsc" ]]; then
        say "downloading $DSC_URL"
        curl -fsS --retry 3 -o "$dsc.part" "$DSC_URL" || die "download of $DSC_URL failed"
        mv "$dsc.part" "$dsc"
    fi
    read -r sha size orig < <(orig_of_dsc "$dsc") || true
    [[ -n "${orig:-}" ]] || die "no orig tarball in the Checksums-Sha256 of $dsc"
    tarball=$CACHE/$orig
    if [[ ! -f "$tarball" ]] || ! echo "$sha  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1; then
        url="${DSC_URL%/*}/$orig"
        say "downloading $url ($((size / 1048576)) MB)"
        curl -fsS --retry 3 -o "$tarball.part" "$url" || die "download of $url failed"
        echo "$sha  $tarball.part" | sha256sum -c --quiet - ||
            { rm -f "$tarball.part"; die "$orig does not match the SHA256 in $dsc"; }
        mv "$tarball.part" "$tarball"
    fi
    say "extracting */plugin/handler_socket/* from $orig"
    rm -rf "$WORK/src/$VERSION"
    mkdir -p "$WORK/src/$VERSION/x"
    tar -xf "$tarball" -C "$WORK/src/$VERSION/x" --wildcards '*/plugin/handler_socket/*'
    mv "$WORK/src/$VERSION"/x/*/plugin/handler_socket "$SRC"
    rm -rf "$WORK/src/$VERSION/x"
    [[ -f "$SRC/regtest/common/hstest.pm" && -f "$SRC/perl-Net-HandlerSocket/HandlerSocket.xs" ]] ||
        die "$orig has no plugin/handler_socket regtest or Perl client"
    touch "$SRC/.complete"
fi
say "source: MariaDB $VERSION ($SRC)"

# sed_checked FILE EXPR REGEX-THAT-MUST-MATCH-AFTER: sed -i, and die when the
# result lacks what the edit was for (the source changed under us).
sed_checked() {
    sed -i -e "$2" "$1"
    grep -q -e "$3" "$1" || die "patching $1 failed: /$2/ no longer applies"
}

# --- libhsclient and Net::HandlerSocket (step 3) ------------------------------------
BUILD=$WORK/build/$VERSION
stamp="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)"
if [[ "$(cat "$BUILD/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "building libhsclient and Net::HandlerSocket into $BUILD"
    rm -rf "$BUILD"
    mkdir -p "$BUILD/include" "$BUILD/obj" "$BUILD/xs" "$BUILD/blib/arch/auto/Net/HandlerSocket" "$BUILD/blib/lib"
    # Stand-ins for the MariaDB server headers the sources include.
    : >"$BUILD/include/config.h"
    printf '#include <alloca.h>\n' >"$BUILD/include/my_alloca.h"
    printf '%s\n' '#include <alloca.h>' '#include <errno.h>' '#include <fcntl.h>' '#include <unistd.h>' \
        '#include <sys/socket.h>' '#define SOCKET_SIZE_TYPE socklen_t' 'typedef socklen_t size_socket;' \
        >"$BUILD/include/my_global.h"
    CXXFLAGS=(-O2 -g -fPIC -Wall -Wno-unused -I"$BUILD/include" -I"$SRC/libhsclient")
    for f in config fatal socket string_util escape hstcpcli; do echo "$f"; done |
        xargs -P "$(nproc)" -I{} g++ "${CXXFLAGS[@]}" -c "$SRC/libhsclient/{}.cpp" -o "$BUILD/obj/{}.o" ||
        die "compiling libhsclient failed"
    ar rcs "$BUILD/libhsclient.a" "$BUILD"/obj/*.o
    cp "$SRC/perl-Net-HandlerSocket/HandlerSocket.xs" "$BUILD/xs/HandlerSocket.xs"
    sed_checked "$BUILD/xs/HandlerSocket.xs" 's/av_push(\([a-z_]*\), &PL_sv_undef)/av_push(\1, newSV(0))/' 'av_push([a-z_]*, newSV(0))'
    ! grep -q 'av_push([a-z_]*, &PL_sv_undef)' "$BUILD/xs/HandlerSocket.xs" || die "HandlerSocket.xs: an &PL_sv_undef left"
    xs_version=$(sed -n "s/^our \$VERSION = '\([^']*\)';.*/\1/p" "$SRC/perl-Net-HandlerSocket/lib/Net/HandlerSocket.pm")
    [[ -n "$xs_version" ]] || die "no \$VERSION in Net/HandlerSocket.pm"
    read -r archlib privlib ccflags < <(perl -MConfig -e 'print "$Config{archlibexp} $Config{privlibexp} $Config{ccflags}\n"')
    xsubpp -noprototypes -typemap "$privlib/ExtUtils/typemap" "$BUILD/xs/HandlerSocket.xs" >"$BUILD/xs/HandlerSocket.c" ||
        die "xsubpp HandlerSocket.xs failed"
    # shellcheck disable=SC2086  # ccflags: perl's own flags, several words
    g++ "${CXXFLAGS[@]}" -I"$SRC/perl-Net-HandlerSocket" -I"$archlib/CORE" $ccflags \
        -DVERSION="\"$xs_version\"" -DXS_VERSION="\"$xs_version\"" -shared \
        "$BUILD/xs/HandlerSocket.c" "$BUILD/libhsclient.a" \
        -o "$BUILD/blib/arch/auto/Net/HandlerSocket/HandlerSocket.so" || die "compiling HandlerSocket.xs failed"
    cp -r "$SRC/perl-Net-HandlerSocket/lib/Net" "$BUILD/blib/lib/"
    echo "$stamp" >"$BUILD/.stamp"
fi
export PERL5LIB="$BUILD/blib/lib:$BUILD/blib/arch${PERL5LIB:+:$PERL5LIB}"
perl -MNet::HandlerSocket -e 1 || die "Net::HandlerSocket does not load from $BUILD/blib"

# --- the tests, patched for ports and driver --------------------------------------
RT=$WORK/regtest
rm -rf "$RT"
cp -r "$SRC/regtest" "$RT"
sed_checked "$RT/common/hstest.pm" 's/DBI:MariaDB:/DBI:mysql:/; s/;mariadb_/;mysql_/g' '"DBI:mysql:'
! grep -q 'mariadb_' "$RT/common/hstest.pm" || die "hstest.pm: a mariadb_ DSN option left"
for t in "$RT"/test_01_lib/test*.pl; do
    # shellcheck disable=SC2016  # a Perl $ENV{...}, for the test's copy
    sed -i 's/get_hs_connection(undef, 9999)/get_hs_connection(undef, $ENV{HSPORT_WR})/g' "$t"
done
! grep -n 'get_hs_connection([^)]*9999' "$RT"/test_01_lib/test*.pl || die "a test still names port 9999"
grep -q 'HSPORT_WR' "$RT"/test_01_lib/test06.pl || die "test06.pl: the write port patch did not apply"
# The ports were made from these expectations: a new source must be ported anew.
if ! (cd "$SRC/regtest/test_01_lib" && sha256sum -c --quiet "$PORTS/ported-from.sha256") >/dev/null 2>&1; then
    die "an expectation compat/plugin-regtest/ ports changed in MariaDB $VERSION; port it again (README.md there)"
fi

tests=()
for t in "$RT"/test_01_lib/test*.pl; do
    n=${t##*/test}; n=${n%.pl}
    if [[ -n "${PLUGIN_REGTEST_ONLY:-}" && " $PLUGIN_REGTEST_ONLY " != *" $n "* ]]; then continue; fi
    tests+=("$n")
done
[[ ${#tests[@]} -gt 0 ]] || die "no tests in $RT/test_01_lib"

# --- the servers -------------------------------------------------------------------
if [[ -z "${HSD_BIN:-}" ]]; then
    say "cargo build -p hsd"
    (cd "$ROOT" && cargo build -q -p hsd) || die "cargo build -p hsd failed"
    HSD_BIN=$ROOT/target/debug/hsd
fi
[[ -x "$HSD_BIN" ]] || die "no hsd binary at $HSD_BIN"

stop_mariadb=1
bash "$ROOT/scripts/mariadb.sh" status >/dev/null 2>&1 8>&- && stop_mariadb=0
HSD_PID=""
cleanup() {
    if [[ -n "$HSD_PID" ]]; then
        kill "$HSD_PID" 2>/dev/null || true
        wait "$HSD_PID" 2>/dev/null || true
    fi
    [[ $stop_mariadb -eq 1 ]] && bash "$ROOT/scripts/mariadb.sh" stop >/dev/null 2>&1 8>&-
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bash "$ROOT/scripts/mariadb.sh" start >"$WORK/mariadb-start.log" 2>&1 8>&- ||
    { cat "$WORK/mariadb-start.log" >&2; die "scripts/mariadb.sh start failed"; }
eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
[[ "${HSD_TEST_MYSQL_URL:-}" =~ ^mysql://([^:@/]+):([^@/]*)@([^:/]+):([0-9]+)$ ]] ||
    die "cannot read user, password, host and port from HSD_TEST_MYSQL_URL=${HSD_TEST_MYSQL_URL:-}"
export MYSQLUSER=${BASH_REMATCH[1]} MYSQLPASS=${BASH_REMATCH[2]} MYHOST=${BASH_REMATCH[3]} MYPORT=${BASH_REMATCH[4]}
export MYDBNAME=hstestdb MYSSPS=""
unset HSPASS

HSD_LOG=$WORK/hsd.log
start_hsd() {
    : >"$HSD_LOG"
    "$HSD_BIN" serve --backend "$HSD_TEST_MYSQL_URL" --address 127.0.0.1 --port 0 --port-wr 0 \
        </dev/null >>"$HSD_LOG" 2>&1 8>&- &
    HSD_PID=$!
    local line="" deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        line=$(grep -m1 '^hsd: listening' "$HSD_LOG" || true)
        [[ -n "$line" ]] && break
        alive "$HSD_PID" || break
        sleep 0.1
    done
    [[ "$line" =~ read=[^\ ]*:([0-9]+)\ write=[^\ ]*:([0-9]+) ]] || { log_tail "$HSD_LOG"; die "hsd did not start"; }
    HSD_PORT=${BASH_REMATCH[1]} HSD_PORT_WR=${BASH_REMATCH[2]}
    while ! { port_in_use "$HSD_PORT" && port_in_use "$HSD_PORT_WR"; }; do
        ((SECONDS < deadline)) || { log_tail "$HSD_LOG"; die "hsd's ports $HSD_PORT, $HSD_PORT_WR do not answer"; }
        sleep 0.1
    done
    say "hsd (pid $HSD_PID) on 127.0.0.1:$HSD_PORT and :$HSD_PORT_WR over $MYHOST:$MYPORT"
}
stop_hsd() {
    [[ -n "$HSD_PID" ]] || return 0
    kill "$HSD_PID" 2>/dev/null || true
    wait "$HSD_PID" 2>/dev/null || true
    HSD_PID=""
}

# --- the runs (steps 4 and 5) ----------------------------------------------------------
passed=0 failed=0
declare -A result
run_system() {
    local sys=$1 out=$WORK/results/$1 n expected rc note
    rm -rf "$out"
    mkdir -p "$out"
    for n in "${tests[@]}"; do
        expected=$RT/test_01_lib/test$n.expected note=""
        if [[ -f "$PORTS/test$n.expected" ]]; then expected=$PORTS/test$n.expected note=" (ported expectation)"; fi
        rc=0
        (cd "$RT/test_01_lib" && exec timeout -k 5 "$TIMEOUT" perl "test$n.pl" >"$out/test$n.out" 2>"$out/test$n.err" 8>&-) || rc=$?
        if [[ ! -f "$expected" ]]; then
            note=" (no test$n.expected)"
        elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
            note=" (timed out after ${TIMEOUT}s)"
        elif [[ $rc -ne 0 ]]; then
            note=" (exit $rc: $(head -c 200 "$out/test$n.err" | tr '\n' ' '))"
        elif cmp -s "$out/test$n.out" "$expected"; then
            passed=$((passed + 1)) result[$sys/$n]=ok
            echo "test$n $sys ok$note"
            continue
        else
            note=" (output differs from ${expected#"$ROOT"/})"
        fi
        failed=$((failed + 1)) result[$sys/$n]=FAIL
        [[ -f "$expected" ]] && { diff -u "$expected" "$out/test$n.out" >"$out/test$n.diff" || true; }
        if [[ $sys == hsd && "${result[original/$n]:-}" == FAIL ]] && cmp -s "$out/test$n.out" "$WORK/results/original/test$n.out"; then
            note+=" (the same output as the original plugin)"
        fi
        echo "test$n $sys FAIL$note"
        if [[ -s "$out/test$n.diff" ]]; then
            echo "----- first 20 lines of $out/test$n.diff -----" >&2
            head -n 20 "$out/test$n.diff" >&2
        fi
        # A test that hung may leave a lock behind (a DROP DATABASE waiting on
        # the server's metadata lock): a new server, so the next test is its own.
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            if [[ $sys == hsd ]]; then
                say "test$n timed out on hsd: restarting hsd"
                stop_hsd; start_hsd; export HSPORT=$HSD_PORT HSPORT_WR=$HSD_PORT_WR
            else
                say "test$n timed out on the original plugin: restarting MariaDB"
                bash "$ROOT/scripts/mariadb.sh" restart >>"$WORK/mariadb-start.log" 2>&1 8>&- || die "scripts/mariadb.sh restart failed"
                eval "$(bash "$ROOT/scripts/mariadb.sh" env)"
                export HSPORT=$HSD_HS_ORIGINAL_PORT HSPORT_WR=$HSD_HS_ORIGINAL_PORT_WR
            fi
        fi
    done
}

say "${#tests[@]} tests against the original plugin (127.0.0.1:$HSD_HS_ORIGINAL_PORT, :$HSD_HS_ORIGINAL_PORT_WR)"
export HSPORT=$HSD_HS_ORIGINAL_PORT HSPORT_WR=$HSD_HS_ORIGINAL_PORT_WR
run_system original

start_hsd
say "${#tests[@]} tests against hsd"
export HSPORT=$HSD_PORT HSPORT_WR=$HSD_PORT_WR
run_system hsd
stop_hsd

say "outputs in ${WORK#"$ROOT"/}/results/, $((SECONDS - START)) s"
echo "plugin-regtest: $passed passed, $failed failed"
[[ $failed -eq 0 ]]

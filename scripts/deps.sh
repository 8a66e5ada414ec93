#!/usr/bin/env bash
# scripts/deps.sh: install the Debian packages hsd's tests, benchmarks and CI need.
#
# Idempotent and fast: every package is probed first (a command it provides,
# plus `dpkg -s` where the command alone is ambiguous), and apt is not touched
# at all when nothing is missing. `apt-get update` runs only when something must
# be installed. Safe without a terminal (DEBIAN_FRONTEND=noninteractive, no
# stdin). It never starts or enables the system MariaDB service: while apt runs,
# a policy-rc.d that denies service starts is put in place (unless one already
# exists), and nothing in this project relies on the system service anyway; the
# tests run a private instance via scripts/mariadb.sh.
#
# Usage: scripts/deps.sh            install what is missing
#        scripts/deps.sh --check    only report; exit 1 if something is missing
set -euo pipefail

# mariadbd, mariadb-install-db live in /usr/sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

check_only=0
case "${1:-}" in
    --check) check_only=1 ;;
    "") ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# "debian-package  command-it-provides" pairs. A package counts as present when
# the command is on PATH; "-" means probe with dpkg -s only.
#   mariadb-server   private test instance (mariadbd, mariadb-install-db)
#   mariadb-client   mariadb, mariadb-admin (scripts/mariadb.sh, debugging)
#   galera-4         scripts/galera.sh (the Galera provider library)
#   rsync, iproute2  scripts/galera.sh: rsync state transfer (its script looks
#                    for listening ports with ss)
#   memcached        scripts/bench.sh side-by-side figures; the memcached
#                    front's reference in tests
#   sasl2-bin        saslpasswd2: the login of the reference memcached -S
#                    (tests/memcached_sasl.rs)
#   libmemcached-tools  memccapable (Debian's name of memcapable): libmemcached's protocol conformance
#                    tests, run against the memcached port
#                    (scripts/memcapable.sh)
#   redis-server     scripts/bench.sh side-by-side figures
#   gnuplot-nox      scripts/bench.sh chart (PNG, docs/bench-throughput.png)
#   netcat-openbsd   protocol smoke tests from shell (nc -q/-N)
#   maven            compat/java (hs4j client)
#   default-jdk-headless  javac for compat/java (maven alone only pulls a JRE)
#   nodejs, npm      compat/node (node-handlersocket)
#   python3          free-port probing in scripts/mariadb.sh (bash fallback exists)
#   python3-venv     the Python client's tests (test.sh makes a venv under target/)
#   openssl          a throwaway certificate for the Python client's TLS tests
#   util-linux       flock (scripts/mariadb.sh serialises start/stop)
#   procps           ps/pgrep for debugging and kill fallbacks
#   ca-certificates  cargo's HTTPS registry access
#   build-essential  C compiler for rusqlite's bundled SQLite
#   dpkg-dev         scripts/package.sh (dpkg-deb, dpkg-shlibdeps)
#   lintian          Debian's package checker on the .deb (scripts/test-package.sh)
#   systemd          systemd-analyze verify/security on the unit
#                    (scripts/test-package.sh; no systemd is started)
#   man-db           man, to render hsd(1) and for systemd-analyze's
#                    check of the unit's Documentation=man:hsd(1)
wanted=(
    "mariadb-server mariadbd"
    "mariadb-server mariadb-install-db"
    "mariadb-client mariadb"
    "mariadb-client mariadb-admin"
    "galera-4 -"
    "rsync rsync"
    "iproute2 ss"
    "memcached memcached"
    "sasl2-bin saslpasswd2"
    "libmemcached-tools memccapable"
    "redis-server redis-server"
    "gnuplot-nox gnuplot"
    "netcat-openbsd -"
    "maven mvn"
    "default-jdk-headless javac"
    "nodejs node"
    "npm npm"
    "python3 python3"
    "python3-venv -"
    "openssl openssl"
    "util-linux flock"
    "procps ps"
    "ca-certificates -"
    "build-essential cc"
    "dpkg-dev dpkg-shlibdeps"
    "lintian lintian"
    "systemd systemd-analyze"
    "man-db man"
    "curl curl"
    "g++ g++"
    "libdbi-perl -"
    "libdbd-mysql-perl -"
)

pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for pair in "${wanted[@]}"; do
    read -r pkg cmd <<<"$pair"
    if [[ "$cmd" == "-" ]]; then
        pkg_installed "$pkg" && continue
    else
        command -v "$cmd" >/dev/null 2>&1 && continue
    fi
    # A node that is not Debian's (nvm, nodesource, ...) normally bundles npm,
    # and Debian's npm package would conflict with it: then leave npm alone.
    if [[ "$pkg" == "npm" ]] && command -v node >/dev/null 2>&1; then
        node_ver=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
        if [[ -z "$node_ver" || "$node_ver" == *nodesource* ]]; then
            echo "deps: warning: node is not Debian's and has no npm; install npm by hand" >&2
            continue
        fi
    fi
    # de-duplicate (two commands may map to one package)
    [[ " ${missing[*]-} " == *" $pkg "* ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps: all packages present"
    exit 0
fi

echo "deps: missing: ${missing[*]}"
if [[ $check_only -eq 1 ]]; then
    exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)
    else
        echo "deps: not root and no sudo; install by hand: apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# Deny service starts during the install (invoke-rc.d honours policy-rc.d), so
# installing mariadb-server does not launch the system mysqld. Leave an
# existing policy-rc.d (e.g. Docker's "exit 101") untouched.
policy=/usr/sbin/policy-rc.d
created_policy=0
cleanup() {
    if [[ $created_policy -eq 1 ]]; then
        "${SUDO[@]}" rm -f "$policy"
    fi
}
trap cleanup EXIT
if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\n# temporary, from hsd scripts/deps.sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 755 "$policy"
    created_policy=1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

echo "deps: apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update </dev/null
echo "deps: apt-get install ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" </dev/null

# Verify.
still=()
for pair in "${wanted[@]}"; do
    read -r pkg cmd <<<"$pair"
    [[ " ${missing[*]} " == *" $pkg "* ]] || continue
    if [[ "$cmd" == "-" ]]; then pkg_installed "$pkg" || still+=("$pkg")
    else command -v "$cmd" >/dev/null 2>&1 || still+=("$pkg")
    fi
done
if [[ ${#still[@]} -gt 0 ]]; then
    echo "deps: still missing after install: ${still[*]}" >&2
    exit 1
fi
echo "deps: installed ${missing[*]}"

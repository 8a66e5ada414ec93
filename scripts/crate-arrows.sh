#!/usr/bin/env bash
# scripts/crate-arrows.sh: checks the arrows between the server's crates
# (docs/architecture.md, "Crates"): hsd-storage names no database client,
# hsd-sqlite and hsd-mysql do not know each other, no backend depends on the
# server. Run by the lint step of scripts/test.sh; exits 1 naming each
# arrow that should not be there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# crate: the packages its normal (non-dev, non-build) dependencies must not reach
declare -A forbidden=(
    [hsd-storage]="rusqlite libsqlite3-sys mysql_common mysql-wire rustls tokio-rustls hsd-sqlite hsd-mysql hsd"
    [hsd-sqlite]="mysql_common mysql-wire rustls tokio-rustls hsd-mysql hsd"
    [hsd-mysql]="rusqlite libsqlite3-sys hsd-sqlite hsd"
)
bad=0
for crate in hsd-storage hsd-sqlite hsd-mysql; do
    # The crate itself is the first line; every later line is a dependency.
    deps=$(cargo tree -p "$crate" -e normal --prefix none --offline 2>/dev/null |
        tail -n +2 | awk '{print $1}' | sort -u) ||
        deps=$(cargo tree -p "$crate" -e normal --prefix none | tail -n +2 | awk '{print $1}' | sort -u)
    for f in ${forbidden[$crate]}; do
        if grep -qx -- "$f" <<<"$deps"; then
            echo "crate-arrows: $crate depends on $f (cargo tree -p $crate -i $f -e normal says how)" >&2
            bad=1
        fi
    done
done
[[ $bad -eq 0 ]] && echo "crate-arrows: hsd-storage, hsd-sqlite and hsd-mysql keep their arrows"
exit $bad

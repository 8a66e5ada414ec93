#!/usr/bin/env bash
# compat/nc/session.sh HOST PORT [DB]: the spec's section-10 session (spec/protocol.md),
# typed into netcat exactly as a person would, checked byte for byte.
#
# The table is the --demo table test.user (DB defaults to "test"); against
# MariaDB, compat/run.sh creates a copy of demo rows 99..102 in another database
# and passes its name. Two ways a person does it:
#   1. lines ending in CR LF (what telnet sends), one line at a time with a
#      pause as if typed, piped into `nc -N`;
#   2. `nc -C`, which turns each typed LF into CR LF.
# hsd drops the CR (spec section 1, extension) and answers LF-terminated lines.
# Exit 0 when every response line is exactly as expected.
set -euo pipefail

HOST=${1:?usage: session.sh HOST PORT [DB]}
PORT=${2:?usage: session.sh HOST PORT [DB]}
DB=${3:-test}
TAB=$'\t'

# What the person types (TAB between fields), and what hsd must answer.
typed=(
    "P${TAB}0${TAB}${DB}${TAB}user${TAB}PRIMARY${TAB}user_name,user_email,created"
    "0${TAB}=${TAB}1${TAB}101"
    "0${TAB}>=${TAB}1${TAB}100${TAB}2${TAB}0"
)
expected=(
    "0${TAB}1"
    "0${TAB}3${TAB}Hiro Silva${TAB}hiro.silva101@example.com${TAB}2010-01-02 02:44:13"
    "0${TAB}3${TAB}Ada Novak${TAB}ada.novak100@example.com${TAB}2010-01-02 02:28:20${TAB}Hiro Silva${TAB}hiro.silva101@example.com${TAB}2010-01-02 02:44:13"
)

want=$(mktemp)
got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
printf '%s\n' "${expected[@]}" >"$want"

check() {
    local how=$1
    if cmp -s "$want" "$got"; then
        echo "nc session ($how): ${#expected[@]} response lines as expected"
        return 0
    fi
    echo "nc session ($how): FAILED; expected (od -c):" >&2
    od -c "$want" >&2
    echo "got (od -c):" >&2
    od -c "$got" >&2
    return 1
}

# 1. CR LF line ends, one line at a time.
{
    for line in "${typed[@]}"; do
        printf '%s\r\n' "$line"
        sleep 0.3
    done
} | timeout 20 nc -N "$HOST" "$PORT" >"$got"
check "CR LF lines via nc -N"

# 2. nc -C adds the CR itself.
{
    for line in "${typed[@]}"; do
        printf '%s\n' "$line"
        sleep 0.3
    done
} | timeout 20 nc -C -N "$HOST" "$PORT" >"$got"
check "nc -C"

#!/usr/bin/env bash
# scripts/fuzz.sh: replays hsd's fuzz corpora and fuzzes each target briefly.
#
# Targets live in fuzz/ (cargo-fuzz, nightly toolchain, feature `fuzzing`; their
# checks are library functions that `cargo test` also replays over the corpora
# on stable, so CI runs every corpus input without this script):
#   parse_request  hs-proto parser and codec round trips on arbitrary bytes
#   request_path   whole request path (framing, session, workers, executor,
#                  SQLite) on a real store, one response line per request line
# For each target: every input of fuzz/corpus/<target> is run once (a crash
# there is a regression), then the target is fuzzed for SECONDS (default 20)
# in one process, at low priority. New inputs go to a scratch directory, so the
# kept corpus only changes when someone merges on purpose (see fuzz/README.md).
# A crash fails the run; its input lands in fuzz/artifacts/<target>/.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Installs the nightly toolchain and cargo-fuzz if they are missing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

seconds=${1:-${HSD_FUZZ_SECONDS:-20}}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(parse_request request_path)
fi

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "== installing the nightly toolchain (cargo-fuzz needs it)"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# SQLite's amalgamation has two same-named static tables ("aiOff"), which
# ASan's ODR check reports as a false positive; cargo fuzz turns the check
# off for its own builds, and so do we for the runs.
export ASAN_OPTIONS="detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# Same flags for every step so the targets are built once.
fuzz=(nice -n 10 cargo +nightly fuzz run --features fuzzing --release --debug-assertions)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for t in "${targets[@]}"; do
    corpus="$ROOT/fuzz/corpus/$t"
    mkdir -p "$corpus" "$scratch/$t"
    echo "== fuzz $t: replay $(find "$corpus" -type f | wc -l) corpus inputs"
    "${fuzz[@]}" "$t" "$corpus" -- -runs=0 -timeout=30
    echo "== fuzz $t: ${seconds}s"
    "${fuzz[@]}" "$t" "$scratch/$t" "$corpus" -- \
        -max_total_time="$seconds" -timeout=30 -print_final_stats=1 \
        -dict="$ROOT/fuzz/hs.dict"
done
echo "== fuzz: OK (${targets[*]})"

#!/usr/bin/env bash
# bench/audit/run.sh - speed of "trainyard audit verify" on a large signed
# export: audit_gen writes N events (default 1,000,000) with a fresh key, as
# JSON Lines and as CSV, then the verifier runs REPS times (default 3) on
# each and the median is printed as a markdown table. The files were just
# written, so they are read from the page cache: this measures the
# verifier's CPU cost, not the disk.
# Builds a release tree (no sanitizers) in build-cli-bench first.
# Usage: bench/audit/run.sh [EVENTS]
# Env: BUILD_DIR (default build-cli-bench), REPS (default 3), TMPDIR (scratch).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-cli-bench}
events=${1:-1000000}
reps=${REPS:-3}

# Always (re)build: an old binary would measure old code.
CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
cmake --build "$build" -j2 --target audit_gen trainyard >/dev/null
gen=$build/bench/audit/audit_gen
ty=$build/cli/trainyard

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ty-bench-audit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

now_ns() { date +%s%N; }

declare -A gen_s
for fmt in jsonl csv; do
    t0=$(now_ns)
    "$gen" --key "$tmp/key.pem" --public-key-out "$tmp/pub" --format "$fmt" \
        --events "$events" --checkpoint-every 100000 --out "$tmp/export.$fmt"
    t1=$(now_ns)
    gen_s[$fmt]=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.2f", d / 1e9 }')
done

echo "### trainyard audit verify: $events events, median of $reps runs (release build, warm page cache)"
echo
echo "| format | events | bytes | verify s | events/s | MB/s | generate s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for fmt in jsonl csv; do
    f=$tmp/export.$fmt
    bytes=$(stat -c %s "$f")
    times=()
    for _ in $(seq "$reps"); do
        t0=$(now_ns)
        out=$("$ty" audit verify "$f" --public-key "$tmp/pub")
        t1=$(now_ns)
        case "$out" in
        "OK $events events"*) ;;
        *) echo "run.sh: verify of $fmt did not succeed: $out" >&2; exit 1 ;;
        esac
        times+=($((t1 - t0)))
    done
    med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    awk -v fmt="$fmt" -v n="$events" -v b="$bytes" -v ns="$med" -v g="${gen_s[$fmt]}" 'BEGIN {
        s = ns / 1e9
        printf "| %s | %d | %d | %.3f | %.0f | %.0f | %s |\n", fmt, n, b, s, n / s, b / s / 1e6, g
    }'
done
echo
echo "verdict: $out"

#!/bin/sh
# bench/advisor/run.sh - strategy advisor benchmark, printed as a markdown
# table: adv_plan() over the known-model table x allocations of 1 to 512
# GPUs of six kinds x two software sets. Builds a release tree (no
# sanitizers) in build-rel first.
# Usage: bench/advisor/run.sh [--reps R]
# The predicted-against-measured memory benchmark on the CPU is
# bench/advisor/memory_cpu.py (needs build/bench/advisor/advise_json).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-rel}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_advisor >/dev/null
echo "### Strategy advisor: plans per second (release build)"
echo
"$build/bench/advisor/bench_advisor" "$@"

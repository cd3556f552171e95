#!/usr/bin/env bash
# bench/build/build_time.sh - wall time of a clean release build of two
# commits, side by side in one run (this machine is noisy: read the ratio).
# Usage: bench/build/build_time.sh [--reps N] BASE [HEAD]
#   BASE, HEAD: any revisions (HEAD defaults to HEAD). Each is checked out
#   into a temporary worktree and configured as `make build` does (clang,
#   Release); then `cmake --build -j$(nproc)` runs from an empty build
#   directory, BASE and HEAD taking turns, N times each (default 3).
# Prints one table: the median, fastest and slowest wall seconds of each,
# the CPU seconds (user + sys) of the fastest run, and HEAD / BASE.
set -euo pipefail
reps=3
while [ $# -gt 0 ]; do
  case $1 in
  --reps) reps=$2; shift 2 ;;
  -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
  *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--reps N] BASE [HEAD]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
base=$(git -C "$repo" rev-parse --short "$1")
head=$(git -C "$repo" rev-parse --short "${2:-HEAD}")
tmp=$(mktemp -d /tmp/trainyard-build-time.XXXXXX)
cleanup() {
  git -C "$repo" worktree remove --force "$tmp/base" 2>/dev/null || true
  git -C "$repo" worktree remove --force "$tmp/head" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
git -C "$repo" worktree add -q --detach "$tmp/base" "$base"
git -C "$repo" worktree add -q --detach "$tmp/head" "$head"

# One clean build of the tree in $1; prints "wall cpu" in seconds.
build_once() {
  local src=$1 b=$1/build-release t0 t1
  rm -rf "$b"
  CC=${CC:-clang} cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release >/dev/null
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$tmp/cpu" cmake --build "$b" -j"$(nproc)" >"$tmp/build.log" 2>&1 ||
    { tail -20 "$tmp/build.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') $(awk '{print $1 + $2}' "$tmp/cpu")"
}

: >"$tmp/base.txt"
: >"$tmp/head.txt"
for _ in $(seq "$reps"); do
  build_once "$tmp/base" >>"$tmp/base.txt"
  build_once "$tmp/head" >>"$tmp/head.txt"
done

# median, min, max wall seconds and the CPU seconds of the fastest run, of a
# file of "wall cpu" lines (an even count's median is the mean of the middle two)
stats() {
  sort -n "$1" | awk '{w[NR] = $1; c[NR] = $2}
    END {
      med = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
      printf "%.1f %.1f %.1f %.1f", med, w[1], w[NR], c[1]
    }'
}
read -r bm bmin bmax bc <<<"$(stats "$tmp/base.txt")"
read -r hm hmin hmax hc <<<"$(stats "$tmp/head.txt")"
echo "Clean release build ($(nproc) cores, $reps runs each, taking turns)"
echo
echo "| commit | wall median (s) | fastest | slowest | CPU of the fastest run (s) |"
echo "|---|---:|---:|---:|---:|"
echo "| $base (base) | $bm | $bmin | $bmax | $bc |"
echo "| $head | $hm | $hmin | $hmax | $hc |"
echo "| ratio $head / $base | $(awk -v a="$hm" -v b="$bm" 'BEGIN {printf "%.3f", a / b}') | | | $(awk -v a="$hc" -v b="$bc" 'BEGIN {printf "%.3f", a / b}') |"

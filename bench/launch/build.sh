#!/bin/sh
# bench/launch/build.sh - print the path of a release build of trainyard-server,
# trainyard-worker and the trainyard CLI made from the committed HEAD (git archive, so edits in progress
# in the working tree do not leak into a measurement). Cached per commit under
# ${TY_BENCH_CACHE:-/tmp/ty-bench-build}. BUILD_DIR=... skips all this and uses that tree.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${BUILD_DIR:-}" ]; then
    echo "$BUILD_DIR"
    exit 0
fi
commit=$(git -C "$root" rev-parse HEAD)
base=${TY_BENCH_CACHE:-/tmp/ty-bench-build}/$commit
if [ ! -x "$base/build/server/trainyard-server" ] || [ ! -x "$base/build/worker/trainyard-worker" ] ||
   [ ! -x "$base/build/cli/trainyard" ]; then
    rm -rf "$base"
    mkdir -p "$base/src"
    git -C "$root" archive HEAD | tar -x -C "$base/src"
    CC=${CC:-clang} cmake -S "$base/src" -B "$base/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$base/build" -j2 --target trainyard-server trainyard-worker trainyard >/dev/null
fi
echo "built from commit $commit" >&2
echo "$base/build"

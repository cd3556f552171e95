#!/bin/sh
# bench/lib/with-pg.sh - what every end-to-end benchmark needs first: a
# release build of the committed HEAD (bench/launch/build.sh), a private
# PostgreSQL on a free loopback port in a temporary directory, and the
# harness variables pointing at both. Then it runs the driver under a time
# limit and stops PostgreSQL and removes the directory on any exit.
#   bench/lib/with-pg.sh NAME LIMIT_S DRIVER.py [args...]
# The driver sees TRAINYARD_TEST_PG_URL, TRAINYARD_BUILD_DIR and BENCH_TMP.
set -eu
name=$1 limit=$2 driver=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$("$root/bench/launch/build.sh")
tmp=$(mktemp -d "/tmp/ty-bench-$name.XXXXXX")
chmod 755 "$tmp"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
    "$root/scripts/pg.sh" stop "$tmp/pg" || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
"$root/scripts/pg.sh" start "$tmp/pg" "$port" trust
export TRAINYARD_TEST_PG_URL="postgresql://postgres@127.0.0.1:$port"
export TRAINYARD_BUILD_DIR="$build"
export BENCH_TMP="$tmp"
timeout -k 10 "$limit" python3 "$driver" "$@"

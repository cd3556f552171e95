#!/bin/sh
# bench/recovery/run.sh - kill -9 of a worker to resumed training, and worker RSS.
# Private PostgreSQL + server + two workers (1 fake GPU each) on 127.0.0.1; all stopped on exit.
# Usage: bench/recovery/run.sh [recovery.py args, e.g. --timeouts 10,4 --reps 2]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
limit=${RECOVERY_TIME_LIMIT_S:-600}
# Release build of the committed HEAD (or $BUILD_DIR), see bench/launch/build.sh.
build=$("$root/bench/launch/build.sh")
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "recovery: python3-torch missing (scripts/deps.sh bench)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ty-bench-recovery.XXXXXX)
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
timeout -k 10 "$limit" python3 "$here/recovery.py" "$@"

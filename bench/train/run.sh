#!/bin/sh
# bench/train/run.sh - training overhead: ddp_mlp.py (2 ranks) through trainyard vs by hand.
# Private PostgreSQL + server + one worker (2 fake GPUs) on 127.0.0.1; all stopped on exit.
# Usage: bench/train/run.sh [train.py args, e.g. --rounds 3 --steps 1200]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
limit=${TRAIN_TIME_LIMIT_S:-420}
# Release build of the committed HEAD (or $BUILD_DIR), see bench/launch/build.sh.
build=$("$root/bench/launch/build.sh")
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "train: python3-torch missing (scripts/deps.sh bench)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ty-bench-train.XXXXXX)
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
timeout -k 10 "$limit" python3 "$here/train.py" "$@"

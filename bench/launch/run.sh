#!/bin/sh
# bench/launch/run.sh - launch latency and burst throughput, trainyard vs private Slurm 22.05.
# Everything runs on 127.0.0.1 in a temporary directory; everything started is stopped on exit.
# Usage: bench/launch/run.sh [--quick] [extra launch.py args]
#   --quick: 50 one-GPU jobs, 5 multi-rank runs, 100-job bursts.
# Needs: scripts/deps.sh bench (slurmctld slurmd slurm-client munge), PostgreSQL, root (mknod).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
limit=${LAUNCH_TIME_LIMIT_S:-1200}
args=""
if [ "${1:-}" = "--quick" ]; then
    shift
    args="--jobs 50 --multi 5 --burst 100 --burst-default 100 --slurm-seq 4 --slurm-seq-tuned 6 --slurm-srun 10"
fi
# Release build of the committed HEAD (or $BUILD_DIR), see bench/launch/build.sh.
build=$("$root/bench/launch/build.sh")

tmp=$(mktemp -d /tmp/ty-bench-launch.XXXXXX)
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
# shellcheck disable=SC2086
timeout -k 10 "$limit" python3 "$here/launch.py" --tmp "$tmp" $args "$@"

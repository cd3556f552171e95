#!/bin/sh
# bench/launch/run.sh - launch latency and burst throughput, trainyard vs private Slurm 22.05.
# Everything runs on 127.0.0.1 in a temporary directory; everything started is stopped on exit.
# Usage: bench/launch/run.sh [--quick] [extra launch.py args]
#   --quick: 50 one-GPU jobs, 5 multi-rank runs, 100-job bursts.
#   --cli-only: `trainyard submit FILE` (the CLI) vs POST, sbatch and srun, 1 GPU
#     (--cli-jobs 50 by default; about 3 min).
# Needs: scripts/deps.sh bench (slurmctld slurmd slurm-client munge), PostgreSQL, root (mknod).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
limit=${LAUNCH_TIME_LIMIT_S:-1200}
args=""
if [ "${1:-}" = "--quick" ]; then
    shift
    args="--jobs 50 --multi 5 --burst 100 --burst-default 100 --slurm-seq 4 --slurm-seq-tuned 6 --slurm-srun 10"
fi
# shellcheck disable=SC2086
exec "$here/../lib/with-pg.sh" launch "$limit" "$here/launch.py" $args "$@"

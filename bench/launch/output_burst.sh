#!/bin/sh
# bench/launch/output_burst.sh - what a rank's output burst keeps: metric points and log lines
# stored, and the job's dropped_lines, for 100,000 lines printed at once (output_burst.py).
# Everything runs on 127.0.0.1 in a temporary directory; everything started is stopped on exit.
# Usage: bench/launch/output_burst.sh [--rounds 3] [--lines 100000] [--compare-build DIR]
#   --compare-build DIR: the same jobs on a worker from another build (make one with
#   bench/launch/build.sh in a checkout of the other commit), side by side in this run.
# About 2 minutes at 3 rounds. Needs PostgreSQL (scripts/deps.sh test).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../lib/with-pg.sh" burst "${BURST_TIME_LIMIT_S:-1200}" "$here/output_burst.py" "$@"

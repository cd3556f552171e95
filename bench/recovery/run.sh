#!/bin/sh
# bench/recovery/run.sh - kill -9 of a worker to resumed training, and worker RSS.
# Private PostgreSQL + server + two workers (1 fake GPU each) on 127.0.0.1; all stopped on exit.
# Usage: bench/recovery/run.sh [recovery.py args, e.g. --timeouts 10,4 --reps 2]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "recovery: python3-torch missing (scripts/deps.sh bench)" >&2; exit 1; }
exec "$here/../lib/with-pg.sh" recovery "${RECOVERY_TIME_LIMIT_S:-600}" "$here/recovery.py" "$@"

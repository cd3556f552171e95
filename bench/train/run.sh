#!/bin/sh
# bench/train/run.sh - training overhead: ddp_mlp.py (2 ranks) through trainyard vs by hand.
# Private PostgreSQL + server + one worker (2 fake GPUs) on 127.0.0.1; all stopped on exit.
# Usage: bench/train/run.sh [train.py args, e.g. --rounds 3 --steps 1200]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "train: python3-torch missing (scripts/deps.sh bench)" >&2; exit 1; }
exec "$here/../lib/with-pg.sh" train "${TRAIN_TIME_LIMIT_S:-420}" "$here/train.py" "$@"

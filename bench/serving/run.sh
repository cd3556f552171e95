#!/bin/sh
# bench/serving/run.sh - dynamic batching of one model-server replica, on and off
# (batching.py: the chatbot and the text classifier served by examples/serve_*.py).
# Usage: bench/serving/run.sh [--quick] [batching.py options]
#   --quick: concurrency 1 and 8, one round.
# Needs PyTorch (scripts/deps.sh bench); no build, no PostgreSQL.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--quick" ]; then
    shift
    set -- --concurrency 1,8 --rounds 1 "$@"
fi
exec /usr/bin/python3 "$here/batching.py" "$@"

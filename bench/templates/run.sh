#!/bin/sh
# bench/templates/run.sh - every training template's tiny config on the CPU,
# launched through trainyard (by template id) against the same command
# started by hand with the environment the worker gave the rank.
# Private PostgreSQL + server + one worker (fake GPUs) on 127.0.0.1; all
# stopped on exit. Release build of HEAD (bench/launch/build.sh), or
# BUILD_DIR=build-release after
#   cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
# Usage: bench/templates/run.sh [templates.py args, e.g. --rounds 2 --only chatbot-gpt2]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import torch, torchvision, PIL' 2>/dev/null ||
    { echo "templates: python3-torch, torchvision or PIL missing (scripts/deps.sh bench)" >&2; exit 1; }
exec "$here/../lib/with-pg.sh" templates "${TEMPLATES_TIME_LIMIT_S:-1500}" "$here/templates.py" "$@"

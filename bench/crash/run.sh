#!/bin/sh
# bench/crash/run.sh - the control-plane crash tests' times, tabled: kill -9
# of the leader to the follower leading (under load and idle), PostgreSQL
# stopped to 503 answers and back, kill -9 of a lone server to /healthz.
# A private PostgreSQL (bench/lib/with-pg.sh) and the build it names; the
# tests' own figures (FIGURES lines) over --reps runs (crash.py).
# Usage: bench/crash/run.sh [--reps N] [--tests replicas,db,server]
#   BUILD_DIR=DIR: that build (e.g. the ASan build of make test, as the
#   figures in RESULTS.md) instead of a release build of HEAD.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../lib/with-pg.sh" crash "${CRASH_TIME_LIMIT_S:-3600}" "$here/crash.py" "$@"

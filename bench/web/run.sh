#!/usr/bin/env bash
# bench/web/run.sh - the dashboard's benchmarks in real Chromium.
# It runs one: the audit page's page time at EVENTS audit events (default
# 1,000,000), bench/web/audit_page.mjs. Builds a release tree (no
# sanitizers) in build-web-bench first, prints the markdown table, and with
# RECORD=1 appends it to bench/RESULTS.md.
# Usage: bench/web/run.sh        Env: BUILD_DIR, EVENTS, REPS, RECORD.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-web-bench}

# Always (re)build: an old binary would measure old code.
CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
cmake --build "$build" -j2 --target trainyard-server trainyard-worker trainyard >/dev/null
[ -d "$root/tests/web/node_modules/playwright-core" ] || npm ci --prefix "$root/tests/web" --no-audit --no-fund >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
TRAINYARD_BUILD_DIR=$build node "$here/audit_page.mjs" | tee "$out"
if [ "${RECORD:-0}" = 1 ]; then
  { echo; echo "## Dashboard: audit page time (bench/web/run.sh)"; echo; cat "$out"; } >>"$root/bench/RESULTS.md"
fi

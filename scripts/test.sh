#!/usr/bin/env bash
# `make test`: install what is missing, build with ASan+UBSan and -Werror,
# start a private PostgreSQL on a random loopback port, and run every test
# (unit, fuzz corpus replay, lint, integration, end-to-end) with ctest.
# A failing step is named, with its log under build/log/.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
build=${TRAINYARD_TEST_BUILD:-build}
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
step_init test "$build/log"

step --live deps scripts/deps.sh test
step configure env CC="${CC:-clang}" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=ON -DWERROR=ON
step --live build cmake --build "$build" -j"$(nproc)"
# The dashboard's third-party code (ECharts; web/vendor/, served at /vendor/)
# and the browser tests' npm packages (playwright-core), pinned by their lock files.
if [ -f web/vendor/package-lock.json ]; then
  step vendor npm ci --prefix web/vendor --no-audit --no-fund
fi
if [ -f tests/web/package-lock.json ]; then
  step npm npm ci --prefix tests/web --no-audit --no-fund
fi
# The API reference page (Swagger UI) and the OpenAPI validator of the tests,
# pinned by docs/api/package-lock.json; no install scripts run.
if [ -f docs/api/package-lock.json ]; then
  step npm-api-docs npm ci --prefix docs/api --no-audit --no-fund --ignore-scripts
fi

pgdir=$(mktemp -d /tmp/trainyard-test-pg.XXXXXX)
chmod 755 "$pgdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  "$top/scripts/pg.sh" stop "$pgdir/data" || true
  rm -rf "$pgdir"
}
trap cleanup EXIT
step postgres scripts/pg.sh start "$pgdir/data" "$port" trust
export TRAINYARD_TEST_PG_URL="postgresql://postgres@127.0.0.1:$port"
# An integration test without the database fails here instead of skipping.
export TRAINYARD_TEST_REQUIRE_PG=1
export TRAINYARD_TEST_PG_DIR="$pgdir/data"
export TRAINYARD_TEST_PG_PORT="$port"
# Leaks fail the run; the PostgreSQL client library and Python are not ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

cd "$build"
# ctest counts a skipped test as passed: list each skip, and fail the run on
# one whose label or name TRAINYARD_TEST_ALLOW_SKIP does not name
# (scripts/check_skips.py; tests/README.md, "Skipped tests"). The labels are
# read before the run (--show-only rewrites ctest's LastTest.log).
rm -f "$STEP_LOGDIR/ctest-junit.xml"
ctest --show-only=json-v1 >"$STEP_LOGDIR/ctest-tests.json" 2>/dev/null || true
ctest_rc=0
(step --live ctest ctest --output-on-failure -j2 --timeout 900 \
  --output-junit "$STEP_LOGDIR/ctest-junit.xml" "$@") || ctest_rc=$?
skips_rc=0
(step --live skips python3 "$top/scripts/check_skips.py" "$STEP_LOGDIR/ctest-tests.json" \
  "$STEP_LOGDIR/ctest-junit.xml") || skips_rc=$?
[ "$ctest_rc" -eq 0 ] || exit "$ctest_rc"
[ "$skips_rc" -eq 0 ] || exit "$skips_rc"
# Then the unit and integration tests (filtered by the same arguments) under
# ThreadSanitizer in build-tsan/, on the same PostgreSQL; TRAINYARD_TEST_TSAN=0 skips it.
if [ "${TRAINYARD_TEST_TSAN:-1}" != 0 ]; then
  step --live tsan "$top/scripts/tsan.sh" "$@"
fi

#!/usr/bin/env bash
# The ThreadSanitizer half of `make test`: build everything with clang's
# -fsanitize=thread (Debug, -O1 -g, -Werror) in its own build directory and
# run the unit and integration tests there; any data race, lock-order
# inversion or unsafe call in a signal handler fails the run.
#   scripts/tsan.sh [extra ctest args, e.g. -R integration.test_jobs]
# scripts/test.sh calls it after the ASan run, with the PostgreSQL cluster it
# started still up: this script expects TRAINYARD_TEST_PG_URL (and _DIR,
# _PORT) in the environment and starts nothing of its own.
#
# How a report fails a test: TSAN_OPTIONS exitcode=66 makes a process that
# reported anything exit 66 (a unit test binary, a server or worker stopped
# with SIGTERM); tests/integration/harness.py also looks for the report in
# every server and worker log, so that a process killed, or expected to
# fail, cannot hide one. halt_on_error=0 lets one run name every race.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

: "${TRAINYARD_TEST_PG_URL:?run through scripts/test.sh, which starts PostgreSQL}"

build=${TRAINYARD_TSAN_BUILD:-build-tsan}
CC=${TSAN_CC:-clang} cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSANITIZE_THREAD=ON \
  -DWERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

# second_deadlock_stack: both stacks of a lock-order inversion, not one.
# Suppressions cover only the PostgreSQL client library (tests/tsan.supp).
export TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$top/tests/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
# The ASan options of scripts/test.sh mean nothing to this build.
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS

cd "$build"
# A skip counts as a pass in ctest; as in scripts/test.sh, one that is not
# allowed (TRAINYARD_TEST_ALLOW_SKIP) fails the run (scripts/check_skips.py).
mkdir -p Testing
rm -f Testing/tsan-junit.xml
ctest --show-only=json-v1 >Testing/tsan-tests.json 2>/dev/null || true
rc=0
ctest --output-on-failure -j2 --timeout 900 -L 'unit|integration' \
  --output-junit "$PWD/Testing/tsan-junit.xml" "$@" || rc=$?
python3 "$top/scripts/check_skips.py" Testing/tsan-tests.json Testing/tsan-junit.xml ||
  { [ "$rc" -ne 0 ] || rc=1; }
exit "$rc"

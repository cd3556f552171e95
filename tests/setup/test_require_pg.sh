#!/usr/bin/env bash
# A run whose database never came up must not look green. With
# TRAINYARD_TEST_REQUIRE_PG=1 (scripts/test.sh sets it; test_steps.sh checks
# that it does) an integration driver without TRAINYARD_TEST_PG_URL must fail
# and say why; without the flag it still skips (a driver run by hand).
# Needs no build: the harness stops at the database, before any binary.
set -uo pipefail
src=${TRAINYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
driver=$src/tests/integration/test_jobs.py
failures=0

out=$(env -u TRAINYARD_TEST_PG_URL TRAINYARD_TEST_REQUIRE_PG=1 /usr/bin/python3 "$driver" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "FAIL: with the flag and no database, $driver exited 0:"; echo "$out"; failures=1
elif ! grep -q "the test database is missing: TRAINYARD_TEST_PG_URL is not set" <<<"$out"; then
  echo "FAIL: $driver failed (exit $rc) but not for the missing database:"; echo "$out"; failures=1
fi

out=$(env -u TRAINYARD_TEST_PG_URL -u TRAINYARD_TEST_REQUIRE_PG /usr/bin/python3 "$driver" 2>&1)
rc=$?
# A skip exits 77 (harness.main()), which ctest reports as skipped.
if [ $rc -ne 77 ] || ! grep -q "OK (skipped=" <<<"$out"; then
  echo "FAIL: without the flag, want a skip (exit 77), got exit $rc:"; echo "$out"; failures=1
fi

[ $failures -eq 0 ] && echo "test_require_pg: ok"
exit $failures

#!/usr/bin/env bash
# A skipped test must not pass unseen (tests/README.md, "Skipped tests"):
#  1. a Python driver (harness.main()) that skipped anything exits 77, even
#     when the skip is one test of a class that otherwise passed; with a
#     failure beside the skip it exits 1 (a failure is never a skip);
#  2. every test that can skip is registered with SKIP_RETURN_CODE 77, so
#     ctest reports it as skipped (the build's CTestTestfile.cmake, when
#     TRAINYARD_BUILD_DIR has one);
#  3. scripts/test.sh, on a small ctest project whose driver skips, with
#     the real ctest and stub set-up commands (as test_steps.sh): the run
#     fails and names the skipped test and its reason; with its label or its
#     name in TRAINYARD_TEST_ALLOW_SKIP it passes and says it was allowed.
set -uo pipefail
src=${TRAINYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$src" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# 1. The drivers' exit status.
driver() { # driver FILE BODY: a unittest module run by harness.main()
  cat >"$1" <<EOF
import sys, unittest
sys.path.insert(0, "$src/tests/integration")
import harness
$2
if __name__ == "__main__":
    harness.main()
EOF
}
driver "$tmp/pass.py" '
class T(unittest.TestCase):
    def test_a(self):
        pass'
driver "$tmp/step.py" '
class T(unittest.TestCase):
    def test_a(self):
        pass
    def test_b(self):
        self.skipTest("the verifier is missing")'
driver "$tmp/class.py" '
class T(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no nft here")
    def test_a(self):
        pass'
driver "$tmp/both.py" '
class T(unittest.TestCase):
    def test_a(self):
        self.fail("broken")
    def test_b(self):
        self.skipTest("no tool")'
for c in pass:0 step:77 class:77 both:1; do
  out=$(/usr/bin/python3 "$tmp/${c%%:*}.py" 2>&1)
  rc=$?
  [ "$rc" -eq "${c#*:}" ] || fail "${c%%:*}.py exited $rc, want ${c#*:}: $out"
done
out=$(/usr/bin/python3 "$tmp/step.py" 2>&1)
grep -qx "SKIPPED: __main__.T.test_b: the verifier is missing" <<<"$out" ||
  fail "step.py does not name its skip: $out"

# 2. The registered tests: every unit, integration, packages, setup and web
# test has SKIP_RETURN_CODE 77 (fuzz and lint never skip).
build=${TRAINYARD_BUILD_DIR:-}
testfile=$build/tests/CTestTestfile.cmake
if [ -n "$build" ] && [ -f "$testfile" ]; then
  missing=$(/usr/bin/python3 - "$testfile" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
names = re.findall(r'^add_test\((?:\[=\[)?((?:unit|integration|packages|setup|web)\.[^ \]]+)',
                   text, re.M)
props = dict(re.findall(r'^set_tests_properties\((?:\[=\[)?([^ \]]+)(?:\]=\])? PROPERTIES (.*)$',
                        text, re.M))
bad = [n for n in names if 'SKIP_RETURN_CODE "77"' not in props.get(n, "")]
print(" ".join(bad) if names else "no tests found")
EOF
  )
  [ -z "$missing" ] || fail "registered without SKIP_RETURN_CODE 77: $missing"
fi

# 3. scripts/test.sh on a small project with the real ctest.
repo=$tmp/repo
mkdir -p "$repo/scripts" "$repo/build" "$tmp/bin" "$tmp/state"
cp "$src"/scripts/*.sh "$src"/scripts/*.py "$repo/scripts/"
printf '#!/bin/sh\nexit 0\n' >"$repo/scripts/pg.sh"
cat >"$tmp/proj.cmake" <<EOF
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
add_test(NAME unit.passes COMMAND /usr/bin/python3 $tmp/pass.py)
add_test(NAME integration.test_skips_a_step COMMAND /usr/bin/python3 $tmp/step.py)
set_tests_properties(unit.passes PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
set_tests_properties(integration.test_skips_a_step PROPERTIES LABELS "integration;isolate"
  SKIP_RETURN_CODE 77)
EOF
mkdir -p "$tmp/proj"
cp "$tmp/proj.cmake" "$tmp/proj/CMakeLists.txt"
cmake -S "$tmp/proj" -B "$repo/build" >"$tmp/cmake.log" 2>&1 || fail "cmake: $(cat "$tmp/cmake.log")"
# Stubs for what test.sh installs, configures and builds; ctest is real.
printf '#!/bin/sh\nprintf "install ok installed"\n' >"$tmp/bin/dpkg-query"
printf '#!/bin/sh\nexit 1\n' >"$tmp/bin/apt-get"
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/cmake"
chmod 755 "$tmp/bin"/* "$repo/scripts/pg.sh"

run_test_sh() { # run_test_sh [VAR=VALUE...]: sets rc and out
  out=$(env -u TRAINYARD_TEST_BUILD -u TRAINYARD_TEST_ALLOW_SKIP PATH="$tmp/bin:$PATH" \
    TRAINYARD_TEST_TSAN=0 "$@" bash "$repo/scripts/test.sh" 2>&1 </dev/null)
  rc=$?
}
run_test_sh
[ "$rc" -ne 0 ] || fail "test.sh passed a run with a skipped test: $out"
grep -qF "skipped: integration.test_skips_a_step (labels: integration,isolate): NOT allowed" \
  <<<"$out" || fail "test.sh does not name the skip as not allowed: $out"
grep -qF "SKIPPED: __main__.T.test_b: the verifier is missing" <<<"$out" ||
  fail "test.sh does not give the skip's reason: $out"
grep -qF 'test: step "skips" failed' <<<"$out" || fail "the failing step is not named: $out"
for allow in isolate integration.test_skips_a_step "unit, isolate"; do
  run_test_sh TRAINYARD_TEST_ALLOW_SKIP="$allow"
  [ "$rc" -eq 0 ] || fail "TRAINYARD_TEST_ALLOW_SKIP='$allow': test.sh exited $rc: $out"
  grep -qF "skipped: integration.test_skips_a_step (labels: integration,isolate): allowed" \
    <<<"$out" || fail "TRAINYARD_TEST_ALLOW_SKIP='$allow': the allowed skip is not listed: $out"
done

if [ $failures -ne 0 ]; then
  echo "test_skips: $failures failure(s)"
  exit 1
fi
echo "test_skips: ok"

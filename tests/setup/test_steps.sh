#!/usr/bin/env bash
# Step reporting of scripts/lib.sh and of the scripts that use it (run.sh,
# test.sh, build.sh), without building anything: the scripts run from a copy
# of scripts/ in a temporary directory, with stub dpkg-query (everything
# installed), apt-get (must not run), cmake, npm and ctest first on PATH and a
# stub pg.sh. A failing step must be named, with an existing log that holds
# its output, and the script must stop there.
set -uo pipefail
src=${TRAINYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
export STUB_DIR=$tmp/state
export TRAINYARD_POLICY_RC=$tmp/policy-rc.d
mkdir -p "$bin" "$STUB_DIR"
unset TRAINYARD_TEST_BUILD TRAINYARD_DATABASE_URL

printf '#!/bin/sh\nprintf "install ok installed"\n' >"$bin/dpkg-query"
# shellcheck disable=SC2016 # expands in the stub
printf '#!/bin/sh\necho "apt-get $*" >>"$STUB_DIR/calls"; exit 1\n' >"$bin/apt-get"
cat >"$bin/cmake" <<'EOF'
#!/usr/bin/env bash
echo "cmake $*" >>"$STUB_DIR/calls"
case " $* " in
*" --build "*)
  echo "[ 50%] Building C object server/CMakeFiles/x.dir/x.c.o"
  if [ -n "${STUB_BUILD_FAIL:-}" ]; then
    echo "server/x.c:3:1: error: stub build failure" >&2
    echo "make: *** [Makefile:1: all] Error 2" >&2
    exit 2
  fi ;;
*)
  echo "-- Configuring done"
  if [ -n "${STUB_CONFIGURE_FAIL:-}" ]; then
    echo "CMake Error at CMakeLists.txt:1 (project): stub configure failure" >&2
    exit 1
  fi ;;
esac
exit 0
EOF
cat >"$bin/npm" <<'EOF'
#!/usr/bin/env bash
echo "npm $*" >>"$STUB_DIR/calls"
echo "npm ERR! stub npm failure" >&2
exit 1
EOF
cat >"$bin/ctest" <<'EOF'
#!/usr/bin/env bash
echo "ctest $* require_pg=${TRAINYARD_TEST_REQUIRE_PG:-unset}" >>"$STUB_DIR/calls"
echo "The following tests FAILED: stub"
exit 8
EOF
chmod 755 "$bin"/*
export PATH=$bin:$PATH

failures=0
fail() {
  echo "FAIL [$name]: $*"
  failures=$((failures + 1))
}

# fresh_repo: a new copy of scripts/ under $tmp/repo, pg.sh a stub.
fresh_repo() {
  rm -rf "$tmp/repo"
  mkdir -p "$tmp/repo/scripts"
  cp "$src"/scripts/*.sh "$src"/scripts/*.py "$tmp/repo/scripts/"
  cat >"$tmp/repo/scripts/pg.sh" <<'EOF'
#!/bin/sh
echo "pg.sh $*" >>"$STUB_DIR/calls"
if [ "$1" = start ] && [ -n "${STUB_PG_FAIL:-}" ]; then echo "stub pg failure" >&2; exit 1; fi
exit 0
EOF
  chmod 755 "$tmp/repo/scripts/pg.sh"
}

# run_script NAME SCRIPT [VAR=VALUE...]: runs scripts/SCRIPT of $tmp/repo;
# sets rc, err (its stderr), shown (stdout and stderr) and calls (the stubs' log).
run_script() {
  name=$1
  local script=$2
  shift 2
  rm -rf "${STUB_DIR:?}"/*
  env "$@" bash "$tmp/repo/scripts/$script" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
  rc=$?
  err=$(cat "$tmp/stderr")
  shown=$(cat "$tmp/stdout" "$tmp/stderr")
  calls=$(cat "$STUB_DIR/calls" 2>/dev/null)
}

# expect_step WHO STEP EXIT LOG TEXT: the failure message names STEP and LOG,
# LOG exists and holds TEXT, and TEXT was shown too.
expect_step() {
  local who=$1 step=$2 code=$3 log=$4 text=$5
  [ "$rc" -eq "$code" ] || fail "exit $rc, want $code: $err"
  grep -qxF "$who: step \"$step\" failed (exit $code); log: $log" <<<"$err" ||
    fail "want '$who: step \"$step\" failed (exit $code); log: $log' on stderr: $err"
  if [ ! -f "$log" ]; then
    fail "no log file $log"
  elif ! grep -qF "$text" "$log"; then
    fail "$log lacks '$text'"
  fi
  grep -qF "$text" <<<"$shown" || fail "'$text' was not shown: $shown"
  grep -q '^apt-get' <<<"$calls" && fail "apt-get ran: $calls"
}

r=$tmp/repo
for s in run:var/log build:build-release/log test:build/log; do
  who=${s%%:*}
  fresh_repo
  run_script "$who.sh, configure fails" "$who.sh" STUB_CONFIGURE_FAIL=1
  expect_step "$who" configure 1 "$r/${s#*:}/configure.log" "stub configure failure"
  grep -q -- '--build' <<<"$calls" && fail "went on to build after configure failed: $calls"

  fresh_repo
  run_script "$who.sh, build fails" "$who.sh" STUB_BUILD_FAIL=1
  expect_step "$who" build 2 "$r/${s#*:}/build.log" "server/x.c:3:1: error: stub build failure"
  # The build's output scrolls past: its errors are repeated beside the message.
  grep -qxF "server/x.c:3:1: error: stub build failure" <<<"$err" ||
    fail "the compiler error is not repeated on stderr: $err"
done

fresh_repo
run_script "run.sh, PostgreSQL fails" run.sh STUB_PG_FAIL=1
expect_step run postgres 1 "$r/var/log/postgres.log" "stub pg failure"

# test.sh: npm ci only with a lock file, then PostgreSQL, then ctest.
fresh_repo
run_script "test.sh, PostgreSQL fails" test.sh STUB_PG_FAIL=1
expect_step test postgres 1 "$r/build/log/postgres.log" "stub pg failure"
grep -q '^npm' <<<"$calls" && fail "npm ran without a package-lock.json: $calls"

fresh_repo
mkdir -p "$r/tests/web"
echo '{}' >"$r/tests/web/package-lock.json"
run_script "test.sh, npm ci fails" test.sh
expect_step test npm 1 "$r/build/log/npm.log" "npm ERR! stub npm failure"
grep -qxF "npm ci --prefix tests/web --no-audit --no-fund" <<<"$calls" ||
  fail "want npm ci --prefix tests/web --no-audit --no-fund: $calls"
grep -q '^pg.sh start' <<<"$calls" && fail "started PostgreSQL after npm failed: $calls"

# The dashboard's vendor code: npm ci in web/vendor when its lock file is
# there, before anything is started (each script that installs it).
for s in run:var/log build:build-release/log test:build/log; do
  who=${s%%:*}
  fresh_repo
  mkdir -p "$r/web/vendor"
  echo '{}' >"$r/web/vendor/package-lock.json"
  run_script "$who.sh, vendor npm ci fails" "$who.sh"
  expect_step "$who" vendor 1 "$r/${s#*:}/vendor.log" "npm ERR! stub npm failure"
  grep -qxF "npm ci --prefix web/vendor --no-audit --no-fund" <<<"$calls" ||
    fail "want npm ci --prefix web/vendor --no-audit --no-fund: $calls"
  grep -q '^pg.sh start' <<<"$calls" && fail "started PostgreSQL after npm failed: $calls"
done
# The API reference page's packages: npm ci with its lock file, no scripts.
for s in test:build/log build:build-release/log run:var/log; do
  who=${s%%:*}
  fresh_repo
  mkdir -p "$r/docs/api"
  echo '{}' >"$r/docs/api/package-lock.json"
  run_script "$who.sh, npm ci of docs/api fails" "$who.sh"
  expect_step "$who" npm-api-docs 1 "$r/${s#*:}/npm-api-docs.log" "npm ERR! stub npm failure"
  grep -q "^npm ci --prefix docs/api --no-audit --no-fund --ignore-scripts" <<<"$calls" ||
    fail "want npm ci --prefix docs/api ... --ignore-scripts: $calls"
done
grep -q '^pg.sh start' <<<"$calls" && fail "run.sh started PostgreSQL after npm failed: $calls"

fresh_repo
run_script "test.sh, ctest fails" test.sh
expect_step test ctest 8 "$r/build/log/ctest.log" "The following tests FAILED: stub"
grep -q '^ctest .*require_pg=1$' <<<"$calls" ||
  fail "ctest ran without TRAINYARD_TEST_REQUIRE_PG=1 (a missing database would skip): $calls"

# The helper itself: a good step returns 0 and keeps its output in the log
# (live: on stdout too); a failing command outside a step is reported.
name="lib.sh"
out=$(bash -c 'set -euo pipefail; . "$1"; step_init t "$2"
  step quiet echo quiet-output; step --live live echo live-output; echo after' _ \
  "$src/scripts/lib.sh" "$tmp/l" 2>&1)
[ "$out" = "$(printf 'live-output\nafter')" ] || fail "good steps printed: $out"
grep -qx quiet-output "$tmp/l/quiet.log" || fail "quiet.log lacks the output"
grep -qx live-output "$tmp/l/live.log" || fail "live.log lacks the output"
out=$(bash -c 'set -euo pipefail; . "$1"; step_init t "$2"
  false; echo after' _ "$src/scripts/lib.sh" "$tmp/l" 2>&1)
grep -qx 't: failed (exit 1) at line 2: false' <<<"$out" || fail "want the failing line named: $out"

if [ $failures -ne 0 ]; then
  echo "test_steps: $failures failure(s)"
  exit 1
fi
echo "test_steps: ok"

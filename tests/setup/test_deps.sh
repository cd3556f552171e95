#!/usr/bin/env bash
# scripts/deps.sh against stub dpkg-query, apt-get and sudo first on PATH and
# a policy-rc.d path in a temporary directory (TRAINYARD_POLICY_RC): it never
# runs the real apt-get nor touches /usr/sbin/policy-rc.d. For each case:
# the exit status, whether apt-get ran, that apt-get ran with a policy-rc.d
# that refuses to start services, and that the policy file is as it was.
set -uo pipefail
src=${TRAINYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
deps=$src/scripts/deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin"
export STUB_DIR=$tmp/state
export TRAINYARD_POLICY_RC=$tmp/policy-rc.d
mkdir -p "$STUB_DIR"

# dpkg-query -W -f=FORMAT [PACKAGE...]: every package is installed except
# those in $STUB_DIR/missing; without a package, one installed package that
# provides what $STUB_DIR/provides names.
cat >"$bin/dpkg-query" <<'EOF'
#!/usr/bin/env bash
fmt='' pkgs=()
for a; do case $a in -W) ;; -f=*) fmt=${a#-f=} ;; *) pkgs+=("$a") ;; esac; done
expand() {
  local out=$fmt
  out=${out//'${Status}'/$1}; out=${out//'${Package}'/$2}; out=${out//'${Provides}'/$3}
  printf '%b' "$out"
}
if [ ${#pkgs[@]} -eq 0 ]; then
  expand "install ok installed" stub-provider "$(cat "$STUB_DIR/provides")"
  exit 0
fi
rc=0
for p in "${pkgs[@]}"; do
  if grep -qxF "$p" "$STUB_DIR/missing"; then
    echo "dpkg-query: no packages found matching $p" >&2; rc=1
  else
    expand "install ok installed" "$p" ""
  fi
done
exit $rc
EOF
# apt-get: logs each call with what the policy file answers ("none" when there
# is none); install removes its packages from missing, unless told to fail.
cat >"$bin/apt-get" <<'EOF'
#!/usr/bin/env bash
pr=none
if [ -e "$TRAINYARD_POLICY_RC" ]; then "$TRAINYARD_POLICY_RC" postgresql start; pr=$?; fi
echo "$* policy=$pr" >>"$STUB_DIR/apt.log"
case $1 in
update) exit "${STUB_UPDATE_RC:-0}" ;;
install)
  if [ -n "${STUB_INSTALL_FAIL:-}" ]; then echo "E: stub: unable to install" >&2; exit 100; fi
  [ -n "${STUB_INSTALL_NOOP:-}" ] && exit 0
  shift
  for a; do
    case $a in -*) ;; *) grep -vxF "$a" "$STUB_DIR/missing" >"$STUB_DIR/m"; mv "$STUB_DIR/m" "$STUB_DIR/missing" ;; esac
  done
  exit 0 ;;
esac
exit 0
EOF
printf '#!/bin/sh\nexec "$@"\n' >"$bin/sudo"
chmod 755 "$bin"/*
export PATH=$bin:$PATH
if [ "$(command -v apt-get)" != "$bin/apt-get" ] || [ "$(command -v dpkg-query)" != "$bin/dpkg-query" ]; then
  echo "FAIL: the stubs are not first on PATH; not running deps.sh" >&2
  exit 1
fi
if ! grep -q TRAINYARD_POLICY_RC "$deps"; then
  echo "FAIL: $deps ignores TRAINYARD_POLICY_RC; not running it (it would touch /usr/sbin/policy-rc.d)" >&2
  exit 1
fi

failures=0
fail() {
  echo "FAIL [$name]: $*"
  failures=$((failures + 1))
}

# run_case NAME POLICY(present|absent) MISSING PROVIDES [VAR=VALUE...]
# Runs `deps.sh test`; sets rc, out (stdout+stderr) and apt (the apt-get log).
run_case() {
  name=$1 policy=$2
  rm -rf "${STUB_DIR:?}"/* "$TRAINYARD_POLICY_RC"
  : >"$STUB_DIR/missing"
  for p in $3; do echo "$p" >>"$STUB_DIR/missing"; done
  printf '%s' "$4" >"$STUB_DIR/provides"
  shift 4
  if [ "$policy" = present ]; then
    printf '#!/bin/sh\n# the site policy, not ours\nexit 101\n' >"$TRAINYARD_POLICY_RC"
    chmod 750 "$TRAINYARD_POLICY_RC"
    cp -p "$TRAINYARD_POLICY_RC" "$tmp/policy.orig"
  fi
  out=$(env "$@" bash "$deps" test 2>&1)
  rc=$?
  apt=$(cat "$STUB_DIR/apt.log" 2>/dev/null)
  if [ "$policy" = present ]; then
    if [ ! -f "$TRAINYARD_POLICY_RC" ]; then
      fail "the policy file that was there is gone"
    elif ! cmp -s "$tmp/policy.orig" "$TRAINYARD_POLICY_RC" ||
      [ "$(stat -c %a "$TRAINYARD_POLICY_RC")" != 750 ]; then
      fail "the policy file that was there changed"
    fi
  elif [ -e "$TRAINYARD_POLICY_RC" ]; then
    fail "left a policy file behind where there was none"
  fi
}

expect_ok_without_apt() {
  [ "$rc" -eq 0 ] || fail "exit $rc, want 0: $out"
  [ -z "$apt" ] || fail "apt-get ran with nothing missing: $apt"
}

expect_installed() { # PACKAGES
  [ "$rc" -eq 0 ] || fail "exit $rc after a good install, want 0: $out"
  [ "$(sed -n 1p <<<"$apt")" = "update -qq policy=101" ] ||
    fail "want apt-get update first, with services refused: $apt"
  grep -q "^install .*$1 policy=101\$" <<<"$apt" ||
    fail "want apt-get install $1 with services refused: $apt"
  [ ! -s "$STUB_DIR/missing" ] || fail "still missing: $(cat "$STUB_DIR/missing")"
}

expect_failure_naming() { # WHAT PACKAGES
  [ "$rc" -ne 0 ] || fail "exit 0 after a failed $1"
  grep -q "deps: .*$1.*not installed: $2" <<<"$out" ||
    fail "want a message naming $1 and the packages \"$2\": $out"
}

for policy in present absent; do
  run_case "nothing missing, policy $policy" "$policy" "" ""
  expect_ok_without_apt

  run_case "two missing, policy $policy" "$policy" "nftables chromium" ""
  expect_installed "nftables chromium"

  run_case "failed install, policy $policy" "$policy" "nftables chromium" "" STUB_INSTALL_FAIL=1
  expect_failure_naming "apt-get install failed (exit 100)" "nftables chromium"
done

# npm provided by an installed package (NodeSource's nodejs): not installed
# again, which would replace that nodejs.
run_case "npm provided by nodejs" absent "npm" "nodejs-dev, npm (= 10.8.2)"
expect_ok_without_apt

run_case "failed update" absent "nftables" "" STUB_UPDATE_RC=100
expect_failure_naming "apt-get update failed (exit 100)" "nftables"
grep -q '^install' <<<"$apt" && fail "apt-get install ran after a failed update: $apt"

run_case "install that installs nothing" present "nftables" "" STUB_INSTALL_NOOP=1
[ "$rc" -ne 0 ] || fail "exit 0 with a package still missing"
grep -q "still not installed after apt-get install: nftables" <<<"$out" ||
  fail "want the still-missing package named: $out"

if [ $failures -ne 0 ]; then
  echo "test_deps: $failures failure(s)"
  exit 1
fi
echo "test_deps: ok"

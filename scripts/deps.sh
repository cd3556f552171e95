#!/usr/bin/env bash
# Install the Debian 12 packages trainyard needs, only those that are missing.
#   scripts/deps.sh [build|test|bench]   (default: build)
# Runs apt-get update only when something has to be installed. Needs root or sudo.
# Exits 0 when every package is installed at the end, else non-zero with a
# message naming the packages it could not install.
# TRAINYARD_POLICY_RC: the policy-rc.d path (default /usr/sbin/policy-rc.d);
# tests point it elsewhere.
set -euo pipefail

# nodejs and npm: the API reference page's npm packages (docs/api).
want=(build-essential clang cmake pkg-config make
      libmicrohttpd-dev libpq-dev libjansson-dev libssl-dev libcurl4-openssl-dev libcmocka-dev
      postgresql python3 clang-format curl ca-certificates nodejs npm)
case "${1:-build}" in
  # Every set-up installs the dashboard's third-party code (web/vendor) with
  # npm, hence nodejs and npm above. The browser tests (tests/web) drive
  # Chromium with playwright-core from npm.
  # The example training scripts (tests/integration/test_examples.py) learn
  # real data that packages ship: sklearn's digits and fortunes-zh's text.
  # promtool (in Debian's prometheus) checks what /metrics writes
  # (tests/integration/test_metrics.py).
  test) want+=(python3-torch python3-torchvision python3-sklearn python3-pil fortunes-zh zsh
               iproute2 nftables chromium fonts-noto-cjk openssl systemd
               prometheus) ;;
  bench) want+=(python3-torch wrk nginx-light slurmctld slurmd slurm-client munge) ;;
esac

# Names that installed packages provide (NodeSource's nodejs provides npm and
# conflicts with Debian's npm: installing that would replace it).
provided() {
  dpkg-query -W -f='${Status}\t${Provides}\n' 2>/dev/null |
    awk -F'\t' '$1 ~ /install ok installed/ && $2 != "" {
      n = split($2, a, /, */)
      for (i = 1; i <= n; i++) { sub(/ .*/, "", a[i]); print a[i] }
    }' || true
}

# Sets missing=(the wanted packages that are neither installed nor provided).
find_missing() {
  missing=()
  local p prov=""
  for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  prov=$(provided)
  local still=()
  for p in "${missing[@]}"; do
    grep -qxF "$p" <<<"$prov" || still+=("$p")
  done
  missing=("${still[@]}")
}

find_missing
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep apt from starting the packaged PostgreSQL/Slurm services: trainyard
# runs its own private instances. A policy file already there (Debian's
# container images ship one) is left exactly as it is.
policy=${TRAINYARD_POLICY_RC:-/usr/sbin/policy-rc.d}
created_policy=0
# The EXIT trap must not fail: under set -e its status would become the
# script's, turning a good install into a failure.
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [ "$created_policy" = 1 ]; then
    $SUDO rm -f "$policy" || echo "deps: could not remove $policy" >&2
  fi
  return 0
}
trap cleanup EXIT
if [ ! -e "$policy" ]; then
  created_policy=1
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
fi

rc=0
$SUDO apt-get update -qq || rc=$?
if [ $rc -ne 0 ]; then
  echo "deps: apt-get update failed (exit $rc); not installed: ${missing[*]}" >&2
  exit 1
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
if [ $rc -ne 0 ]; then
  echo "deps: apt-get install failed (exit $rc); not installed: ${missing[*]}" >&2
  exit 1
fi
find_missing
if [ ${#missing[@]} -ne 0 ]; then
  echo "deps: still not installed after apt-get install: ${missing[*]}" >&2
  exit 1
fi
exit 0

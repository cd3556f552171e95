#!/usr/bin/env bash
# Install the Debian 12 packages trainyard needs, only those that are missing.
#   scripts/deps.sh [build|test|bench]   (default: build)
# Runs apt-get update only when something has to be installed. Needs root or sudo.
set -euo pipefail

want=(build-essential clang cmake pkg-config make
      libmicrohttpd-dev libpq-dev libjansson-dev libssl-dev libcurl4-openssl-dev libcmocka-dev
      postgresql python3 clang-format curl ca-certificates)
case "${1:-build}" in
  test) want+=(python3-torch iproute2 nftables) ;;
  bench) want+=(python3-torch wrk nginx-light slurmctld slurmd slurm-client munge) ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep apt from starting the packaged PostgreSQL/Slurm services: trainyard
# runs its own private instances.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  created_policy=1
fi
cleanup() { [ "$created_policy" = 1 ] && $SUDO rm -f "$policy"; }
trap cleanup EXIT
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

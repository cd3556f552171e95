#!/bin/sh
# Install trainyard's .deb files from a directory with apt, which pulls their
# Debian dependencies from the configured mirror (or an offline one), then
# remove the apt lists. Used by the Docker images and documented for sites:
#   packaging/install-debs.sh DIR PACKAGE...   (e.g. trainyard-server trainyard-cli)
# trainyard-examples comes along as a dependency of the server and the worker.
set -eu
dir=$1
shift
[ $# -gt 0 ] || { echo "usage: install-debs.sh DIR PACKAGE..." >&2; exit 2; }
debs=""
for p in "$@" trainyard-examples; do
  f=""
  for c in "$dir/${p}_"*.deb; do
    [ -e "$c" ] && f=$c
  done
  [ -n "$f" ] || { echo "install-debs: no $p package in $dir" >&2; exit 1; }
  debs="$debs $f"
done
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086 # one path per word
apt-get install -y --no-install-recommends $debs
rm -rf /var/lib/apt/lists/*

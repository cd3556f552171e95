#!/usr/bin/env bash
# `make package`: build the Debian packages with dpkg-deb from a release
# build: trainyard-server, trainyard-worker, trainyard-cli, and
# trainyard-examples (the templates' scripts, which the server checks and
# the worker runs, so both depend on it). Output: build-release/debs/*.deb.
#   packaging/build-debs.sh [OUT_DIR]
# TRAINYARD_PACKAGE_BUILD_DIR: an existing release build to package instead
# of configuring and building build-release (the package test uses its own).
# The Docker images run this same script (docker/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
build=${TRAINYARD_PACKAGE_BUILD_DIR:-build-release}
out=${1:-$build/debs}
step_init package "$build/log"

if [ -z "${TRAINYARD_PACKAGE_BUILD_DIR:-}" ]; then
  step --live deps scripts/deps.sh build
  step configure env CC="${CC:-clang}" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
  step --live build cmake --build "$build" -j"$(nproc)" --target trainyard-server trainyard-worker trainyard trainyard-nccl-probe
fi

# The front-end code from npm that the server serves (web/README.md
# "Third-party code", docs/api/README.md), when the tree has not got it yet.
if [ -f web/vendor/package-lock.json ] && [ ! -d web/vendor/node_modules ]; then
  step vendor npm ci --prefix web/vendor --no-audit --no-fund
fi
if [ -f docs/api/package-lock.json ] && [ ! -d docs/api/node_modules ]; then
  step npm-api-docs npm ci --prefix docs/api --no-audit --no-fund --ignore-scripts --omit=dev
fi

babs=$(cd "$build" && pwd)
version=$(sed -n 's/^project(trainyard VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out"
out=$(cd "$out" && pwd)

# pkgdir NAME: a fresh staging root for package NAME.
pkgdir() { mkdir -p "$stage/$1/DEBIAN"; echo "$stage/$1"; }

# control NAME ARCH DEPENDS DESCRIPTION: write DEBIAN/control.
control() {
  local d=$stage/$1 size
  size=$(du -sk --exclude=DEBIAN "$d" | cut -f1)
  cat >"$d/DEBIAN/control" <<CTL
Package: $1
Version: $version
Architecture: $2
Maintainer: trainyard <trainyard@localhost>
Installed-Size: $size
Depends: $3
Section: science
Priority: optional
Homepage: https://trainyard.invalid
Description: $4
CTL
}

# maint NAME: copy packaging/debian/NAME.{postinst,prerm,postrm,conffiles}.
maint() {
  local f
  for f in postinst prerm postrm; do
    if [ -f "packaging/debian/$1.$f" ]; then
      install -m 0755 "packaging/debian/$1.$f" "$stage/$1/DEBIAN/$f"
    fi
  done
  if [ -f "packaging/debian/$1.conffiles" ]; then
    install -m 0644 "packaging/debian/$1.conffiles" "$stage/$1/DEBIAN/conffiles"
  fi
}

# shlibdeps BINARY...: the Depends of the shared libraries they link, from
# dpkg-shlibdeps (dpkg-dev), so the names fit the distribution that built
# them (Debian 12's libssl3, Ubuntu 24.04's libssl3t64, ...).
shlibdeps() {
  local w deps
  w=$(mktemp -d "$stage/shlibs.XXXXXX")
  mkdir -p "$w/debian"
  printf 'Source: trainyard\n\nPackage: trainyard\nArchitecture: any\n' >"$w/debian/control"
  deps=$(cd "$w" && dpkg-shlibdeps -O "$@" 2>"$w/err" | sed -n 's/^shlibs:Depends=//p')
  if [ -z "$deps" ]; then
    echo "package: dpkg-shlibdeps found no dependencies for $*:" >&2
    cat "$w/err" >&2
    exit 1
  fi
  rm -rf "$w"
  echo "$deps"
}

docs() { # NAME FILE...: into /usr/share/doc/NAME
  local n=$1
  shift
  install -d "$stage/$n/usr/share/doc/$n"
  install -m 0644 "$@" "$stage/$n/usr/share/doc/$n/"
}

# (Assignments, so that a failure stops the script under set -e.)
srv_deps=$(shlibdeps "$babs/server/trainyard-server")
wrk_deps=$(shlibdeps "$babs/worker/trainyard-worker")
cli_deps=$(shlibdeps "$babs/cli/trainyard")

# trainyard-examples: the templates' training scripts, one path on every node.
d=$(pkgdir trainyard-examples)
install -d "$d/usr/share/trainyard"
cp -r examples "$d/usr/share/trainyard/examples"
find "$d/usr/share/trainyard/examples" -name '__pycache__' -prune -exec rm -rf {} +
docs trainyard-examples examples/README.md
control trainyard-examples all "python3" \
  "trainyard's template training scripts (PyTorch)
 The scripts the job templates run, shared by the server (which checks
 them) and every worker (which runs them). They need PyTorch on the nodes."

# trainyard-server: binary, dashboard, templates, unit, default config.
d=$(pkgdir trainyard-server)
install -D -m 0755 "$babs/server/trainyard-server" "$d/usr/bin/trainyard-server"
install -d "$d/usr/share/trainyard"
# web/ as served, but of the npm packages only the files the server serves
# (server/http/static_files.c static_vendor_file) and their licences.
(cd web && find . -path ./vendor/node_modules -prune -o -type f ! -name README.md \
  ! -path './vendor/package*.json' -print) |
  while read -r f; do install -D -m 0644 "web/$f" "$d/usr/share/trainyard/web/$f"; done
if [ -d web/vendor/node_modules/echarts ]; then
  for f in dist/echarts.min.js dist/echarts.esm.min.mjs i18n/langZH.js lib/i18n/langZH.js LICENSE NOTICE; do
    if [ -f "web/vendor/node_modules/echarts/$f" ]; then
      install -D -m 0644 "web/vendor/node_modules/echarts/$f" \
        "$d/usr/share/trainyard/web/vendor/node_modules/echarts/$f"
    fi
  done
fi
# The API reference page (api_docs_dir; server/api/api_openapi.c serves these).
if [ -f docs/api/index.html ]; then
  install -D -m 0644 docs/api/index.html "$d/usr/share/trainyard/api-docs/index.html"
  install -D -m 0644 docs/api/init.js "$d/usr/share/trainyard/api-docs/init.js"
  for f in swagger-ui.css swagger-ui-bundle.js LICENSE NOTICE; do
    if [ -f "docs/api/node_modules/swagger-ui-dist/$f" ]; then
      install -D -m 0644 "docs/api/node_modules/swagger-ui-dist/$f" \
        "$d/usr/share/trainyard/api-docs/node_modules/swagger-ui-dist/$f"
    fi
  done
fi
# The templates themselves; templates/README.md is for whoever writes one.
install -d "$d/usr/share/trainyard/templates"
install -m 0644 templates/*.json "$d/usr/share/trainyard/templates/"
install -D -m 0644 packaging/systemd/trainyard-server.service "$d/lib/systemd/system/trainyard-server.service"
install -D -m 0640 packaging/etc/server.conf "$d/etc/trainyard/server.conf"
install -D -m 0600 packaging/etc/trainyard-server.default "$d/etc/default/trainyard-server"
docs trainyard-server docs/operations.md docs/operations.zh-CN.md server/README.md \
  docs/metrics.md docs/metrics.zh-CN.md docs/grafana-trainyard.json
maint trainyard-server
control trainyard-server "$arch" \
  "$srv_deps, trainyard-examples (= $version), passwd" \
  "trainyard server: API, dashboard, scheduler, audit trail
 Runs the REST API and the web dashboard, schedules jobs on the GPU nodes
 and keeps the signed audit trail, in PostgreSQL 15 (local or remote).
 Recommends postgresql for a single-machine install."
sed -i '/^Depends:/a Recommends: postgresql (>= 15)' "$d/DEBIAN/control"

# trainyard-worker: the node agent, the NCCL probe, unit, drop-in, defaults.
d=$(pkgdir trainyard-worker)
install -D -m 0755 "$babs/worker/trainyard-worker" "$d/usr/bin/trainyard-worker"
if [ -x "$babs/worker/trainyard-nccl-probe" ]; then
  install -D -m 0755 "$babs/worker/trainyard-nccl-probe" "$d/usr/bin/trainyard-nccl-probe"
fi
install -D -m 0644 packaging/systemd/trainyard-worker.service "$d/lib/systemd/system/trainyard-worker.service"
install -D -m 0600 packaging/etc/trainyard-worker.default "$d/etc/default/trainyard-worker"
docs trainyard-worker packaging/systemd/isolate-network.conf docs/operations.md \
  docs/operations.zh-CN.md worker/README.md
maint trainyard-worker
control trainyard-worker "$arch" \
  "$wrk_deps, trainyard-examples (= $version), python3, passwd" \
  "trainyard worker: the GPU node agent
 Joins a trainyard server, reports the node's GPUs, and starts, watches and
 restarts the ranks of the jobs placed on it. Recommends python3-torch; the
 ranks need PyTorch (with CUDA on GPU nodes) and, for --isolate-network,
 nftables."
sed -i '/^Depends:/a Recommends: python3-torch, nftables, iproute2' "$d/DEBIAN/control"

# trainyard-cli: the command line.
d=$(pkgdir trainyard-cli)
install -D -m 0755 "$babs/cli/trainyard" "$d/usr/bin/trainyard"
if [ -f cli/completion/trainyard.bash ]; then
  install -D -m 0644 cli/completion/trainyard.bash "$d/usr/share/bash-completion/completions/trainyard"
fi
if [ -f cli/completion/_trainyard ]; then
  install -D -m 0644 cli/completion/_trainyard "$d/usr/share/zsh/vendor-completions/_trainyard"
fi
docs trainyard-cli cli/README.md
control trainyard-cli "$arch" "$cli_deps" \
  "trainyard command line
 Submits and follows jobs, lists nodes and the queue, and exports and
 verifies the signed audit trail offline."

for p in trainyard-examples trainyard-server trainyard-worker trainyard-cli; do
  a=$arch
  [ "$p" = trainyard-examples ] && a=all
  # Files as root:root whatever the builder's uid: --root-owner-group.
  dpkg-deb --root-owner-group -Zxz --build "$stage/$p" "$out/${p}_${version}_${a}.deb" >/dev/null
  echo "package: $out/${p}_${version}_${a}.deb"
done

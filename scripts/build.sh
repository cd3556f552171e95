#!/usr/bin/env bash
# `make build`: install what is missing and make a release build in
# build-release/. A failing step is named, with its log under build-release/log/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
step_init build build-release/log

step --live deps scripts/deps.sh build
step configure env CC="${CC:-clang}" cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release
step --live build cmake --build build-release -j"$(nproc)"
# The dashboard's third-party code (ECharts), pinned by the lock file; the
# server serves it at /vendor/ and packages copy web/ with it (web/README.md).
if [ -f web/vendor/package-lock.json ]; then
  step vendor npm ci --prefix web/vendor --no-audit --no-fund
fi
# The API reference page that trainyard-server serves (api_docs_dir=docs/api).
if [ -f docs/api/package-lock.json ]; then
  step npm-api-docs npm ci --prefix docs/api --no-audit --no-fund --ignore-scripts --omit=dev
fi

#!/usr/bin/env bash
# tests/layers.sh must fail on an upward include and name the line: copy the
# server's tree, plant one include of each kind it must refuse, and check
# that it passes on the copy before and fails after, listing the line.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/server" "$tmp/server"
fail() { echo "layers_selftest: $*"; exit 1; }

"$here/tests/layers.sh" "$tmp" >/dev/null || fail "the unchanged copy does not pass"

# store/ (below api/) includes an api/ header.
cp "$tmp/server/store/db_jobs.c" "$tmp/db_jobs.c.orig"
printf '#include "routes.h"\n' >>"$tmp/server/store/db_jobs.c"
out=$("$here/tests/layers.sh" "$tmp") && fail "an upward include store -> api passed"
grep -q 'server/store/db_jobs.c:[0-9]*: #include "routes.h"' <<<"$out" ||
  fail "the offending line is not listed: $out"
cp "$tmp/db_jobs.c.orig" "$tmp/server/store/db_jobs.c"

# core/ (the lowest) includes http/ from a header.
printf '#include "srv.h"\n' >>"$tmp/server/core/clock.h"
out=$("$here/tests/layers.sh" "$tmp") && fail "an upward include core -> http passed"
grep -q 'server/core/clock.h:' <<<"$out" || fail "the offending header is not listed: $out"
cp "$here/server/core/clock.h" "$tmp/server/core/clock.h"

# An include by relative path would dodge the lookup: refused too.
printf '#include "../api/routes.h"\n' >>"$tmp/server/jobs/jobspec.c"
"$here/tests/layers.sh" "$tmp" >/dev/null && fail "an include by path passed"

echo "layers_selftest: ok (3 planted includes refused)"

#!/usr/bin/env bash
# forecast_store.sh - dead tuples the queue forecast's store leaves per
# minute, the old write (delete and insert every row) next to the new one
# (only what changed), in one run (bench_forecast_store.c says how).
#
#   bench/db/forecast_store.sh PG_URL [JOBS] [REFRESHES]
#
# PG_URL: a PostgreSQL server (superuser); a database ty_bench_forecast is
# made there from sql/ and dropped at the end. BUILD_DIR: the build holding
# bench/db/bench_forecast_store (default build/).
set -euo pipefail
url=${1:?usage: forecast_store.sh PG_URL [JOBS] [REFRESHES]}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BUILD_DIR:-$root/build}/bench/db/bench_forecast_store
db=ty_bench_forecast
psql "$url/postgres" -qAt -c "SET client_min_messages = warning" \
    -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
trap 'psql "$url/postgres" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null' EXIT
for f in "$root"/sql/[0-9]*.sql; do
    psql "$url/$db" -v ON_ERROR_STOP=1 -qAt -1 -f "$f" >/dev/null
done
# autovacuum would clear n_dead_tup in the middle of a run
psql "$url/$db" -qAt -c "ALTER TABLE queue_forecast SET (autovacuum_enabled = false)" \
    -c "ALTER TABLE queue_forecast_totals SET (autovacuum_enabled = false)"
"$bin" "$url/$db" "${2:-10000}" "${3:-60}"

#!/usr/bin/env bash
# metrics_page.sh - a job's metric page (server/store/db_logs.c
# db_metrics_read) at 10,000,000 metric points, before and after
# sql/021_metrics_page_index.sql, as EXPLAIN (ANALYZE, BUFFERS) figures.
#
#   bench/db/metrics_page.sh PG_URL [ROWS]
#
# PG_URL: a PostgreSQL server (superuser; a database ty_bench_metrics is
# made there and dropped at the end). ROWS: points to load (10000000).
# The points belong to 200 jobs (ROWS/200 each), 20 running at a time.
# The schema is sql/ up to 021 without it ("before"), then 021 ("after");
# each query is run three times and the last run is reported (warm cache).
set -euo pipefail
url=${1:?usage: metrics_page.sh PG_URL [ROWS]}
rows=${2:-10000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
db=ty_bench_metrics
psql "$url/postgres" -qAt -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
trap 'psql "$url/postgres" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null' EXIT
q() { psql "$url/$db" -v ON_ERROR_STOP=1 -qAt "$@"; }
for f in "$root"/sql/[0-9]*.sql; do
    [ "$(basename "$f")" = 021_metrics_page_index.sql ] && continue
    q -1 -f "$f" >/dev/null
done
t0=$(date +%s)
# 20 jobs run at a time, each writing PER points interleaved with the other
# 19's; job ids and ids grow together, as on a cluster. The points are
# loaded without the foreign key's per-row check (replica role) and with
# metrics_job built afterwards: the same schema, made faster.
per=$((rows / 200))
q -c "INSERT INTO teams (name) VALUES ('bench')" \
  -c "INSERT INTO users (username, role, password_hash) VALUES ('bench', 'admin', 'x')" \
  -c "INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, time_limit_s,
        max_restarts) SELECT 'j' || g, 1, 1, '{}', 'SUCCEEDED', 1, 8, 0, 0
        FROM generate_series(1, 200) g" \
  -c "DROP INDEX metrics_job" \
  -c "SET session_replication_role = replica" \
  -c "INSERT INTO metrics (job_id, attempt, rank, step, ts, vals) SELECT
        1 + g / ($per * 20) * 20 + g % 20, 1, 0, g / 20, now(),
        jsonb_build_object('loss', 1.0 / (1 + g / 20)) FROM generate_series(0, $rows - 1) g" \
  -c "CREATE INDEX metrics_job ON metrics(job_id, step, id)" \
  -c "VACUUM ANALYZE metrics"
echo "loaded $rows points in $(( $(date +%s) - t0 )) s" >&2
# Job 7 (of the first 20: the rest of the table was written after it): a
# page of 5,000 (the API's default limit) from its start, from its middle,
# and its last page (the poll of a finished job's chart: nothing new).
mid=$(q -c "SELECT id FROM metrics WHERE job_id = 7 ORDER BY id OFFSET $((per / 2)) LIMIT 1")
last=$(q -c "SELECT max(id) FROM metrics WHERE job_id = 7")
measure() { # label
    for after in 0 "$mid" "$last"; do
        local plan
        for _ in 1 2 3; do
            plan=$(q -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id, attempt, rank, step,
                ts, vals AS values FROM metrics WHERE job_id = 7 AND id > $after ORDER BY id
                LIMIT 5000")
        done
        python3 - "$1" "$after" "$plan" <<'PY'
import json, sys
label, after, plan = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])[0]
def walk(n, out):
    out.append(n)
    for c in n.get("Plans", []):
        walk(c, out)
    return out
nodes = walk(plan["Plan"], [])
scan = [n for n in nodes if "Scan" in n["Node Type"]][0]
# rows the leaf scans read: what they returned and what they threw away
read = sum(n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0) +
           n.get("Rows Removed by Index Recheck", 0) for n in nodes if not n.get("Plans"))
bufs = plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0)
sort = "yes" if any(n["Node Type"] == "Sort" for n in nodes) else "no"
print("| %s | %s | %s%s | %s | %d | %d | %d | %.2f |" % (
    label, after, scan["Node Type"], " on " + scan["Index Name"] if "Index Name" in scan else "",
    sort,
    plan["Plan"]["Actual Rows"], read, bufs, plan["Execution Time"]))
PY
    done
}
echo "| schema | after id | scan | sort | rows returned | rows read | buffers | ms |"
echo "|---|---|---|---|---|---|---|---|"
measure before
q -1 -f "$root/sql/021_metrics_page_index.sql" >/dev/null
q -c "ANALYZE metrics"
measure after

#!/usr/bin/env bash
# bench/api/run.sh - API throughput of trainyard-server next to nginx, and the
# cost of the audit write on a job submit (see bench/RESULTS.md, "## API" and
# "## Audit cost").
#
# Starts, all on 127.0.0.1 and stopped on exit: a private PostgreSQL (temp
# dir, free port, scripts/pg.sh, fsync off), a release trainyard-server and
# nginx. Loads 10,000 queued jobs with SQL (the fixture; see below), then:
#   (a) wrk GET  /api/v1/jobs?limit=50   64 connections, 2 threads
#   (b) wrk POST /api/v1/jobs            64 connections, 2 threads
#   (c) wrk GET  nginx static file with the body of (a), byte for byte
#   audit cost: pgbench replays the submit's SQL with and without the three
#   audit statements (bench/api/audit_cost.sh).
# Env: BENCH_DURATION (seconds per wrk/pgbench run, default 10),
#      BUILD_DIR (default build-bench), HTTP_THREADS (default 4).
# Needs: cmake, clang, PostgreSQL, wrk, nginx, python3 (scripts/deps.sh bench).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dur=${BENCH_DURATION:-10}
build=${BUILD_DIR:-$root/build-bench}
threads=${HTTP_THREADS:-4}
server=$build/server/trainyard-server
pw=benchmark-admin-pw

for t in wrk nginx python3 psql pgbench; do
  command -v "$t" >/dev/null || { echo "run.sh: $t not found (scripts/deps.sh bench)" >&2; exit 1; }
done

# Always (re)build: an old binary would measure old code.
echo "== building the release server in $build"
CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target trainyard-server >/dev/null

tmp=$(mktemp -d /tmp/tybench-api.XXXXXX)
chmod 755 "$tmp"
srv_pid="" ngx_pid=""
cleanup() {
  set +e
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  [ -n "$ngx_pid" ] && kill "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null
  "$root/scripts/pg.sh" stop "$tmp/pg"
  [ -n "${KEEP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL: up to 20 s
  python3 - "$1" <<'PY'
import sys, time, urllib.request
for _ in range(200):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1).read(); sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
}

pg_port=$(free_port)
"$root/scripts/pg.sh" start "$tmp/pg" "$pg_port" trust
pg="postgresql://postgres@127.0.0.1:$pg_port"
psql -qAt "$pg/postgres" -c 'CREATE DATABASE bench'
sql() { psql -v ON_ERROR_STOP=1 -qAt "$pg/bench" "$@"; }

TRAINYARD_ADMIN_PASSWORD=$pw "$server" --database-url "$pg/bench" --create-admin admin \
  >"$tmp/create-admin.log" 2>&1
port=$(free_port)
"$server" --database-url "$pg/bench" --listen "127.0.0.1:$port" --access-log false \
  --http-threads "$threads" --data-dir "$tmp/server" >"$tmp/server.log" 2>&1 &
srv_pid=$!
wait_http "http://127.0.0.1:$port/healthz" || { cat "$tmp/server.log" >&2; exit 1; }
base="http://127.0.0.1:$port"

# Fixture: one job through the API (so its stored spec is what the server
# writes), then 9,999 copies of it and their "submitted" job_events by SQL.
# Direct SQL (under a second) instead of 10,000 API submits; it writes no
# audit rows for the copies.
token=$(python3 "$here/setup.py" "$base" "$pw" "$tmp")
t0=$(date +%s.%N)
sql <<'SQL'
INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, gpus_per_node,
                  time_limit_s, max_restarts)
SELECT 'bulk-' || g, j.team_id, j.user_id, j.spec, 'QUEUED', j.priority, j.gpus,
       j.gpus_per_node, j.time_limit_s, j.max_restarts
FROM generate_series(1, 9999) g, (SELECT * FROM jobs ORDER BY id LIMIT 1) j;
INSERT INTO job_events (job_id, from_state, to_state, reason, actor)
SELECT id, NULL, 'QUEUED', 'submitted', 'bench-fixture' FROM jobs WHERE name LIKE 'bulk-%';
ANALYZE;
SQL
t1=$(date +%s.%N)
njobs=$(sql -c 'SELECT count(*) FROM jobs')
printf '== fixture: %s jobs in the database (bulk SQL load %.2f s)\n' "$njobs" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"

# nginx serves the exact bytes of the GET answer.
mkdir -p "$tmp/nginx/www" "$tmp/nginx/logs"
python3 - "$base/api/v1/jobs?limit=50" "$token" "$tmp/nginx/www/jobs.json" <<'PY'
import sys, urllib.request
r = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
open(sys.argv[3], "wb").write(urllib.request.urlopen(r, timeout=10).read())
PY
chmod -R a+rX "$tmp/nginx"
ngx_port=$(free_port)
cat >"$tmp/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  types { application/json json; }
  default_type application/json;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  server {
    listen 127.0.0.1:$ngx_port;
    root $tmp/nginx/www;
  }
}
CONF
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
ngx_pid=$!
wait_http "http://127.0.0.1:$ngx_port/jobs.json" || { cat "$tmp/nginx/logs/error.log" >&2; exit 1; }

export TY_TOKEN=$token TY_BENCH_DIR=$here
results=$tmp/results.txt
: >"$results"
# CPU ticks (utime + stime) of the server and of all PostgreSQL processes,
# to split each request's CPU cost between the two.
tick_hz=$(getconf CLK_TCK)
pm_pid=$(head -1 "$tmp/pg/postmaster.pid")
srv_ticks() { awk '{print $14 + $15}' "/proc/$srv_pid/stat"; }
pg_ticks() {
  local t=0 p
  for p in $pm_pid $(pgrep -P "$pm_pid"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
run_wrk() { # NAME SCRIPT URL
  local out s0 p0 s1 p1 n
  s0=$(srv_ticks) p0=$(pg_ticks)
  out=$(wrk -t2 -c64 -d"${dur}s" --timeout 5s -s "$here/$2" "$3")
  s1=$(srv_ticks) p1=$(pg_ticks)
  echo "$out" | grep -q '^RESULT ' || { echo "$out" >&2; exit 1; }
  n=$(echo "$out" | awk '/^RESULT /{print $5}')
  echo "$1 $(echo "$out" | sed -n 's/^RESULT //p') $(awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) \
    -v n="$n" -v hz="$tick_hz" 'BEGIN {printf "%.3f %.3f", s * 1000 / hz / n, p * 1000 / hz / n}')" |
    tee -a "$results" | sed 's/^/   /'
}
echo "== wrk: 2 threads, 64 connections, ${dur} s each; http threads $threads; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   (name req/s p50_ms p99_ms requests http_errors socket_errors bytes/answer"
echo "    server_cpu_ms/req postgres_cpu_ms/req; nginx rows: both columns are 0)"
run_wrk "trainyard-GET" get.lua "$base/api/v1/jobs?limit=50"
run_wrk "nginx-static" static.lua "http://127.0.0.1:$ngx_port/jobs.json"
run_wrk "trainyard-POST" post.lua "$base/api/v1/jobs"
echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Every submit wakes the scheduler (api_job_submit -> app_wake_scheduler),
# whose pass reads the whole queue (db_sched.c read_queue): time one read.
rq=$(sql -c "EXPLAIN (ANALYZE, FORMAT JSON) SELECT j.id, j.team_id, j.priority, j.gpus,
  j.gpus_per_node, (extract(epoch FROM j.created_at) * 1000)::bigint, j.time_limit_s FROM jobs j
  WHERE j.state IN ('QUEUED', 'RESTARTING') AND NOT j.cancel_requested AND NOT EXISTS (SELECT 1
  FROM allocations a WHERE a.job_id = j.id AND a.released_at IS NULL) ORDER BY j.id LIMIT 100000" |
  python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; print(p["Plan"]["Actual Rows"], "%.1f" % p["Execution Time"])')
echo "   scheduler queue read (db_sched.c read_queue) after the POST run: ${rq% *} rows, ${rq#* } ms"


# Stop the HTTP side so it takes no CPU from pgbench.
kill "$ngx_pid"; wait "$ngx_pid" 2>/dev/null || true; ngx_pid=""
kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; srv_pid=""
audit=$("$here/audit_cost.sh" "$pg/bench" "$dur")

echo
echo "## API ($(nproc) cores, $(date -u +%F))"
echo
echo "| scenario | req/s | p50 ms | p99 ms | errors | server CPU ms/req | PostgreSQL CPU ms/req |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk '{printf "| %s | %.0f | %.2f | %.2f | %d | %.3f | %.3f |\n", $1, $2, $3, $4, $6 + $7, $9, $10}' "$results"
awk '$1 == "trainyard-GET" {g = $2; b = $8} $1 == "nginx-static" {n = $2}
     $1 == "trainyard-POST" {p = $2}
     END {printf "\nGET answer: %d bytes (nginx file: same bytes). trainyard GET / nginx = %.3f\n", b, g / n}' \
  "$results"
echo
echo "## Audit cost (pgbench, 8 clients, ${dur} s each)"
echo
echo "$audit"

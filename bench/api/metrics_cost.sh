#!/usr/bin/env bash
# bench/api/metrics_cost.sh - what a Prometheus scrape every second costs the
# API (bench/RESULTS.md, "## Metrics scrape cost").
#
# Starts, all on 127.0.0.1 and stopped on exit: a private PostgreSQL (temp
# dir, free port, scripts/pg.sh), a release trainyard-server with a metrics
# token, and the fixture of bench/api/run.sh (10,000 queued jobs). Then,
# ROUNDS times, side by side in one run:
#   base    wrk GET /api/v1/jobs?limit=50, 64 connections, no scrape
#   scrape  the same, with GET /metrics once a second (bench/api/scrape.py)
# once with the default metrics_cache_ms (5000: the cluster's state is read
# at most every 5 s) and once with metrics_cache_ms=0 (every scrape reads it:
# the worst case). The server restarts between the two settings; within a
# setting the order alternates (base scrape, scrape base, ...).
# Prints a table: median req/s of each, the ratio scrape/base, scrape
# latency, and the CPU one scrape costs the server and PostgreSQL (300
# scrapes with no other load). Env: BENCH_DURATION (s per wrk run, default 10), ROUNDS (3),
# BUILD_DIR (build-bench), HTTP_THREADS (4).
# Needs: cmake, clang, PostgreSQL, wrk, python3 (scripts/deps.sh bench).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dur=${BENCH_DURATION:-10}
rounds=${ROUNDS:-3}
build=${BUILD_DIR:-$root/build-bench}
threads=${HTTP_THREADS:-4}
server=$build/server/trainyard-server
pw=benchmark-admin-pw
mtoken=bench-metrics-token-0123456789

for t in wrk python3 psql; do
  command -v "$t" >/dev/null || { echo "metrics_cost.sh: $t not found (scripts/deps.sh bench)" >&2; exit 1; }
done

echo "== building the release server in $build"
CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target trainyard-server >/dev/null

tmp=$(mktemp -d /tmp/tybench-metrics.XXXXXX)
chmod 755 "$tmp"
srv_pid="" scr_pid=""
stop_server() {
  if [ -n "$srv_pid" ]; then
    kill "$srv_pid" 2>/dev/null || true
    wait "$srv_pid" 2>/dev/null || true
    srv_pid=""
  fi
}
cleanup() {
  set +e
  [ -n "$scr_pid" ] && kill "$scr_pid" 2>/dev/null && wait "$scr_pid" 2>/dev/null
  stop_server
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
base="http://127.0.0.1:$port"

start_server() { # METRICS_CACHE_MS
  "$server" --database-url "$pg/bench" --listen "127.0.0.1:$port" --access-log false \
    --http-threads "$threads" --data-dir "$tmp/server" --metrics-token "$mtoken" \
    --metrics-cache-ms "$1" >>"$tmp/server.log" 2>&1 &
  srv_pid=$!
  wait_http "$base/healthz" || { tail -20 "$tmp/server.log" >&2; exit 1; }
}

start_server 5000
# The fixture of bench/api/run.sh: one job through the API, 9,999 copies by SQL.
token=$(python3 "$here/setup.py" "$base" "$pw" "$tmp")
sql <<'SQL'
INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, gpus_per_node,
                  time_limit_s, max_restarts)
SELECT 'bulk-' || g, j.team_id, j.user_id, j.spec, 'QUEUED', j.priority, j.gpus,
       j.gpus_per_node, j.time_limit_s, j.max_restarts
FROM generate_series(1, 9999) g, (SELECT * FROM jobs ORDER BY id LIMIT 1) j;
ANALYZE;
SQL
echo "== fixture: $(sql -c 'SELECT count(*) FROM jobs') jobs; wrk 2 threads, 64 connections, ${dur} s a run, $rounds rounds; http threads $threads"

export TY_TOKEN=$token TY_BENCH_DIR=$here TY_METRICS_TOKEN=$mtoken
results=$tmp/results.txt
: >"$results"
run_wrk() { # SETTING KIND
  local out scr=""
  if [ "$2" = scrape ]; then
    python3 "$here/scrape.py" "$base/metrics" >"$tmp/scrape.out" &
    scr_pid=$!
  fi
  out=$(wrk -t2 -c64 -d"${dur}s" --timeout 5s -s "$here/get.lua" "$base/api/v1/jobs?limit=50")
  if [ -n "$scr_pid" ]; then
    kill -TERM "$scr_pid"
    wait "$scr_pid" || true
    scr_pid=""
    scr=$(sed -n 's/^SCRAPES //p' "$tmp/scrape.out")
  fi
  echo "$out" | grep -q '^RESULT ' || { echo "$out" >&2; exit 1; }
  echo "$1 $2 $(echo "$out" | sed -n 's/^RESULT //p') ${scr:-0 0 0 0 0}" | tee -a "$results" |
    awk '{printf "   %-8s %-6s %8.0f req/s  p99 %6.2f ms  errors %d  scrapes %d (failed %d, p50 %.1f ms)\n",
          $1, $2, $3, $5, $7 + $8, $10, $11, $12}'
}
# CPU of the server and of all PostgreSQL processes per scrape, with no other
# load: 300 scrapes back to back (a precise figure; the throughput ratio
# above it is limited by the machine's noise).
tick_hz=$(getconf CLK_TCK)
pm_pid=$(head -1 "$tmp/pg/postmaster.pid")
ticks() { # PID...: utime + stime
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
cpu_per_scrape() { # SETTING
  local s0 p0 s1 p1 t0 t1
  s0=$(ticks "$srv_pid") p0=$(ticks "$pm_pid" $(pgrep -P "$pm_pid"))
  t0=$(date +%s.%N)
  python3 - "$base/metrics" <<'PY'
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["TY_METRICS_TOKEN"]})
for _ in range(300):
    urllib.request.urlopen(req, timeout=10).read()
PY
  t1=$(date +%s.%N)
  s1=$(ticks "$srv_pid") p1=$(ticks "$pm_pid" $(pgrep -P "$pm_pid"))
  echo "$1 $(awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v hz="$tick_hz" -v a="$t0" -v b="$t1" \
    'BEGIN {printf "%.3f %.3f %.3f", s * 1000 / hz / 300, p * 1000 / hz / 300, (b - a) * 1000 / 300}')" |
    tee -a "$tmp/cpu.txt" | awk '{printf "   %-8s one scrape: server CPU %.2f ms, PostgreSQL CPU %.2f ms, wall %.2f ms\n", $1, $2, $3, $4}'
}
: >"$tmp/cpu.txt"

for setting in cached uncached; do
  if [ "$setting" = uncached ]; then
    stop_server
    start_server 0
  fi
  # Warm-up: the first seconds of a fresh server are not the steady state.
  wrk -t2 -c64 -d2s -s "$here/get.lua" "$base/api/v1/jobs?limit=50" >/dev/null
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
      run_wrk "$setting" base
      run_wrk "$setting" scrape
    else
      run_wrk "$setting" scrape
      run_wrk "$setting" base
    fi
  done
  cpu_per_scrape "$setting"
done
exposition=$(curl -s -H "Authorization: Bearer $mtoken" "$base/metrics" | wc -c)

echo
echo "## Metrics cost ($(nproc) cores, $(date -u '+%F %H:%M UTC'), load before the table: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| metrics_cache_ms | req/s, no scrape (median of $rounds) | req/s, scrape every 1 s | scrape / no scrape | p99 ms no scrape / scrape | scrapes (failed) | scrape p50 ms under load | CPU ms per scrape, server + PostgreSQL (idle) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
python3 - "$results" "$tmp/cpu.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cpu = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
for setting, cache in (("cached", "5000 (default)"), ("uncached", "0")):
    b = [r for r in rows if r[0] == setting and r[1] == "base"]
    s = [r for r in rows if r[0] == setting and r[1] == "scrape"]
    med = lambda xs, i: statistics.median(float(x[i]) for x in xs)
    c = cpu[setting]
    print("| %s | %.0f | %.0f | %.3f | %.2f / %.2f | %d (%d) | %.1f | %.2f + %.2f |" % (
        cache, med(b, 2), med(s, 2), med(s, 2) / med(b, 2), med(b, 4), med(s, 4),
        sum(int(x[9]) for x in s), sum(int(x[10]) for x in s), med(s, 11), float(c[0]),
        float(c[1])))
PY
echo
echo "One exposition: $exposition bytes (the fixture's routes, 10,000 jobs, no nodes)."

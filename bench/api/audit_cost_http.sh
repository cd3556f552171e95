#!/usr/bin/env bash
# bench/api/audit_cost_http.sh - what the audit write costs a job submit:
# POST /api/v1/jobs per second with and without it, end to end over HTTP
# (the ratio), then the same at the SQL level (bench/api/audit_cost.sh:
# without / old three-statement / new two-statement audit_append).
#
# Builds two release servers side by side (BUILD_TESTING=OFF):
#   build-bench-audit-on   the product as it is;
#   build-bench-audit-off  -DTRAINYARD_BENCH_NO_AUDIT=ON: audit_append()
#                          returns at once (server/store/db_audit.c); bench only,
#                          the server warns at start.
# Then, in a private PostgreSQL (bench/lib/with-pg.sh; fsync off) and all on
# 127.0.0.1, ROUNDS times (default 2) alternating on, off: a fresh database,
# --create-admin, the server (--http-threads HTTP_THREADS, access log off),
# run.sh's fixture (setup.py: token, team "bench", one job; then 9,999
# copies of it by SQL), wrk POST /api/v1/jobs (post.lua; 2 threads, 64
# connections, BENCH_DURATION s), the server stopped. The audit rows written
# during the wrk run are counted (the "off" server must write none). Last,
# audit_cost.sh (ROUNDS rounds) on the database of the last "on" run.
# Everything is stopped and removed on exit, error or interrupt.
# Env: BENCH_DURATION (s per wrk/pgbench run, default 10), ROUNDS (default 2),
#      HTTP_THREADS (default 4), AUDIT_COST_TIME_LIMIT_S (default 900),
#      MODE (pgbench -M for audit_cost.sh, default prepared).
# Needs: cmake, clang, PostgreSQL, wrk, pgbench, python3 (scripts/deps.sh bench).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
on=$root/build-bench-audit-on
off=$root/build-bench-audit-off

if [ -z "${TY_AUDIT_COST_INNER:-}" ]; then
    for t in wrk pgbench psql python3; do
        command -v "$t" >/dev/null || { echo "audit_cost_http.sh: $t not found (scripts/deps.sh bench)" >&2; exit 1; }
    done
    # Always (re)build: an old binary would measure old code.
    for b in "$on:OFF" "$off:ON"; do
        echo "== building the release server in ${b%:*} (TRAINYARD_BENCH_NO_AUDIT=${b#*:})" >&2
        CC=${CC:-clang} cmake -S "$root" -B "${b%:*}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
            -DSANITIZE=OFF -DTRAINYARD_BENCH_NO_AUDIT="${b#*:}" >/dev/null 2>&1
        cmake --build "${b%:*}" -j2 --target trainyard-server >/dev/null
    done
    # with-pg.sh runs a Python driver; "python3 -c" hands over to the second
    # half of this script (below), with PostgreSQL up and BENCH_TMP set.
    export TY_AUDIT_COST_INNER=1 BUILD_DIR=$on
    exec "$root/bench/lib/with-pg.sh" audit-cost "${AUDIT_COST_TIME_LIMIT_S:-900}" \
        -c 'import os, sys; os.execv("/bin/bash", ["bash"] + sys.argv[1:])' "$here/audit_cost_http.sh"
fi

# ---- inside with-pg.sh: TRAINYARD_TEST_PG_URL, BENCH_TMP
dur=${BENCH_DURATION:-10}
rounds=${ROUNDS:-2}
threads=${HTTP_THREADS:-4}
tmp=$BENCH_TMP
pg=$TRAINYARD_TEST_PG_URL
pw=benchmark-admin-pw
srv_pid=""
stop_server() {
    [ -n "$srv_pid" ] || return 0
    kill "$srv_pid" 2>/dev/null || true
    wait "$srv_pid" 2>/dev/null || true
    srv_pid=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
tick_hz=$(getconf CLK_TCK)
pm_pid=$(head -1 "$tmp/pg/postmaster.pid")
ticks() { # PID...: utime + stime
    local t=0 p
    for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
    echo "$t"
}
pg_ticks() { ticks "$pm_pid" $(pgrep -P "$pm_pid"); }

run() { # on|off ROUND: one fresh database, one server, one wrk run
    local v=$1 r=$2 db=bench_$1_$2 build out cpu a0 a1 s0 s1 p0 p1 token
    [ "$v" = on ] && build=$on || build=$off
    psql -qAt "$pg/postgres" -c "CREATE DATABASE $db"
    sql() { psql -v ON_ERROR_STOP=1 -qAt "$pg/$db" "$@"; }
    TRAINYARD_ADMIN_PASSWORD=$pw "$build/server/trainyard-server" --database-url "$pg/$db" \
        --create-admin admin >"$tmp/create-admin.log" 2>&1 || { cat "$tmp/create-admin.log" >&2; exit 1; }
    "$build/server/trainyard-server" --database-url "$pg/$db" --listen "127.0.0.1:$port" \
        --access-log false --http-threads "$threads" --data-dir "$tmp/server-$v-$r" \
        >"$tmp/server-$v-$r.log" 2>&1 &
    srv_pid=$!
    for _ in $(seq 200); do
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "$base/healthz" 2>/dev/null && break
        kill -0 "$srv_pid" 2>/dev/null || { cat "$tmp/server-$v-$r.log" >&2; exit 1; }
        sleep 0.1
    done
    token=$(python3 "$here/setup.py" "$base" "$pw" "$tmp")
    # run.sh's fixture: 10,000 queued jobs (the scheduler reads them on every submit).
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
    a0=$(sql -c 'SELECT count(*) FROM audit_events')
    s0=$(ticks "$srv_pid") p0=$(pg_ticks)
    out=$(TY_TOKEN=$token TY_BENCH_DIR=$here wrk -t2 -c64 -d"${dur}s" --timeout 5s \
        -s "$here/post.lua" "$base/api/v1/jobs")
    s1=$(ticks "$srv_pid") p1=$(pg_ticks)
    a1=$(sql -c 'SELECT count(*) FROM audit_events')
    echo "$out" | grep -q '^RESULT ' || { echo "$out" >&2; exit 1; }
    stop_server
    out=$(echo "$out" | sed -n 's/^RESULT //p') # req/s p50 p99 requests http_err sock_err bytes
    cpu=$(awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v hz="$tick_hz" -v n="$(echo "$out" | cut -d' ' -f4)" \
        'BEGIN { printf "%.3f %.3f", s * 1000 / hz / n, p * 1000 / hz / n }')
    # v r req/s p50 p99 requests http_errors socket_errors bytes audit_rows srv_ms pg_ms load1
    echo "$v $r $out $((a1 - a0)) $cpu $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$tmp/rows" >&2
    [ "$v" = on ] && last_on=$db
    return 0
}

echo "== wrk POST: 2 threads, 64 connections, ${dur} s, http threads $threads; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: >"$tmp/rows"
last_on=""
for r in $(seq "$rounds"); do
    run on "$r"
    run off "$r"
done
echo "== load after the wrk runs: $(cut -d' ' -f1-3 /proc/loadavg); pgbench next" >&2
sqlcost=$(ROUNDS=$rounds "$here/audit_cost.sh" "$pg/$last_on" "$dur")
echo "== load after pgbench: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

echo
echo "### Audit cost over HTTP: POST /api/v1/jobs ($(nproc) cores, $(date -u +%F); wrk 2 threads, 64 connections, ${dur} s per run)"
echo
echo "| server | round | req/s | p50 ms | p99 ms | errors | audit rows written | server CPU ms/req | PostgreSQL CPU ms/req | load1 after |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '{ printf "| audit %s | %d | %.0f | %.2f | %.2f | %d | %d | %.3f | %.3f | %s |\n",
       $1, $2, $3, $4, $5, $7 + $8, $10, $11, $12, $13 }' "$tmp/rows"
echo
awk '{ s[$1] += $3; n[$1]++; if ($1 == "on") on[$2] = $3; else off[$2] = $3 }
     END { w = s["on"] / n["on"]; o = s["off"] / n["off"]
           printf "mean req/s: with audit %.0f, without %.0f; with / without = %.3f", w, o, w / o
           printf " (per round:"
           for (r = 1; r in on; r++) printf " %.3f", on[r] / off[r]
           printf ")\n" }' "$tmp/rows"
echo
echo "### Audit cost at the SQL level (bench/api/audit_cost.sh, pgbench -M ${MODE:-prepared}, 8 clients, ${dur} s per run)"
echo
echo "$sqlcost"

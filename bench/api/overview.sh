#!/usr/bin/env bash
# bench/api/overview.sh - time of GET /api/v1/overview, the dashboard
# overview's one call, on a cluster of NODES nodes (default 64) of 8 GPUs:
# every other node's GPUs held by a running job (a quarter of them flagged
# idle), every 16th node draining, and 1,000 queued jobs in 10 teams. Prints
# the median, p95 and max of REPS requests (default 20) over HTTP on
# loopback, after one warm-up.
#
# Starts on 127.0.0.1 and stops on exit: a private PostgreSQL (temp dir,
# free port, scripts/pg.sh) and trainyard-server from BUILD_DIR (default
# build-bench, built Release if missing its binary). The fixture is written
# by SQL; node heartbeats are not needed (last_seen_at is set ahead).
# Usage: bench/api/overview.sh [NODES]   Env: BUILD_DIR, REPS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
nodes=${1:-64}
reps=${REPS:-20}
build=${BUILD_DIR:-$root/build-bench}
server=$build/server/trainyard-server
pw=benchmark-admin-pw

if [ ! -x "$server" ]; then
  CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target trainyard-server >/dev/null
fi

tmp=$(mktemp -d /tmp/tybench-overview.XXXXXX)
chmod 755 "$tmp"
srv_pid=""
cleanup() {
  set +e
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  "$root/scripts/pg.sh" stop "$tmp/pg" >/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_port=$(free_port)
"$root/scripts/pg.sh" start "$tmp/pg" "$pg_port" trust >/dev/null
pg="postgresql://postgres@127.0.0.1:$pg_port"
psql -qAt "$pg/postgres" -c 'CREATE DATABASE bench'
sql() { psql -v ON_ERROR_STOP=1 -qAt "$pg/bench" "$@"; }

TRAINYARD_ADMIN_PASSWORD=$pw "$server" --database-url "$pg/bench" --create-admin admin \
  >"$tmp/create-admin.log" 2>&1
port=$(free_port)
"$server" --database-url "$pg/bench" --listen "127.0.0.1:$port" --access-log false \
  --data-dir "$tmp/server" >"$tmp/server.log" 2>&1 &
srv_pid=$!
base="http://127.0.0.1:$port"

sql <<SQL
INSERT INTO teams (name, gpu_quota) SELECT 'team' || i, 64 FROM generate_series(1, 10) i;
INSERT INTO nodes (name, state, credential_hash, last_seen_at)
SELECT 'gpu-' || lpad(i::text, 3, '0'), CASE WHEN i % 16 = 0 THEN 'draining' ELSE 'ready' END,
       md5(i::text), now() + interval '1 day' FROM generate_series(1, $nodes) i;
INSERT INTO gpus (node_id, idx, uuid, model, memory_mb, util_pct, mem_used_mb)
SELECT n.id, g, 'GPU-' || n.id || '-' || g, 'NVIDIA H200', 143771, (n.id * 7 + g * 13) % 100, 1000
FROM nodes n, generate_series(0, 7) g;
INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, time_limit_s, max_restarts)
SELECT 'run' || i, (SELECT min(id) FROM teams) + i % 10, (SELECT min(id) FROM users), '{}',
       'RUNNING', 1, 8, 86400, 0 FROM generate_series(1, $nodes / 2) i;
INSERT INTO attempts (job_id, attempt, state) SELECT id, 1, 'running' FROM jobs;
INSERT INTO allocations (attempt_id, job_id, node_id, node_rank, gpu_indices, rank_start)
SELECT a.id, a.job_id, n.id, 0, '{0,1,2,3,4,5,6,7}', 0
FROM (SELECT id, job_id, row_number() OVER (ORDER BY id) AS k FROM attempts) a
JOIN (SELECT id, row_number() OVER (ORDER BY id) AS k FROM nodes) n ON n.k = 2 * a.k - 1;
UPDATE gpus g SET low_util_since = now() - interval '2 hours', low_util_attempt = a.attempt_id
FROM allocations a WHERE a.node_id = g.node_id AND g.idx = ANY(a.gpu_indices) AND g.util_pct < 25;
INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, time_limit_s, max_restarts)
SELECT 'q' || i, (SELECT min(id) FROM teams) + i % 10, (SELECT min(id) FROM users), '{}',
       'QUEUED', 1, 1024, 86400, 0 FROM generate_series(1, 1000) i;
ANALYZE;
SQL
kill -0 "$srv_pid" 2>/dev/null || { echo "overview.sh: the server exited:" >&2; cat "$tmp/server.log" >&2; exit 1; }

python3 - "$base" "$pw" "$reps" <<'PY'
import http.client, json, statistics, sys, time
base, pw, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = base[len("http://"):].split(":")
for _ in range(300):
    try:
        c = http.client.HTTPConnection(host, int(port), timeout=5)
        c.request("GET", "/healthz")
        if c.getresponse().status == 200:
            break
    except OSError:
        time.sleep(0.1)
c = http.client.HTTPConnection(host, int(port), timeout=60)
c.request("POST", "/api/v1/auth/login", json.dumps({"username": "admin", "password": pw}),
          {"Content-Type": "application/json"})
r = c.getresponse()
body = r.read()
assert r.status == 200, body
cookie = r.getheader("Set-Cookie").split(";")[0]
times = []
for i in range(reps + 1):
    t = time.perf_counter()
    c.request("GET", "/api/v1/overview", headers={"Cookie": cookie})
    r = c.getresponse()
    data = r.read()
    assert r.status == 200, data
    if i > 0:
        times.append((time.perf_counter() - t) * 1000)
o = json.loads(data)
times.sort()
print("### GET /api/v1/overview: %d nodes, %d GPUs (%d idle flagged), %d teams queued, %d bytes; "
      "%d requests" % (len(o["nodes"]), sum(len(n["gpus"]) for n in o["nodes"]),
                       len(o["idle_allocated"]), len(o["queue_by_team"]), len(data), reps))
print()
print("| median ms | p95 ms | max ms |")
print("|---:|---:|---:|")
print("| %.1f | %.1f | %.1f |" % (statistics.median(times),
                                  times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))],
                                  times[-1]))
PY

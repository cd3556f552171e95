#!/usr/bin/env bash
# bench/audit/list.sh - page time of GET /api/v1/audit/events (the audit
# table of the dashboard) at EVENTS events (default 1,000,000): keyset paging
# (id < cursor, newest first) with and without filters, at the newest page
# and deep in the history. Prints a markdown table of the median and p95 of
# REPS requests (default 20) per scenario, measured by the client over HTTP
# on loopback, plus what PostgreSQL says the query took (EXPLAIN ANALYZE).
#
# Starts on 127.0.0.1 and stops on exit: a private PostgreSQL (temp dir,
# free port, scripts/pg.sh) and trainyard-server from BUILD_DIR (default
# build-bench, built Release if missing its binary). The events are written
# by SQL (INSERT ... SELECT generate_series: 1,000 actors, 100,000 targets,
# 20 actions, 30 days), not through the chain, which a list does not read.
# Usage: bench/audit/list.sh [EVENTS]   Env: BUILD_DIR, REPS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
events=${1:-1000000}
reps=${REPS:-20}
build=${BUILD_DIR:-$root/build-bench}
server=$build/server/trainyard-server
pw=benchmark-admin-pw

if [ ! -x "$server" ]; then
  CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target trainyard-server >/dev/null
fi

tmp=$(mktemp -d /tmp/tybench-auditlist.XXXXXX)
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

t0=$(date +%s%N)
sql <<SQL
INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, outcome, details,
                          prev_hash, hash)
SELECT h.top + i, t, to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       'user:u' || (i % 1000), '10.0.0.' || (i % 250),
       (ARRAY['job.submit','job.state','job.cancel','job.plan','node.state','node.drain',
              'node.undrain','user.login','user.create','team.update','token.create',
              'token.revoke','webhook.create','site.create','policy.update','dataset.create',
              'export.request','export.approve','export.download','policy.violation'])[1 + i % 20],
       'job:' || (i % 100000), 'success', '{"n":' || i || '}', repeat('0', 64), repeat('0', 64)
FROM (SELECT coalesce(max(id), 0) AS top FROM audit_events) h, generate_series(1, $events) i,
     LATERAL (SELECT now() - interval '30 days' + (i * interval '30 days') / $events AS t) x;
UPDATE audit_head SET seq = (SELECT max(id) FROM audit_events);
ANALYZE audit_events;
SQL
t1=$(date +%s%N)
total=$(sql -c 'SELECT count(*) FROM audit_events')
load_s=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')

kill -0 "$srv_pid" 2>/dev/null || { echo "list.sh: the server exited:" >&2; cat "$tmp/server.log" >&2; exit 1; }
python3 - "$base" "$pw" "$reps" "$pg/bench" "$total" "$load_s" <<'PY'
import http.client, json, statistics, subprocess, sys, time, urllib.parse
base, pw, reps, db, total, load_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], \
    int(sys.argv[5]), sys.argv[6]
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

def get(q):
    t = time.perf_counter()
    c.request("GET", "/api/v1/audit/events?" + q, headers={"Cookie": cookie})
    r = c.getresponse()
    data = r.read()
    ms = (time.perf_counter() - t) * 1000
    assert r.status == 200, data
    return ms, json.loads(data)

def sql(q):
    return subprocess.run(["psql", "-qAt", db, "-c", q], capture_output=True, text=True,
                          check=True).stdout

top = int(sql("SELECT max(id) FROM audit_events"))
first = int(sql("SELECT min(id) FROM audit_events"))
deep = first + 1000  # the oldest pages: 99.9 % of the table newer than the cursor
day = sql("SELECT to_char((min(ts) + interval '3 days') AT TIME ZONE 'UTC', "
          "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM audit_events").strip()
day_end = sql("SELECT to_char((min(ts) + interval '3 days 1 hour') AT TIME ZONE 'UTC', "
              "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM audit_events").strip()
def at(days):
    return sql("SELECT to_char((min(ts) + interval '%d days') AT TIME ZONE 'UTC', "
               "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM audit_events" % days).strip()
d29, d20 = at(1), at(10)
scen = [
    ("newest page, no filter", "limit=100"),
    ("oldest pages (cursor near the first id)", "limit=100&cursor=%d" % deep),
    ("actor (1 in 1,000), newest", "limit=100&actor=user:u7"),
    ("actor, oldest pages", "limit=100&actor=user:u7&cursor=%d" % (deep + 100000)),
    ("target (1 in 100,000)", "limit=100&target=job:4242"),
    ("action exact (1 in 20)", "limit=100&action=export.approve"),
    ("action prefix node. (3 in 20)", "limit=100&action=node."),
    ("action prefix, oldest pages", "limit=100&action=node.&cursor=%d" % (deep + 100000)),
    ("action prefix matching nothing (audit.)", "limit=100&action=audit."),
    ("time range: 1 hour, 27 days ago", "limit=100&since=%s&until=%s" % (day, day_end)),
    ("time range: 9 days from 29 days ago", "limit=100&since=%s&until=%s" % (d29, d20)),
    ("until 29 days ago (the oldest day)", "limit=100&until=%s" % d29),
    ("actor + time range", "limit=100&actor=user:u7&since=%s&until=%s" % (day, day_end)),
]
print("### GET /api/v1/audit/events: %s events (loaded by SQL in %s s), %d requests each, "
      "one client on loopback" % (format(total, ","), load_s, reps))
print()
print("| scenario | rows | median ms | p95 ms |")
print("|---|---:|---:|---:|")
for name, q in scen:
    get(q)  # warm
    times, rows = [], 0
    for _ in range(reps):
        ms, b = get(q)
        times.append(ms)
        rows = len(b["events"])
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print("| %s | %d | %.1f | %.1f |" % (name, rows, statistics.median(times), p95))
PY

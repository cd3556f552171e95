#!/usr/bin/env bash
# bench/audit/export.sh - export and verify time of a large audit trail
# through the real server: GET /api/v1/audit/export (JSON Lines and CSV) of
# N events (default 1,000,000), then "trainyard audit verify" of each file
# with the server's public key. Target (the issue): verify >= 200,000
# events/s.
#
# Steps, all on 127.0.0.1 and stopped on exit or error (PostgreSQL and the
# temp dir by bench/lib/with-pg.sh, the server by this script's trap):
#   1. private PostgreSQL (bench/lib/with-pg.sh; fsync off);
#   2. the release server starts once (migrations, audit signing key in its
#      data dir) and stops;
#   3. audit_gen --format pgcopy writes N events chaining from the head
#      (hashes as the server computes them; times ending an hour ago) and a
#      periodic checkpoint every 100,000 events signed with the server's key;
#      COPY loads them (the append-only triggers allow INSERT), audit_head
#      is set to the last event;
#   4. --create-admin (one more event, appended by the server on top of the
#      loaded chain), the server starts again, an API token is made;
#   5. per format: curl of the export (server RSS sampled every 50 ms while
#      it streams; CPU time of the server and of PostgreSQL over it), then
#      trainyard audit verify of the file (must say OK).
# Prints a Markdown table. The exports hold a few events more than N: the
# server's own (user.create, auth.login, token.create, audit.export).
# Usage: bench/audit/export.sh [EVENTS]
# Env: BUILD_DIR (default build-cli-bench), EXPORT_TIME_LIMIT_S (default 1800).
# Needs: cmake, clang, PostgreSQL, curl, python3 (scripts/deps.sh bench).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ -z "${TY_AUDIT_EXPORT_INNER:-}" ]; then
    build=${BUILD_DIR:-$root/build-cli-bench}
    for t in curl psql python3; do
        command -v "$t" >/dev/null || { echo "export.sh: $t not found (scripts/deps.sh bench)" >&2; exit 1; }
    done
    # Always (re)build: an old binary would measure old code.
    echo "== building the release server, CLI and audit_gen in $build" >&2
    CC=${CC:-clang} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF \
        -DTRAINYARD_BENCH_NO_AUDIT=OFF >/dev/null
    cmake --build "$build" -j2 --target trainyard-server trainyard audit_gen >/dev/null
    # with-pg.sh runs a Python driver; "python3 -c" hands over to the second
    # half of this script (below), with PostgreSQL up and BENCH_TMP set.
    export TY_AUDIT_EXPORT_INNER=1 BUILD_DIR=$build
    exec "$root/bench/lib/with-pg.sh" audit-export "${EXPORT_TIME_LIMIT_S:-1800}" \
        -c 'import os, sys; os.execv("/bin/bash", ["bash"] + sys.argv[1:])' "$here/export.sh" "$@"
fi

# ---- inside with-pg.sh: TRAINYARD_TEST_PG_URL, TRAINYARD_BUILD_DIR, BENCH_TMP
events=${1:-1000000}
build=$TRAINYARD_BUILD_DIR
tmp=$BENCH_TMP
server=$build/server/trainyard-server
ty=$build/cli/trainyard
gen=$build/bench/audit/audit_gen
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

pg=$TRAINYARD_TEST_PG_URL
psql -qAt "$pg/postgres" -c 'CREATE DATABASE audit'
db=$pg/audit
sql() { psql -v ON_ERROR_STOP=1 -qAt "$db" "$@"; }
now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
start_server() {
    "$server" --database-url "$db" --listen "127.0.0.1:$port" --access-log false \
        --data-dir "$tmp/server" >>"$tmp/server.log" 2>&1 &
    srv_pid=$!
    for _ in $(seq 200); do
        curl -sf "$base/healthz" >/dev/null 2>&1 && return 0
        kill -0 "$srv_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$tmp/server.log" >&2
    exit 1
}

echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start_server # migrates, creates the audit key
stop_server

IFS='|' read -r seq head <<<"$(sql -c 'SELECT seq, hash FROM audit_head')"
first=$((seq + 1))
# Event i at base + i * 1.5 s: the last one an hour ago, so retention (180
# days at least) keeps them all and the server's own events come later.
ts_base=$(($(date +%s) * 1000000 - (first + events) * 1500000 - 3600000000))
t0=$(now_ns)
"$gen" --key "$tmp/server/audit-signing.pem" --format pgcopy --events "$events" \
    --first-id "$first" --prev-hash "$head" --ts-base-us "$ts_base" \
    --checkpoint-every 100000 --checkpoints-out "$tmp/checkpoints.copy" --out "$tmp/events.copy"
t1=$(now_ns)
sql -c 'COPY audit_events (id, ts, ts_text, actor, source, action, target, outcome, details,
    prev_hash, hash) FROM STDIN' <"$tmp/events.copy"
sql -c 'COPY audit_checkpoints (seq, hash, created_at, kind, key_id, signature, signed)
    FROM STDIN' <"$tmp/checkpoints.copy"
last=$((first + events - 1))
sql -c "UPDATE audit_head SET (seq, hash) = (SELECT id, hash FROM audit_events WHERE id = $last)"
sql -c 'ANALYZE audit_events'
t2=$(now_ns)
rm -f "$tmp/events.copy"
echo "== $events events $first..$last: generated in $(secs "$t0" "$t1") s, COPY + ANALYZE $(secs "$t1" "$t2") s" >&2

TRAINYARD_ADMIN_PASSWORD=$pw "$server" --database-url "$db" --create-admin admin \
    >"$tmp/create-admin.log" 2>&1 || { cat "$tmp/create-admin.log" >&2; exit 1; }
start_server
curl -sSf -c "$tmp/jar" -H 'Content-Type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$pw\"}" "$base/api/v1/auth/login" >"$tmp/login.json"
csrf=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["csrf_token"])' <"$tmp/login.json")
token=$(curl -sSf -b "$tmp/jar" -H 'Content-Type: application/json' -H "X-CSRF-Token: $csrf" \
    -d '{"name":"bench"}' "$base/api/v1/tokens" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
auth="Authorization: Bearer $token"
curl -sSf -H "$auth" "$base/api/v1/audit/public-key" >"$tmp/public-key.json"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$srv_pid/status"; }
# CPU ticks (utime + stime) of PIDs; PostgreSQL: the postmaster and its children.
ticks() {
    local t=0 p
    for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
    echo "$t"
}
pm_pid=$(head -1 "$tmp/pg/postmaster.pid")
pg_ticks() { ticks "$pm_pid" $(pgrep -P "$pm_pid"); }
rss0=$(rss_kib)
rows=$tmp/rows.txt
: >"$rows"
echo "== load before the exports: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for fmt in jsonl csv; do
    f=$tmp/export.$fmt
    s0=$(ticks "$srv_pid") p0=$(pg_ticks)
    t0=$(now_ns)
    curl -sSf -H "$auth" -o "$f" "$base/api/v1/audit/export?format=$fmt" &
    curl_pid=$!
    peak=0
    while kill -0 "$curl_pid" 2>/dev/null; do
        r=$(rss_kib)
        [ "$r" -gt "$peak" ] && peak=$r
        sleep 0.05
    done
    wait "$curl_pid"
    t1=$(now_ns)
    s1=$(ticks "$srv_pid") p1=$(pg_ticks)
    out=$("$ty" audit verify "$f" --public-key "$tmp/public-key.json") ||
        { echo "export.sh: verify of $fmt failed: $out" >&2; exit 1; }
    t2=$(now_ns)
    echo "   $fmt: $out" >&2
    n=$(echo "$out" | sed -n 's/^OK \([0-9]*\) events.*/\1/p')
    echo "$fmt $n $(stat -c %s "$f") $((t1 - t0)) $((t2 - t1)) $peak $((s1 - s0)) $((p1 - p0))" >>"$rows"
    rm -f "$f"
done
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$srv_pid/status")
stop_server

echo
echo "### Audit export + verify through trainyard-server ($events loaded events, $(nproc) cores, $(date -u +%F))"
echo
echo "| format | events | bytes | export s | export events/s | verify s | verify events/s | server peak RSS MiB | export CPU s: server | PostgreSQL |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -v hz="$(getconf CLK_TCK)" '{ printf "| %s | %d | %d | %.2f | %.0f | %.2f | %.0f | %.1f | %.2f | %.2f |\n",
       $1, $2, $3, $4 / 1e9, $2 / ($4 / 1e9), $5 / 1e9, $2 / ($5 / 1e9), $6 / 1024, $7 / hz, $8 / hz }' "$rows"
echo
awk -v r0="$rss0" -v h="$hwm" 'BEGIN { printf "server RSS before the exports %.1f MiB; VmHWM (peak over its life) %.1f MiB\n", r0 / 1024, h / 1024 }'
awk '{ v = $2 / ($5 / 1e9); if (NR == 1 || v < min) min = v }
     END { printf "verify target >= 200,000 events/s: %s (slowest format %.0f events/s)\n",
           (min >= 200000 ? "met" : "NOT met"), min }' "$rows"

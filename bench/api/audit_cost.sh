#!/usr/bin/env bash
# bench/api/audit_cost.sh DB_URL [SECONDS] - what the audit write costs a job
# submit, at the SQL level (the server always audits; the product is not
# changed for this).
#
# pgbench (8 clients, 2 threads, -M extended: unnamed parse/bind/execute per
# statement, as libpq's PQexecParams in server/db.c does) replays the
# statements one POST /api/v1/jobs sends (server/db_auth.c identify_token,
# db_users.c db_team_id, api_jobs.c api_job_submit -> db_jobs.c
# db_job_insert, db_audit.c audit_append), with and without the three audit
# statements. The audit hash is a constant here: the server computes SHA-256
# in C, outside PostgreSQL. The actor text has no colon (pgbench would read
# ":admin" as a variable). DB_URL must hold the trainyard schema with at
# least one job and one API token (run.sh's fixture). Prints a Markdown table.
set -euo pipefail
db=${1:?usage: audit_cost.sh DB_URL [SECONDS]}
dur=${2:-10}
tmp=$(mktemp -d /tmp/tybench-audit.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
q() { psql -v ON_ERROR_STOP=1 -qAt "$db" -c "$1"; }

IFS='|' read -r team user prio gpus gpn tl mr spec <<<"$(q "SELECT team_id, user_id, priority, gpus,
  gpus_per_node, time_limit_s, max_restarts, quote_literal(spec::text) FROM jobs ORDER BY id LIMIT 1")"
th=$(q "SELECT quote_literal(token_hash) FROM api_tokens ORDER BY id LIMIT 1")
h64=$(printf 'a%.0s' $(seq 64))

common_head="SELECT u.id, u.username, u.role, t.id FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $th AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND NOT u.disabled;
SELECT id FROM teams WHERE name = 'bench';
BEGIN;
INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, gpus_per_node, time_limit_s, max_restarts) VALUES ('b', $team, $user, $spec, 'QUEUED', $prio, $gpus, $gpn, $tl, $mr) RETURNING id AS jid \\gset
INSERT INTO job_events (job_id, from_state, to_state, reason, actor) VALUES (:jid, NULL, 'QUEUED', 'submitted', 'user-admin');
SELECT j.id, j.name, j.team_id, t.name AS team, j.user_id, u.username AS user, j.state, CASE j.priority WHEN 0 THEN 'low' WHEN 2 THEN 'high' ELSE 'normal' END AS priority, j.gpus, j.gpus_per_node, j.restarts, j.max_restarts, j.attempt, j.reason, j.time_limit_s, j.created_at, j.updated_at, j.started_at, j.finished_at, j.spec FROM jobs j JOIN teams t ON t.id = j.team_id JOIN users u ON u.id = j.user_id WHERE j.id = :jid;"
audit="SELECT seq + 1 AS nseq, hash AS prev FROM audit_head FOR UPDATE \\gset
INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, outcome, details, prev_hash, hash) VALUES (:nseq, CAST(CAST(now() AS text) AS timestamptz), CAST(now() AS text), 'user-admin', '127.0.0.1', 'job.submit', 'job:' || CAST(:jid AS text), 'success', '{\"gpus\":1024,\"name\":\"b\",\"priority\":\"normal\",\"team\":\"bench\"}', :prev, '$h64');
UPDATE audit_head SET seq = :nseq, hash = '$h64';"
printf '%s\n%s\nCOMMIT;\n' "$common_head" "$audit" >"$tmp/with_audit.sql"
printf '%s\nCOMMIT;\n' "$common_head" >"$tmp/without_audit.sql"

bench() { # SCRIPT -> tps
  pgbench -n -M extended -c 8 -j 2 -T "$dur" -f "$1" "$db" 2>"$tmp/err" | tee "$tmp/out" |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1
  grep -q '^number of failed transactions: 0\|^number of transactions actually processed' "$tmp/out" ||
    { cat "$tmp/out" "$tmp/err" >&2; exit 1; }
}
lat() { sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$tmp/out"; }
a0=$(q "SELECT seq FROM audit_head")
without=$(bench "$tmp/without_audit.sql"); lwo=$(lat)
with=$(bench "$tmp/with_audit.sql"); lw=$(lat)
a1=$(q "SELECT seq FROM audit_head")
echo "| variant | submits/s | avg latency ms |"
echo "|---|---:|---:|"
echo "| submit SQL without audit | ${without%.*} | $lwo |"
echo "| submit SQL with audit (as the server does) | ${with%.*} | $lw |"
echo
awk -v w="$with" -v o="$without" 'BEGIN {printf "with / without = %.3f (audit rows written by pgbench: ", w / o}'
echo "$((a1 - a0)))"

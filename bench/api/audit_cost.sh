#!/usr/bin/env bash
# bench/api/audit_cost.sh DB_URL [SECONDS] - what the audit write costs a job
# submit, at the SQL level (bench/api/audit_cost_http.sh measures it end to
# end over HTTP, with a server built without the write).
#
# pgbench (8 clients, 2 threads, -M prepared: each statement parsed and
# planned once per connection, as server/store/db.c db_exec does with PQprepare /
# PQexecPrepared; MODE=extended gives unnamed parse/bind/execute per
# statement, what db_exec did before it cached statements) replays the
# statements one POST /api/v1/jobs sends (server/store/db_auth.c identify_token,
# db_users.c db_team_id, api_jobs.c api_job_submit -> db_jobs.c
# db_job_insert, db_audit.c audit_append) in three variants:
#   without  no audit write;
#   old      audit_append before commit d739f4c: SELECT ... FOR UPDATE of
#            audit_head, INSERT INTO audit_events, UPDATE audit_head;
#   new      audit_append as db_audit.c has it: the same SELECT ... FOR
#            UPDATE, then one WITH ev AS (INSERT ... RETURNING id, hash)
#            UPDATE audit_head SET seq = ev.id, hash = ev.hash FROM ev.
# The audit hash is a constant here: the server computes SHA-256
# in C, outside PostgreSQL. The actor text has no colon (pgbench would read
# ":admin" as a variable). DB_URL must hold the trainyard schema with at
# least one job and one API token (run.sh's fixture). Each variant runs
# ROUNDS times (default 1), alternating without/old/new; the ratios are of
# the mean submits/s. Prints a Markdown table.
# The statements besides the audit write are those of the submit when this
# script was written: the server has since gained an identity cache (the
# token lookup is then skipped) and compliance reads (site, default
# classification), so "without" approximates the rest of a submit; the
# audit rows compare like with like.
set -euo pipefail
db=${1:?usage: audit_cost.sh DB_URL [SECONDS]}
dur=${2:-10}
rounds=${ROUNDS:-1}
mode=${MODE:-prepared}
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
head_lock="SELECT seq + 1 AS nseq, hash AS prev FROM audit_head FOR UPDATE \\gset"
insert="INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, outcome, details, prev_hash, hash) VALUES (:nseq, CAST(CAST(now() AS text) AS timestamptz), CAST(now() AS text), 'user-admin', '127.0.0.1', 'job.submit', 'job:' || CAST(:jid AS text), 'success', '{\"gpus\":1024,\"name\":\"b\",\"priority\":\"normal\",\"team\":\"bench\"}', :prev, '$h64')"
old_audit="$head_lock
$insert;
UPDATE audit_head SET seq = :nseq, hash = '$h64';"
new_audit="$head_lock
WITH ev AS ($insert RETURNING id, hash) UPDATE audit_head SET seq = ev.id, hash = ev.hash FROM ev;"
printf '%s\nCOMMIT;\n' "$common_head" >"$tmp/without.sql"
printf '%s\n%s\nCOMMIT;\n' "$common_head" "$old_audit" >"$tmp/old.sql"
printf '%s\n%s\nCOMMIT;\n' "$common_head" "$new_audit" >"$tmp/new.sql"

bench() { # SCRIPT -> tps
  pgbench -n -M "$mode" -c 8 -j 2 -T "$dur" -f "$1" "$db" 2>"$tmp/err" | tee "$tmp/out" |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1
  grep -q '^number of failed transactions: 0\|^number of transactions actually processed' "$tmp/out" ||
    { cat "$tmp/out" "$tmp/err" >&2; exit 1; }
}
lat() { sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$tmp/out"; }
a0=$(q "SELECT seq FROM audit_head")
: >"$tmp/rows"
for r in $(seq "$rounds"); do
  for v in without old new; do
    tps=$(bench "$tmp/$v.sql")
    echo "$v $r $tps $(lat)" >>"$tmp/rows"
  done
done
a1=$(q "SELECT seq FROM audit_head")
echo "| variant | round | submits/s | avg latency ms |"
echo "|---|---:|---:|---:|"
awk 'BEGIN { d["without"] = "submit SQL without audit"
             d["old"] = "with audit, old: SELECT FOR UPDATE; INSERT; UPDATE"
             d["new"] = "with audit, new: SELECT FOR UPDATE; WITH (INSERT) UPDATE" }
     { printf "| %s | %d | %.0f | %s |\n", d[$1], $2, $3, $4 }' "$tmp/rows"
echo
awk '{ s[$1] += $3; n[$1]++ }
     END { w = s["without"] / n["without"]; o = s["old"] / n["old"]; x = s["new"] / n["new"]
           printf "mean submits/s: without %.0f, old %.0f, new %.0f\n", w, o, x
           printf "old / without = %.3f, new / without = %.3f, new / old = %.3f\n", o / w, x / w, x / o }' \
  "$tmp/rows"
echo "(audit rows written by pgbench: $((a1 - a0)))"

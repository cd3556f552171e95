/*
 * db_webhooks.c - see db_webhooks.h.
 */
#include "db_webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jx.h"

const char *const webhook_events[] = {"job.failed", "job.recovered",    "job.succeeded",
                                      "node.lost",  "policy.violation", "canary.rolled_back",
                                      NULL};

enum rc webhooks_enqueue(PGconn *c, int64_t job_id, const char *event, const char *message,
                         const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j)), event, message ? message : ""};

    /* The payload is the generic form; the sender renders the chat formats. */
    return db_exec_ok(
        c, req_id,
        "INSERT INTO webhook_deliveries (webhook_id, event, payload) SELECT w.id, $2::text, "
        "json_build_object('event', $2::text, 'message', $3::text, 'ts', to_char(now() AT TIME "
        "ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'job', json_build_object('id', j.id::text, 'name', "
        "j.name, 'team', t.name, 'state', j.state, 'reason', j.reason, 'attempt', j.attempt, "
        "'restarts', j.restarts))::text FROM jobs j JOIN teams t ON t.id = j.team_id JOIN "
        "webhooks w ON (w.job_id = j.id OR w.team_id = j.team_id) WHERE j.id = $1 AND $2 = "
        "ANY(w.events)",
        3, p);
}

enum rc webhooks_enqueue_team(PGconn *c, int64_t team_id, const char *event, const char *message,
                              const json_t *job, const json_t *details, const char *req_id)
{
    char t[24];
    char *jj = job ? jx_dumps(job, JSON_COMPACT) : NULL;
    char *dj = details ? jx_dumps(details, JSON_COMPACT) : NULL;
    const char *p[] = {db_i64(team_id, t, sizeof(t)), event, message ? message : "", jj, dj};
    enum rc rc;

    if ((job != NULL && jj == NULL) || (details != NULL && dj == NULL)) {
        free(jj);
        free(dj);
        return RC_ENOMEM;
    }
    rc = db_exec_ok(
        c, req_id,
        "INSERT INTO webhook_deliveries (webhook_id, event, payload) SELECT w.id, $2::text, "
        "json_build_object('event', $2::text, 'message', $3::text, 'ts', to_char(now() AT TIME "
        "ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'team', t.name, 'job', $4::json, "
        "'details', $5::json)::text FROM teams t JOIN webhooks w ON w.team_id = t.id WHERE t.id "
        "= $1 AND $2 = ANY(w.events)",
        5, p);
    free(jj);
    free(dj);
    return rc;
}

#define WEBHOOK_COLS "id, team_id, job_id, url, format, events, created_at"

enum rc db_webhook_create(PGconn *c, int64_t team_id, int64_t job_id, const char *url,
                          const char *format, const char *secret, const char *events_literal,
                          int64_t created_by, json_t **out, const char *req_id)
{
    char t[24], j[24], u[24];
    const char *p[] = {team_id ? db_i64(team_id, t, sizeof(t)) : NULL,
                       job_id ? db_i64(job_id, j, sizeof(j)) : NULL,
                       url,
                       format,
                       secret,
                       events_literal,
                       db_i64(created_by, u, sizeof(u))};
    return db_query_json(c,
                         "INSERT INTO webhooks (team_id, job_id, url, format, secret, events, "
                         "created_by) VALUES ($1, $2, $3, $4, $5, $6::text[], $7) RETURNING "
                         "id, team_id, job_id, url, format, array_to_json(events) AS events, "
                         "created_at",
                         7, p, 1, out, req_id);
}

enum rc db_webhook_list(PGconn *c, int64_t member_of, json_t **out, const char *req_id)
{
    char u[24];
    const char *p[] = {member_of ? db_i64(member_of, u, sizeof(u)) : NULL};
    return db_query_json(
        c,
        "SELECT w.id, w.team_id, w.job_id, w.url, w.format, array_to_json(w.events) "
        "AS events, w.created_at FROM webhooks w LEFT JOIN jobs j ON j.id = "
        "w.job_id WHERE $1::bigint IS NULL OR coalesce(w.team_id, j.team_id) IN "
        "(SELECT team_id FROM memberships WHERE user_id = $1) ORDER BY w.id",
        1, p, 0, out, req_id);
}

enum rc db_webhook_team(PGconn *c, int64_t id, int64_t *team_id, const char *req_id)
{
    char w[24];
    const char *p[] = {db_i64(id, w, sizeof(w))};
    PGresult *r = db_exec(c,
                          "SELECT coalesce(w.team_id, j.team_id) FROM webhooks w LEFT JOIN jobs j "
                          "ON j.id = w.job_id WHERE w.id = $1",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), team_id);
    PQclear(r);
    return rc;
}

enum rc db_webhook_delete(PGconn *c, int64_t id, const char *req_id)
{
    char w[24];
    const char *p[] = {db_i64(id, w, sizeof(w))};
    return db_exec_ok(c, req_id, "DELETE FROM webhooks WHERE id = $1", 1, p);
}

enum rc db_webhook_deliveries(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char w[24];
    const char *p[] = {db_i64(id, w, sizeof(w))};
    return db_query_json(
        c,
        "SELECT id, webhook_id, event, payload::jsonb AS payload, attempts, status, "
        "http_status, last_error, next_at, delivered_at, created_at FROM "
        "webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT 200",
        1, p, 0, out, req_id);
}

enum rc db_delivery_claim(PGconn *c, int lease_ms, struct db_delivery *out, int *found)
{
    char l[16];
    const char *p[] = {l};
    PGresult *r = NULL;
    enum rc rc;

    snprintf(l, sizeof(l), "%d", lease_ms);
    *found = 0;
    memset(out, 0, sizeof(*out));
    r = db_exec(c,
                "UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_at = now() + "
                "$1::int * interval '1 millisecond' FROM webhooks w WHERE w.id = d.webhook_id AND "
                "d.id = (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_at <= "
                "now() ORDER BY next_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING d.id, "
                "d.attempts, d.event, w.format, w.url, w.secret, d.payload",
                1, p);
    rc = db_result_rc(r, "webhooks");
    if (rc != RC_OK || PQntuples(r) == 0)
        goto out;
    out->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    out->attempts = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
    snprintf(out->event, sizeof(out->event), "%s", PQgetvalue(r, 0, 2));
    snprintf(out->format, sizeof(out->format), "%s", PQgetvalue(r, 0, 3));
    snprintf(out->url, sizeof(out->url), "%s", PQgetvalue(r, 0, 4));
    snprintf(out->secret, sizeof(out->secret), "%s", PQgetvalue(r, 0, 5));
    out->payload = strdup(PQgetvalue(r, 0, 6));
    if (out->payload == NULL) {
        /* Claimed but not sent: the lease runs out and the next claim sends it. */
        rc = RC_ENOMEM;
        goto out;
    }
    *found = 1;
out:
    PQclear(r);
    return rc;
}

enum rc db_delivery_result(PGconn *c, int64_t id, int attempts, int delivered, int http_status,
                           const char *error, int retry_s, int give_up)
{
    char d[24], a[16], hs[16], rs[16];
    const char *p[] = {db_i64(id, d, sizeof(d)),
                       delivered ? "delivered" : (give_up ? "failed" : "pending"),
                       http_status > 0 ? hs : NULL,
                       error ? error : "",
                       rs,
                       a};
    PGresult *r = NULL;
    enum rc rc;

    snprintf(hs, sizeof(hs), "%d", http_status);
    snprintf(rs, sizeof(rs), "%d", retry_s);
    snprintf(a, sizeof(a), "%d", attempts);
    /* The attempts compare is the lease check. A claimed_until compare is not
     * needed on top: a lease that ran out without another claim is still this
     * sender's, and recording its outcome spares the receiver a resend. */
    r = db_exec(c,
                "UPDATE webhook_deliveries SET status = $2, http_status = $3, last_error = $4, "
                "next_at = now() + make_interval(secs => $5::int), delivered_at = CASE WHEN $2 = "
                "'delivered' THEN now() ELSE NULL END WHERE id = $1 AND attempts = $6::int AND "
                "status = 'pending'",
                6, p);
    rc = db_result_rc(r, "webhooks");
    if (rc == RC_OK && strcmp(PQcmdTuples(r), "1") != 0)
        rc = RC_ECONFLICT;
    PQclear(r);
    return rc;
}

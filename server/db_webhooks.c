/*
 * db_webhooks.c - see db_webhooks.h.
 */
#include "db_webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

const char *const webhook_events[] = {"job.failed", "job.recovered",    "job.succeeded",
                                      "node.lost",  "policy.violation", NULL};

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
    char *jj = job ? json_dumps(job, JSON_COMPACT) : NULL;
    char *dj = details ? json_dumps(details, JSON_COMPACT) : NULL;
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

enum rc db_delivery_claim(PGconn *c, struct db_delivery *out, int max, int *n)
{
    char m[16];
    const char *p[] = {m};
    PGresult *r;
    enum rc rc;

    snprintf(m, sizeof(m), "%d", max);
    *n = 0;
    r = db_exec(c,
                "UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_at = now() + "
                "interval '60 seconds' FROM webhooks w WHERE w.id = d.webhook_id AND d.id IN "
                "(SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_at <= now() "
                "ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING d.id, d.attempts, "
                "d.event, w.format, w.url, w.secret, d.payload",
                1, p);
    rc = db_result_rc(r, "webhooks");
    for (int i = 0; rc == RC_OK && i < PQntuples(r) && i < max; i++) {
        struct db_delivery *d = &out[i];
        memset(d, 0, sizeof(*d));
        d->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        d->attempts = (int)strtol(PQgetvalue(r, i, 1), NULL, 10);
        snprintf(d->event, sizeof(d->event), "%s", PQgetvalue(r, i, 2));
        snprintf(d->format, sizeof(d->format), "%s", PQgetvalue(r, i, 3));
        snprintf(d->url, sizeof(d->url), "%s", PQgetvalue(r, i, 4));
        snprintf(d->secret, sizeof(d->secret), "%s", PQgetvalue(r, i, 5));
        d->payload = strdup(PQgetvalue(r, i, 6));
        if (d->payload == NULL) {
            rc = RC_ENOMEM;
            break;
        }
        (*n)++;
    }
    PQclear(r);
    return rc;
}

enum rc db_delivery_result(PGconn *c, int64_t id, int delivered, int http_status, const char *error,
                           int retry_s, int give_up)
{
    char d[24], hs[16], rs[16];
    const char *p[] = {db_i64(id, d, sizeof(d)),
                       delivered ? "delivered" : (give_up ? "failed" : "pending"),
                       http_status > 0 ? hs : NULL, error ? error : "", rs};

    snprintf(hs, sizeof(hs), "%d", http_status);
    snprintf(rs, sizeof(rs), "%d", retry_s);
    return db_exec_ok(c, "webhooks",
                      "UPDATE webhook_deliveries SET status = $2, http_status = $3, last_error = "
                      "$4, next_at = now() + make_interval(secs => $5::int), delivered_at = CASE "
                      "WHEN $2 = 'delivered' THEN now() ELSE NULL END WHERE id = $1",
                      5, p);
}

/*
 * db_jobs.c - see db_jobs.h.
 */
#include "db_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_audit.h"
#include "jx.h"

static _Atomic uint64_t jobs_generation;

uint64_t db_jobs_generation(void)
{
    return jobs_generation;
}

void db_jobs_changed(void)
{
    jobs_generation++;
}

static const char *const job_states[] = {"QUEUED",  "PLACED",     "STARTING",
                                         "RUNNING", "RESTARTING", "SUCCEEDED",
                                         "FAILED",  "CANCELLED",  NULL};

int db_job_state_valid(const char *s)
{
    for (int i = 0; s != NULL && job_states[i] != NULL; i++)
        if (strcmp(s, job_states[i]) == 0)
            return 1;
    return 0;
}

int db_job_state_terminal(const char *s)
{
    return strcmp(s, "SUCCEEDED") == 0 || strcmp(s, "FAILED") == 0 || strcmp(s, "CANCELLED") == 0;
}

#define JOB_LIST_COLS                                                                              \
    "j.id, j.name, j.team_id, t.name AS team, j.user_id, u.username AS user, j.state, "            \
    "CASE j.priority WHEN 0 THEN 'low' WHEN 2 THEN 'high' ELSE 'normal' END AS priority, "         \
    "j.gpus, j.gpus_per_node, j.restarts, j.max_restarts, j.attempt, j.reason, j.reason_code, "    \
    "j.reason_params, j.time_limit_s, "                                                            \
    "j.created_at, j.updated_at, j.started_at, j.finished_at, s.name AS site, j.classification"
#define JOB_FROM                                                                                   \
    " FROM jobs j JOIN teams t ON t.id = j.team_id JOIN users u ON u.id = j.user_id JOIN sites s " \
    "ON s.id = j.site_id"

static enum rc add_event(PGconn *c, const char *job_id, const char *from, const char *to,
                         const struct job_reason *why, const char *actor, const char *req_id)
{
    char *params = job_reason_params_text(why);
    enum rc rc = RC_ENOMEM;

    if (params != NULL) {
        const char *p[] = {job_id, from, to, why->text, actor, why->code, params};
        rc = db_exec_ok(c, req_id,
                        "INSERT INTO job_events (job_id, from_state, to_state, reason, actor, "
                        "reason_code, reason_params) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)",
                        7, p);
    }
    free(params);
    return rc;
}

void db_job_compliance_cleanup(struct db_job_compliance *c)
{
    if (c == NULL)
        return;
    json_decref(c->paths);
    memset(c, 0, sizeof(*c));
}

enum rc db_job_insert(PGconn *c, const struct jobspec *spec, const json_t *spec_json,
                      int64_t team_id, int64_t user_id, const char *actor,
                      const struct db_job_compliance *comp, json_t **out, const char *req_id)
{
    char team[24], user[24], prio[8], gpus[16], gpn[16], tl[24], mr[16], id[24], site[24];
    char *js = jx_dumps(spec_json, JSON_COMPACT);
    char *paths = comp && comp->paths ? jx_dumps(comp->paths, JSON_COMPACT) : NULL;
    PGresult *res;
    enum rc rc;

    *out = NULL;
    if (js == NULL || (comp && comp->paths && paths == NULL)) {
        free(js);
        free(paths);
        return RC_ENOMEM;
    }
    snprintf(prio, sizeof(prio), "%d", (int)spec->priority);
    snprintf(gpus, sizeof(gpus), "%d", spec->gpus);
    snprintf(gpn, sizeof(gpn), "%d", spec->gpus_per_node);
    snprintf(mr, sizeof(mr), "%d", spec->max_restarts);
    {
        const char *p[] = {spec->name,
                           db_i64(team_id, team, sizeof(team)),
                           db_i64(user_id, user, sizeof(user)),
                           js,
                           prio,
                           gpus,
                           gpn,
                           db_i64(spec->time_limit_s, tl, sizeof(tl)),
                           mr,
                           comp && comp->site_id > 0 ? db_i64(comp->site_id, site, sizeof(site))
                                                     : NULL,
                           comp && comp->classification[0] ? comp->classification : NULL,
                           paths,
                           spec->service ? "true" : "false"};
        res = db_exec(c,
                      "INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, "
                      "gpus_per_node, time_limit_s, max_restarts, site_id, classification, paths, "
                      "service) VALUES ($1, $2, $3, $4, 'QUEUED', $5, $6, $7, $8, $9, "
                      "coalesce($10::bigint, 1), coalesce($11::text, 'internal'), "
                      "coalesce($12::jsonb, '{}'), $13) RETURNING id",
                      13, p);
    }
    free(js);
    free(paths);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK)
        snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    if (rc == RC_OK) {
        struct job_reason why;
        job_reason_init(&why, RSN_SUBMITTED, NULL, "submitted");
        rc = add_event(c, id, NULL, "QUEUED", &why, actor, req_id);
        job_reason_cleanup(&why);
    }
    if (rc == RC_OK) {
        int64_t jid = 0;
        rc = db_parse_i64(id, &jid);
        if (rc == RC_OK)
            rc = db_job_get(c, jid, out, req_id);
    }
    return rc;
}

enum rc db_job_idempotency_find(PGconn *c, int64_t user_id, const char *key,
                                const char *request_hash, int64_t *job_id, int *same,
                                const char *req_id)
{
    char u[24];
    const char *p[] = {db_i64(user_id, u, sizeof(u)), key};
    PGresult *res;
    enum rc rc;

    *job_id = 0;
    *same = 0;
    /* 64-bit hash of user and key: another key sharing it only waits. */
    rc = db_exec_ok(c, req_id,
                    "SELECT pg_advisory_xact_lock(hashtextextended('job-idempotency:' || $1 || "
                    "':' || $2, 0))",
                    2, p);
    if (rc != RC_OK)
        return rc;
    res = db_exec(c,
                  "SELECT id, idempotency_hash FROM jobs WHERE user_id = $1 AND "
                  "idempotency_key = $2",
                  2, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) == 1) {
        rc = db_parse_i64(PQgetvalue(res, 0, 0), job_id);
        *same = strcmp(PQgetvalue(res, 0, 1), request_hash) == 0;
    }
    PQclear(res);
    return rc;
}

enum rc db_job_idempotency_set(PGconn *c, int64_t job_id, const char *key, const char *request_hash,
                               const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j)), key, request_hash};
    return db_exec_ok(c, req_id,
                      "UPDATE jobs SET idempotency_key = $2, idempotency_hash = $3 WHERE id = $1",
                      3, p);
}

enum rc db_job_get(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    /* dropped_lines: output lines its nodes dropped, over all attempts (015). */
    return db_query_json(c,
                         "SELECT " JOB_LIST_COLS ", j.spec, j.plan, (SELECT coalesce(sum("
                         "a.dropped_lines), 0) FROM attempts a WHERE a.job_id = j.id)::bigint AS "
                         "dropped_lines" JOB_FROM " WHERE j.id = $1",
                         1, p, 1, out, req_id);
}

enum rc db_jobs_lock(PGconn *c, const int64_t *ids, size_t n, const char *req_id)
{
    size_t cap = 3 + n * 21, off = 0;
    char *list;
    PGresult *res;
    enum rc rc;

    if (n == 0)
        return RC_OK;
    if ((list = malloc(cap)) == NULL)
        return RC_ENOMEM;
    list[off++] = '{';
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(list + off, cap - off, "%s%lld", i ? "," : "", (long long)ids[i]);
    snprintf(list + off, cap - off, "}");
    {
        const char *p[] = {list};
        /* The row locks are taken as the sorted rows come out, so in id
         * order whatever the order of ids. */
        res = db_exec(c, "SELECT id FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                      1, p);
    }
    rc = db_result_rc(res, req_id);
    PQclear(res);
    free(list);
    return rc;
}

enum rc db_job_brief(PGconn *c, int64_t id, int lock, int64_t *team_id, char *state,
                     size_t state_size, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    PGresult *res = db_exec(c,
                            lock ? "SELECT team_id, state FROM jobs WHERE id = $1 FOR UPDATE"
                                 : "SELECT team_id, state FROM jobs WHERE id = $1",
                            1, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        rc = db_parse_i64(PQgetvalue(res, 0, 0), team_id);
        snprintf(state, state_size, "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return rc;
}

enum rc db_job_set_priority(PGconn *c, int64_t id, int prio, int *old, const char *req_id)
{
    static const char *const names[] = {"low", "normal", "high"};
    char ids[24], ps[16];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), db_i64(prio, ps, sizeof(ps)),
                       prio >= 0 && prio <= 2 ? names[prio] : NULL};
    PGresult *res;
    enum rc rc;
    int64_t v;

    if (p[2] == NULL)
        return RC_EINVAL;
    /* The old value comes from the row as it was before the update (the
     * subquery sees the statement's snapshot). */
    res = db_exec(c,
                  "UPDATE jobs j SET priority = $2::int, spec = jsonb_set(j.spec, '{priority}', "
                  "to_jsonb($3::text)) FROM (SELECT id, priority FROM jobs WHERE id = $1) o "
                  "WHERE j.id = o.id RETURNING o.priority",
                  3, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK && (rc = db_parse_i64(PQgetvalue(res, 0, 0), &v)) == RC_OK)
        *old = (int)v;
    PQclear(res);
    return rc;
}

enum rc db_job_list(PGconn *c, const struct db_job_filter *f, json_t **out, const char *req_id)
{
    char mem[24], lim[16];
    const char *p[] = {f->state,  f->team,
                       f->user,   f->member_of > 0 ? db_i64(f->member_of, mem, sizeof(mem)) : NULL,
                       f->cursor, db_i64(f->limit, lim, sizeof(lim))};
    return db_query_json(
        c,
        "SELECT " JOB_LIST_COLS JOB_FROM
        " WHERE ($1::text IS NULL OR j.state = $1) AND ($2::text IS NULL OR t.name = $2) "
        "AND ($3::text IS NULL OR u.username = $3) AND ($4::bigint IS NULL OR j.team_id "
        "IN (SELECT team_id FROM memberships WHERE user_id = $4)) AND ($5::bigint IS NULL "
        "OR j.id < $5) ORDER BY j.id DESC LIMIT $6",
        6, p, 0, out, req_id);
}

enum rc db_job_events(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    return db_query_json(c,
                         "SELECT id, job_id, ts, kind, from_state, to_state, reason, reason_code, "
                         "reason_params, actor FROM job_events WHERE job_id = $1 ORDER BY id",
                         1, p, 0, out, req_id);
}

enum rc db_job_events_after(PGconn *c, int64_t id, int64_t after_id, int limit, json_t **out,
                            const char *req_id)
{
    char ids[24], after[24], lim[16];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), db_i64(after_id, after, sizeof(after)),
                       db_i64(limit, lim, sizeof(lim))};
    return db_query_json(c,
                         "SELECT id, job_id, ts, kind, from_state, to_state, reason, reason_code, "
                         "reason_params, actor FROM job_events WHERE job_id = $1 AND id > $2 "
                         "ORDER BY id LIMIT $3",
                         3, p, 0, out, req_id);
}

enum rc db_job_transition(PGconn *c, int64_t id, const char *const *from, const char *to,
                          const struct job_reason *why, const char *actor, const char *source,
                          const char *req_id)
{
    char ids[24], old[16], target[AUDIT_TARGET_SIZE];
    const char *p[5];
    char *params = NULL;
    PGresult *res;
    enum rc rc;
    int allowed = from == NULL;
    json_t *details = NULL;

    db_i64(id, ids, sizeof(ids));
    p[0] = ids;
    res = db_exec(c, "SELECT state FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        snprintf(old, sizeof(old), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    if (rc != RC_OK)
        goto out;
    if (from == NULL)
        allowed = !db_job_state_terminal(old);
    for (int i = 0; from != NULL && from[i] != NULL && !allowed; i++)
        allowed = strcmp(from[i], old) == 0;
    if (!allowed) {
        rc = RC_ECONFLICT;
        goto out;
    }
    if ((params = job_reason_params_text(why)) == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    p[1] = to;
    p[2] = why->text;
    p[3] = why->code;
    p[4] = params;
    rc = db_exec_ok(c, req_id,
                    "UPDATE jobs SET state = $2, reason = $3, reason_code = $4, reason_params = "
                    "$5::jsonb, updated_at = now(), "
                    "started_at = CASE WHEN $2 = 'RUNNING' THEN coalesce(started_at, now()) ELSE "
                    "started_at END, finished_at = CASE WHEN $2 IN ('SUCCEEDED', 'FAILED', "
                    "'CANCELLED') THEN now() ELSE NULL END WHERE id = $1",
                    5, p);
    if (rc == RC_OK)
        rc = add_event(c, ids, old, to, why, actor, req_id);
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_JOB, id, target);
    if (rc == RC_OK) {
        struct audit_event ev;
        details = json_pack("{s:s,s:s,s:s,s:s}", "from", old, "to", to, "reason", why->text,
                            "reason_code", why->code);
        ev = (struct audit_event){actor,  source ? source : "", "job.state", target, "success",
                                  details};
        rc = audit_append(c, &ev, req_id);
    }
out:
    json_decref(details);
    free(params);
    return rc;
}

enum rc db_job_flags(PGconn *c, int64_t job_id, int *cancel, int *restarts, int *max, char *state,
                     size_t state_size, const char *req_id)
{
    char id[24];
    const char *p[] = {id};
    PGresult *r;
    enum rc rc;

    snprintf(id, sizeof(id), "%lld", (long long)job_id);
    r = db_exec(c,
                "SELECT cancel_requested, restarts, max_restarts, state FROM jobs WHERE id = $1 "
                "FOR UPDATE",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        *cancel = PQgetvalue(r, 0, 0)[0] == 't';
        *restarts = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
        *max = (int)strtol(PQgetvalue(r, 0, 2), NULL, 10);
        snprintf(state, state_size, "%s", PQgetvalue(r, 0, 3));
    }
    PQclear(r);
    return rc;
}

enum rc db_job_service_backoff(PGconn *c, int64_t job_id, int64_t attempt_id, int *service,
                               int *wait_s, const char *req_id)
{
    char j[24], a[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j)), db_i64(attempt_id, a, sizeof(a))};
    PGresult *r;
    enum rc rc;

    *service = 0;
    *wait_s = 0;
    /* The streak counts attempts that ended within a minute of their
     * placement; a longer run starts it again at 1. The wait doubles with
     * it from 1 s to at most 300 s. */
    r = db_exec(c,
                "WITH s AS (SELECT j.id, CASE WHEN now() - t.created_at < interval '60 seconds' "
                "THEN j.failure_streak + 1 ELSE 1 END AS streak FROM jobs j JOIN attempts t ON "
                "t.job_id = j.id WHERE j.id = $1 AND t.id = $2 AND j.service) UPDATE jobs j SET "
                "failure_streak = s.streak, not_before = now() + make_interval(secs => "
                "least(300, power(2, least(s.streak, 10) - 1))) FROM s WHERE j.id = s.id "
                "RETURNING least(300, power(2, least(s.streak, 10) - 1))::int",
                2, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) == 1) {
        *service = 1;
        *wait_s = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    }
    PQclear(r);
    return rc;
}

enum rc db_job_is_service(PGconn *c, int64_t job_id, int *service, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    PGresult *r = db_exec(c, "SELECT service FROM jobs WHERE id = $1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    *service = rc == RC_OK && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return rc;
}

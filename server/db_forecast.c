/*
 * db_forecast.c - see db_forecast.h. Arrays go to PostgreSQL as one array
 * literal per column ("{1,2,NULL}") and are unnested there, so a forecast
 * of any length is one INSERT.
 */
#include "db_forecast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

#define ISO_MS(x) "to_char((" x ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* The predictor's key columns of jobs j (see db_forecast_job). */
#define KEY_COLS                                                                                   \
    "j.id, coalesce(j.spec->>'template', ''), array_to_string(ARRAY(SELECT "                       \
    "jsonb_array_elements_text(CASE WHEN jsonb_typeof(j.spec->'command') = 'array' THEN "          \
    "j.spec->'command' ELSE '[]'::jsonb END)), ' '), j.team_id, j.user_id, j.gpus"

void db_forecast_mark_init(struct db_forecast_mark *m)
{
    snprintf(m->finished_at, sizeof(m->finished_at), "-infinity");
    m->job_id = 0;
}

void db_forecast_rows_cleanup(struct db_forecast_rows *rows)
{
    if (rows == NULL)
        return;
    PQclear(rows->res);
    free(rows->jobs);
    memset(rows, 0, sizeof(*rows));
}

static int64_t i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* Fill out from res (taken) whose first six columns are KEY_COLS and whose
 * seventh, when with_run, is the run time. */
static enum rc take_rows(PGresult *res, int with_run, struct db_forecast_rows *out)
{
    int n = PQntuples(res);

    db_forecast_rows_cleanup(out);
    out->res = res;
    if (n > 0 && (out->jobs = calloc((size_t)n, sizeof(*out->jobs))) == NULL)
        return RC_ENOMEM;
    for (int i = 0; i < n; i++) {
        struct db_forecast_job *j = &out->jobs[i];
        j->job_id = i64(res, i, 0);
        j->template_id = PQgetvalue(res, i, 1);
        j->command = PQgetvalue(res, i, 2);
        j->team_id = i64(res, i, 3);
        j->user_id = i64(res, i, 4);
        j->gpus = (int)i64(res, i, 5);
        j->run_ms = with_run ? i64(res, i, 6) : 0;
    }
    out->n = (size_t)n;
    return RC_OK;
}

enum rc db_forecast_finished(PGconn *c, struct db_forecast_mark *mark, int limit,
                             struct db_forecast_rows *out)
{
    char id[24], lim[24];
    const char *p[] = {mark->finished_at, db_i64(mark->job_id, id, sizeof(id)),
                       db_i64(limit, lim, sizeof(lim))};
    PGresult *r = db_exec(
        c,
        "SELECT " KEY_COLS ", (SELECT coalesce(sum(extract(epoch FROM (t.ended_at - t.created_at)) "
        "* 1000), 0) FROM attempts t WHERE t.job_id = j.id AND t.ended_at IS NOT NULL)::bigint, "
        "j.finished_at::text FROM jobs j WHERE j.state = 'SUCCEEDED' AND j.finished_at IS NOT "
        "NULL AND j.finished_at < now() - interval '1 second' AND (j.finished_at, j.id) > "
        "($1::timestamptz, $2::bigint) ORDER BY j.finished_at, j.id LIMIT $3::int",
        3, p);
    enum rc rc = db_result_rc(r, "forecast");
    int n;

    if (rc != RC_OK) {
        PQclear(r);
        return rc;
    }
    n = PQntuples(r);
    if (n > 0) {
        snprintf(mark->finished_at, sizeof(mark->finished_at), "%s", PQgetvalue(r, n - 1, 7));
        mark->job_id = i64(r, n - 1, 0);
    }
    return take_rows(r, 1, out);
}

/* "{a,b,...}" of n values written by put(i, buf, size); NULL on ENOMEM. */
static char *array_lit(size_t n, void (*put)(const void *arg, size_t i, char *buf, size_t size),
                       const void *arg)
{
    size_t cap = n * 24 + 3, len = 0;
    char *s = malloc(cap);

    if (s == NULL)
        return NULL;
    s[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        char v[24];
        size_t k;
        put(arg, i, v, sizeof(v));
        k = strlen(v);
        if (len + k + 3 > cap) {
            char *t = realloc(s, cap * 2 + k);
            if (t == NULL) {
                free(s);
                return NULL;
            }
            s = t;
            cap = cap * 2 + k;
        }
        if (i > 0)
            s[len++] = ',';
        memcpy(s + len, v, k);
        len += k;
    }
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

static void put_id(const void *arg, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "%lld", (long long)((const int64_t *)arg)[i]);
}

enum rc db_forecast_keys(PGconn *c, const int64_t *ids, size_t n, struct db_forecast_rows *out)
{
    char *lit = array_lit(n, put_id, ids);
    const char *p[1] = {lit};
    PGresult *r;
    enum rc rc;

    if (lit == NULL)
        return RC_ENOMEM;
    r = db_exec(c, "SELECT " KEY_COLS " FROM jobs j WHERE j.id = ANY($1::bigint[]) ORDER BY j.id",
                1, p);
    free(lit);
    rc = db_result_rc(r, "forecast");
    if (rc != RC_OK) {
        PQclear(r);
        return rc;
    }
    return take_rows(r, 0, out);
}

/* Columns of the entries, one writer per stored column. */
static const struct db_forecast_entry *E(const void *arg, size_t i)
{
    return &((const struct db_forecast_entry *)arg)[i];
}
static void put_job(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%lld", (long long)E(a, i)->job_id);
}
static void put_kind(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%s", E(a, i)->running ? "running" : "queued");
}
static void put_pos(const void *a, size_t i, char *b, size_t n)
{
    if (E(a, i)->running)
        snprintf(b, n, "NULL");
    else
        snprintf(b, n, "%d", E(a, i)->position);
}
static void put_ms(int64_t v, char *b, size_t n)
{
    if (v <= 0 || v == INT64_MAX)
        snprintf(b, n, "NULL");
    else
        snprintf(b, n, "%lld", (long long)v);
}
static void put_start(const void *a, size_t i, char *b, size_t n)
{
    put_ms(E(a, i)->running ? 0 : E(a, i)->start_ms, b, n);
}
static void put_end(const void *a, size_t i, char *b, size_t n)
{
    put_ms(E(a, i)->running ? E(a, i)->end_ms : 0, b, n);
}
static void put_reason(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%s", E(a, i)->reason ? E(a, i)->reason : "none");
}
static void put_need(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%d", E(a, i)->need_gpus);
}
static void put_free(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%d", E(a, i)->free_gpus);
}
static void put_other(const void *a, size_t i, char *b, size_t n)
{
    put_ms(E(a, i)->other_job_id, b, n);
}
static void put_run(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%lld", (long long)(E(a, i)->run_ms > 0 ? E(a, i)->run_ms : 0));
}
static void put_source(const void *a, size_t i, char *b, size_t n)
{
    snprintf(b, n, "%s", E(a, i)->source ? E(a, i)->source : "none");
}

enum rc db_forecast_store(PGconn *c, const struct db_forecast_entry *e, size_t n,
                          const struct db_forecast_meta *meta)
{
    static void (*const put[])(const void *, size_t, char *, size_t) = {
        put_job,  put_kind, put_pos,   put_start, put_end,   put_reason,
        put_need, put_free, put_other, put_run,   put_source};
    enum { NCOLS = sizeof(put) / sizeof(put[0]) };
    char *lit[NCOLS] = {0};
    char gen[24], dur[24], nq[24], nr[24];
    size_t queued = 0;
    enum rc rc = RC_OK;

    for (size_t i = 0; i < n; i++)
        queued += !e[i].running;
    for (size_t k = 0; k < NCOLS && rc == RC_OK; k++)
        if ((lit[k] = array_lit(n, put[k], e)) == NULL)
            rc = RC_ENOMEM;
    if (rc == RC_OK)
        rc = db_begin(c);
    if (rc != RC_OK)
        goto out;
    /* Nothing but this writes these tables: no lock order to keep. */
    rc = db_exec_ok(c, "forecast", "DELETE FROM queue_forecast", 0, NULL);
    if (rc == RC_OK) {
        const char *p[NCOLS];
        for (size_t k = 0; k < NCOLS; k++)
            p[k] = lit[k];
        rc = db_exec_ok(
            c, "forecast",
            "INSERT INTO queue_forecast (job_id, kind, position, start_at, end_at, reason, "
            "need_gpus, free_gpus, other_job_id, run_ms, source) SELECT u.j, u.k, u.p, "
            "timestamptz 'epoch' + u.s * interval '1 millisecond', timestamptz 'epoch' + u.e * "
            "interval '1 millisecond', u.r, u.ng, u.fg, u.o, u.rm, "
            "u.src FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::bigint[], "
            "$6::text[], $7::int[], $8::int[], $9::bigint[], $10::bigint[], $11::text[]) AS u(j, "
            "k, p, s, e, r, ng, fg, o, rm, src)",
            NCOLS, p);
    }
    if (rc == RC_OK) {
        const char *p[] = {
            db_i64(meta->generated_ms, gen, sizeof(gen)), meta->truncated ? "true" : "false",
            db_i64(meta->duration_us, dur, sizeof(dur)), db_i64((int64_t)queued, nq, sizeof(nq)),
            db_i64((int64_t)(n - queued), nr, sizeof(nr))};
        rc =
            db_exec_ok(c, "forecast",
                       "INSERT INTO queue_forecast_meta (id, generated_at, truncated, duration_us, "
                       "queued, running) VALUES (true, timestamptz 'epoch' + $1::bigint * interval "
                       "'1 millisecond', $2, $3, "
                       "$4, $5) ON CONFLICT (id) DO UPDATE SET generated_at = "
                       "excluded.generated_at, truncated = excluded.truncated, duration_us = "
                       "excluded.duration_us, queued = excluded.queued, running = excluded.running",
                       5, p);
    }
    if (rc == RC_OK)
        rc = db_commit(c);
    else
        db_rollback(c);
out:
    for (size_t k = 0; k < NCOLS; k++)
        free(lit[k]);
    return rc;
}

/* One queued job's API entry (docs/queue.md) from q (the still-queued
 * forecast rows with their place) and j, t, u; $1 the member or 0. */
#define ENTRY_JSON                                                                                 \
    "json_build_object('id', j.id::text, 'name', j.name, 'team', t.name, 'user', u.username, "     \
    "'priority', CASE j.priority WHEN 0 THEN 'low' WHEN 2 THEN 'high' ELSE 'normal' END, "         \
    "'gpus', j.gpus, 'gpus_per_node', j.gpus_per_node, 'state', j.state, 'position', q.pos, "      \
    "'submitted_at', " ISO_MS("j.created_at") ", 'estimated_start', " ISO_MS(                      \
        "q.start_at") ", 'reason', json_build_object('code', q.reason, 'params', "                 \
                      "json_build_object('need_gpus', q.need_gpus, 'free_gpus', q.free_gpus, "     \
                      "'other_job_id', CASE WHEN q.other_job_id IS NULL OR ($1::bigint > 0 AND "   \
                      "NOT EXISTS (SELECT 1 FROM jobs o JOIN memberships om ON om.team_id = "      \
                      "o.team_id AND om.user_id = $1::bigint WHERE o.id = q.other_job_id)) THEN "  \
                      "NULL ELSE q.other_job_id::text END)), 'prediction', "                       \
                      "json_build_object('run_s', CASE WHEN q.run_ms > 0 THEN (q.run_ms / "        \
                      "1000.0)::float8 END, 'source', q.source))"

enum rc db_forecast_read(PGconn *c, int64_t member_of, int64_t job_id, json_t **generated,
                         json_t **jobs, json_t **running, const char *req_id)
{
    char m[24], id[24];
    const char *p[] = {db_i64(member_of, m, sizeof(m)), db_i64(job_id, id, sizeof(id))};
    json_t *meta = NULL, *rows = NULL, *run = NULL;
    enum rc rc;

    *generated = NULL;
    *jobs = NULL;
    if (running != NULL)
        *running = NULL;
    /* One statement, so meta and rows come from one snapshot of the tables
     * (the leader replaces both in one transaction). */
    rc = db_query_json(
        c,
        "WITH q AS (SELECT f.*, (row_number() OVER (ORDER BY f.position, f.job_id) - 1)::int AS "
        "pos FROM queue_forecast f JOIN jobs j ON j.id = f.job_id WHERE f.kind = 'queued' AND "
        "j.state IN ('QUEUED', 'RESTARTING') AND NOT j.cancel_requested), vis AS (SELECT j.id "
        "FROM jobs j WHERE $1::bigint = 0 OR j.team_id IN (SELECT team_id FROM memberships WHERE "
        "user_id = $1::bigint)) SELECT (SELECT " ISO_MS(
            "generated_at") " FROM queue_forecast_meta) AS generated_at, (SELECT "
                            "coalesce(json_agg(" ENTRY_JSON
                            " ORDER BY q.pos), '[]'::json) FROM q JOIN jobs j ON j.id = q.job_id "
                            "JOIN teams t ON t.id = "
                            "j.team_id JOIN users u ON u.id = j.user_id WHERE j.id IN (SELECT id "
                            "FROM vis) AND "
                            "($2::bigint = 0 OR j.id = $2::bigint)) AS jobs, (SELECT "
                            "coalesce(json_agg(json_build_"
                            "object('id', f.job_id::text, 'expected_end', " ISO_MS(
                                "f.end_at") ", 'prediction', json_build_object('run_s', CASE WHEN "
                                            "f.run_ms > 0 THEN "
                                            "(f.run_ms / 1000.0)::float8 END, 'source', "
                                            "f.source)) ORDER BY "
                                            "f.job_id), '[]'::json) FROM queue_forecast f WHERE "
                                            "f.kind = 'running' AND "
                                            "f.job_id IN (SELECT id FROM vis) AND ($2::bigint = 0 "
                                            "OR f.job_id = "
                                            "$2::bigint)) AS running",
        2, p, 1, &meta, req_id);
    if (rc != RC_OK)
        return rc;
    rows = json_incref(json_object_get(meta, "jobs"));
    run = json_incref(json_object_get(meta, "running"));
    *generated = json_incref(json_object_get(meta, "generated_at"));
    if (*generated == NULL)
        *generated = json_null();
    json_decref(meta);
    if (!json_is_array(rows) || !json_is_array(run)) {
        json_decref(rows);
        json_decref(run);
        json_decref(*generated);
        *generated = NULL;
        return RC_EINTERNAL;
    }
    *jobs = rows;
    if (running != NULL)
        *running = run;
    else
        json_decref(run);
    return RC_OK;
}

enum rc db_forecast_predictions(PGconn *c, const int64_t *ids, size_t n, int64_t *run_ms,
                                int64_t *end_ms, const char *req_id)
{
    char *lit = array_lit(n, put_id, ids);
    const char *p[1] = {lit};
    PGresult *r;
    enum rc rc;
    size_t k = 0;

    if (lit == NULL)
        return RC_ENOMEM;
    memset(run_ms, 0, n * sizeof(*run_ms));
    memset(end_ms, 0, n * sizeof(*end_ms));
    r = db_exec(c,
                "SELECT job_id, run_ms, coalesce((extract(epoch FROM end_at) * 1000)::bigint, 0) "
                "FROM queue_forecast WHERE job_id = ANY($1::bigint[]) ORDER BY job_id",
                1, p);
    free(lit);
    rc = db_result_rc(r, req_id);
    /* ids come sorted from the snapshot, but do not rely on it: match each. */
    for (int i = 0; rc == RC_OK && i < PQntuples(r); i++) {
        int64_t id = i64(r, i, 0);
        for (size_t tries = 0; tries < n; tries++, k = (k + 1) % n) {
            if (ids[k] == id) {
                run_ms[k] = i64(r, i, 1);
                end_ms[k] = i64(r, i, 2);
                break;
            }
        }
    }
    PQclear(r);
    return rc;
}

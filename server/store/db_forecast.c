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
#include "db_lease.h"
#include "log.h"

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
static void put_team(const void *a, size_t i, char *b, size_t n)
{
    put_ms(E(a, i)->team_id, b, n);
}
static void put_user(const void *a, size_t i, char *b, size_t n)
{
    put_ms(E(a, i)->user_id, b, n);
}

/*
 * A page's plan (db_forecast_page) rests on the planner's idea of how many
 * rows queue_forecast holds. Every forecast rewrites the table, and
 * autovacuum analyzes it about once a minute; until then a queue that grew
 * from a few jobs to thousands is planned at its old size, as a sort of
 * every row instead of a walk of the position index that stops at the
 * page's end (bench/RESULTS.md, "Queue pages": 24 ms instead of a few at
 * 10,000 jobs). So after storing n rows, analyze the table when n is more
 * than twice or under half what the statistics say: rarely, and a few ms
 * at 10,000 rows (an autovacuum of the table in progress yields to it
 * after deadlock_timeout). Only an optimization: a failure is logged, not
 * returned.
 */
static void keep_stats(PGconn *c, size_t n)
{
    char nn[24];
    const char *p[1] = {db_i64((int64_t)n, nn, sizeof(nn))};
    PGresult *r = db_exec(c,
                          "SELECT greatest($1::float8, reltuples) >= 1000 AND (reltuples < 0 OR "
                          "$1::float8 > 2 * reltuples OR 2 * $1::float8 < reltuples) FROM "
                          "pg_class WHERE oid = 'queue_forecast'::regclass",
                          1, p);
    bool stale = db_result_rc(r, "forecast") == RC_OK && PQntuples(r) == 1 &&
                 strcmp(PQgetvalue(r, 0, 0), "t") == 0;

    PQclear(r);
    if (stale && db_exec_ok(c, "forecast", "ANALYZE queue_forecast", 0, NULL) != RC_OK)
        LOG_WARN("sched", "forecast statistics not refreshed", "rows=%zu", n);
}

/*
 * The forecast's rows ($1..$13, the columns of put[] below) written as a
 * difference from the stored ones: a row whose every column is already
 * stored as given is not written at all, a changed row is updated in
 * place, a new one inserted (the caller deleted the vanished ones). A
 * steady queue is forecast anew every forecast_interval_ms; rewriting
 * every row each time left that many dead tuples behind for autovacuum
 * (bench/RESULTS.md, "Forecast store"). The filter is in the SELECT, not
 * in the WHERE of DO UPDATE, so that an unchanged row is not even locked.
 * The difference is taken against the table, never against a copy in
 * memory, so a new leader or a restarted server starts from what is
 * stored. A team or user not known here (the predictor's keys could not
 * be read) comes from the job: its primary key, one row.
 */
#define FORECAST_COLS                                                                              \
    "kind, position, start_at, end_at, reason, need_gpus, free_gpus, other_job_id, run_ms, "       \
    "source, team_id, user_id"
#define STORE_DIFF                                                                                 \
    "INSERT INTO queue_forecast (job_id, " FORECAST_COLS ") SELECT n.* FROM (SELECT u.j, u.k, "    \
    "u.p, timestamptz 'epoch' + u.s * interval '1 millisecond', timestamptz 'epoch' + u.e * "      \
    "interval '1 millisecond', u.r, u.ng, u.fg, u.o, u.rm, u.src, coalesce(u.t, (SELECT "          \
    "jt.team_id FROM jobs jt WHERE jt.id = u.j)), coalesce(u.u, (SELECT ju.user_id FROM jobs ju "  \
    "WHERE ju.id = u.j)) FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], "          \
    "$5::bigint[], $6::text[], $7::int[], $8::int[], $9::bigint[], $10::bigint[], $11::text[], "   \
    "$12::bigint[], $13::bigint[]) AS u(j, k, p, s, e, r, ng, fg, o, rm, src, t, u)) AS "          \
    "n(job_id, " FORECAST_COLS ") WHERE NOT EXISTS (SELECT 1 FROM queue_forecast f WHERE "         \
    "f.job_id = n.job_id AND (f.kind, f.position, f.start_at, f.end_at, f.reason, f.need_gpus, "   \
    "f.free_gpus, f.other_job_id, f.run_ms, f.source, f.team_id, f.user_id) IS NOT DISTINCT FROM " \
    "(n.kind, n.position, n.start_at, n.end_at, n.reason, n.need_gpus, n.free_gpus, "              \
    "n.other_job_id, n.run_ms, n.source, n.team_id, n.user_id)) ON CONFLICT (job_id) DO UPDATE "   \
    "SET (" FORECAST_COLS ") = (excluded.kind, excluded.position, excluded.start_at, "             \
    "excluded.end_at, excluded.reason, excluded.need_gpus, excluded.free_gpus, "                   \
    "excluded.other_job_id, excluded.run_ms, excluded.source, excluded.team_id, "                  \
    "excluded.user_id)"

enum rc db_forecast_store(PGconn *c, const struct db_forecast_entry *e, size_t n,
                          const struct db_forecast_meta *meta)
{
    static void (*const put[])(const void *, size_t, char *, size_t) = {
        put_job,  put_kind,  put_pos, put_start,  put_end,  put_reason, put_need,
        put_free, put_other, put_run, put_source, put_team, put_user};
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
    /* Nothing but this writes these tables: no lock order to keep beyond
     * the lease row, first (db.h). Only what changed is written (see
     * STORE_DIFF). */
    rc = db_lease_fence(c, DB_LEASE_SCHEDULER, meta->lease_epoch, "forecast");
    if (rc == RC_OK) {
        const char *p[1] = {lit[0]};
        rc = db_exec_ok(c, "forecast",
                        "DELETE FROM queue_forecast f WHERE NOT EXISTS (SELECT 1 FROM "
                        "unnest($1::bigint[]) AS u(j) WHERE u.j = f.job_id)",
                        1, p);
    }
    if (rc == RC_OK) {
        const char *p[NCOLS];
        for (size_t k = 0; k < NCOLS; k++)
            p[k] = lit[k];
        rc = db_exec_ok(c, "forecast", STORE_DIFF, NCOLS, p);
    }
    /* Once per forecast, so that no page counts the queue for its total;
     * a count that did not change is left as it is, like the rows. */
    if (rc == RC_OK)
        rc = db_exec_ok(c, "forecast",
                        "DELETE FROM queue_forecast_totals t WHERE NOT EXISTS (SELECT 1 FROM "
                        "queue_forecast f WHERE f.kind = 'queued' AND f.team_id = t.team_id AND "
                        "f.user_id = t.user_id)",
                        0, NULL);
    if (rc == RC_OK)
        rc = db_exec_ok(c, "forecast",
                        "INSERT INTO queue_forecast_totals (team_id, user_id, queued) SELECT "
                        "team_id, user_id, count(*) FROM queue_forecast WHERE kind = 'queued' AND "
                        "team_id IS NOT NULL AND user_id IS NOT NULL GROUP BY team_id, user_id "
                        "ON CONFLICT (team_id, user_id) DO UPDATE SET queued = excluded.queued "
                        "WHERE queue_forecast_totals.queued IS DISTINCT FROM excluded.queued",
                        0, NULL);
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
    if (rc == RC_OK)
        keep_stats(c, n);
out:
    for (size_t k = 0; k < NCOLS; k++)
        free(lit[k]);
    return rc;
}

/* One queued job's API entry (docs/queue.md) from q (a still-queued
 * forecast row with its stored place and its job's columns, PAGE_CTES's p)
 * and t, u; $1 the member or 0. */
#define ENTRY_JSON                                                                                 \
    "json_build_object('id', q.job_id::text, 'name', q.name, 'team', t.name, 'user', u.username, " \
    "'priority', CASE q.priority WHEN 0 THEN 'low' WHEN 2 THEN 'high' ELSE 'normal' END, "         \
    "'gpus', q.gpus, 'gpus_per_node', q.gpus_per_node, 'state', q.state, 'position', q.position, " \
    "'submitted_at', " ISO_MS("q.created_at") ", 'estimated_start', " ISO_MS(                      \
        "q.start_at") ", 'reason', json_build_object('code', q.reason, 'params', "                 \
                      "json_build_object('need_gpus', q.need_gpus, 'free_gpus', q.free_gpus, "     \
                      "'other_job_id', CASE WHEN q.other_job_id IS NULL OR ($1::bigint > 0 AND "   \
                      "NOT EXISTS (SELECT 1 FROM jobs o JOIN memberships om ON om.team_id = "      \
                      "o.team_id AND om.user_id = $1::bigint WHERE o.id = q.other_job_id)) THEN "  \
                      "NULL ELSE q.other_job_id::text END)), 'prediction', "                       \
                      "json_build_object('run_s', CASE WHEN q.run_ms > 0 THEN (q.run_ms / "        \
                      "1000.0)::float8 END, 'source', q.source))"

/* Whether team column t is visible to member $1 (0 = everyone). */
#define VISIBLE(t)                                                                                 \
    "($1::bigint = 0 OR " t " IN (SELECT m.team_id FROM memberships m WHERE m.user_id = "          \
    "$1::bigint))"

/* The query's filters on a job's team column t and user column u: $3 team
 * name, $4 username, $5 user id (NULL, NULL, 0 = none). An unknown name
 * matches nothing, as in the job list. */
#define FILTERS(t, u)                                                                              \
    "($3::text IS NULL OR " t " = (SELECT ft.id FROM teams ft WHERE ft.name = $3::text)) AND "     \
    "($4::text IS NULL OR " u " = (SELECT fu.id FROM users fu WHERE fu.username = $4::text)) AND " \
    "($5::bigint = 0 OR " u " = $5::bigint)"

/*
 * meta: the stored forecast's time; fresh: whether the cursor's forecast
 * ($6 its time in ms, 0 = a first page) is the stored one. p: the page, the
 * stored rows after position $7 that the caller may see and asked for and
 * whose job is still queued (one placed or cancelled since drops out), one
 * more than $8 (NULL = all) to tell whether more follow; none when not
 * fresh; it carries the job's columns that an entry shows, so that no
 * other part joins jobs again. The statement is planned with the values of
 * $1..$9 (unnamed, as PQexecParams sends it), so the filters not given fold
 * away and the page is read in stored order from the index of the filter
 * that is given (queue_forecast_team, _user, or _queued on position), each
 * row joined to its job by primary key: the page's rows plus the ones
 * skipped, never the whole queue (bench/RESULTS.md, "Queue pages";
 * db_forecast_store keeps the planner's row count current).
 */
#define PAGE_CTES                                                                                  \
    "WITH meta AS (SELECT generated_at, (extract(epoch FROM generated_at) * 1000)::bigint AS "     \
    "gen_ms FROM queue_forecast_meta), fresh AS (SELECT $6::bigint = 0 OR EXISTS (SELECT 1 FROM "  \
    "meta WHERE gen_ms = $6::bigint) AS ok), p AS (SELECT f.*, j.name, j.priority, j.gpus, "       \
    "j.gpus_per_node, j.state, j.created_at FROM queue_forecast f JOIN jobs j "                    \
    "ON j.id = f.job_id WHERE f.kind = 'queued' AND (SELECT ok FROM fresh) AND ($6::bigint = 0 "   \
    "OR f.position > $7::bigint) AND j.state IN ('QUEUED', 'RESTARTING') AND NOT "                 \
    "j.cancel_requested AND " VISIBLE("f.team_id") " AND ($2::bigint = 0 OR f.job_id = "           \
                                                   "$2::bigint) AND " FILTERS(                     \
                                                       "f.team_id",                                \
                                                       "f.user_id") " ORDER BY f.position LIMIT "  \
                                                                    "$8::int + 1) "

/* total: one job's page counts itself; else the stored counts of the
 * (team, user) pairs that match, a few rows whatever the queue's length. */
#define PAGE_TOTAL                                                                                 \
    "(SELECT CASE WHEN $2::bigint > 0 THEN (SELECT count(*) FROM p) ELSE (SELECT "                 \
    "coalesce(sum(t.queued), 0) FROM queue_forecast_totals t WHERE " VISIBLE(                      \
        "t.team_id") " AND " FILTERS("t.team_id", "t.user_id") ") END)"

#define PAGE_JOBS                                                                                  \
    "(SELECT coalesce(json_agg(" ENTRY_JSON " ORDER BY q.position), '[]'::json) FROM (SELECT * "   \
    "FROM p ORDER BY p.position LIMIT $8::int) q JOIN teams t ON t.id = q.team_id JOIN users u "   \
    "ON u.id = q.user_id)"

/* The stored position of the page's last entry when more follow, else NULL. */
#define PAGE_NEXT                                                                                  \
    "(SELECT CASE WHEN (SELECT count(*) FROM p) > $8::int THEN (SELECT p.position FROM p ORDER "   \
    "BY p.position OFFSET $8::int - 1 LIMIT 1) END)"

#define PAGE_RUNNING                                                                               \
    "(SELECT CASE WHEN $9::bool AND (SELECT ok FROM fresh) THEN (SELECT "                          \
    "coalesce(json_agg(json_build_object('id', f.job_id::text, 'expected_end', " ISO_MS(           \
        "f.end_at") ", 'prediction', json_build_object('run_s', CASE WHEN f.run_ms > 0 THEN "      \
                    "(f.run_ms / 1000.0)::float8 END, 'source', f.source)) ORDER BY f.job_id), "   \
                    "'[]'::json) FROM queue_forecast f WHERE f.kind = 'running' AND " VISIBLE(     \
                        "f.team_id") " AND ($2::bigint = 0 OR "                                    \
                                     "f.job_id = $2::bigint) AND " FILTERS("f.team_id",            \
                                                                           "f.user_id") ") END)"

#define PAGE_SQL                                                                                   \
    PAGE_CTES "SELECT (SELECT " ISO_MS("generated_at") " FROM meta) AS generated_at, (SELECT "     \
                                                       "gen_ms FROM meta) AS gen_ms, (SELECT ok "  \
                                                       "FROM fresh) AS fresh, " PAGE_TOTAL         \
                                                       " AS total, " PAGE_JOBS                     \
                                                       " AS jobs, " PAGE_NEXT                      \
                                                       " AS next_pos, " PAGE_RUNNING " AS running"

void db_forecast_page_cleanup(struct db_forecast_page *page)
{
    if (page == NULL)
        return;
    json_decref(page->generated);
    json_decref(page->jobs);
    json_decref(page->running);
    memset(page, 0, sizeof(*page));
    page->next_pos = -1;
}

enum rc db_forecast_page(PGconn *c, const struct db_forecast_query *q,
                         struct db_forecast_page *page, const char *req_id)
{
    char m[24], id[24], uid[24], gen[24], pos[24], lim[24];
    const char *p[] = {db_i64(q->member_of, m, sizeof(m)),
                       db_i64(q->job_id, id, sizeof(id)),
                       q->team,
                       q->user,
                       db_i64(q->user_id, uid, sizeof(uid)),
                       db_i64(q->after_gen_ms > 0 ? q->after_gen_ms : 0, gen, sizeof(gen)),
                       db_i64(q->after_pos, pos, sizeof(pos)),
                       q->limit > 0 ? db_i64(q->limit, lim, sizeof(lim)) : NULL,
                       q->with_running ? "true" : "false"};
    json_t *row = NULL, *v;
    enum rc rc;

    memset(page, 0, sizeof(*page));
    page->next_pos = -1;
    rc = db_query_json(c, PAGE_SQL, 9, p, 1, &row, req_id);
    if (rc != RC_OK)
        return rc;
    rc = RC_EINTERNAL;
    page->generated = json_incref(json_object_get(row, "generated_at"));
    if (page->generated == NULL)
        page->generated = json_null();
    page->generated_ms = json_integer_value(json_object_get(row, "gen_ms"));
    page->changed = !json_is_true(json_object_get(row, "fresh"));
    if (page->changed) {
        rc = RC_OK;
        goto out;
    }
    page->total = json_integer_value(json_object_get(row, "total"));
    v = json_object_get(row, "next_pos");
    page->next_pos = json_is_integer(v) ? json_integer_value(v) : -1;
    page->jobs = json_incref(json_object_get(row, "jobs"));
    if (!json_is_array(page->jobs))
        goto out;
    if (q->with_running) {
        page->running = json_incref(json_object_get(row, "running"));
        if (!json_is_array(page->running))
            goto out;
    }
    rc = RC_OK;
out:
    json_decref(row);
    if (rc != RC_OK)
        db_forecast_page_cleanup(page);
    return rc;
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

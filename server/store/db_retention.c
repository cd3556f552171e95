/*
 * db_retention.c - see db_retention.h.
 *
 * A batch is one db_tx(): read the kind's progress row, remove at most
 * batch_rows rows, then either add the count to pending (more to do) or, on
 * the pass's last batch, append the audit event with pending + this batch
 * and set pending back to 0. For the kinds of finished jobs a batch first
 * picks (keyset on (finished_at, id) from the stored cursor) and locks up to
 * RETAIN_JOBS_PER_BATCH jobs, removes their rows, and moves the cursor past
 * them only once none of their rows is left: a job with more rows than a
 * batch takes several.
 */
#include "db_retention.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_audit.h"

/* Jobs one batch of a job kind looks at: enough that jobs with a few rows
 * each still fill a batch, few enough that the locks are brief. */
#define RETAIN_JOBS_PER_BATCH 200

struct kind_sql {
    const char *name;
    const char *del; /* $1 days, $2 batch rows (sessions, deliveries); $1 job ids, $2 rows;
                        $1 rows (own_age) */
    int of_jobs;
    int own_age; /* each row's age limit is its own (serve_texts): no days */
};

static const struct kind_sql kinds[DB_RETAIN_NKINDS] = {
    [DB_RETAIN_SESSIONS] = {"sessions",
                            "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM "
                            "sessions WHERE expires_at < now() - make_interval(days => $1::int) "
                            "ORDER BY expires_at LIMIT $2::int FOR UPDATE SKIP LOCKED)",
                            0, 0},
    [DB_RETAIN_WEBHOOK_DELIVERIES] = {"webhook_deliveries",
                                      "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM "
                                      "webhook_deliveries WHERE status <> 'pending' AND "
                                      "created_at < now() - make_interval(days => $1::int) "
                                      "ORDER BY created_at, id LIMIT $2::int "
                                      "FOR UPDATE SKIP LOCKED)",
                                      0, 0},
    [DB_RETAIN_JOB_LOGS] = {"job_logs",
                            "DELETE FROM job_logs WHERE id IN (SELECT id FROM job_logs "
                            "WHERE job_id = ANY($1::bigint[]) LIMIT $2::int)",
                            1, 0},
    [DB_RETAIN_JOB_METRICS] = {"job_metrics",
                               "DELETE FROM metrics WHERE id IN (SELECT id FROM metrics "
                               "WHERE job_id = ANY($1::bigint[]) LIMIT $2::int)",
                               1, 0},
    [DB_RETAIN_JOB_EVENTS] = {"job_events",
                              "DELETE FROM job_events WHERE id IN (SELECT id FROM job_events "
                              "WHERE job_id = ANY($1::bigint[]) LIMIT $2::int)",
                              1, 0},
    /* Oldest first along serve_requests_texts (sql/027); the deployment's
     * keep_texts_days says which are due. */
    [DB_RETAIN_SERVE_TEXTS] = {"serve_texts",
                               "UPDATE serve_requests SET prompt_text = NULL, answer_text = NULL "
                               "WHERE id IN (SELECT r.id FROM serve_requests r LEFT JOIN "
                               "deployments d ON d.id = r.deployment_id WHERE (r.prompt_text IS "
                               "NOT NULL OR r.answer_text IS NOT NULL) AND r.ts < now() - "
                               "make_interval(days => coalesce(d.keep_texts_days, 0)) "
                               "ORDER BY r.ts, r.id LIMIT $1::int FOR UPDATE OF r SKIP LOCKED)",
                               0, 1},
};

/* The next jobs after the cursor that finished more than $3 days ago, locked
 * in ascending id (Lock order, db.h, step 2). Returns their ids as an array,
 * how many, and the (finished_at, id) of the last in cursor order. */
static const char *const pick_jobs_sql =
    "WITH pick AS (SELECT id, finished_at FROM jobs WHERE finished_at IS NOT NULL "
    "AND finished_at < now() - make_interval(days => $3::int) "
    "AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') "
    "AND (finished_at, id) > ($1::timestamptz, $2::bigint) "
    "ORDER BY finished_at, id LIMIT $4::int), "
    "locked AS (SELECT j.id FROM jobs j WHERE j.id IN (SELECT id FROM pick) ORDER BY j.id "
    "FOR UPDATE) "
    "SELECT coalesce((SELECT array_agg(id) FROM locked), '{}')::text, (SELECT count(*) FROM pick), "
    "l.finished_at::text, l.id FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT finished_at, id "
    "FROM pick ORDER BY finished_at DESC, id DESC LIMIT 1) l ON true";

const char *db_retention_kind_name(enum db_retention_kind kind)
{
    return kind >= 0 && kind < DB_RETAIN_NKINDS ? kinds[kind].name : "";
}

struct batch {
    /* in */
    PGconn *c;
    enum db_retention_kind kind;
    int days, batch_rows, last; /* last: the pass ends with this batch whatever it finds */
    int passes_batches;         /* batches of the pass so far, this one included */
    /* out, reset by each run of the body */
    int64_t removed, reported;
    int more; /* another batch would find rows */
};

/* The jobs this batch works on: ids (text array) and the cursor past them. */
struct picked {
    char ids[RETAIN_JOBS_PER_BATCH * 21 + 3];
    char ts[64];
    char id[24];
    int n;
};

static enum rc pick_jobs(struct batch *b, const char *cur_ts, const char *cur_id,
                         struct picked *out)
{
    char dbuf[16], lbuf[16];
    const char *p[] = {cur_ts, cur_id, dbuf, lbuf};
    PGresult *r;
    enum rc rc;

    snprintf(dbuf, sizeof(dbuf), "%d", b->days);
    snprintf(lbuf, sizeof(lbuf), "%d", RETAIN_JOBS_PER_BATCH);
    r = db_exec(b->c, pick_jobs_sql, 4, p);
    if ((rc = db_result_rc(r, "retention")) == RC_OK && PQntuples(r) != 1)
        rc = RC_EINTERNAL;
    if (rc == RC_OK) {
        snprintf(out->ids, sizeof(out->ids), "%s", PQgetvalue(r, 0, 0));
        out->n = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
        snprintf(out->ts, sizeof(out->ts), "%s", PQgetvalue(r, 0, 2));
        snprintf(out->id, sizeof(out->id), "%s", PQgetvalue(r, 0, 3));
    }
    PQclear(r);
    return rc;
}

static enum rc audit_pass(struct batch *b, int64_t count)
{
    json_t *details =
        kinds[b->kind].own_age
            ? json_pack("{s:s,s:I,s:i}", "kind", kinds[b->kind].name, "count", (json_int_t)count,
                        "batches", b->passes_batches)
            : json_pack("{s:s,s:I,s:i,s:i}", "kind", kinds[b->kind].name, "count",
                        (json_int_t)count, "retain_days", b->days, "batches", b->passes_batches);
    struct audit_event ev = {.actor = "system",
                             .source = "",
                             .action = "retention.delete",
                             .target = AUDIT_TARGET_NONE,
                             .outcome = "success",
                             .details = details};
    enum rc rc;

    if (details == NULL)
        return RC_ENOMEM;
    rc = audit_append(b->c, &ev, "retention");
    json_decref(details);
    return rc;
}

static enum rc batch_body(void *arg)
{
    struct batch *b = arg;
    const struct kind_sql *k = &kinds[b->kind];
    PGresult *r = NULL;
    struct picked jobs;
    char rbuf[16], pbuf[24], dbuf[16];
    const char *new_ts = NULL, *new_id = NULL;
    int64_t pending = 0;
    enum rc rc;

    b->removed = b->reported = 0;
    b->more = 0;
    memset(&jobs, 0, sizeof(jobs));
    {
        const char *p[] = {k->name};
        r = db_exec(b->c,
                    "SELECT pending, coalesce(cursor_ts, '-infinity')::text, cursor_id "
                    "FROM retention_progress WHERE kind = $1",
                    1, p);
    }
    if ((rc = db_result_rc(r, "retention")) != RC_OK)
        goto out;
    if (PQntuples(r) != 1 || db_parse_i64(PQgetvalue(r, 0, 0), &pending) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    snprintf(rbuf, sizeof(rbuf), "%d", b->batch_rows);
    if (k->of_jobs) {
        char ts[64], id[24];
        snprintf(ts, sizeof(ts), "%s", PQgetvalue(r, 0, 1));
        snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 2));
        PQclear(r);
        r = NULL;
        if ((rc = pick_jobs(b, ts, id, &jobs)) != RC_OK)
            goto out;
        const char *p[] = {jobs.ids, rbuf};
        r = db_exec(b->c, k->del, 2, p);
    } else if (k->own_age) {
        PQclear(r);
        const char *p[] = {rbuf};
        r = db_exec(b->c, k->del, 1, p);
    } else {
        PQclear(r);
        snprintf(dbuf, sizeof(dbuf), "%d", b->days);
        const char *p[] = {dbuf, rbuf};
        r = db_exec(b->c, k->del, 2, p);
    }
    if ((rc = db_result_rc(r, "retention")) != RC_OK)
        goto out;
    if (db_parse_i64(PQcmdTuples(r), &b->removed) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    PQclear(r);
    r = NULL;
    b->more = b->removed >= b->batch_rows;
    if (k->of_jobs && !b->more && jobs.n > 0) {
        /* Every row of the picked jobs is gone: move past them. */
        new_ts = jobs.ts;
        new_id = jobs.id;
        b->more = jobs.n >= RETAIN_JOBS_PER_BATCH;
    }
    pending += b->removed;
    if ((!b->more || b->last) && pending > 0) {
        b->reported = pending;
        pending = 0;
    }
    {
        const char *p[] = {k->name, db_i64(pending, pbuf, sizeof(pbuf)), new_ts, new_id};
        rc = db_exec_ok(b->c, "retention",
                        "UPDATE retention_progress SET pending = $2::bigint, "
                        "cursor_ts = coalesce($3::timestamptz, cursor_ts), "
                        "cursor_id = coalesce($4::bigint, cursor_id) WHERE kind = $1",
                        4, p);
        if (rc != RC_OK)
            goto out;
    }
    /* Last, as every event: it takes the audit head. */
    if (b->reported > 0)
        rc = audit_pass(b, b->reported);
out:
    PQclear(r);
    return rc;
}

enum rc db_retention_run(PGconn *c, enum db_retention_kind kind, int days, int batch_rows,
                         int max_batches, db_retention_stop_fn stop, const void *stop_arg,
                         struct db_retention_pass *out)
{
    struct batch b = {.c = c, .kind = kind, .days = days, .batch_rows = batch_rows};
    enum rc rc = RC_OK;

    memset(out, 0, sizeof(*out));
    if (kind < 0 || kind >= DB_RETAIN_NKINDS || days < 1 || batch_rows < 1 || max_batches < 1)
        return RC_EINVAL;
    do {
        b.passes_batches = out->batches + 1;
        b.last = b.passes_batches >= max_batches || (stop != NULL && stop(stop_arg));
        rc = db_tx(c, batch_body, &b, "retention");
        out->batches++;
        if (rc != RC_OK)
            break;
        out->removed += b.removed;
        out->reported += b.reported;
    } while (b.more && !b.last);
    return rc;
}

enum rc db_state_counts_fold(PGconn *c)
{
    /* The DELETE sees one snapshot: rows committed after it stay and still
     * count, so the sums never jump. */
    return db_exec_ok(c, "retention",
                      "WITH d AS (DELETE FROM job_state_counts RETURNING state, n) "
                      "INSERT INTO job_state_counts (state, n) "
                      "SELECT state, sum(n) FROM d GROUP BY state HAVING sum(n) <> 0",
                      0, NULL);
}

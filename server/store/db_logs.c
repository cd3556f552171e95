/*
 * db_logs.c - see db_logs.h.
 */
#include "db_logs.h"

#include <stdio.h>

#include "db.h"

enum rc db_logs_read(PGconn *c, const struct db_log_filter *f, json_t **out, const char *req_id)
{
    char job[24], rank[16], att[16], after[24], lim[16], before[24];
    const char *p[7];

    snprintf(job, sizeof(job), "%lld", (long long)f->job_id);
    snprintf(rank, sizeof(rank), "%d", f->rank);
    snprintf(att, sizeof(att), "%d", f->attempt);
    snprintf(after, sizeof(after), "%lld", (long long)f->after_id);
    snprintf(lim, sizeof(lim), "%d", f->limit);
    p[0] = job;
    p[1] = f->rank >= 0 ? rank : NULL;
    p[2] = f->stream;
    p[3] = f->attempt > 0 ? att : NULL;
    p[4] = after;
    p[5] = lim;
    snprintf(before, sizeof(before), "%lld", (long long)f->before_id);
    p[6] = f->before_id > 0 ? before : NULL;
    /* Both orders walk the job_logs_job index (job_id, id) from one end, so
     * the last page of a long log costs what the first one does. */
    if (f->tail)
        return db_query_json(
            c,
            "SELECT * FROM (SELECT id, attempt, rank, stream, ts, text FROM job_logs "
            "WHERE job_id = $1 AND ($2::int IS NULL OR rank = $2) AND "
            "($3::text IS NULL OR stream = $3) AND ($4::int IS NULL OR attempt = $4) AND "
            "id > $5 AND ($7::bigint IS NULL OR id < $7) ORDER BY id DESC LIMIT $6) t "
            "ORDER BY id",
            7, p, 0, out, req_id);
    return db_query_json(
        c,
        "SELECT id, attempt, rank, stream, ts, text FROM job_logs WHERE job_id = $1 AND "
        "($2::int IS NULL OR rank = $2) AND ($3::text IS NULL OR stream = $3) AND "
        "($4::int IS NULL OR attempt = $4) AND id > $5 AND ($7::bigint IS NULL OR id < $7) "
        "ORDER BY id LIMIT $6",
        7, p, 0, out, req_id);
}

enum rc db_metrics_read(PGconn *c, int64_t job_id, int64_t after_id, int limit, json_t **out,
                        const char *req_id)
{
    char job[24], after[24], lim[16];
    const char *p[] = {job, after, lim};

    snprintf(job, sizeof(job), "%lld", (long long)job_id);
    snprintf(after, sizeof(after), "%lld", (long long)after_id);
    snprintf(lim, sizeof(lim), "%d", limit);
    return db_query_json(
        c,
        "SELECT id, attempt, rank, step, ts, vals AS values FROM metrics WHERE job_id = $1 "
        "AND id > $2 ORDER BY id LIMIT $3",
        3, p, 0, out, req_id);
}

enum rc db_checkpoints_read(PGconn *c, int64_t job_id, json_t **out, const char *req_id)
{
    char job[24];
    const char *p[] = {job};

    snprintf(job, sizeof(job), "%lld", (long long)job_id);
    return db_query_json(
        c,
        "SELECT id, attempt, step, path, created_at FROM checkpoints WHERE job_id = $1 "
        "ORDER BY step DESC, id DESC LIMIT 500",
        1, p, 0, out, req_id);
}

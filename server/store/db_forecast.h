/*
 * db_forecast.h - the queue forecast's SQL (docs/queue.md): the
 * finished jobs the runtime predictor learns from, the predictor keys of
 * the jobs in a snapshot, the leader's writing of the forecast and every
 * replica's reading of it (tables queue_forecast and queue_forecast_meta,
 * sql/013_queue_forecast.sql, sql/014_queue_forecast_pages.sql).
 *
 * What the predictor learns from: jobs that SUCCEEDED, with their run time
 * the sum over their attempts of ended_at - created_at (placement to end,
 * as the scheduler counts a running job's start; a job preempted or
 * restarted from a checkpoint counts every attempt's service). FAILED and
 * CANCELLED jobs are left out: they were cut short by a crash or a user, and
 * would teach the predictor that jobs of their key end early.
 *
 * Thread-safety: any thread, with its own connection. The writing is the
 * leader's scheduler thread's.
 */
#ifndef TY_SERVER_DB_FORECAST_H
#define TY_SERVER_DB_FORECAST_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A job as the predictor keys it (predictor/predictor.h struct pred_key). */
struct db_forecast_job {
    int64_t job_id;
    const char *template_id; /* borrowed from the rows; "" = none */
    const char *command;     /* borrowed; the command line joined by spaces */
    int64_t team_id;
    int64_t user_id;
    int gpus;
    int64_t run_ms; /* db_forecast_finished only: the job's run time (ms); else 0 */
};

/* Rows of jobs; caller storage, zero it (= {0}) before the first fill. */
struct db_forecast_rows {
    PGresult *res;                /* owned; the strings point into it */
    struct db_forecast_job *jobs; /* owned; n entries */
    size_t n;
};

/* Where db_forecast_finished() has read up to: (finished_at, id). Caller
 * storage; db_forecast_mark_init() before the first read. */
struct db_forecast_mark {
    char finished_at[64]; /* timestamptz as PostgreSQL wrote it */
    int64_t job_id;
};
void db_forecast_mark_init(struct db_forecast_mark *m);

/*
 * Succeeded jobs that finished after *mark, oldest first, at most limit,
 * into *out (freed and refilled); *mark moves past them. Only jobs that
 * finished at least a second ago are read, so that a transaction that
 * committed late with an earlier finished_at is not stepped over. RC_OK
 * (out->n < limit: nothing more for now), or a database rc.
 */
enum rc db_forecast_finished(PGconn *c, struct db_forecast_mark *mark, int limit,
                             struct db_forecast_rows *out) TY_WUR;

/* The keys of the jobs ids[0..n) (any order) into *out, by ascending id;
 * ids that are not jobs are left out. */
enum rc db_forecast_keys(PGconn *c, const int64_t *ids, size_t n,
                         struct db_forecast_rows *out) TY_WUR;

/* Free what rows own; rows may be filled again. NULL is a no-op. */
void db_forecast_rows_cleanup(struct db_forecast_rows *rows);

/* One job's line of a forecast, as stored. */
struct db_forecast_entry {
    int64_t job_id;
    bool running;       /* a running job (end_ms) rather than a queued one */
    int position;       /* queued: 0-based place in scheduling order */
    int64_t start_ms;   /* queued: estimated start; <= 0 or INT64_MAX = not known / never */
    int64_t end_ms;     /* running: expected end; <= 0 or INT64_MAX = not known */
    const char *reason; /* static sched_wait_code() text */
    int need_gpus;
    int free_gpus;
    int64_t other_job_id; /* 0 = none */
    int64_t run_ms;       /* predicted run time; 0 = none */
    const char *source;   /* static pred_source_name() text */
    int64_t team_id;      /* the job's team and user, for the queue's filters; 0 = not */
    int64_t user_id;      /* known here: the store reads it from the job */
};

/* What a forecast was made at and how (queue_forecast_meta). */
struct db_forecast_meta {
    int64_t generated_ms; /* database clock */
    bool truncated;
    int64_t duration_us;
    int64_t lease_epoch; /* the writer's scheduling lease, fenced in the transaction (db_lease.h) */
};

/*
 * Replace the stored forecast with e[0..n) and meta in one transaction, so
 * that a reader sees the whole old one or the whole new one, with the
 * counts of its queued jobs per team and user (queue_forecast_totals) that
 * db_forecast_page() sums for `total`. Only what differs from the stored
 * rows is written (rows of jobs no longer in e deleted, changed ones
 * updated, new ones inserted; a row equal to its entry is not touched), so
 * a queue that did not change leaves no dead tuple but meta's one row.
 * Reads, but neither locks nor writes, a job row (only for an entry whose
 * team or user is 0); touches no audit head (lock order: db.h); not
 * audited (derived data).
 * Fenced first by meta->lease_epoch (db_lease_fence): RC_ECONFLICT, nothing
 * written, when that lease is no longer this session's.
 */
enum rc db_forecast_store(PGconn *c, const struct db_forecast_entry *e, size_t n,
                          const struct db_forecast_meta *meta) TY_WUR;

/* What db_forecast_page() reads; caller storage, zero it (= {0}) first. */
struct db_forecast_query {
    int64_t member_of;    /* > 0: only the jobs of that user's teams (positions stay those of
                             the whole queue); other_job_id of a job they cannot see is null */
    int64_t job_id;       /* > 0: only that job */
    const char *team;     /* borrowed; NULL or a team name: only its jobs */
    const char *user;     /* borrowed; NULL or a username: only that user's jobs */
    int64_t user_id;      /* > 0: only that user's jobs (mine=1) */
    int64_t after_gen_ms; /* > 0: a next page, of the forecast generated then (ms) */
    int64_t after_pos;    /* with after_gen_ms: the stored position the last page ended at */
    int limit;            /* entries at most; 0 = all */
    bool with_running;    /* fill page->running */
};

/* One page of the stored forecast; caller storage, db_forecast_page_cleanup(). */
struct db_forecast_page {
    json_t *generated;    /* owned: generated_at (ISO 8601), or null before the first forecast */
    int64_t generated_ms; /* 0 before the first forecast */
    json_t *jobs;         /* owned array: the API's entries (docs/queue.md) in scheduling order */
    json_t *running;      /* owned array of the running jobs' expected ends; NULL unless asked */
    int64_t total;        /* the forecast's queued entries that match the query's filters, on
                             all pages (a job that left the queue since still counts) */
    int64_t next_pos;     /* more follow: the stored position of the last entry; else -1 */
    bool changed;         /* after_gen_ms is not the stored forecast (replaced since, or none
                             yet): generated and generated_ms are filled, nothing else */
};

/*
 * The stored forecast of the queued jobs still queued, in scheduling order,
 * filtered as q says, into *page, at the cost of the page's rows and not of
 * the queue: positions are the stored ones and page->total the stored
 * count of the matching jobs (queue_forecast_totals), both as of the
 * forecast, so a job placed or cancelled since drops out of its page,
 * leaving a gap in the positions, and still counts in total. Keyset paging
 * on the stored position: a next page (q->after_gen_ms) of the same
 * forecast holds exactly the matching entries after the previous one's,
 * whatever moved in the jobs table meanwhile; of a forecast replaced since,
 * nothing (page->changed). One statement, so all of it comes from one
 * snapshot of the tables (the leader replaces them in one transaction).
 * RC_OK (page filled) or a database rc (page empty).
 */
enum rc db_forecast_page(PGconn *c, const struct db_forecast_query *q,
                         struct db_forecast_page *page, const char *req_id) TY_WUR;

/* Free what page owns; NULL is a no-op. */
void db_forecast_page_cleanup(struct db_forecast_page *page);

/*
 * The stored predictions, for a what-if on any replica: for each queued job
 * id of ids[0..n) its predicted run time into run_ms[i] (0 when none), and
 * for each running job the stored expected end into end_ms[i] (0 none).
 */
enum rc db_forecast_predictions(PGconn *c, const int64_t *ids, size_t n, int64_t *run_ms,
                                int64_t *end_ms, const char *req_id) TY_WUR;

#endif

/*
 * db_logs.h - reading what workers shipped: logs, metrics, checkpoints.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_LOGS_H
#define TY_SERVER_DB_LOGS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

struct db_log_filter {
    int64_t job_id;
    int rank;           /* -1 = all ranks */
    const char *stream; /* NULL = both */
    int attempt;        /* 0 = all attempts */
    int64_t after_id;   /* only lines with a larger id */
    int64_t before_id;  /* only lines with a smaller id; 0 = no bound */
    int tail;           /* 1: the newest `limit` lines that match, not the oldest */
    int limit;          /* 1..5001 */
};

/* Log lines in id order: [{id, attempt, rank, stream, ts, text}]. Without
 * f->tail the first f->limit lines that match; with it the last f->limit
 * (still returned oldest first), which is how a page reads a log backwards
 * from its end (before_id = the first id it has). */
enum rc db_logs_read(PGconn *c, const struct db_log_filter *f, json_t **out,
                     const char *req_id) TY_WUR;

/* Metric points in step order: [{id, attempt, rank, step, ts, values}]. */
enum rc db_metrics_read(PGconn *c, int64_t job_id, int64_t after_id, int limit, json_t **out,
                        const char *req_id) TY_WUR;

/* Checkpoints, newest first. */
enum rc db_checkpoints_read(PGconn *c, int64_t job_id, json_t **out, const char *req_id) TY_WUR;

#endif

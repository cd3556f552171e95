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
    int limit;          /* 1..5000 */
};

/* Log lines in id order: [{id, attempt, rank, stream, ts, text}]. */
enum rc db_logs_read(PGconn *c, const struct db_log_filter *f, json_t **out,
                     const char *req_id) TY_WUR;

/* Metric points in step order: [{id, attempt, rank, step, ts, values}]. */
enum rc db_metrics_read(PGconn *c, int64_t job_id, int64_t after_id, int limit, json_t **out,
                        const char *req_id) TY_WUR;

/* Checkpoints, newest first. */
enum rc db_checkpoints_read(PGconn *c, int64_t job_id, json_t **out, const char *req_id) TY_WUR;

#endif

/*
 * db_retention.h - removing rows past their age in small batches, each pass
 * audited, and folding the job counts by state (sql/020_retention.sql).
 *
 * A pass over one kind runs batches, each its own short transaction that
 * removes at most batch_rows rows, so that no pass holds locks for long or
 * writes a whole backlog to the WAL in one transaction. The batch that ends
 * the pass appends one audit event (action "retention.delete", empty
 * target) with the count of the whole pass, in its transaction; the counts
 * of the batches before it wait in retention_progress.pending, so rows
 * removed by a pass that the server's stop cut short are reported by the
 * next pass.
 *
 * What each kind removes (days: the configured age; 0 is never called):
 *   sessions            sessions whose expires_at is more than days ago
 *   webhook_deliveries  delivered or failed deliveries (never a pending
 *                       one) created more than days ago
 *   job_logs, job_metrics, job_events
 *                       the output lines, metric points or events of jobs in
 *                       a final state (SUCCEEDED, FAILED, CANCELLED) that
 *                       finished more than days ago; a running or recently
 *                       finished job's rows are never touched. The job rows
 *                       themselves stay.
 *   serve_texts         clears (sets to NULL) the prompt and answer texts of
 *                       gateway request records older than their
 *                       deployment's keep_texts_days (0 for a record of no
 *                       deployment); the records and their hashes stay (the
 *                       record's hash never covered the texts). Each row
 *                       carries its own age: days is not used (pass 1), and
 *                       the event's details have no retain_days. Rows are
 *                       taken SKIP LOCKED before the audit head.
 *
 * Lock order (db.h): a batch of a job kind locks its jobs (ascending id,
 * FOR UPDATE) before their rows, and the audit head last; sessions and
 * deliveries are other tables' rows, taken SKIP LOCKED before the audit head.
 * retention_progress is written only by the retention leader.
 *
 * Thread-safety: any thread with its own PGconn, idle (no open transaction).
 */
#ifndef TY_SERVER_DB_RETENTION_H
#define TY_SERVER_DB_RETENTION_H

#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

enum db_retention_kind {
    DB_RETAIN_SESSIONS,
    DB_RETAIN_WEBHOOK_DELIVERIES,
    DB_RETAIN_JOB_LOGS,
    DB_RETAIN_JOB_METRICS,
    DB_RETAIN_JOB_EVENTS,
    DB_RETAIN_SERVE_TEXTS,
    DB_RETAIN_NKINDS
};

/* The kind's name as in retention_progress and the audit event's
 * details.kind ("sessions", "job_logs", ...); static. */
const char *db_retention_kind_name(enum db_retention_kind kind);

/* Whether the caller is stopping (e.g. app_stopping()); arg is the caller's. */
typedef int (*db_retention_stop_fn)(const void *arg);

struct db_retention_pass {
    int64_t removed;  /* rows this pass removed */
    int64_t reported; /* count of the audit event written: removed plus what an earlier,
                         cut-short pass left pending; 0 when no event was written */
    int batches;      /* transactions run */
};

/*
 * One pass over kind: batches of at most batch_rows rows (>= 1), at most
 * max_batches of them (>= 1), ending early when stop(stop_arg) returns
 * non-zero (asked before each batch; stop may be NULL). days >= 1. The event is written by
 * the last batch of the pass when anything was removed. Returns RC_OK, or
 * the rc of the batch that failed (rolled back; the batches before it stay
 * committed and pending). *out is filled either way.
 */
enum rc db_retention_run(PGconn *c, enum db_retention_kind kind, int days, int batch_rows,
                         int max_batches, db_retention_stop_fn stop, const void *stop_arg,
                         struct db_retention_pass *out) TY_WUR;

/*
 * Fold the rows of job_state_counts into one per state (those that sum to 0
 * dropped), in one statement: the sums stay exact for every reader. Not
 * audited: derived data. RC_OK or the statement's rc.
 */
enum rc db_state_counts_fold(PGconn *c) TY_WUR;

#endif

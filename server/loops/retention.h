/*
 * retention.h - the thread that removes what is past its age (sessions,
 * webhook deliveries, finished jobs' output lines, metric points and
 * events; the texts of gateway request records past their deployment's
 * keep_texts_days; db_retention.h) and folds the job counts by state that /metrics
 * reads (db_state_counts_fold).
 *
 * One replica at a time does the work: each time something is due, the
 * thread borrows a pooled connection, takes its PostgreSQL session advisory
 * lock (pg_try_advisory_lock), works, unlocks and gives the connection
 * back; a replica that finds the lock taken skips that turn. Between turns
 * it holds no connection.
 *
 * It runs a pass over every kind whose cfg->retain_*_days is not 0 (and
 * over the request records' texts, whose age each deployment sets) at start
 * and then every cfg->retention_interval_s: batches
 * of cfg->retention_batch_rows rows, each its own transaction, at most
 * RETENTION_MAX_BATCHES per kind and pass, one audit event per kind and
 * pass that removed anything. It folds the counts every RETENTION_FOLD_MS,
 * or every pass when passes come more often.
 *
 * Threads: one thread; main starts and stops it.
 */
#ifndef TY_SERVER_RETENTION_H
#define TY_SERVER_RETENTION_H

#include "app.h"
#include "err.h"

/* Batches per kind and pass: a backlog (the first pass after an upgrade)
 * is worked off over several passes rather than in one long run. */
#define RETENTION_MAX_BATCHES 1000
/* Folding job_state_counts is cheap; doing it often keeps a scrape's read short. */
#define RETENTION_FOLD_MS 60000

struct retention;

/* Start the thread. *out owned by the caller (retention_stop). RC_ENOMEM,
 * RC_EINTERNAL when the thread cannot start. Main thread. */
enum rc retention_start(struct srv_app *app, struct retention **out) TY_WUR;

/* Stop and join the thread (a batch in flight finishes first, and the pass
 * ends with it), free it; NULL is a no-op. Main thread. */
void retention_stop(struct retention *r);

#endif

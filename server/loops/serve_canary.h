/*
 * serve_canary.h - the thread that rolls a canary back when it breaks its
 * bound (docs/serving.md "Canary").
 *
 * Every SERVE_CANARY_INTERVAL_MS it borrows a pooled connection and runs one
 * transaction: the leader's transaction-level advisory lock
 * (SERVE_CANARY_LEADER_KEY, pg_try_advisory_xact_lock; a replica that finds
 * it taken skips the turn), the figures of every canary with a bound
 * (db_canary_figures: its version's records of the bound's window since the
 * canary began), and for each canary past its bound the rollback: the
 * deployment's row locked and read again, its weight set to 0, its canary
 * replicas cancelled, each replica's job.cancel event and one
 * deployment.canary event (actor system:canary, details op "auto_rollback"
 * with the figures and the bound), and a "canary.rolled_back" webhook of the
 * deployment's team. Lock order (store/db.h): the deployment's row, its
 * replica jobs' rows in id order, the audit head.
 *
 * A canary is past its bound when it has at least min_requests records in
 * the window and their error rate (status 500 and above) is above
 * max_error_rate, or their 99th percentile latency above max_p99_ms.
 *
 * Counts: metrics_canary_rollback() per rollback (docs/metrics.md).
 *
 * Threads: one thread; main starts and stops it.
 */
#ifndef TY_SERVER_SERVE_CANARY_H
#define TY_SERVER_SERVE_CANARY_H

#include "app.h"
#include "err.h"

#define SERVE_CANARY_INTERVAL_MS 2000
/* Advisory lock key of the rollback check's leader (the health loop's is
 * 7243021). */
#define SERVE_CANARY_LEADER_KEY "7243022"

struct serve_canary;

/* Start the thread. *out owned by the caller (serve_canary_stop). RC_ENOMEM,
 * or RC_EINTERNAL when the thread cannot start. */
enum rc serve_canary_start(struct srv_app *app, struct serve_canary **out) TY_WUR;

/* Stop the thread and free. NULL is a no-op. */
void serve_canary_stop(struct serve_canary *t);

#endif

/*
 * lifecycle.h - the job state machine driven by what workers and the node
 * monitor report (DESIGN "Job lifecycle"):
 *
 *   PLACED -> STARTING (a node took the assignment) -> RUNNING (every node
 *   started) -> SUCCEEDED (every node exited 0)
 *   any live state -> RESTARTING (a rank failed with restarts left, or a
 *   node was lost: does not count) -> placed again with the newest checkpoint
 *   -> FAILED (restarts exhausted, or at once for a failure that would
 *   repeat), CANCELLED (cancel requested, ranks gone)
 *
 * Every function runs inside the caller's open transaction and records the
 * transition, the job event, the audit event and the webhooks together. The
 * caller has locked the job's row already (db.h "Lock order"), so that the
 * audit head these take comes after it.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_LIFECYCLE_H
#define TY_SERVER_LIFECYCLE_H

#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"
#include "job_reason.h"

/* The attempt's ranks failed (or were lost) for cause (borrowed): end it and
 * decide the job's fate, a "restarting" or "failed_no_restarts" reason
 * wrapping cause. counts: whether this failure uses up one of max_restarts.
 * A service job (025) never fails here: a counted failure restarts it after
 * the wait of db_job_service_backoff(). */
enum rc lifecycle_attempt_failed(PGconn *c, int64_t job_id, int64_t attempt_id,
                                 const struct job_reason *cause, int counts, const char *actor,
                                 const char *req_id) TY_WUR;

/*
 * The attempt could not run for a reason that repeats on every attempt (a
 * worker's deterministic "failure", docs/agent-protocol.md: exec_failed,
 * path_refused, script_not_found): end it and fail the job at once, whatever
 * restarts are left, with cause and failure (the worker's code; borrowed)
 * in the job event ("failed_for_good"), the audit event and the job.failed
 * webhook. A job being cancelled becomes CANCELLED instead; a job already
 * ended is left alone.
 */
enum rc lifecycle_attempt_failed_for_good(PGconn *c, int64_t job_id, int64_t attempt_id,
                                          const struct job_reason *cause, const char *failure,
                                          const char *actor, const char *req_id) TY_WUR;

/* Every node of the attempt exited 0: the job succeeded; a service job
 * (025) is restarted instead, as lifecycle_attempt_failed() does. */
enum rc lifecycle_attempt_succeeded(PGconn *c, int64_t job_id, int64_t attempt_id,
                                    const char *actor, const char *req_id) TY_WUR;

/* Every node started its ranks: RUNNING (and "recovered" after a restart). */
enum rc lifecycle_attempt_running(PGconn *c, int64_t job_id, int64_t attempt_id, int attempt,
                                  const char *actor, const char *req_id) TY_WUR;

/*
 * A node lost its part of an attempt (the node went silent, or its worker
 * restarted and the ranks are gone): give its GPUs back, notify "node.lost"
 * webhooks, and restart the job without counting it. A peer's rank failure
 * reported within window_s before is put down to this loss and its restart
 * given back.
 */
enum rc lifecycle_node_lost(PGconn *c, int64_t attempt_id, int64_t job_id, int64_t node_id,
                            const struct job_reason *why, int window_s, const char *actor,
                            const char *req_id) TY_WUR;

/* A job being cancelled whose ranks are all gone becomes CANCELLED, and its
 * open attempt ends (outcome "cancelled", ended_at now). */
enum rc lifecycle_settle_cancel(PGconn *c, int64_t job_id, const char *actor,
                                const char *req_id) TY_WUR;

#endif

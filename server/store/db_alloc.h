/*
 * db_alloc.h - SQL for attempts and allocations (which GPUs a job holds).
 *
 * Thread-safety: any thread, with its own connection. Changes run in the
 * caller's open transaction.
 */
#ifndef TY_SERVER_DB_ALLOC_H
#define TY_SERVER_DB_ALLOC_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* The live allocations of a job as a JSON array of
 * {node_id, node, node_rank, gpu_indices, rank_start}. */
enum rc db_alloc_of_job(PGconn *c, int64_t job_id, json_t **out, const char *req_id) TY_WUR;

/*
 * The NCCL/gloo settings the nodes of the job's latest handed-out attempt
 * got (allocations.nccl, server/jobs/nccl_env.h), kept after the attempt ends:
 * {"attempt":2,"nodes":[{"node","node_rank","variables":[...]}]}, or JSON
 * null when no assignment was handed out yet.
 */
enum rc db_nccl_of_job(PGconn *c, int64_t job_id, json_t **out, const char *req_id) TY_WUR;

/*
 * The ranks node_id holds in the attempt: rank_start up to rank_start +
 * nranks - 1 (out), one per GPU of its allocation, released or not.
 * RC_ENOTFOUND when the node holds no part of the attempt; else the query's rc.
 */
enum rc db_alloc_ranks(PGconn *c, int64_t attempt_id, int64_t node_id, int *rank_start, int *nranks,
                       const char *req_id) TY_WUR;

/* Give back every GPU the job holds and end its open attempt (outcome). */
enum rc db_alloc_release_job(PGconn *c, int64_t job_id, const char *outcome,
                             const char *req_id) TY_WUR;

/* Mark the job cancel_requested. */
enum rc db_job_mark_cancel(PGconn *c, int64_t job_id, const char *req_id) TY_WUR;

/*
 * Cancel job_id (its row locked, currently in state) inside the open
 * transaction, by actor from source: a job with ranks running (STARTING,
 * RUNNING) is marked and ends when its workers report; any other ends at
 * once (CANCELLED, reason cancelled_by_user) and gives its GPUs back.
 */
enum rc db_job_cancel(PGconn *c, int64_t job_id, const char *state, const char *actor,
                      const char *source, const char *req_id) TY_WUR;

#endif

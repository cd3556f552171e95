/*
 * jobs_hooks.h - what the jobs API asks of the scheduling side (jobs.c):
 * checks at submit, the placement shown with a job, and cancelling.
 *
 * Thread-safety: any handler thread, with the request's connection.
 */
#ifndef TY_SERVER_JOBS_HOOKS_H
#define TY_SERVER_JOBS_HOOKS_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"
#include "jobspec.h"
#include "srv.h"

/* Checks beyond the spec's shape (fills req->err). */
enum rc jobs_check_submit(struct srv_req *req, const struct jobspec *spec) TY_WUR;

/* Add "allocations" (node, GPU indices, ranks) of the current attempt to row. */
enum rc jobs_decorate(struct srv_req *req, int64_t job_id, json_t *row) TY_WUR;

/*
 * Cancel job_id (currently in state) inside the open transaction: a job that
 * holds no running ranks ends at once and gives its GPUs back; a running one
 * is marked, its workers are told to stop the ranks, and it ends when they
 * report.
 */
enum rc jobs_cancel(struct srv_req *req, int64_t job_id, const char *state) TY_WUR;

#endif

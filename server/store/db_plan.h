/*
 * db_plan.h - the rows behind a job's plans (server/jobs/jobplan.h):
 * the nodes a plan is made for, the plan at submit (jobs.plan), the plan at
 * placement (attempts.plan, a "plan" job event and a job.plan audit event),
 * and what the job measured.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_PLAN_H
#define TY_SERVER_DB_PLAN_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/*
 * The nodes of site_id in jobplan.h's form (every GPU of each), as a new
 * array in *out. Reads only, no locks. RC_OK or a database error.
 */
enum rc db_plan_site_nodes(PGconn *c, int64_t site_id, json_t **out /* out */,
                           const char *req_id) TY_WUR;

/* The nodes of attempt attempt_id with only the GPUs it holds, in node rank order. */
enum rc db_plan_attempt_nodes(PGconn *c, int64_t attempt_id, json_t **out /* out */,
                              const char *req_id) TY_WUR;

/* jobs.plan = plan (borrowed) of job_id, in the caller's transaction. */
enum rc db_plan_set_submit(PGconn *c, int64_t job_id, const json_t *plan,
                           const char *req_id) TY_WUR;

/*
 * The plan chosen at placement, in the caller's transaction, which holds the
 * job's row (lock order, db.h: the attempt and the event belong to the job;
 * the audit event is appended last): attempts.plan of attempt_id = plan
 * (borrowed), a job event of kind "plan" (to_state = state, the job's state,
 * reason = reason) and a "job.plan" audit event by actor with the plan's
 * strategy, split, precision, status and warnings.
 */
enum rc db_plan_placed(PGconn *c, int64_t job_id, int64_t attempt_id, const char *state,
                       const json_t *plan, const char *reason, const char *actor,
                       const char *req_id) TY_WUR;

/*
 * For GET /api/v1/jobs/{id}: the newest placed plan (*placed, null when
 * none), the newest TRAINYARD_METRIC values with param_bytes (*metrics, null
 * when none) and the exit reports' ranks of that attempt (*ranks, an array).
 * All new references. RC_OK or a database error (then all NULL).
 */
enum rc db_plan_measured(PGconn *c, int64_t job_id, json_t **placed /* out */,
                         json_t **metrics /* out */, json_t **ranks /* out */,
                         const char *req_id) TY_WUR;

#endif

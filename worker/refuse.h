/*
 * refuse.h - the exit report of an attempt that never started: every rank
 * exits -1, the reason goes as text and as a code (common/reason_codes.h)
 * with its parameters, and a deterministic cause (cause.h), when there is
 * one, lets the server fail the job at once instead of retrying it.
 *
 * Threads: any thread (wrk_shipper_exit() is thread-safe); the agent calls
 * these from the control thread.
 */
#ifndef TY_WORKER_REFUSE_H
#define TY_WORKER_REFUSE_H

#include <jansson.h>

#include "assign.h"
#include "shipper.h"

/*
 * Queue on s the report of attempt_id refused: the reason as text and as code
 * (an RSN_* constant, static) with params (taken; NULL = {}), and when the
 * cause is deterministic (cause.h; NULL otherwise) the failure the server
 * fails the job on without a restart. detail (may be NULL) names what failed.
 * as (borrowed, may be NULL) gives the node rank and the ranks.
 */
void wrk_refuse_cause(struct wrk_shipper *s, const char *attempt_id,
                      const struct wrk_assignment *as, const char *code, json_t *params,
                      const char *reason, const char *cause, const char *detail);

/* wrk_refuse_cause() without a deterministic cause: the server may retry. */
void wrk_refuse(struct wrk_shipper *s, const char *attempt_id, const struct wrk_assignment *as,
                const char *code, json_t *params, const char *reason);

/* {"detail": text}, a new reference, for a refusal whose words are all it has. */
json_t *wrk_refuse_detail(const char *text);

#endif

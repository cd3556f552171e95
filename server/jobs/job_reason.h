/*
 * job_reason.h - a job event's reason in two forms: the English text that
 * logs, the CLI, webhooks and the audit trail carry (as before), and a code
 * (common/reason_codes.h) with parameters, a JSON object, that the
 * dashboard translates (docs/job-reasons.md). A reason that wraps another,
 * such as "restarting" after "rank 0 exited with 2", holds the inner one as
 * params.cause = {"code": ..., "params": {...}}.
 *
 * Caller storage: job_reason_init() then job_reason_cleanup(). Thread-safety:
 * each value is used by one thread.
 */
#ifndef TY_SERVER_JOB_REASON_H
#define TY_SERVER_JOB_REASON_H

#include <jansson.h>

#include "reason_codes.h"

struct job_reason {
    const char *code; /* static: an RSN_* constant */
    json_t *params;   /* owned: a JSON object; NULL (out of memory) is written as {} */
    char text[640];   /* English, NUL-terminated, truncated to fit */
};

/*
 * Set r to code (an RSN_* constant: a code outside reason_codes.h is a
 * programmer error, NEVER) with params (taken; NULL = {}) and the English
 * text from fmt.
 */
void job_reason_init(struct job_reason *r, const char *code, json_t *params, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* As job_reason_init(), with cause (borrowed) added as params.cause. */
void job_reason_wrap(struct job_reason *r, const char *code, json_t *params,
                     const struct job_reason *cause, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Free what r owns; safe on a zeroed or cleaned-up value. */
void job_reason_cleanup(struct job_reason *r);

/* r's params as compact JSON text: owned, free(); NULL when out of memory. */
char *job_reason_params_text(const struct job_reason *r);

#endif

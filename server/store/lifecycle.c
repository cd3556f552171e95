/*
 * lifecycle.c - see lifecycle.h.
 */
#include "lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_agent.h"
#include "db_alloc.h"
#include "db_audit.h"
#include "db_jobs.h"
#include "db_webhooks.h"
#include "metrics.h"

static const char *const live_states[] = {"PLACED", "STARTING", "RUNNING", NULL};

enum rc lifecycle_settle_cancel(PGconn *c, int64_t job_id, const char *actor, const char *req_id)
{
    int cancel = 0, restarts, max, live = 0;
    char state[16];
    struct job_reason why;
    enum rc rc = db_job_flags(c, job_id, &cancel, &restarts, &max, state, sizeof(state), req_id);

    if (rc != RC_OK || !cancel || db_job_state_terminal(state))
        return rc;
    if ((rc = db_job_live_allocs(c, job_id, &live, req_id)) != RC_OK || live > 0)
        return rc;
    /* Every node's ranks have stopped, but the exit reports of a cancel end
     * no attempt (only a failure or success does): the attempt ends here
     * with the job, or it would stay "running" with no end time. */
    if ((rc = db_alloc_release_job(c, job_id, "cancelled", req_id)) != RC_OK)
        return rc;
    job_reason_init(&why, RSN_CANCELLED, NULL, "cancelled; every rank stopped");
    rc = db_job_transition(c, job_id, NULL, "CANCELLED", &why, actor, "", req_id);
    job_reason_cleanup(&why);
    return rc == RC_ECONFLICT ? RC_OK : rc;
}

enum rc lifecycle_attempt_failed(PGconn *c, int64_t job_id, int64_t attempt_id,
                                 const struct job_reason *cause, int counts, const char *actor,
                                 const char *req_id)
{
    int cancel = 0, restarts = 0, max = 0, service = 0, wait_s = 0;
    char state[16], note[80] = "";
    struct job_reason why = {0};
    enum rc rc = db_attempt_end(c, attempt_id, counts ? "failed" : "lost", req_id);

    if (rc == RC_OK)
        rc = db_job_flags(c, job_id, &cancel, &restarts, &max, state, sizeof(state), req_id);
    if (rc != RC_OK || db_job_state_terminal(state))
        return rc;
    if (cancel)
        return lifecycle_settle_cancel(c, job_id, actor, req_id);
    if (strcmp(state, "RESTARTING") == 0 || strcmp(state, "QUEUED") == 0)
        return RC_OK; /* already handled (another node of the attempt) */
    /* A service job is restarted whatever it used (docs/serving.md); one that
     * fails at once each time waits longer each time instead of spinning. */
    if (counts &&
        (rc = db_job_service_backoff(c, job_id, attempt_id, &service, &wait_s, req_id)) != RC_OK)
        return rc;
    if (counts && restarts >= max && !service) {
        job_reason_wrap(&why, RSN_FAILED_NO_RESTARTS,
                        json_pack("{s:i,s:i}", "restarts_used", restarts, "max_restarts", max),
                        cause, "%s; no restarts left (%d of %d used)", cause->text, restarts, max);
        rc = db_job_transition(c, job_id, NULL, "FAILED", &why, actor, "", req_id);
        if (rc == RC_OK)
            rc = webhooks_enqueue(c, job_id, "job.failed", why.text, req_id);
        job_reason_cleanup(&why);
        return rc;
    }
    if (counts && (rc = db_job_count_restart(c, job_id, req_id)) != RC_OK)
        return rc;
    if (service && counts)
        snprintf(note, sizeof(note), " in %d s (a service job: restarted without limit)", wait_s);
    else if (!counts)
        snprintf(note, sizeof(note), " (does not count against max_restarts)");
    job_reason_wrap(&why, RSN_RESTARTING,
                    json_pack("{s:b,s:i,s:i}", "counted", counts, "restarts_used",
                              restarts + (counts ? 1 : 0), "max_restarts", max),
                    cause, "%s; restarting%s", cause->text, note);
    rc = db_job_transition(c, job_id, live_states, "RESTARTING", &why, actor, "", req_id);
    job_reason_cleanup(&why);
    if (rc == RC_OK)
        metrics_job_restart(); /* counted again if the transaction is retried (rare) */
    return rc == RC_ECONFLICT ? RC_OK : rc;
}

enum rc lifecycle_attempt_failed_for_good(PGconn *c, int64_t job_id, int64_t attempt_id,
                                          const struct job_reason *cause, const char *failure,
                                          const char *actor, const char *req_id)
{
    int cancel = 0, restarts = 0, max = 0;
    char state[16];
    struct job_reason why = {0};
    enum rc rc = db_attempt_end(c, attempt_id, "failed", req_id);

    if (rc == RC_OK)
        rc = db_job_flags(c, job_id, &cancel, &restarts, &max, state, sizeof(state), req_id);
    if (rc != RC_OK || db_job_state_terminal(state))
        return rc;
    if (cancel)
        return lifecycle_settle_cancel(c, job_id, actor, req_id);
    if (strcmp(state, "RESTARTING") == 0 || strcmp(state, "QUEUED") == 0)
        return RC_OK; /* already handled (another node of the attempt) */
    /* No restart is counted or spent: another attempt would fail the same way. */
    job_reason_wrap(&why, RSN_FAILED_FOR_GOOD, json_pack("{s:s}", "failure", failure), cause,
                    "%s; not restarted (%s: every attempt would fail the same way)", cause->text,
                    failure);
    rc = db_job_transition(c, job_id, NULL, "FAILED", &why, actor, "", req_id);
    if (rc == RC_OK)
        rc = webhooks_enqueue(c, job_id, "job.failed", why.text, req_id);
    job_reason_cleanup(&why);
    return rc;
}

enum rc lifecycle_attempt_succeeded(PGconn *c, int64_t job_id, int64_t attempt_id,
                                    const char *actor, const char *req_id)
{
    struct job_reason why = {0};
    int service = 0;
    enum rc rc = db_job_is_service(c, job_id, &service, req_id);

    job_reason_init(&why, RSN_SUCCEEDED, NULL, "every rank exited 0");
    /* A model server serves until it is stopped: one that ends by itself is
     * restarted like one that failed (a cancel still ends the job). */
    if (rc == RC_OK && service) {
        rc = lifecycle_attempt_failed(c, job_id, attempt_id, &why, 1, actor, req_id);
        job_reason_cleanup(&why);
        return rc;
    }
    if (rc == RC_OK)
        rc = db_attempt_end(c, attempt_id, "succeeded", req_id);
    if (rc == RC_OK)
        rc = db_job_transition(c, job_id, live_states, "SUCCEEDED", &why, actor, "", req_id);
    job_reason_cleanup(&why);
    if (rc == RC_ECONFLICT)
        return RC_OK;
    if (rc == RC_OK)
        rc = webhooks_enqueue(c, job_id, "job.succeeded", "every rank exited 0", req_id);
    return rc;
}

enum rc lifecycle_attempt_running(PGconn *c, int64_t job_id, int64_t attempt_id, int attempt,
                                  const char *actor, const char *req_id)
{
    static const char *const from[] = {"PLACED", "STARTING", NULL};
    struct job_reason why = {0};
    enum rc rc = db_attempt_state(c, attempt_id, "running", req_id);

    job_reason_init(&why, RSN_ATTEMPT_RUNNING, json_pack("{s:i}", "attempt", attempt),
                    "attempt %d: every rank started", attempt);
    if (rc == RC_OK)
        rc = db_job_transition(c, job_id, from, "RUNNING", &why, actor, "", req_id);
    if (rc == RC_OK && attempt > 1)
        rc = webhooks_enqueue(c, job_id, "job.recovered", why.text, req_id);
    job_reason_cleanup(&why);
    return rc == RC_ECONFLICT ? RC_OK : rc;
}

enum rc lifecycle_node_lost(PGconn *c, int64_t attempt_id, int64_t job_id, int64_t node_id,
                            const struct job_reason *why, int window_s, const char *actor,
                            const char *req_id)
{
    int refunded = 0;
    enum rc rc = db_alloc_release_node(c, attempt_id, node_id, req_id);

    if (rc == RC_OK)
        rc = webhooks_enqueue(c, job_id, "node.lost", why->text, req_id);
    if (rc == RC_OK)
        rc = db_attempt_refund_recent_failure(c, attempt_id, window_s, &refunded, req_id);
    if (rc == RC_OK && refunded) {
        char target[AUDIT_TARGET_SIZE];
        json_t *d =
            json_pack("{s:I,s:s}", "attempt_id", (json_int_t)attempt_id, "reason", why->text);
        struct audit_event ev = {actor, "", "job.restart_refunded", target, "success", d};
        rc = audit_target_id(AUDIT_TARGET_JOB, job_id, target);
        if (rc == RC_OK)
            rc = audit_append(c, &ev, req_id);
        json_decref(d);
    }
    if (rc == RC_OK)
        rc = lifecycle_attempt_failed(c, job_id, attempt_id, why, 0, actor, req_id);
    return rc;
}

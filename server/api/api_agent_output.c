/*
 * api_agent_output.c - POST /api/v1/agent/attempts/{id}/output: a batch of
 * a node's logs, metrics and checkpoints, stored in one transaction.
 *
 * Logs and metrics are data, not control changes: stored, not audited. Each
 * recorded checkpoint is audited (job.checkpoint); one outside the job's
 * checkpoint directory is refused alone (api_agent_policy.c). A batch the
 * worker sends again with the same logs is stored once (db_output_store)
 * and answered the same.
 *
 * Every log line and metric must name a rank this node holds in the
 * attempt (db_alloc_ranks): a (rank, seq) of another node's, stored first,
 * would make that node's real batch look like a replay and be dropped
 * unseen. A batch naming another rank is refused whole (403, nothing
 * stored) and recorded as a policy.violation of stage "output".
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "db_agent.h"
#include "db_alloc.h"
#include "db_audit.h"
#include "log.h"
#include "notify.h"
#include "waiters.h"

/* The most lines one batch may report dropped: more than a worker can queue
 * in a day, few enough that the counter never nears overflow. */
#define AGENT_MAX_DROPPED_LINES ((json_int_t)1 << 40)

/* Bounded shapes for an output batch; *dropped receives dropped_logs (0 if absent). */
static enum rc check_output(struct srv_req *req, json_t **logs, json_t **metrics, json_t **ckpts,
                            int64_t *dropped)
{
    static const char *const allowed[] = {"logs", "metrics", "checkpoints", "dropped_logs", NULL};
    size_t i;
    json_t *e;
    enum rc rc = api_body_object(req, allowed);

    if (rc != RC_OK)
        return rc;
    *logs = json_object_get(req->body, "logs");
    *metrics = json_object_get(req->body, "metrics");
    *ckpts = json_object_get(req->body, "checkpoints");
    e = json_object_get(req->body, "dropped_logs");
    if (e != NULL && (!json_is_integer(e) || json_integer_value(e) < 0 ||
                      json_integer_value(e) > AGENT_MAX_DROPPED_LINES))
        return srv_fail(req, RC_EINVAL, "dropped_logs",
                        "dropped_logs must be an integer from 0 to %lld",
                        (long long)AGENT_MAX_DROPPED_LINES);
    *dropped = e != NULL ? (int64_t)json_integer_value(e) : 0;
    if (*logs && !json_is_array(*logs))
        return srv_fail(req, RC_EINVAL, "logs", "logs must be an array");
    if (*metrics && !json_is_array(*metrics))
        return srv_fail(req, RC_EINVAL, "metrics", "metrics must be an array");
    if (*ckpts && !json_is_array(*ckpts))
        return srv_fail(req, RC_EINVAL, "checkpoints", "checkpoints must be an array");
    json_array_foreach(*logs, i, e)
    {
        const char *st = json_string_value(json_object_get(e, "stream"));
        if (!json_is_integer(json_object_get(e, "rank")) ||
            !json_is_integer(json_object_get(e, "seq")) ||
            !json_is_string(json_object_get(e, "text")) || st == NULL ||
            (strcmp(st, "stdout") != 0 && strcmp(st, "stderr") != 0))
            return srv_fail(req, RC_EINVAL, "logs", "logs[%zu] needs rank, seq, stream, text", i);
    }
    json_array_foreach(*metrics, i, e)
    {
        if (!json_is_integer(json_object_get(e, "rank")) ||
            !json_is_integer(json_object_get(e, "step")) ||
            !json_is_object(json_object_get(e, "values")))
            return srv_fail(req, RC_EINVAL, "metrics", "metrics[%zu] needs rank, step and values",
                            i);
    }
    json_array_foreach(*ckpts, i, e)
    {
        if (!json_is_integer(json_object_get(e, "step")) ||
            !json_is_string(json_object_get(e, "path")))
            return srv_fail(req, RC_EINVAL, "checkpoints", "checkpoints[%zu] needs step and path",
                            i);
    }
    return RC_OK;
}

/* The first entry of items (logs or metrics, checked by check_output) whose
 * rank is outside [lo, lo + n): its index, or -1. */
static long foreign_entry(const json_t *items, int lo, int n)
{
    size_t i;
    const json_t *e;

    json_array_foreach(items, i, e)
    {
        json_int_t r = json_integer_value(json_object_get(e, "rank"));
        if (r < lo || r >= (json_int_t)lo + n)
            return (long)i;
    }
    return -1;
}

/*
 * Refuse a batch that names a rank the calling node does not hold in the
 * attempt: *refused (out) 1 with req->err filled (RC_EPERM, the field of the
 * first such entry) and the refusal recorded (policy.violation, stage
 * "output", and its webhook) in the caller's transaction, which stores
 * nothing else then. RC_OK or the rc of the query or the record.
 */
static enum rc refuse_foreign_ranks(struct srv_req *req, int64_t attempt_id,
                                    const struct db_attempt_info *info, const json_t *logs,
                                    const json_t *metrics, int *refused)
{
    int lo = 0, n = 0;
    long at;
    const char *kind = "logs";
    const json_t *items = logs;
    char reason[160], why[320], field[48];
    json_int_t rank;
    enum rc rc = db_alloc_ranks(req->db, attempt_id, req->who.node_id, &lo, &n, req->req_id);

    *refused = 0;
    if (rc != RC_OK)
        return rc;
    at = foreign_entry(logs, lo, n);
    if (at < 0) {
        kind = "metrics";
        items = metrics;
        at = foreign_entry(metrics, lo, n);
    }
    if (at < 0)
        return RC_OK;
    rank = json_integer_value(json_object_get(json_array_get(items, (size_t)at), "rank"));
    snprintf(reason, sizeof(reason), "output for rank %lld, which the node does not hold",
             (long long)rank);
    snprintf(why, sizeof(why), "attempt %d: %s (its ranks: %d to %d), sent by node %s",
             info->attempt, reason, lo, lo + n - 1, req->who.node_name);
    LOG_WARN("agent", "output for another node's rank refused",
             "req_id=%s job_id=%lld node=%s rank=%lld", req->req_id, (long long)info->job_id,
             req->who.node_name, (long long)rank);
    rc = agent_policy_violation(req, info->job_id, info->attempt, "output", reason, NULL, why);
    if (rc != RC_OK)
        return rc;
    *refused = 1;
    snprintf(field, sizeof(field), "%s[%ld].rank", kind, at);
    srv_fail(req, RC_EPERM, field, "rank %lld is not one of this node's ranks in the attempt",
             (long long)rank);
    err_detail(&req->err, "this node holds ranks %d to %d", lo, lo + n - 1);
    return RC_OK;
}

enum rc api_agent_output(struct srv_req *req)
{
    int64_t attempt_id, dropped = 0;
    struct db_attempt_info info;
    json_t *logs, *metrics, *ckpts, *c, *good = NULL, *refused = NULL;
    size_t i;
    int replayed = 0, refused_rank = 0;
    enum rc rc;

    if ((rc = check_output(req, &logs, &metrics, &ckpts, &dropped)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = agent_load_attempt(req, &attempt_id, &info);
    if (rc == RC_OK)
        rc = refuse_foreign_ranks(req, attempt_id, &info, logs, metrics, &refused_rank);
    if (rc == RC_OK && refused_rank) {
        /* Commit the record of the refusal alone; answer 403. */
        rc = api_end(req, RC_OK);
        return rc == RC_OK ? RC_EPERM : rc;
    }
    if (rc == RC_OK)
        rc = agent_checkpoints_vet(req, info.job_id, ckpts, &good, &refused);
    if (rc == RC_OK)
        rc = db_output_store(req->db, info.job_id, info.attempt, attempt_id, logs, metrics, good,
                             dropped, &replayed, req->req_id);
    /* A replay was audited when it was first stored: the answer is the same
     * (the refused entries are vetted again), the trail gets nothing new. */
    if (replayed)
        json_array_clear(good);
    if (rc == RC_OK && !replayed)
        rc = agent_checkpoints_refused_audit(req, &info, refused);
    json_array_foreach(good, i, c)
    {
        char target[AUDIT_TARGET_SIZE];
        json_t *d =
            json_pack("{s:I,s:O,s:i}", "step", json_integer_value(json_object_get(c, "step")),
                      "path", json_object_get(c, "path"), "attempt", info.attempt);
        if (rc == RC_OK)
            rc = audit_target_id(AUDIT_TARGET_JOB, info.job_id, target);
        if (rc == RC_OK)
            rc = audit_append_req(req, "job.checkpoint", target, "success", d);
        json_decref(d);
    }
    if (rc == RC_OK) {
        /* Log followers on other replicas (delivered at commit). */
        int64_t key = -info.job_id;
        rc = notify_send(req->app, req->db, &key, 1, 0, req->req_id);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(good);
        json_decref(refused);
        return rc;
    }
    /* Wake log followers of this job (keys below zero are jobs). */
    waiters_notify(req->app->waiters, -info.job_id);
    json_decref(good);
    if (json_array_size(refused) == 0) {
        json_decref(refused);
        return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
    }
    return srv_reply(req, 200, json_pack("{s:b,s:o}", "ok", 1, "refused_checkpoints", refused));
}

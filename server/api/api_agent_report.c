/*
 * api_agent_report.c - a node's reports on its part of an attempt:
 * POST /api/v1/agent/attempts/{id}/started (its ranks run; the attempt is
 * RUNNING once every node said so) and .../exit (its ranks ended: the
 * attempt succeeds, fails and may restart, fails for good, or a cancel
 * settles).
 *
 * An exit report's cause is the worker's own code when it sends a known one,
 * else the first failed rank, else its text (exit_cause_reason). Each report
 * is one transaction; a repeated exit report is answered as the first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "app.h"
#include "db_agent.h"
#include "job_reason.h"
#include "lifecycle.h"
#include "notify.h"
#include "reason_codes.h"
#include "utf8cut.h"
#include "waiters.h"

/* The started report's transaction (api_tx body): one job, locked first
 * with its attempt (agent_load_attempt), the audit head last (db.h "Lock order"). */
struct started_tx {
    const char *actor;
    int64_t job_id; /* out: the attempt's job */
};

static enum rc started_body(struct srv_req *req, void *arg)
{
    struct started_tx *x = arg;
    const char *actor = x->actor;
    int64_t attempt_id;
    struct db_attempt_info info;
    int all = 0;
    enum rc rc = agent_load_attempt(req, &attempt_id, &info);

    if (rc == RC_OK)
        x->job_id = info.job_id;
    if (rc == RC_OK && strcmp(info.attempt_state, "ended") != 0) {
        rc = db_attempt_node_started(req->db, attempt_id, req->who.node_id, &all, req->req_id);
        if (rc == RC_OK && all)
            rc = lifecycle_attempt_running(req->db, info.job_id, attempt_id, info.attempt, actor,
                                           req->req_id);
    }
    return rc;
}

enum rc api_agent_started(struct srv_req *req)
{
    char actor[96];
    enum rc rc;

    if (req->body != NULL && !json_is_object(req->body))
        return srv_fail(req, RC_EINVAL, "", "the body must be a JSON object");
    struct started_tx x = {actor, 0};

    agent_node_actor(req, actor, sizeof(actor));
    if ((rc = api_tx(req, started_body, &x)) != RC_OK)
        return rc;
    /* Followers of the job's stream see RUNNING now (api_logs.c). */
    waiters_notify(req->app->waiters, -x.job_id);
    return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
}

/*
 * Why a node's part of an attempt failed, as cause: the worker's own code
 * when it sent a known one ("reason_code", "reason_params";
 * docs/agent-protocol.md), else the first rank that exited non-zero or was
 * signalled, else the worker's text. Every form gets the attempt and node.
 * The English text does not depend on the code, so it reads the same to
 * every client: the worker's reason for a deterministic failure (no rank
 * ran), else the first failed rank's exit ("rank 1 exited with 1"), else
 * the worker's reason.
 */
static void exit_cause_reason(const json_t *body, int deterministic, int attempt, const char *node,
                              struct job_reason *cause)
{
    const json_t *ranks = json_object_get(body, "ranks"), *r, *wp;
    const char *why = json_string_value(json_object_get(body, "reason"));
    /* The static constant, so that cause outlives the body. */
    const char *wcode = reason_code_find(json_string_value(json_object_get(body, "reason_code")));
    const char *code = RSN_NODE_FAILED;
    char text[512];
    json_t *params = NULL;
    size_t i;

    snprintf(text, sizeof(text), "%s", why && *why ? why : "a rank failed");
    json_array_foreach(ranks, i, r)
    {
        json_int_t rc = json_integer_value(json_object_get(r, "exit_code"));
        json_int_t sig = json_integer_value(json_object_get(r, "signal"));
        json_int_t rank = json_integer_value(json_object_get(r, "rank"));
        if (rc == 0)
            continue;
        if (sig > 0) {
            code = RSN_RANK_SIGNALLED;
            params = json_pack("{s:I,s:I}", "rank", rank, "signal", sig);
            snprintf(text, sizeof(text), "rank %lld was killed by signal %lld", (long long)rank,
                     (long long)sig);
        } else {
            code = RSN_RANK_EXITED;
            params = json_pack("{s:I,s:I}", "rank", rank, "exit_code", rc);
            snprintf(text, sizeof(text), "rank %lld exited with %lld%s%s", (long long)rank,
                     (long long)rc, why ? ": " : "", why ? why : "");
        }
        break;
    }
    if (deterministic && why != NULL && *why != '\0')
        snprintf(text, sizeof(text), "%s", why);
    if (params == NULL)
        params = json_pack("{s:s}", "detail", why ? why : "");
    /* The worker knows best what stopped it (a time limit, a busy port...). */
    wp = json_object_get(body, "reason_params");
    if (wcode != NULL && (wp == NULL || json_is_object(wp))) {
        json_decref(params);
        code = wcode;
        params = wp != NULL ? json_deep_copy(wp) : json_object();
    }
    utf8_cut_tail(text); /* why, cut to fit, must stay UTF-8 */
    if (params != NULL) {
        json_object_set_new(params, "attempt", json_integer(attempt));
        json_object_set_new(params, "node", json_string(node));
    }
    job_reason_init(cause, code, params, "attempt %d: %s on node %s", attempt, text, node);
}

static int node_ok(const json_t *body)
{
    const json_t *ranks = json_object_get(body, "ranks"), *r;
    size_t i;

    if (json_array_size(ranks) == 0)
        return 0;
    json_array_foreach(ranks, i, r)
    {
        if (!json_is_integer(json_object_get(r, "exit_code")) ||
            json_integer_value(json_object_get(r, "exit_code")) != 0)
            return 0;
    }
    return 1;
}

/* The longest "reason" of an exit report, in bytes. */
#define EXIT_REASON_MAX 4096

/*
 * "reason" (absent or a string of at most EXIT_REASON_MAX bytes),
 * "reason_code" and "reason_params" of an exit report (docs/agent-protocol.md):
 * absent, or a string of at most RSN_CODE_MAX bytes and an object of at most
 * 16 members whose values are strings of at most 512 bytes, integers or
 * booleans (they are stored with the job event). A code this server does not
 * know is kept out of the event (exit_cause_reason), not refused: a newer
 * worker may know more.
 */
static enum rc exit_reason_check(struct srv_req *req)
{
    const json_t *code = json_object_get(req->body, "reason_code");
    const json_t *params = json_object_get(req->body, "reason_params"), *v;
    const char *k;

    const json_t *why = json_object_get(req->body, "reason");

    /* What a worker sends is a few hundred bytes (worker/launcher.h); a
     * text past this is no reason, and is refused rather than stored cut. */
    if (why != NULL && (!json_is_string(why) || json_string_length(why) > EXIT_REASON_MAX))
        return srv_fail(req, RC_EINVAL, "reason", "reason must be a string of at most %d bytes",
                        EXIT_REASON_MAX);
    if (code != NULL && (!json_is_string(code) || json_string_length(code) > RSN_CODE_MAX))
        return srv_fail(req, RC_EINVAL, "reason_code",
                        "reason_code must be a string of at most %d bytes", RSN_CODE_MAX);
    if (params != NULL && (!json_is_object(params) || json_object_size(params) > 16))
        return srv_fail(req, RC_EINVAL, "reason_params",
                        "reason_params must be an object of at most 16 members");
    json_object_foreach((json_t *)params, k, v)
    {
        if (!(json_is_integer(v) || json_is_boolean(v) ||
              (json_is_string(v) && json_string_length(v) <= 512)))
            return srv_fail(req, RC_EINVAL, "reason_params",
                            "reason_params.%.64s must be an integer, a boolean or a string of at "
                            "most 512 bytes",
                            k);
    }
    return RC_OK;
}

/*
 * The deterministic cause of an exit report (docs/agent-protocol.md,
 * "failure"; worker/cause.h): "failure" is absent or {"code": string,
 * "detail": string (optional)}, any other shape is refused (RC_EINVAL, e
 * filled). *cause is the code when it is one of the causes that fail a job
 * without a restart, else NULL: a code this server does not know is an
 * ordinary failure. A refusal by the path policy from a worker that sends no
 * "failure" (its reason begins "policy violation") is path_refused too.
 */
static enum rc exit_cause(struct srv_req *req, const char **cause)
{
    enum rc rc;
    static const char *const known[] = {"exec_failed", "path_refused", "script_not_found", NULL};
    const json_t *f = json_object_get(req->body, "failure");
    const json_t *code = json_object_get(f, "code"), *detail = json_object_get(f, "detail");
    const char *why = json_string_value(json_object_get(req->body, "reason"));

    *cause = NULL;
    if (f != NULL && (!json_is_object(f) || !json_is_string(code) ||
                      json_string_length(code) > 64 || (detail != NULL && !json_is_string(detail))))
        return srv_fail(req, RC_EINVAL, "failure",
                        "failure must be an object with a string code of at most 64 bytes and "
                        "an optional string detail");
    for (size_t i = 0; code != NULL && known[i] != NULL; i++)
        if (strcmp(json_string_value(code), known[i]) == 0)
            *cause = known[i];
    if ((rc = exit_reason_check(req)) != RC_OK)
        return rc;
    if (f == NULL && why != NULL && strncmp(why, "policy violation", 16) == 0)
        *cause = "path_refused";
    return RC_OK;
}

/*
 * ranks[i].gpu_mem_peak_bytes, when present, is what NVML measured for the
 * rank (worker/launcher.h); it is stored with the exit report for the
 * comparison with the advisor's prediction, so it must be a plain size.
 */
static enum rc exit_peaks_check(struct srv_req *req)
{
    const json_t *r;
    size_t i;

    json_array_foreach(json_object_get(req->body, "ranks"), i, r)
    {
        const json_t *v = json_object_get(r, "gpu_mem_peak_bytes");
        if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0 ||
                          json_integer_value(v) > ((json_int_t)1 << 50))) {
            char f[64];
            snprintf(f, sizeof(f), "ranks[%zu].gpu_mem_peak_bytes", i);
            return srv_fail(req, RC_EINVAL, f, "%s must be a byte count 0..2^50", f);
        }
    }
    return RC_OK;
}

/* An exit report's transaction (api_tx body); nodes is reset on each run. */
struct exit_tx {
    const char *actor;
    const char *cause; /* the deterministic cause (exit_cause), or NULL */
    int64_t job_id;
    int accounted; /* the report was already accounted for */
    json_t *nodes; /* owned: nodes still holding the job */
};

/* Lock order (db.h): one job, locked with its attempt (agent_load_attempt), then
 * its allocations and attempts, the audit head last. */
static enum rc exit_body(struct srv_req *req, void *arg)
{
    struct exit_tx *x = arg;
    const char *actor = x->actor;
    int64_t attempt_id;
    struct db_attempt_info info;
    int live = 0, all_ok = 0;
    enum rc rc;

    json_decref(x->nodes);
    x->nodes = NULL;
    x->accounted = 0;
    rc = agent_load_attempt(req, &attempt_id, &info);
    if (rc == RC_OK && info.alloc_released) {
        /* Already accounted for (node loss, retry of this report). */
        x->accounted = 1;
        return RC_OK;
    }
    if (rc == RC_OK)
        rc = db_attempt_node_exit(req->db, attempt_id, req->who.node_id, req->body, &live, &all_ok,
                                  req->req_id);
    if (rc == RC_OK) {
        if (strcmp(info.attempt_state, "ended") == 0 || info.cancel_requested) {
            rc = lifecycle_settle_cancel(req->db, info.job_id, actor, req->req_id);
        } else if (!node_ok(req->body)) {
            const char *w = json_string_value(json_object_get(req->body, "reason"));
            /* A busy rendezvous port is the platform's problem, not the job's. */
            int counts = !(w != NULL && strncmp(w, "rendezvous port ", 16) == 0);
            struct job_reason cause;
            /* No rank ran when the cause is deterministic: the worker's reason says why. */
            exit_cause_reason(req->body, x->cause != NULL, info.attempt, info.node_name, &cause);
            if (w != NULL && strncmp(w, "policy violation", 16) == 0)
                rc = agent_policy_violation(req, info.job_id, info.attempt, "node", w, NULL,
                                            cause.text);
            if (rc == RC_OK && x->cause != NULL)
                rc = lifecycle_attempt_failed_for_good(req->db, info.job_id, attempt_id, &cause,
                                                       x->cause, actor, req->req_id);
            else if (rc == RC_OK)
                rc = lifecycle_attempt_failed(req->db, info.job_id, attempt_id, &cause, counts,
                                              actor, req->req_id);
            job_reason_cleanup(&cause);
        } else if (live == 0 && all_ok) {
            rc = lifecycle_attempt_succeeded(req->db, info.job_id, attempt_id, actor, req->req_id);
        }
    }
    if (rc == RC_OK) {
        x->job_id = info.job_id;
        rc = db_job_nodes(req->db, info.job_id, &x->nodes, req->req_id);
    }
    /* The same wake-ups as below, for other replicas (delivered at commit). */
    if (rc == RC_OK)
        rc = notify_send_job(req->app, req->db, info.job_id, x->nodes, 1, req->req_id);
    return rc;
}

enum rc api_agent_exit(struct srv_req *req)
{
    char actor[96];
    struct exit_tx x = {actor, NULL, 0, 0, NULL};
    json_t *n;
    size_t i;
    enum rc rc;

    if (req->body == NULL || !json_is_object(req->body) ||
        !json_is_array(json_object_get(req->body, "ranks")))
        return srv_fail(req, RC_EINVAL, "ranks", "the body needs a ranks array");
    if ((rc = exit_cause(req, &x.cause)) != RC_OK || (rc = exit_peaks_check(req)) != RC_OK)
        return rc;
    agent_node_actor(req, actor, sizeof(actor));
    if ((rc = api_tx(req, exit_body, &x)) != RC_OK) {
        json_decref(x.nodes);
        return rc;
    }
    if (x.accounted)
        return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
    /* The other nodes of a failed attempt learn at once that they must stop. */
    json_array_foreach(x.nodes, i, n)
    {
        waiters_notify(req->app->waiters,
                       strtoll(json_string_value(json_object_get(n, "node_id")), NULL, 10));
    }
    json_decref(x.nodes);
    waiters_notify(req->app->waiters, -x.job_id);
    app_wake_scheduler(req->app);
    return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
}

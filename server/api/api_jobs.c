/*
 * api_jobs.c - submit, list, read and cancel jobs.
 *
 * Visibility: admins and auditors see every job; members see the jobs of the
 * teams they belong to. A job a caller may not see answers 404, so job ids of
 * other teams do not leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "cache.h"
#include "crypto.h"
#include "db.h"
#include "db_agent.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_deployments.h"
#include "db_jobs.h"
#include "db_plan.h"
#include "db_users.h"
#include "jobplan.h"
#include "jobs_hooks.h"
#include "jobspec.h"
#include "jx.h"
#include "notify.h"
#include "templates.h"
#include "tpl_expand.h"
#include "waiters.h"

static enum rc job_visible(struct srv_req *req, int64_t team_id)
{
    int member = 1;
    enum rc rc = RC_OK;

    if (req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such job");
    return rc;
}

/*
 * A submit by template (tpl_expand.h): the body made into a full job spec
 * (*out new) from the named template of the set loaded at start. An unknown
 * template is a 400 naming "template", a bad parameter one naming
 * "params.<name>".
 */
static enum rc expand_template(struct srv_req *req, json_t **out)
{
    const json_t *id = json_object_get(req->body, "template");
    const char *s = json_string_value(id);
    json_t *tpl = NULL;
    enum rc rc;

    *out = NULL;
    if (!json_is_string(id))
        return srv_fail(req, RC_EINVAL, "template", "template must be a template id (a string)");
    /* Template ids are short slugs; anything else cannot name one and is not
     * echoed back. */
    if (json_string_length(id) == 0 || json_string_length(id) > 64 ||
        strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != json_string_length(id))
        return srv_fail(req, RC_EINVAL, "template", "no such template");
    rc = tpl_set_get(req->app->templates, s, &tpl);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EINVAL, "template", "no template named \"%s\"", s);
    if (rc != RC_OK)
        return rc;
    rc = tpl_expand(tpl, req->body, out, &req->err);
    json_decref(tpl);
    return rc;
}

/*
 * The plan at submit (jobplan.h) for a spec that asks for one, into *out
 * (new; NULL when not wanted). Made before the job's transaction: it reads
 * the site's nodes only. An "auto" job that fits nowhere in the site is
 * refused with 409 naming the smallest allocation that would fit: it would
 * fail on every attempt. An explicit strategy is the user's call: its plan
 * is stored with its warnings (override_does_not_fit, ...) and shown.
 */
static enum rc plan_at_submit(struct srv_req *req, const json_t *spec_json, int64_t site_id,
                              json_t **out)
{
    const json_t *strategy = json_object_get(spec_json, "strategy");
    json_t *nodes = NULL, *alloc = NULL, *caps = NULL, *plan = NULL;
    char why[320];
    enum rc rc;

    *out = NULL;
    if (!jobplan_wanted(spec_json))
        return RC_OK;
    if ((rc = db_plan_site_nodes(req->db, site_id, &nodes, req->req_id)) != RC_OK)
        goto out;
    rc = jobplan_site_alloc(
        nodes,
        (int)json_integer_value(json_object_get(json_object_get(spec_json, "resources"), "gpus")),
        (int)json_integer_value(
            json_object_get(json_object_get(spec_json, "resources"), "gpus_per_node")),
        &alloc, &caps, why, sizeof(why));
    if (rc == RC_ENOTFOUND) {
        /* No node yet: the plan is made at placement. */
        plan = json_pack("{s:s,s:{s:s,s:s}}", "status", "not_planned", "reason", "en",
                         "the site has no node with GPUs yet: the job is planned when it is placed",
                         "zh-CN", "该站点还没有带 GPU 的节点：作业在放置时再做规划");
        rc = plan ? RC_OK : RC_ENOMEM;
        goto done;
    }
    if (rc == RC_OK)
        rc = jobplan_make(spec_json, alloc, caps, "submit", why, &plan, &req->err);
    if (rc != RC_OK)
        goto out;
    if (strcmp(json_string_value(strategy), "auto") == 0 &&
        strcmp(json_string_value(json_object_get(plan, "status")), "ok") != 0) {
        const json_t *sa = json_object_get(plan, "smallest_allocation");
        const json_t *g = json_object_get(sa, "gpus");
        const json_t *m = json_object_get(sa, "gpu_memory_bytes_at_this_size");

        if (json_is_integer(g))
            rc = srv_fail(req, RC_ECONFLICT, "resources.gpus",
                          "the model does not fit the site's largest GPUs with any strategy: the "
                          "smallest allocation that fits is %" JSON_INTEGER_FORMAT " GPUs",
                          json_integer_value(g));
        else
            rc = srv_fail(req, RC_ECONFLICT, "resources.gpus",
                          "the model does not fit the site's largest GPUs with any strategy, at "
                          "any allocation of them");
        if (json_is_integer(m))
            err_detail(&req->err,
                       "got %" JSON_INTEGER_FORMAT " GPUs; at this size each would need %.1f GiB",
                       json_integer_value(
                           json_object_get(json_object_get(spec_json, "resources"), "gpus")),
                       (double)json_integer_value(m) / (1024.0 * 1024.0 * 1024.0));
        else
            err_detail(&req->err, "got %" JSON_INTEGER_FORMAT " GPUs",
                       json_integer_value(
                           json_object_get(json_object_get(spec_json, "resources"), "gpus")));
        goto out;
    }
done:
    *out = plan;
    plan = NULL;
out:
    json_decref(nodes);
    json_decref(alloc);
    json_decref(caps);
    json_decref(plan);
    return rc;
}

/* The longest Idempotency-Key taken; a UUID is 36 characters. */
#define IDEMPOTENCY_KEY_MAX 200

/*
 * The submit's Idempotency-Key header (borrowed, NULL when absent) and the
 * SHA-256 of the request body it goes with, into hash. A key that is empty,
 * too long, or not printable ASCII is a 400 naming the header.
 */
static enum rc idempotency_key(struct srv_req *req, const char **key,
                               char hash[CRYPTO_SHA256_HEX_LEN + 1])
{
    const char *k = srv_header(req, "Idempotency-Key");
    char *text;
    size_t n;

    *key = NULL;
    hash[0] = '\0';
    if (k == NULL)
        return RC_OK;
    n = strlen(k);
    if (n == 0 || n > IDEMPOTENCY_KEY_MAX)
        return srv_fail(req, RC_EINVAL, "Idempotency-Key",
                        "the Idempotency-Key header must be 1 to %d characters",
                        IDEMPOTENCY_KEY_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] > 0x7e)
            return srv_fail(req, RC_EINVAL, "Idempotency-Key",
                            "the Idempotency-Key header must be printable ASCII without spaces");
    /* Sorted keys: the same request however its client ordered the fields. */
    text = jx_dumps(req->body, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL)
        return RC_ENOMEM;
    crypto_sha256_hex(text, strlen(text), hash);
    free(text);
    *key = k;
    return RC_OK;
}

/*
 * Answer a submit whose key already made job_id: with the same request, 200
 * and that job as it is now (201 was the first answer); with another, 409.
 * Nothing is written either way.
 */
static enum rc reply_repeated(struct srv_req *req, int64_t job_id, int same_request)
{
    json_t *row = NULL;
    enum rc rc;

    if (!same_request)
        return srv_fail(req, RC_ECONFLICT, "Idempotency-Key",
                        "this Idempotency-Key was sent with another request, which made job "
                        "%lld; use a new key for a new job",
                        (long long)job_id);
    if ((rc = db_job_get(req->db, job_id, &row, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

enum rc api_job_submit(struct srv_req *req)
{
    struct jobspec *spec = NULL;
    struct db_job_compliance comp = {0};
    json_t *spec_json = NULL, *row = NULL, *d = NULL, *expanded = NULL, *plan = NULL;
    int64_t team_id = 0, prior_job = 0;
    int member = 1, same_request = 0;
    const char *ikey = NULL;
    char actor[96], target[AUDIT_TARGET_SIZE], ihash[CRYPTO_SHA256_HEX_LEN + 1];
    enum rc rc;

    if (req->body == NULL)
        return srv_fail(req, RC_EINVAL, "", "the body must be a job spec (a JSON object)");
    if ((rc = idempotency_key(req, &ikey, ihash)) != RC_OK)
        return rc;
    /* A repeat (its answer lost, a double click) gets the job the first
     * made, even if the same request would be refused now (a quota used
     * up since): looked up before any check. Outside a transaction the
     * key's lock is held for the lookup only; the transaction below looks
     * again under the lock, for two first submits racing. */
    if (ikey != NULL) {
        rc = db_job_idempotency_find(req->db, req->who.user_id, ikey, ihash, &prior_job,
                                     &same_request, req->req_id);
        if (rc != RC_OK || prior_job != 0)
            return rc != RC_OK ? rc : reply_repeated(req, prior_job, same_request);
    }
    /* With "template" and no "command" the template makes the command; a
     * spec with a command (a template's "job", a clone of a stored job) is
     * taken as it is, its "template" and "params" kept as the record. */
    if (tpl_expand_wanted(req->body) && (rc = expand_template(req, &expanded)) != RC_OK)
        return rc;
    rc = jobspec_parse(expanded ? expanded : req->body, &spec, &req->err);
    json_decref(expanded);
    if (rc != RC_OK)
        return rc;
    rc = db_team_id(req->db, spec->team, &team_id, req->req_id);
    if (rc == RC_ENOTFOUND) {
        rc = srv_fail(req, RC_EINVAL, "team", "no team named \"%s\"", spec->team);
        goto out;
    }
    if (rc != RC_OK)
        goto out;
    if (req->who.role != SRV_ROLE_ADMIN &&
        (rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id)) != RC_OK)
        goto out;
    if (!member) {
        rc = srv_fail(req, RC_EPERM, "team", "you are not a member of team \"%s\"", spec->team);
        goto out;
    }
    if ((rc = jobs_check_submit(req, spec, team_id, &comp)) != RC_OK ||
        (rc = jobs_check_site_fits(req, spec, comp.site_id)) != RC_OK)
        goto out;
    spec_json = jobspec_to_json(spec);
    if (spec_json == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if ((rc = plan_at_submit(req, spec_json, comp.site_id, &plan)) != RC_OK)
        goto out;
    srv_actor(req, actor, sizeof(actor));
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    if (ikey != NULL)
        rc = db_job_idempotency_find(req->db, req->who.user_id, ikey, ihash, &prior_job,
                                     &same_request, req->req_id);
    if (rc == RC_OK && prior_job != 0) {
        (void)api_end(req, RC_ECONFLICT); /* roll back: a repeat writes nothing */
        rc = reply_repeated(req, prior_job, same_request);
        goto out;
    }
    if (rc == RC_OK)
        rc = db_job_insert(req->db, spec, spec_json, team_id, req->who.user_id, actor, &comp, &row,
                           req->req_id);
    if (rc == RC_OK && ikey != NULL) {
        int64_t jid = 0;
        rc = db_parse_i64(json_string_value(json_object_get(row, "id")), &jid);
        if (rc == RC_OK)
            rc = db_job_idempotency_set(req->db, jid, ikey, ihash, req->req_id);
    }
    if (rc == RC_OK && plan != NULL) {
        int64_t jid = 0;
        rc = db_parse_i64(json_string_value(json_object_get(row, "id")), &jid);
        if (rc == RC_OK)
            rc = db_plan_set_submit(req->db, jid, plan, req->req_id);
        if (rc == RC_OK && json_object_set(row, "plan", plan) != 0)
            rc = RC_ENOMEM;
    }
    /* The leader may be another replica (delivered at commit). Sent before
     * the audit event, which takes the chain's lock until COMMIT. */
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id_text(AUDIT_TARGET_JOB, json_string_value(json_object_get(row, "id")),
                                  target);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}", "name", spec->name, "team", spec->team, "gpus",
                      spec->gpus, "priority", jobspec_prio_str(spec->priority), "site", spec->site,
                      "classification", comp.classification);
        rc = audit_append_req(req, "job.submit", target, "success", d);
    }
    rc = api_end(req, rc);
    if (rc == RC_OK) {
        app_wake_scheduler(req->app);
        rc = srv_reply(req, 201, row);
        row = NULL;
    }
out:
    json_decref(d);
    json_decref(row);
    json_decref(plan);
    json_decref(spec_json);
    db_job_compliance_cleanup(&comp);
    jobspec_free(spec);
    return rc;
}

enum rc api_job_list(struct srv_req *req)
{
    struct db_job_filter f = {0};
    char cursor[24], key[400];
    json_t *rows = NULL, *last, *page;
    int ttl = req->app->cfg->cache_ttl_ms;
    uint64_t gen;
    enum rc rc;

    if ((rc = api_page(req, 50, 500, &f.limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    f.state = srv_query(req, "state");
    f.team = srv_query(req, "team");
    f.user = srv_query(req, "user");
    f.cursor = cursor[0] ? cursor : NULL;
    if (f.state != NULL && !db_job_state_valid(f.state)) {
        srv_fail(req, RC_EINVAL, "state",
                 "state must be one of QUEUED, PLACED, STARTING, RUNNING, RESTARTING, "
                 "SUCCEEDED, FAILED, CANCELLED");
        err_detail(&req->err, "got \"%.32s\"", f.state);
        return RC_EINVAL;
    }
    if ((f.team && strlen(f.team) > 64) || (f.user && strlen(f.user) > 64))
        return srv_fail(req, RC_EINVAL, f.team ? "team" : "user", "filter value is too long");
    if (req->who.role == SRV_ROLE_MEMBER)
        f.member_of = req->who.user_id;
    /* The page for this scope and query may be in memory (cache.h); the
     * generation is read before the query so a change committed meanwhile
     * is never hidden by what this request stores. */
    gen = db_jobs_generation();
    snprintf(key, sizeof(key), "jobs|%lld|%s|%s|%s|%d|%s", (long long)f.member_of,
             f.state ? f.state : "", f.team ? f.team : "", f.user ? f.user : "", f.limit, cursor);
    if (ttl > 0 && cache_get(req->app->page_cache, key, srv_now_ms(), gen, &req->resp_raw,
                             &req->resp_raw_len)) {
        req->resp_ctype = "application/json; charset=utf-8";
        req->status = 200;
        return RC_OK;
    }
    rc = db_job_list(req->db, &f, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last =
        json_array_size(rows) == (size_t)f.limit ? json_array_get(rows, (size_t)f.limit - 1) : NULL;
    page = json_pack("{s:o,s:O}", "jobs", rows, "next_cursor",
                     last ? json_object_get(last, "id") : json_null());
    req->resp_raw = page ? jx_dumps(page, JSON_COMPACT) : NULL;
    json_decref(page);
    if (req->resp_raw == NULL)
        return RC_ENOMEM;
    req->resp_raw_len = strlen(req->resp_raw);
    req->resp_ctype = "application/json; charset=utf-8";
    req->status = 200;
    if (ttl > 0)
        cache_put(req->app->page_cache, key, req->resp_raw, req->resp_raw_len, srv_now_ms() + ttl,
                  gen);
    return RC_OK;
}

/* Load job params[0] and check the caller may see it. */
static enum rc load_visible(struct srv_req *req, int64_t *id, int64_t *team_id, char *state,
                            size_t state_size, int lock)
{
    enum rc rc = api_param_id(req, 0, id, "job");

    if (rc != RC_OK)
        return rc;
    rc = db_job_brief(req->db, *id, lock, team_id, state, state_size, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such job");
    if (rc != RC_OK)
        return rc;
    return job_visible(req, *team_id);
}

enum rc api_job_get(struct srv_req *req)
{
    int64_t id, team_id;
    char state[16];
    json_t *row = NULL;
    enum rc rc;

    if ((rc = load_visible(req, &id, &team_id, state, sizeof(state), 0)) != RC_OK)
        return rc;
    if ((rc = db_job_get(req->db, id, &row, req->req_id)) != RC_OK)
        return rc;
    if ((rc = jobs_decorate(req, id, row)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    return srv_reply(req, 200, row);
}

enum rc api_job_events(struct srv_req *req)
{
    int64_t id, team_id;
    char state[16];
    json_t *rows = NULL;
    enum rc rc;

    if ((rc = load_visible(req, &id, &team_id, state, sizeof(state), 0)) != RC_OK)
        return rc;
    if ((rc = db_job_events(req->db, id, &rows, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "events", rows));
}

/* The cancel's transaction (api_tx body); nodes is reset on each run. */
struct cancel_tx {
    int64_t id;
    json_t *nodes; /* owned: nodes still holding the job */
};

/* Lock order (db.h): the job's row (load_visible), then its allocations and
 * attempts (jobs_cancel), the audit head meanwhile and last; no other job. */
static enum rc cancel_body(struct srv_req *req, void *arg)
{
    struct cancel_tx *x = arg;
    int64_t team_id;
    char state[16], target[AUDIT_TARGET_SIZE], dep[64];
    enum rc rc;

    json_decref(x->nodes);
    x->nodes = NULL;
    rc = load_visible(req, &x->id, &team_id, state, sizeof(state), 1);
    if (rc == RC_OK && db_job_state_terminal(state))
        rc = srv_fail(req, RC_ECONFLICT, "", "the job has already ended (%s)", state);
    /* A deployment's replica is cancelled by scaling or stopping the
     * deployment; cancelled alone it would leave the deployment short. */
    if (rc == RC_OK)
        rc = db_serve_replica_of(req->db, x->id, dep, sizeof(dep), req->req_id);
    if (rc == RC_OK && dep[0] != '\0') {
        srv_fail(req, RC_ECONFLICT, "",
                 "job %lld is a replica of deployment \"%s\"; scale or stop the deployment "
                 "instead",
                 (long long)x->id, dep);
        err_code(&req->err, "deployment_replica");
        rc = RC_ECONFLICT;
    }
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_JOB, x->id, target);
    if (rc == RC_OK)
        rc = audit_append_req(req, "job.cancel", target, "success", NULL);
    if (rc == RC_OK)
        rc = jobs_cancel(req, x->id, state);
    /* Nodes still holding the job (it was running): their workers' long-polls
     * answer with the cancel at once instead of at the next heartbeat, here
     * and (NOTIFY, delivered at commit) on other replicas. */
    if (rc == RC_OK)
        rc = db_job_nodes(req->db, x->id, &x->nodes, req->req_id);
    if (rc == RC_OK)
        rc = notify_send_job(req->app, req->db, x->id, x->nodes, 1, req->req_id);
    return rc;
}

enum rc api_job_cancel(struct srv_req *req)
{
    struct cancel_tx x = {0, NULL};
    json_t *row = NULL, *n;
    size_t i;
    enum rc rc;

    if (req->body != NULL &&
        (rc = api_body_object(req, (const char *const[]){"reason", NULL})) != RC_OK)
        return rc;
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read jobs but not change them");
    /* A cancel racing the scheduler or a worker's report on the same job is
     * run again if PostgreSQL breaks a deadlock, instead of answering 503. */
    rc = api_tx(req, cancel_body, &x);
    if (rc != RC_OK) {
        json_decref(x.nodes);
        return rc;
    }
    json_array_foreach(x.nodes, i, n)
    {
        int64_t node_id;
        if (db_parse_i64(json_string_value(json_object_get(n, "node_id")), &node_id) == RC_OK)
            waiters_notify(req->app->waiters, node_id);
    }
    json_decref(x.nodes);
    waiters_notify(req->app->waiters, -x.id);
    app_wake_scheduler(req->app);
    if ((rc = db_job_get(req->db, x.id, &row, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 202, row);
}

/* The priority change's transaction (api_tx body). */
struct prio_tx {
    int64_t id;
    int prio; /* 0 low, 1 normal, 2 high */
};

/* Lock order (db.h): the job's row, then the audit head last; no other job. */
static enum rc prio_body(struct srv_req *req, void *arg)
{
    struct prio_tx *x = arg;
    int64_t team_id;
    int old = 0;
    char state[16], target[AUDIT_TARGET_SIZE];
    json_t *d;
    enum rc rc;

    rc = load_visible(req, &x->id, &team_id, state, sizeof(state), 1);
    /* Once placed, the scheduler no longer orders the job by priority: a
     * change there would be recorded but do nothing. */
    if (rc == RC_OK && strcmp(state, "QUEUED") != 0 && strcmp(state, "RESTARTING") != 0)
        rc = srv_fail(req, RC_ECONFLICT, "",
                      "the priority can only change while the job waits (it is %s)", state);
    if (rc == RC_OK)
        rc = db_job_set_priority(req->db, x->id, x->prio, &old, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_JOB, x->id, target);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s}", "from", jobspec_prio_str((enum jobspec_prio)old), "to",
                      jobspec_prio_str((enum jobspec_prio)x->prio));
        rc = d ? audit_append_req(req, "job.priority", target, "success", d) : RC_ENOMEM;
        json_decref(d);
    }
    /* The leader may be another replica (delivered at commit). */
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    return rc;
}

enum rc api_job_update(struct srv_req *req)
{
    static const char *const names[] = {"low", "normal", "high"};
    struct prio_tx x = {0, -1};
    json_t *row = NULL, *v;
    const char *s;
    int i;
    enum rc rc;

    if ((rc = api_body_object(req, (const char *const[]){"priority", NULL})) != RC_OK)
        return rc;
    v = json_object_get(req->body, "priority");
    s = json_string_value(v);
    for (i = 0; s != NULL && i < 3; i++)
        if (strcmp(s, names[i]) == 0)
            x.prio = i;
    if (x.prio < 0)
        return srv_fail(req, RC_EINVAL, "priority", "priority must be low, normal or high");
    rc = api_tx(req, prio_body, &x);
    if (rc != RC_OK)
        return rc;
    app_wake_scheduler(req->app);
    if ((rc = db_job_get(req->db, x.id, &row, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

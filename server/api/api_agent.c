/*
 * api_agent.c - the worker protocol (docs/agent-protocol.md) and the admin
 * side of nodes: join tokens, drain and undrain.
 *
 * Every change of a node's or a job's state is audited in the transaction
 * that makes it. Logs and metrics are data, not control changes: they are
 * stored but not audited (checkpoint records are).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "auth.h"
#include "crypto.h"
#include "db.h"
#include "db_agent.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_exports.h"
#include "db_jobs.h"
#include "db_policy.h"
#include "db_webhooks.h"
#include "lifecycle.h"
#include "log.h"
#include "notify.h"
#include "outputs.h"
#include "pathpol.h"
#include "topology.h"
#include "waiters.h"

#define AGENT_HEARTBEAT_MS 2000
#define AGENT_MAX_WAIT_S 60
#define AGENT_MAX_ROOTS 64 /* storage roots of a site a checkpoint check reads */

/* [a-z0-9][a-z0-9._-]{0,62}: node names appear in URLs, logs and labels. */
static int valid_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || !(islower((unsigned char)*s) || isdigit((unsigned char)*s)))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '.' ||
              s[i] == '-' || s[i] == '_'))
            return 0;
    return 1;
}

static int valid_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* labels: an object of at most 16 short string values with slug keys. */
static enum rc check_labels(struct srv_req *req, const json_t *labels)
{
    const char *k;
    json_t *v;

    if (labels == NULL)
        return RC_OK;
    if (!json_is_object(labels) || json_object_size(labels) > 16)
        return srv_fail(req, RC_EINVAL, "labels", "labels must be an object of at most 16 strings");
    json_object_foreach((json_t *)labels, k, v)
    {
        if (!valid_name(k) || !json_is_string(v) || json_string_length(v) > 128)
            return srv_fail(req, RC_EINVAL, "labels",
                            "label \"%.32s\" must be a-z0-9._- with a "
                            "string value of at most 128 bytes",
                            k);
    }
    return RC_OK;
}

/*
 * The site a node's labels name: the "site" label, the default site when
 * labels come without one, 0 (keep) when no labels come. An unknown site is
 * refused: a node must not take jobs of a site it does not belong to.
 */
static enum rc label_site(struct srv_req *req, const json_t *labels, int64_t *site_id)
{
    const char *name = json_string_value(json_object_get(labels, "site"));
    enum rc rc;

    *site_id = labels != NULL ? DB_SITE_DEFAULT_ID : 0;
    if (name == NULL)
        return RC_OK;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_site_id(req->db, name, site_id, req->req_id);
    if (rc == RC_ENOTFOUND) {
        srv_fail(req, RC_EINVAL, "labels.site",
                 "no site named \"%.64s\"; an admin must create the site before its nodes "
                 "register",
                 name);
        return RC_EINVAL;
    }
    return rc;
}

static void node_actor(struct srv_req *req, char *out, size_t n)
{
    snprintf(out, n, "node:%s", req->who.node_name);
}

static enum rc audit_node_state(struct srv_req *req, const char *from, const char *to,
                                const char *why)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *d;
    enum rc rc;

    if (strcmp(from, to) == 0)
        return RC_OK;
    if ((rc = audit_target_name(AUDIT_TARGET_NODE, req->who.node_name, target)) != RC_OK)
        return rc;
    d = json_pack("{s:s,s:s,s:s}", "from", from, "to", to, "reason", why);
    rc = audit_append_req(req, "node.state", target, "success", d);
    json_decref(d);
    return rc;
}

enum rc api_join_token_create(struct srv_req *req)
{
    static const char *const allowed[] = {"ttl_s", "uses", NULL};
    int64_t ttl = 86400, uses = 1;
    int has;
    char tok[80], h[CRYPTO_SHA256_HEX_LEN + 1], target[AUDIT_TARGET_SIZE];
    json_t *row = NULL, *d;
    enum rc rc;

    if (req->body != NULL &&
        ((rc = api_body_object(req, allowed)) != RC_OK ||
         (rc = api_opt_int(req, "ttl_s", 60, 30LL * 86400, &ttl, &has)) != RC_OK ||
         (rc = api_opt_int(req, "uses", 1, 10000, &uses, &has)) != RC_OK))
        return rc;
    if (crypto_random_token("tyj_", 32, tok, sizeof(tok)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(tok, strlen(tok), h);
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_join_token_create(req->db, req->who.user_id, ttl, uses, h, &row, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id_text(AUDIT_TARGET_JOIN_TOKEN,
                                  json_string_value(json_object_get(row, "id")), target);
    if (rc == RC_OK) {
        d = json_pack("{s:I,s:I}", "ttl_s", (json_int_t)ttl, "uses", (json_int_t)uses);
        rc = audit_append_req(req, "node.join_token.create", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    json_object_set_new(row, "token", json_string(tok));
    return srv_reply(req, 201, row);
}

enum rc api_agent_join(struct srv_req *req)
{
    static const char *const allowed[] = {"join_token", "name", "hostname", "addr", "labels", NULL};
    const char *token, *name, *host, *addr;
    char h[CRYPTO_SHA256_HEX_LEN + 1], cred[80], ch[CRYPTO_SHA256_HEX_LEN + 1],
        target[AUDIT_TARGET_SIZE], id[24];
    char *labels = NULL;
    int64_t node_id = 0, token_id = 0;
    int retry = 0;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "join_token", 1, 128, &token)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 63, &name)) != RC_OK ||
        (rc = api_opt_string(req, "hostname", 0, 255, &host)) != RC_OK ||
        (rc = api_opt_string(req, "addr", 0, 64, &addr)) != RC_OK ||
        (rc = check_labels(req, json_object_get(req->body, "labels"))) != RC_OK)
        return rc;
    if (token == NULL)
        return srv_fail(req, RC_EINVAL, "join_token", "join_token is required");
    {
        int64_t site_id;
        if ((rc = label_site(req, json_object_get(req->body, "labels"), &site_id)) != RC_OK)
            return rc;
    }
    if (name == NULL || !valid_name(name))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 63 of a-z, 0-9, '.', '_', '-'");
    if (addr != NULL && addr[0] != '\0' && !valid_ip(addr))
        return srv_fail(req, RC_EINVAL, "addr", "addr must be an IP address");
    if (addr == NULL || addr[0] == '\0')
        addr = req->client_addr;
    crypto_sha256_hex(token, strlen(token), h);
    if (audit_target_name(AUDIT_TARGET_NODE, name, target) != RC_OK) /* valid_name() holds */
        return RC_EINTERNAL;
    if (crypto_random_token("tyn_", 32, cred, sizeof(cred)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(cred, strlen(cred), ch);
    labels = json_object_get(req->body, "labels") != NULL
                 ? json_dumps(json_object_get(req->body, "labels"), JSON_COMPACT)
                 : strdup("{}");
    if (labels == NULL)
        return RC_ENOMEM;
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    /* A retry whose first answer was lost spends no use (db_agent.h). */
    rc = db_join_token_use(req->db, h, name, &token_id, &retry, req->req_id);
    if (rc == RC_EAUTH) {
        api_end(req, RC_EAUTH);
        (void)audit_append_alone(req, "node.join", target, "failure", NULL);
        rc = srv_fail(req, RC_EAUTH, "join_token", "the join token is unknown, expired or used up");
        goto out;
    }
    if (rc == RC_OK)
        rc = db_node_join(req->db, name, host ? host : "", addr, labels, ch, token_id, &node_id,
                          req->req_id);
    if (rc == RC_OK) {
        json_t *d = json_pack("{s:s,s:b}", "addr", addr, "retry", retry);
        rc = audit_append_req(req, "node.join", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK)
        goto out;
    auth_forget_all(req->app); /* a re-join retires the node's old credential */
    rc = srv_reply(
        req, 201,
        json_pack("{s:s,s:s}", "node_id", api_i64(node_id, id, sizeof(id)), "credential", cred));
out:
    free(labels);
    return rc;
}

/* Validate the inventory of a register body. */
static enum rc check_inventory(struct srv_req *req)
{
    static const char *const allowed[] = {"hostname",     "addr",         "labels",     "cpus",
                                          "memory_mb",    "version",      "gpus",       "running",
                                          "capabilities", "interconnect", "nccl_probe", NULL};
    json_t *gpus, *g;
    size_t i;
    const char *s;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "hostname", 0, 255, &s)) != RC_OK ||
        (rc = api_opt_string(req, "version", 0, 64, &s)) != RC_OK ||
        (rc = api_opt_string(req, "addr", 0, 64, &s)) != RC_OK ||
        (rc = check_labels(req, json_object_get(req->body, "labels"))) != RC_OK)
        return rc;
    if (s != NULL && s[0] != '\0' && !valid_ip(s))
        return srv_fail(req, RC_EINVAL, "addr", "addr must be an IP address");
    gpus = json_object_get(req->body, "gpus");
    if (gpus != NULL && (!json_is_array(gpus) || json_array_size(gpus) > 64))
        return srv_fail(req, RC_EINVAL, "gpus", "gpus must be an array of at most 64 GPUs");
    json_array_foreach(gpus, i, g)
    {
        json_t *idx = json_object_get(g, "index");
        if (!json_is_object(g) || !json_is_integer(idx) || json_integer_value(idx) < 0 ||
            json_integer_value(idx) > 63 || !json_is_string(json_object_get(g, "uuid")) ||
            !json_is_string(json_object_get(g, "model")) ||
            json_string_length(json_object_get(g, "uuid")) > 128 ||
            json_string_length(json_object_get(g, "model")) > 128)
            return srv_fail(req, RC_EINVAL, "gpus", "gpus[%zu] needs index 0..63, uuid and model",
                            i);
    }
    if (json_object_get(req->body, "running") != NULL &&
        !json_is_array(json_object_get(req->body, "running")))
        return srv_fail(req, RC_EINVAL, "running", "running must be an array");
    /* What the node can run and how it is connected (topology.h): refused
     * whole, before anything is written, when one field is off. */
    if ((rc = topo_check_capabilities(json_object_get(req->body, "capabilities"), &req->err)) !=
            RC_OK ||
        (rc = topo_check_interconnect(json_object_get(req->body, "interconnect"), &req->err)) !=
            RC_OK ||
        (rc = topo_check_nccl_probe(json_object_get(req->body, "nccl_probe"), &req->err)) != RC_OK)
        return rc;
    return RC_OK;
}

/*
 * The audit record of a register: the inventory in brief (the full report
 * is in the node's row and in GET /api/v1/nodes).
 */
static json_t *register_details(const json_t *body, const char *addr)
{
    const json_t *caps = json_object_get(body, "capabilities");
    const json_t *ic = json_object_get(body, "interconnect"), *p;
    const json_t *probe = json_object_get(body, "nccl_probe");
    json_int_t ib_active = 0;
    size_t i;

    json_array_foreach(json_object_get(ic, "infiniband"), i, p)
    {
        const char *st = json_string_value(json_object_get(p, "state"));
        ib_active += st != NULL && strcmp(st, "ACTIVE") == 0;
    }
    return json_pack("{s:I,s:s,s:O?,s:O?,s:O?,s:O?,s:I,s:I,s:b}", "gpus",
                     (json_int_t)json_array_size(json_object_get(body, "gpus")), "addr", addr,
                     "probe", json_object_get(caps, "probe"), "torch",
                     json_object_get(caps, "torch"), "fsdp", json_object_get(caps, "fsdp"),
                     "deepspeed", json_object_get(caps, "deepspeed"), "interfaces",
                     (json_int_t)json_array_size(json_object_get(ic, "interfaces")),
                     "infiniband_active", ib_active, "nccl_probe", json_is_object(probe));
}

/*
 * Attempts this node had started but no longer runs (its worker restarted
 * and the ranks are gone): a loss of the node's part, not a job failure.
 * Lock order (db.h): their jobs are locked already (db_node_jobs_lock), so
 * db_attempt_info's lock takes no new job row after the audit head.
 */
static enum rc lose_attempts(struct srv_req *req, const json_t *lost)
{
    char actor[96], target[AUDIT_TARGET_SIZE];
    struct job_reason why;
    size_t i;
    json_t *a, *d;
    enum rc rc;

    node_actor(req, actor, sizeof(actor));
    if ((rc = audit_target_name(AUDIT_TARGET_NODE, req->who.node_name, target)) != RC_OK)
        return rc;
    job_reason_init(&why, RSN_NODE_RANKS_LOST, json_pack("{s:s}", "node", req->who.node_name),
                    "node %s lost its ranks (worker restarted)", req->who.node_name);
    d = json_pack("{s:O,s:s}", "attempts", lost, "reason", "worker restarted; ranks gone");
    rc = audit_append_req(req, "node.ranks_lost", target, "success", d);
    json_decref(d);
    json_array_foreach(lost, i, a)
    {
        int64_t attempt_id = strtoll(json_string_value(a), NULL, 10);
        struct db_attempt_info info = {0};
        if (rc == RC_OK)
            rc = db_attempt_info(req->db, attempt_id, req->who.node_id, 1, &info, req->req_id);
        if (rc == RC_OK)
            rc = lifecycle_node_lost(req->db, attempt_id, info.job_id, req->who.node_id, &why,
                                     req->app->cfg->node_timeout_s + 5, actor, req->req_id);
    }
    job_reason_cleanup(&why);
    return rc;
}

/* A register's transaction (api_tx body); stop and lost are reset on each run. */
struct register_tx {
    const char *addr;      /* borrowed */
    int64_t site_id;       /* from the labels; 0 keeps the node's */
    const json_t *running; /* borrowed, from the body */
    json_t *stop, *lost;   /* owned */
};

static enum rc register_body(struct srv_req *req, void *arg)
{
    struct register_tx *x = arg;
    char old[16], new_state[16];
    enum rc rc;

    json_decref(x->stop);
    json_decref(x->lost);
    x->stop = x->lost = NULL;
    rc = db_node_register(req->db, req->who.node_id, req->body, x->addr, x->site_id, old, new_state,
                          sizeof(old), req->req_id);
    /* Lock order (db.h): the node's row, then the jobs on it, then the audit
     * head; lose_attempts changes those jobs after the audit events. */
    if (rc == RC_OK)
        rc = db_node_jobs_lock(req->db, req->who.node_id, req->req_id);
    if (rc == RC_OK)
        rc = audit_node_state(req, old, new_state, "worker registered");
    if (rc == RC_OK) {
        char target[AUDIT_TARGET_SIZE];
        json_t *d = register_details(req->body, x->addr);
        rc = audit_target_name(AUDIT_TARGET_NODE, req->who.node_name, target);
        if (rc == RC_OK)
            rc = audit_append_req(req, "node.register", target, "success", d);
        json_decref(d);
    }
    if (rc == RC_OK)
        rc = db_attempts_to_stop(req->db, req->who.node_id, x->running, &x->stop, req->req_id);
    if (rc == RC_OK)
        rc = db_attempts_lost_on_node(req->db, req->who.node_id, x->running, &x->lost, req->req_id);
    if (rc == RC_OK && json_array_size(x->lost) > 0)
        rc = lose_attempts(req, x->lost);
    if (rc == RC_OK)
        rc = db_allocs_redeliver(req->db, req->who.node_id, req->req_id);
    /* Other replicas (delivered at commit): this node's old long-polls
     * parked there give up, and the leader sees the new GPUs. */
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, &req->who.node_id, 1, 1, req->req_id);
    return rc;
}

enum rc api_agent_register(struct srv_req *req)
{
    struct register_tx x = {NULL, 0, NULL, NULL, NULL};
    char id[24];
    json_t *keep = NULL;
    size_t i;
    json_t *r;
    enum rc rc;

    if ((rc = check_inventory(req)) != RC_OK ||
        (rc = label_site(req, json_object_get(req->body, "labels"), &x.site_id)) != RC_OK)
        return rc;
    x.addr = json_string_value(json_object_get(req->body, "addr"));
    if (x.addr == NULL || x.addr[0] == '\0')
        x.addr = req->client_addr;
    x.running = json_object_get(req->body, "running");
    if ((rc = api_tx(req, register_body, &x)) != RC_OK)
        goto out;
    /* Long-polls left by the previous worker process see the new generation
     * and give up; the new process polls next. */
    waiters_notify(req->app->waiters, req->who.node_id);
    keep = json_array();
    json_array_foreach(x.running, i, r)
    {
        json_t *aid = json_object_get(r, "attempt_id");
        int stopping = 0;
        size_t k;
        json_t *s;
        json_array_foreach(x.stop, k, s)
        {
            stopping |= json_equal(s, aid);
        }
        if (json_is_string(aid) && !stopping)
            json_array_append(keep, aid);
    }
    app_wake_scheduler(req->app);
    rc = srv_reply(req, 200,
                   json_pack("{s:s,s:i,s:O,s:O}", "node_id",
                             api_i64(req->who.node_id, id, sizeof(id)), "heartbeat_interval_ms",
                             AGENT_HEARTBEAT_MS, "keep", keep, "kill", x.stop));
out:
    json_decref(keep);
    json_decref(x.stop);
    json_decref(x.lost);
    return rc;
}

enum rc api_agent_heartbeat(struct srv_req *req)
{
    static const char *const allowed[] = {"gpus", "running", "draining", NULL};
    json_t *gpus, *running, *stop = NULL, *dr;
    char old[16], now[16];
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK)
        return rc;
    gpus = json_object_get(req->body, "gpus");
    running = json_object_get(req->body, "running");
    dr = json_object_get(req->body, "draining");
    if (gpus != NULL && !json_is_array(gpus))
        return srv_fail(req, RC_EINVAL, "gpus", "gpus must be an array");
    if (running != NULL && !json_is_array(running))
        return srv_fail(req, RC_EINVAL, "running", "running must be an array");
    if (dr != NULL && !json_is_boolean(dr))
        return srv_fail(req, RC_EINVAL, "draining", "draining must be a boolean");
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_node_heartbeat(req->db, req->who.node_id, gpus, req->app->cfg->gpu_idle_util_pct,
                           json_is_true(dr), old, now, sizeof(old), req->req_id);
    if (rc == RC_OK)
        rc = audit_node_state(req, old, now,
                              json_is_true(dr) ? "worker is draining" : "heartbeat after silence");
    if (rc == RC_OK)
        rc = db_attempts_to_stop(req->db, req->who.node_id, running, &stop, req->req_id);
    /* A node that changed state changes what the leader can place. */
    if (rc == RC_OK && strcmp(old, now) != 0)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(stop);
        return rc;
    }
    if (strcmp(old, now) != 0)
        app_wake_scheduler(req->app);
    return srv_reply(req, 200, json_pack("{s:o}", "cancel", stop));
}

/* Move the taken jobs PLACED -> STARTING. */
static enum rc mark_starting(struct srv_req *req, const json_t *jobs)
{
    static const char *const from[] = {"PLACED", NULL};
    char actor[96];
    size_t i;
    json_t *j;
    enum rc rc = RC_OK;

    node_actor(req, actor, sizeof(actor));
    json_array_foreach(jobs, i, j)
    {
        struct job_reason why;
        job_reason_init(&why, RSN_ASSIGNMENT_TAKEN, json_pack("{s:s}", "node", req->who.node_name),
                        "a node took the assignment");
        rc = db_job_transition(req->db, strtoll(json_string_value(j), NULL, 10), from, "STARTING",
                               &why, actor, req->client_addr, req->req_id);
        job_reason_cleanup(&why);
        if (rc == RC_ECONFLICT)
            rc = RC_OK;
        if (rc != RC_OK)
            break;
    }
    return rc;
}

/* A poll's transaction (api_tx body); the arrays are reset on each run. */
struct poll_tx {
    json_t *assignments, *jobs, *cancels; /* owned */
};

static enum rc poll_body(struct srv_req *req, void *arg)
{
    struct poll_tx *x = arg;
    enum rc rc;

    json_decref(x->assignments);
    json_decref(x->jobs);
    json_decref(x->cancels);
    x->assignments = x->jobs = x->cancels = NULL;
    /* Lock order (db.h): db_assignments_take locks the jobs it hands out in
     * id order before mark_starting's transitions take the audit head. */
    rc = db_assignments_take(req->db, req->who.node_id, req->poll_arg, req->poll_flag,
                             req->app->cfg->storage_root, &x->assignments, &x->jobs, &x->cancels,
                             req->req_id);
    if (rc == RC_OK)
        rc = mark_starting(req, x->jobs);
    return rc;
}

static enum rc assignments_poll(struct srv_req *req)
{
    struct poll_tx x = {NULL, NULL, NULL};
    enum rc rc;

    req->poll_checked_us = srv_mono_us(); /* before looking: see waiters.h */
    rc = api_tx(req, poll_body, &x);
    if (rc == RC_OK && json_array_size(x.assignments) == 0 && json_array_size(x.cancels) == 0 &&
        srv_now_ms() < req->poll_deadline_ms && !app_stopping(req->app)) {
        /* Nothing yet: park until the scheduler places work here. */
        srv_suspend(req, req->who.node_id, req->poll_deadline_ms, assignments_poll);
    } else if (rc == RC_OK) {
        rc = srv_reply(req, 200,
                       json_pack("{s:O,s:O}", "assignments", x.assignments, "cancel", x.cancels));
    }
    json_decref(x.assignments);
    json_decref(x.jobs);
    json_decref(x.cancels);
    return rc;
}

enum rc api_agent_assignments(struct srv_req *req)
{
    const char *w = srv_query(req, "wait"), *resend = srv_query(req, "resend");
    long wait_s = 0;
    enum rc rc;

    if (w != NULL) {
        char *end = NULL;
        wait_s = strtol(w, &end, 10);
        if (end == w || *end != '\0' || wait_s < 0 || wait_s > AGENT_MAX_WAIT_S)
            return srv_fail(req, RC_EINVAL, "wait", "wait must be 0 to %d seconds",
                            AGENT_MAX_WAIT_S);
    }
    /* resend=1: the worker's previous poll got no answer (db_agent.h). */
    if (resend != NULL && strcmp(resend, "0") != 0 && strcmp(resend, "1") != 0)
        return srv_fail(req, RC_EINVAL, "resend", "resend must be 0 or 1");
    req->poll_flag = resend != NULL && strcmp(resend, "1") == 0;
    req->poll_deadline_ms = srv_now_ms() + wait_s * 1000;
    rc = db_node_generation(req->db, req->who.node_id, &req->poll_arg, req->req_id);
    if (rc != RC_OK)
        return rc;
    return assignments_poll(req);
}

/* The attempt in the path, checked against the calling node. */
static enum rc load_attempt(struct srv_req *req, int64_t *attempt_id, struct db_attempt_info *info)
{
    enum rc rc = api_param_id(req, 0, attempt_id, "attempt");

    if (rc != RC_OK)
        return rc;
    rc = db_attempt_info(req->db, *attempt_id, req->who.node_id, 1, info, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "this node holds no part of that attempt");
    return rc;
}

/* The started report's transaction (api_tx body): one job, locked first
 * with its attempt (load_attempt), the audit head last (db.h "Lock order"). */
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
    enum rc rc = load_attempt(req, &attempt_id, &info);

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

    node_actor(req, actor, sizeof(actor));
    if ((rc = api_tx(req, started_body, &x)) != RC_OK)
        return rc;
    /* Followers of the job's stream see RUNNING now (api_logs.c). */
    waiters_notify(req->app->waiters, -x.job_id);
    return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
}

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
        if (!json_is_integer(json_object_get(e, "step")) ||
            !json_is_object(json_object_get(e, "values")))
            return srv_fail(req, RC_EINVAL, "metrics", "metrics[%zu] needs step and values", i);
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

static enum rc node_policy_violation(struct srv_req *req, int64_t job_id, int attempt,
                                     const char *stage, const char *reason, const char *path,
                                     const char *why);

/*
 * The checkpoints of an output batch that may be recorded: each path must lie
 * in the job's checkpoint directory (the assignment's checkpoint_dir), which
 * lies in the site's storage roots (the server's storage_root while the site
 * lists none, as for exports), by outputs_checkpoint_check(). *ok receives
 * the accepted entries with normalized paths, *refused the others as
 * {"index", "path" (quoted), "reason"} (new arrays). Only the entry is
 * refused: the batch's logs, metrics and other checkpoints are stored.
 */
static enum rc checkpoints_vet(struct srv_req *req, int64_t job_id, const json_t *ckpts,
                               json_t **ok, json_t **refused)
{
    struct db_export_job job;
    const char *roots[AGENT_MAX_ROOTS];
    char dir[PATHPOL_BUF_SIZE], ckdir[PATHPOL_BUF_SIZE + 16], norm[PATHPOL_BUF_SIZE], ids[24];
    size_t nroots = 0, i;
    json_t *v;
    const json_t *c;
    enum rc rc = RC_OK;

    *ok = json_array();
    *refused = json_array();
    if (*ok == NULL || *refused == NULL)
        return RC_ENOMEM;
    if (json_array_size(ckpts) == 0)
        return RC_OK;
    if ((rc = db_export_job_get(req->db, job_id, &job, req->req_id)) != RC_OK)
        return rc;
    json_array_foreach(job.roots, i, v)
    {
        if (json_is_string(v) && nroots < AGENT_MAX_ROOTS)
            roots[nroots++] = json_string_value(v);
    }
    if (nroots == 0)
        roots[nroots++] = req->app->cfg->storage_root;
    /* A directory too long to name refuses every path ("" is inside nothing). */
    if (outputs_job_dir(job.paths, job.spec_out, job.roots, req->app->cfg->storage_root,
                        api_i64(job_id, ids, sizeof(ids)), dir, sizeof(dir)) != RC_OK)
        dir[0] = '\0';
    snprintf(ckdir, sizeof(ckdir), "%s%s", dir, dir[0] ? "/checkpoints" : "");
    json_array_foreach(ckpts, i, c)
    {
        const char *path = json_string_value(json_object_get(c, "path"));
        char q[128];
        struct err e;
        json_t *item;

        err_init(&e);
        if (outputs_checkpoint_check(path, ckdir, roots, nroots, norm, sizeof(norm), &e) == RC_OK) {
            item = json_copy((json_t *)c);
            if (item != NULL && json_object_set_new(item, "path", json_string(norm)) != 0) {
                json_decref(item);
                item = NULL;
            }
            if (item == NULL || json_array_append_new(*ok, item) != 0) {
                rc = RC_ENOMEM;
                break;
            }
            continue;
        }
        pathpol_quote(path, strlen(path), q, sizeof(q));
        item = json_pack("{s:I,s:s,s:s}", "index", (json_int_t)i, "path", q, "reason", e.message);
        if (item == NULL || json_array_append_new(*refused, item) != 0) {
            rc = RC_ENOMEM;
            break;
        }
    }
    db_export_job_cleanup(&job);
    return rc;
}

/*
 * Each refused checkpoint is a policy.violation (stage "checkpoint") and a
 * webhook, recorded after the batch's rows: audit events come last, after
 * every row the transaction locks (DESIGN, lock order).
 */
static enum rc checkpoints_refused_audit(struct srv_req *req, const struct db_attempt_info *info,
                                         const json_t *refused)
{
    size_t i;
    const json_t *r;
    enum rc rc = RC_OK;

    json_array_foreach(refused, i, r)
    {
        const char *path = json_string_value(json_object_get(r, "path"));
        char reason[320], why[512];

        snprintf(reason, sizeof(reason), "checkpoint refused: %s",
                 json_string_value(json_object_get(r, "reason")));
        snprintf(why, sizeof(why), "attempt %d: %s: \"%s\" reported by node %s", info->attempt,
                 reason, path, req->who.node_name);
        LOG_WARN("agent", "checkpoint path refused", "req_id=%s job_id=%lld node=%s", req->req_id,
                 (long long)info->job_id, req->who.node_name);
        rc = node_policy_violation(req, info->job_id, info->attempt, "checkpoint", reason, path,
                                   why);
        if (rc != RC_OK)
            break;
    }
    return rc;
}

enum rc api_agent_output(struct srv_req *req)
{
    int64_t attempt_id, dropped = 0;
    struct db_attempt_info info;
    json_t *logs, *metrics, *ckpts, *c, *good = NULL, *refused = NULL;
    size_t i;
    int replayed = 0;
    enum rc rc;

    if ((rc = check_output(req, &logs, &metrics, &ckpts, &dropped)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = load_attempt(req, &attempt_id, &info);
    if (rc == RC_OK)
        rc = checkpoints_vet(req, info.job_id, ckpts, &good, &refused);
    if (rc == RC_OK)
        rc = db_output_store(req->db, info.job_id, info.attempt, attempt_id, logs, metrics, good,
                             dropped, &replayed, req->req_id);
    /* A replay was audited when it was first stored: the answer is the same
     * (the refused entries are vetted again), the trail gets nothing new. */
    if (replayed)
        json_array_clear(good);
    if (rc == RC_OK && !replayed)
        rc = checkpoints_refused_audit(req, &info, refused);
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

/* "rank 1 exited with 1" from the first failed rank, or the worker's reason. */
/*
 * Why a node's part of an attempt failed, as cause: the worker's own code
 * when it sent a known one ("reason_code", "reason_params";
 * docs/agent-protocol.md), else the first rank that exited non-zero or was
 * signalled, else the worker's text. Every form gets the attempt and node.
 * The English text is as before: the worker's reason for a deterministic
 * failure, else the rank's exit.
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

/*
 * A path refused by the policy on a node's side: the worker refused to launch
 * because a path failed its realpath check (a symlink out of the roots, say;
 * stage "node"), or the node reported a checkpoint outside the job's
 * checkpoint directory (stage "checkpoint", path the quoted path, else NULL).
 * Audited and told to the job's webhooks like a refusal at submit, in the
 * transaction of the report.
 */
static enum rc node_policy_violation(struct srv_req *req, int64_t job_id, int attempt,
                                     const char *stage, const char *reason, const char *path,
                                     const char *why)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *d = json_pack("{s:s,s:s,s:i,s:s}", "stage", stage, "node", req->who.node_name,
                          "attempt", attempt, "reason", reason);
    enum rc rc;

    if (d == NULL || (path != NULL && json_object_set_new(d, "path", json_string(path)) != 0)) {
        json_decref(d);
        return RC_ENOMEM;
    }
    rc = audit_target_id(AUDIT_TARGET_JOB, job_id, target);
    if (rc == RC_OK)
        rc = audit_append_req(req, "policy.violation", target, "denied", d);
    json_decref(d);
    if (rc == RC_OK)
        rc = webhooks_enqueue(req->db, job_id, "policy.violation", why, req->req_id);
    return rc;
}

/*
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

/* Lock order (db.h): one job, locked with its attempt (load_attempt), then
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
    rc = load_attempt(req, &attempt_id, &info);
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
                rc = node_policy_violation(req, info.job_id, info.attempt, "node", w, NULL,
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
    node_actor(req, actor, sizeof(actor));
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

static enum rc node_state_change(struct srv_req *req, const char *to)
{
    int64_t id;
    char old[16], name[64], target[AUDIT_TARGET_SIZE];
    json_t *d;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "node")) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_node_set_state(req->db, id, to, old, sizeof(old), name, sizeof(name), req->req_id);
    if (rc == RC_OK && strcmp(old, "down") == 0 && strcmp(to, "ready") == 0)
        rc = srv_fail(req, RC_ECONFLICT, "",
                      "the node is down; it becomes ready when its worker "
                      "reports again");
    /* Named like every other event of the node, not by the id in the URL. */
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_NODE, name, target);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s}", "from", old, "to", to);
        rc = audit_append_req(req, strcmp(to, "draining") == 0 ? "node.drain" : "node.undrain",
                              target, "success", d);
        json_decref(d);
    }
    /* The leader may be another replica (delivered at commit). */
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    rc = api_end(req, rc);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such node");
    if (rc != RC_OK)
        return rc;
    app_wake_scheduler(req->app);
    return srv_reply(req, 200, json_pack("{s:s,s:s}", "from", old, "state", to));
}

enum rc api_node_drain(struct srv_req *req)
{
    return node_state_change(req, "draining");
}

enum rc api_node_undrain(struct srv_req *req)
{
    return node_state_change(req, "ready");
}

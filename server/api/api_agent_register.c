/*
 * api_agent_register.c - POST /api/v1/agent/register: a worker, at each
 * start, reports its inventory (GPUs, capabilities, interconnect, NCCL probe)
 * and the attempts it still runs; the answer says which to keep and which to
 * kill.
 *
 * One transaction (register_body) records the inventory, settles what the
 * restart lost (attempts the node had started and no longer runs) and hands
 * its allocations out again; the node's old long-polls give up after it.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "db_agent.h"
#include "db_audit.h"
#include "job_reason.h"
#include "lifecycle.h"
#include "notify.h"
#include "topology.h"
#include "waiters.h"

/* How often a worker is told to send its heartbeat. */
#define AGENT_HEARTBEAT_MS 2000

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
        (rc = agent_check_labels(req, json_object_get(req->body, "labels"))) != RC_OK)
        return rc;
    if (s != NULL && s[0] != '\0' && !agent_valid_ip(s))
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

    agent_node_actor(req, actor, sizeof(actor));
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
        rc = agent_audit_node_state(req, old, new_state, "worker registered");
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
        (rc = agent_label_site(req, json_object_get(req->body, "labels"), &x.site_id)) != RC_OK)
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

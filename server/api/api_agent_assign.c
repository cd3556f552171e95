/*
 * api_agent_assign.c - GET /api/v1/agent/assignments?wait=&resend=: the
 * long-poll by which a worker takes the jobs placed on its node (each moves
 * PLACED -> STARTING) and learns which to cancel.
 *
 * A poll with nothing to hand out parks (srv_suspend, waiters.h) until the
 * node's key is woken (a placement, a cancel, the node registering again)
 * or the wait ends; no thread waits with it. Such a poll holds one of the
 * node's stream_max_per_node slots while it lasts (srv_hold).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "app.h"
#include "db_agent.h"
#include "db_jobs.h"
#include "job_reason.h"
#include "waiters.h"

/* The longest a poll may park, in seconds. */
#define AGENT_MAX_WAIT_S 60

/* Move the taken jobs PLACED -> STARTING. */
static enum rc mark_starting(struct srv_req *req, const json_t *jobs)
{
    static const char *const from[] = {"PLACED", NULL};
    char actor[96];
    size_t i;
    json_t *j;
    enum rc rc = RC_OK;

    agent_node_actor(req, actor, sizeof(actor));
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
    /* A poll that may park counts against the node's cap (srv_hold) before
     * it takes anything, so a refused one hands nothing out. */
    if (wait_s > 0 && (rc = srv_hold(req)) != RC_OK)
        return rc;
    req->poll_deadline_ms = srv_now_ms() + wait_s * 1000;
    rc = db_node_generation(req->db, req->who.node_id, &req->poll_arg, req->req_id);
    if (rc != RC_OK)
        return rc;
    return assignments_poll(req);
}

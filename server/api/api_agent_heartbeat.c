/*
 * api_agent_heartbeat.c - POST /api/v1/agent/heartbeat: a worker's GPU
 * samples, the attempts it runs and whether it drains. The answer names the
 * attempts it must cancel; a node back from silence, or one that starts to
 * drain, changes state (audited) and wakes the scheduler.
 */
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "app.h"
#include "db_agent.h"
#include "notify.h"

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
        rc = agent_audit_node_state(
            req, old, now, json_is_true(dr) ? "worker is draining" : "heartbeat after silence");
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

/*
 * api_node_drain.c - POST /api/v1/nodes/{id}/drain and .../undrain: an admin
 * stops the scheduler placing jobs on a node, or lets it place them again.
 * A node that is down becomes ready only when its worker reports again, not
 * by undrain.
 */
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "db_agent.h"
#include "db_audit.h"
#include "notify.h"

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

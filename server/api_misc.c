/*
 * api_misc.c - health, readiness and the node list.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "db.h"
#include "db_nodes.h"

enum rc api_healthz(struct srv_req *req)
{
    return srv_reply(req, 200, json_pack("{s:s}", "status", "ok"));
}

enum rc api_readyz(struct srv_req *req)
{
    if (!db_ping(req->app->db))
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    return srv_reply(req, 200, json_pack("{s:s}", "status", "ready"));
}

enum rc api_node_list(struct srv_req *req)
{
    json_t *rows = NULL;
    enum rc rc = db_node_list(req->db, &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "nodes", rows));
}

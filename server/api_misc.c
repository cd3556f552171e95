/*
 * api_misc.c - health, readiness, the node list, the job templates and the
 * strategy advisor.
 */
#include <stdio.h>
#include <string.h>

#include "advisor_json.h"
#include "api.h"
#include "api_util.h"
#include "app.h"
#include "db.h"
#include "db_nodes.h"
#include "templates.h"

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

/* The strategy advisor (docs/advisor.md): a plan for the request, nothing
 * stored, so nothing audited; any signed-in user may ask. */
enum rc api_advisor(struct srv_req *req)
{
    json_t *plan = NULL;
    enum rc rc;

    if (req->body == NULL)
        return srv_fail(req, RC_EINVAL, "", "the body must be an advisor request (a JSON object)");
    rc = adv_json_advise(req->body, &plan, &req->err);
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, plan);
}

/* Templates are loaded at start and immutable (templates.h): no database. */
enum rc api_template_list(struct srv_req *req)
{
    json_t *list = tpl_set_list(req->app->templates);

    if (list == NULL)
        return RC_ENOMEM;
    return srv_reply(req, 200, json_pack("{s:o}", "templates", list));
}

enum rc api_template_get(struct srv_req *req)
{
    json_t *tpl = NULL;
    enum rc rc = tpl_set_get(req->app->templates, req->params[0], &tpl);

    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such template");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, tpl);
}

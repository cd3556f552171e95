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
#include "db_jobs.h"
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

/*
 * What the dashboard's overview shows, in one call (web/README.md "Server
 * contract for the app"): the cluster's GPUs by node, the queue by team, the
 * allocated GPUs idle below gpu_idle_util_pct for gpu_idle_min_s, and the
 * caller's 10 newest jobs (as GET /jobs?user=ME&limit=10 would list them).
 * Any signed-in user: like GET /nodes, the cluster view shows every GPU's
 * job id and team, nothing more of another team's job.
 */
enum rc api_overview(struct srv_req *req)
{
    const struct srv_config *cfg = req->app->cfg;
    struct db_job_filter f = {0};
    json_t *out = NULL, *mine = NULL;
    enum rc rc =
        db_overview(req->db, cfg->gpu_idle_util_pct, cfg->gpu_idle_min_s, &out, req->req_id);

    f.user = req->who.username;
    f.limit = 10;
    if (req->who.role == SRV_ROLE_MEMBER)
        f.member_of = req->who.user_id;
    if (rc == RC_OK)
        rc = db_job_list(req->db, &f, &mine, req->req_id);
    if (rc != RC_OK) {
        json_decref(out);
        return rc;
    }
    json_object_set_new(out, "my_recent_jobs", mine);
    return srv_reply(req, 200, out);
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

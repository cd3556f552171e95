/*
 * api_agent_policy.c - the path policy on a node's side: which checkpoints a
 * node reports may be recorded (those inside the job's checkpoint directory,
 * itself inside the site's storage roots), and the record of each refusal,
 * of a checkpoint or of a launch the worker refused, as a policy.violation
 * audit event and webhook.
 */
#include "api_agent_int.h"

#include <stdio.h>
#include <string.h>

#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "db_agent.h"
#include "db_audit.h"
#include "db_exports.h"
#include "db_webhooks.h"
#include "log.h"
#include "outputs.h"
#include "pathpol.h"

#define AGENT_MAX_ROOTS 64 /* storage roots of a site a checkpoint check reads */

/*
 * The job's checkpoint directory is the one its assignment names
 * (checkpoint_dir); the roots are the site's, or storage_root while the site
 * lists none, as for exports. outputs_checkpoint_check() decides each path.
 */
enum rc agent_checkpoints_vet(struct srv_req *req, int64_t job_id, const json_t *ckpts, json_t **ok,
                              json_t **refused)
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

/* Called after the batch's rows are stored: audit events come last, after
 * every row the transaction locks (db.h, "Lock order"). */
enum rc agent_checkpoints_refused_audit(struct srv_req *req, const struct db_attempt_info *info,
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
        rc = agent_policy_violation(req, info->job_id, info->attempt, "checkpoint", reason, path,
                                    why);
        if (rc != RC_OK)
            break;
    }
    return rc;
}

/* A launch refused on the node is one whose path failed the worker's
 * realpath check (a symlink out of the roots, say). */
enum rc agent_policy_violation(struct srv_req *req, int64_t job_id, int attempt, const char *stage,
                               const char *reason, const char *path, const char *why)
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

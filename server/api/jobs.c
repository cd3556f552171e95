/*
 * jobs.c - the scheduling side of the jobs API (see jobs_hooks.h): the
 * data-residency check at submit, the placement shown with a job, cancel.
 *
 * The check works on the text alone (common/pathpol.h): the worker checks
 * the same paths again with realpath before it launches (worker/pathchk.c).
 * It runs before the job's transaction; a refusal is recorded in a
 * transaction of its own (policy_refuse), so nothing of the job is written.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api_policy.h"
#include "api_util.h"
#include "audit_target.h"
#include "db_alloc.h"
#include "db_audit.h"
#include "db_jobs.h"
#include "db_nodes.h"
#include "db_plan.h"
#include "db_policy.h"
#include "jobplan.h"
#include "jobs_hooks.h"
#include "pathpol.h"

/* What one submit check needs; everything borrowed except site. */
struct submit_ctx {
    struct srv_req *req;
    const struct jobspec *spec;
    int64_t team_id;
    struct db_site site; /* owned */
    int default_level;   /* the policy's default classification */
    int level;           /* the job's classification so far, -1 none */
};

/* A registered dataset's name: [a-z0-9][a-z0-9._-]{0,63}; never a path or URI. */
static int is_dataset_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 64 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
              s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* Whether uri is a local path ("/..." or a file: URI). */
static int is_local(const char *uri)
{
    return uri[0] == '/' || strncasecmp(uri, "file:", 5) == 0;
}

static enum rc refuse(struct submit_ctx *x, const char *field, const struct err *e)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *ctx = json_pack("{s:s,s:s,s:s}", "job_name", x->spec->name, "team", x->spec->team,
                            "site", x->spec->site);
    json_t *job = json_pack("{s:n,s:s,s:s}", "id", "name", x->spec->name, "team", x->spec->team);
    enum rc rc;

    /* The team by name: it was looked up by that name, so it is one. */
    rc = audit_target_name(AUDIT_TARGET_TEAM, x->spec->team, target);
    if (rc == RC_OK)
        rc = policy_refuse(x->req, x->team_id, target, "submit", field, e, ctx, job);
    json_decref(ctx);
    json_decref(job);
    return rc;
}

/* A policy refusal with a message of our own; the detail quotes the value
 * escaped and shortened, as pathpol does. */
static enum rc refuse_msg(struct submit_ctx *x, const char *field, const char *value,
                          const char *msg)
{
    char q[128];
    struct err e;

    pathpol_quote(value, strlen(value), q, sizeof(q));
    err_init(&e);
    err_set(&e, RC_EPOLICY, field, "%s", msg);
    err_code(&e, "policy_violation");
    err_detail(&e, "got \"%s\"", q);
    return refuse(x, field, &e);
}

/*
 * A location inside the site: a local one is normalized into local (may be
 * NULL when not wanted); a remote one must be on the site's networks
 * (allow_remote) or is refused. Returns RC_OK or RC_EPOLICY with e filled.
 */
static enum rc check_location(struct submit_ctx *x, const char *uri, int allow_remote, char *local,
                              size_t local_size, struct err *e)
{
    const char *const *roots = (const char *const *)x->site.roots;
    char norm[PATHPOL_BUF_SIZE];
    enum rc rc;

    if (local != NULL)
        local[0] = '\0';
    if (is_local(uri) || !allow_remote) {
        rc = pathpol_check(uri, roots, x->site.nroots, norm, sizeof(norm), e);
        if (rc == RC_ETOOBIG)
            rc = err_set(e, RC_EPOLICY, NULL, "path is too long");
        if (rc == RC_OK && local != NULL)
            snprintf(local, local_size, "%s", norm);
        return rc;
    }
    return pathpol_check_uri(uri, roots, x->site.nroots, (const char *const *)x->site.nets,
                             x->site.nnets, e);
}

/* datasets[i]: a registered dataset by name, or a path or URI. */
static enum rc check_dataset(struct submit_ctx *x, size_t i, json_t *locals)
{
    const char *s = x->spec->datasets[i];
    char field[32], local[PATHPOL_BUF_SIZE], msg[160];
    struct db_dataset ds = {0};
    const char *uri = s;
    int level = x->default_level;
    struct err e;
    enum rc rc = RC_OK;

    snprintf(field, sizeof(field), "datasets[%zu]", i);
    err_init(&e);
    if (is_dataset_name(s)) {
        rc = db_dataset_load(x->req->db, s, &ds, x->req->req_id);
        if (rc == RC_ENOTFOUND) {
            snprintf(msg, sizeof(msg),
                     "no dataset named \"%s\" is registered; give a registered dataset or an "
                     "absolute path",
                     s);
            rc = refuse_msg(x, field, s, msg);
            goto out;
        }
        if (rc != RC_OK)
            goto out;
        if (ds.site_id != x->site.id) {
            snprintf(msg, sizeof(msg), "dataset \"%s\" belongs to site \"%s\", not \"%s\"", s,
                     ds.site, x->spec->site);
            rc = refuse_msg(x, field, s, msg);
            goto out;
        }
        if (ds.team_id != x->team_id && strcmp(ds.classification, "public") != 0) {
            snprintf(msg, sizeof(msg), "dataset \"%s\" belongs to another team and is not public",
                     s);
            rc = refuse_msg(x, field, s, msg);
            goto out;
        }
        uri = ds.uri;
        level = db_class_level(ds.classification);
    }
    /* A registered URI is checked again: the site's roots may have changed. */
    rc = check_location(x, uri, 1, local, sizeof(local), &e);
    if (rc != RC_OK) {
        rc = refuse(x, field, &e);
        goto out;
    }
    if (local[0] != '\0' && json_array_append_new(locals, json_string(local)) != 0) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (level > x->level)
        x->level = level;
out:
    db_dataset_cleanup(&ds);
    return rc;
}

/* output_dir / working_dir: local paths only. */
static enum rc check_dir(struct submit_ctx *x, const char *field, const char *path, json_t *paths)
{
    char local[PATHPOL_BUF_SIZE];
    struct err e;

    if (path == NULL)
        return RC_OK;
    err_init(&e);
    if (!is_local(path) && strstr(path, "://") != NULL) {
        char msg[96];
        snprintf(msg, sizeof(msg), "%s must be a local path in the site's storage roots, not a URI",
                 field);
        return refuse_msg(x, field, path, msg);
    }
    if (check_location(x, path, 0, local, sizeof(local), &e) != RC_OK)
        return refuse(x, field, &e);
    return json_object_set_new(paths, field, json_string(local)) == 0 ? RC_OK : RC_ENOMEM;
}

enum rc jobs_check_submit(struct srv_req *req, const struct jobspec *spec, int64_t team_id,
                          struct db_job_compliance *out)
{
    struct submit_ctx x = {.req = req, .spec = spec, .team_id = team_id, .level = -1};
    char defclass[16];
    json_t *paths = json_object(), *locals = json_array();
    enum rc rc;

    memset(out, 0, sizeof(*out));
    if (paths == NULL || locals == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    rc = db_site_load(req->db, spec->site, &x.site, req->req_id);
    if (rc == RC_ENOTFOUND) {
        rc = srv_fail(req, RC_EINVAL, "site", "no site named \"%s\"", spec->site);
        goto out;
    }
    if (rc == RC_OK)
        rc = db_policy_default_class(req->db, defclass, sizeof(defclass), req->req_id);
    if (rc != RC_OK)
        goto out;
    if (x.site.nroots == 0) {
        /* Work dirs and checkpoints need a root; the node would refuse every
         * attempt, so refuse the job now and say why. */
        rc = refuse_msg(&x, "site", spec->site,
                        "the site has no storage roots; an admin must add one before jobs run "
                        "there");
        goto out;
    }
    x.default_level = db_class_level(defclass);
    if (NEVER(x.default_level < 0))
        x.default_level = 1; /* "internal"; the column's CHECK keeps this from happening */
    for (size_t i = 0; rc == RC_OK && i < spec->dataset_count; i++)
        rc = check_dataset(&x, i, locals);
    if (rc == RC_OK)
        rc = check_dir(&x, "output_dir", spec->output_dir, paths);
    if (rc == RC_OK)
        rc = check_dir(&x, "working_dir", spec->working_dir, paths);
    if (rc != RC_OK)
        goto out;
    if (json_object_set(paths, "datasets", locals) != 0) {
        rc = RC_ENOMEM;
        goto out;
    }
    out->site_id = x.site.id;
    snprintf(out->classification, sizeof(out->classification), "%s",
             db_classifications[x.level >= 0 ? x.level : x.default_level]);
    out->paths = paths;
    paths = NULL;
out:
    json_decref(paths);
    json_decref(locals);
    db_site_cleanup(&x.site);
    return rc;
}

enum rc jobs_check_site_fits(struct srv_req *req, const struct jobspec *spec, int64_t site_id)
{
    struct db_site_capacity cap;
    char target[AUDIT_TARGET_SIZE];
    json_t *params = NULL, *d = NULL;
    int k = spec->gpus_per_node;
    enum rc rc = db_site_capacity(req->db, site_id, k, &cap, req->req_id);

    if (rc != RC_OK || cap.nodes == 0)
        return rc;
    if (spec->gpus <= cap.gpus && (k == 0 || cap.nodes_per_node_k >= spec->gpus / k))
        return RC_OK;
    if (k > 0 && cap.nodes_per_node_k < spec->gpus / k && spec->gpus <= cap.gpus) {
        srv_fail(req, RC_ECONFLICT, "resources.gpus_per_node",
                 "the job can never run: site \"%s\" has %d node%s with %d or more GPUs, the job "
                 "needs %d (its largest node has %d GPUs)",
                 spec->site, cap.nodes_per_node_k, cap.nodes_per_node_k == 1 ? "" : "s", k,
                 spec->gpus / k, cap.largest_node);
        err_detail(&req->err, "got gpus %d, gpus_per_node %d", spec->gpus, k);
    } else {
        srv_fail(req, RC_ECONFLICT, "resources.gpus",
                 "the job can never run: site \"%s\" has %d GPUs on %d node%s (largest %d), the "
                 "job asks for %d",
                 spec->site, cap.gpus, cap.nodes, cap.nodes == 1 ? "" : "s", cap.largest_node,
                 spec->gpus);
        err_detail(&req->err, "got gpus %d", spec->gpus);
    }
    err_code(&req->err, "site_too_small");
    params = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i}", "site", spec->site, "gpus", spec->gpus,
                       "gpus_per_node", k, "site_nodes", cap.nodes, "site_gpus", cap.gpus,
                       "largest_node_gpus", cap.largest_node, "nodes_with_gpus_per_node",
                       cap.nodes_per_node_k);
    d = params ? json_deep_copy(params) : NULL;
    if (d == NULL || json_object_set_new(d, "reason", json_string("site_too_small")) != 0 ||
        json_object_set_new(d, "job_name", json_string(spec->name)) != 0 ||
        json_object_set_new(d, "team", json_string(spec->team)) != 0) {
        rc = RC_ENOMEM;
        goto out;
    }
    /* Recorded like the policy refusals: nothing of the job is written, so
     * the event names the team and goes in a transaction of its own. */
    rc = audit_target_name(AUDIT_TARGET_TEAM, spec->team, target);
    if (rc == RC_OK)
        rc = audit_append_alone(req, "job.submit", target, "denied", d);
    if (rc != RC_OK)
        goto out;
    rc = srv_fail_params(req, RC_ECONFLICT, params);
    params = NULL;
out:
    json_decref(params);
    json_decref(d);
    return rc;
}

enum rc jobs_decorate(struct srv_req *req, int64_t job_id, json_t *row)
{
    json_t *alloc = NULL, *nccl = NULL, *placed = NULL, *metrics = NULL, *ranks = NULL, *cmp = NULL;
    enum rc rc = db_alloc_of_job(req->db, job_id, &alloc, req->req_id);

    if (rc == RC_OK)
        json_object_set_new(row, "allocations", alloc);
    /* The communication settings each node got, with their reasons. */
    if (rc == RC_OK && (rc = db_nccl_of_job(req->db, job_id, &nccl, req->req_id)) == RC_OK)
        json_object_set_new(row, "nccl", nccl);
    /* The plan its ranks got at placement, and its prediction next to what
     * the job measured (jobplan_compare). */
    if (rc == RC_OK)
        rc = db_plan_measured(req->db, job_id, &placed, &metrics, &ranks, req->req_id);
    if (rc != RC_OK)
        return rc;
    if (json_is_object(placed)) {
        cmp = jobplan_compare(json_object_get(placed, "predicted"), metrics, ranks);
        if (cmp == NULL)
            rc = RC_ENOMEM;
    }
    if (rc == RC_OK &&
        (json_object_set(row, "placed_plan", placed) != 0 ||
         json_object_set_new(row, "predicted_vs_measured", cmp ? cmp : json_null()) != 0))
        rc = RC_ENOMEM;
    json_decref(placed);
    json_decref(metrics);
    json_decref(ranks);
    return rc;
}

enum rc jobs_cancel(struct srv_req *req, int64_t job_id, const char *state)
{
    char actor[96];

    srv_actor(req, actor, sizeof(actor));
    return db_job_cancel(req->db, job_id, state, actor, req->client_addr, req->req_id);
}

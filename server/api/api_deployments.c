/*
 * api_deployments.c - deployments: create, list, read, change, stop and
 * start (docs/serving.md "Deployments"). The keys and usage routes are the
 * gateway's.
 *
 * A deployment's replicas are jobs (store/db_deployments.h): each is made
 * here as a service job (jobs.service: no time limit, restarted without
 * limit, never preempted) with one serve_replicas row and its own random
 * token, and each is cancelled through the jobs' own cancel path
 * (jobs_cancel). Every change runs in one transaction (api_tx) that takes
 * the deployment's row first, then the rows of its live replica jobs in id
 * order, then the audit head last (store/db.h "Lock order"); the replica
 * jobs' own job.submit / job.cancel events and the deployment's event are
 * all in it.
 *
 * The version a replica serves is fixed when the replica is made (an alias
 * is resolved then): a change of version or alias replaces every replica
 * (those of the old version are cancelled, as many of the new are added).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "crypto.h"
#include "db.h"
#include "db_agent.h"
#include "db_auth.h"
#include "db_deployments.h"
#include "db_jobs.h"
#include "jobs_hooks.h"
#include "jobspec.h"
#include "jx.h"
#include "notify.h"
#include "templates.h"
#include "waiters.h"

/* The most replicas a deployment may ask for. */
#define DEP_MAX_REPLICAS 64
/* The longest manifest text a replica's env can carry (the worker's limit on
 * one value, worker/assign.h WRK_MAX_STR). */
#define DEP_MAX_MANIFEST 4096
/* Bytes of CSPRNG output in a replica's token. */
#define DEP_TOKEN_BYTES 32

static const char *const prio_names[] = {"low", "normal", "high"};

/*
 * Whether the caller may see (want_write 0) or change (1) deployments of
 * team_id: admins always, auditors see, members of the team both. A
 * deployment the caller may not see is a 404, as a job is.
 */
static enum rc dep_access(struct srv_req *req, int64_t team_id, int want_write)
{
    int member = 1;
    enum rc rc = RC_OK;

    if (req->who.role == SRV_ROLE_ADMIN)
        return RC_OK;
    if (req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc != RC_OK)
        return rc;
    if (!member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such deployment");
    if (want_write && req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read deployments but not change them");
    return RC_OK;
}

/* What a version must offer to be served: a script under examples_dir, and
 * a manifest that fits a replica's env. */
static enum rc version_servable(struct srv_req *req, const struct db_serve_version *v,
                                const char *field)
{
    if (!tpl_script_inside(v->serve_script) || req->app->cfg->examples_dir[0] != '/')
        return srv_fail(req, RC_ECONFLICT, field,
                        "version %d of model \"%s\" cannot be served here: its serve script must "
                        "lie in the server's examples_dir",
                        v->version, v->model);
    if (strlen(v->manifest) > DEP_MAX_MANIFEST) {
        srv_fail(req, RC_ECONFLICT, field,
                 "version %d of model \"%s\" has too many files to serve: its manifest is over "
                 "%d bytes",
                 v->version, v->model, DEP_MAX_MANIFEST);
        err_code(&req->err, "manifest_too_long");
        return RC_ECONFLICT;
    }
    return RC_OK;
}

/*
 * A replica's job spec (new in *spec and *json): the version's serve script
 * run by the templates' interpreter, on one node with gpus GPUs, no time
 * limit, and the version in its env (TRAINYARD_MODEL_*; the worker gets them
 * through the assignment's plan_env, store/db_agent.c).
 */
static enum rc replica_spec(struct srv_req *req, const struct db_deployment *d, const char *team,
                            const struct db_serve_version *v, int k, struct jobspec **spec,
                            json_t **json)
{
    char name[96], path[4200];
    const char *ex = req->app->cfg->examples_dir;
    size_t dl = strlen(ex);
    json_t *in, *env;
    enum rc rc;

    *spec = NULL;
    *json = NULL;
    while (dl > 1 && ex[dl - 1] == '/')
        dl--;
    snprintf(name, sizeof(name), "%s-r%d", d->name, k);
    snprintf(path, sizeof(path), "%.*s/%s", (int)dl, ex, v->serve_script);
    in = json_pack("{s:s,s:s,s:[s,s],s:s,s:{s:i,s:i},s:s,s:i,s:s}", "name", name, "team", team,
                   "command", TPL_DEFAULT_INTERPRETER, path, "launcher", "native", "resources",
                   "gpus", d->gpus_per_replica, "gpus_per_node", d->gpus_per_replica, "priority",
                   prio_names[d->priority], "max_restarts", 0, "site", v->site);
    if (in == NULL)
        return RC_ENOMEM;
    rc = jobspec_parse(in, spec, &req->err);
    json_decref(in);
    if (rc != RC_OK)
        return rc;
    (*spec)->service = 1;
    (*spec)->time_limit_s = 0;
    *json = jobspec_to_json(*spec);
    env = *json ? json_object_get(*json, "env") : NULL;
    if (!json_is_object(env) ||
        json_object_set_new(env, "TRAINYARD_MODEL_PATH", json_string(v->path)) != 0 ||
        json_object_set_new(env, "TRAINYARD_MODEL_MANIFEST", json_string(v->manifest)) != 0 ||
        json_object_set_new(env, "TRAINYARD_MODEL_NAME", json_string(d->name)) != 0 ||
        json_object_set_new(env, "TRAINYARD_SERVE_KIND", json_string(v->serve_kind)) != 0) {
        jobspec_free(*spec);
        json_decref(*json);
        *spec = NULL;
        *json = NULL;
        return RC_ENOMEM;
    }
    return RC_OK;
}

/*
 * The submit checks of a replica of d serving v (jobs_check_submit and
 * jobs_check_site_fits, each refusal audited in its own transaction) before
 * the change's transaction, into *comp.
 */
static enum rc replica_checks(struct srv_req *req, const struct db_deployment *d, const char *team,
                              const struct db_serve_version *v, struct db_job_compliance *comp)
{
    struct jobspec *spec = NULL;
    json_t *json = NULL;
    enum rc rc = replica_spec(req, d, team, v, 1, &spec, &json);

    if (rc == RC_OK)
        rc = jobs_check_submit(req, spec, d->team_id, comp);
    if (rc == RC_OK)
        rc = jobs_check_site_fits(req, spec, comp->site_id);
    jobspec_free(spec);
    json_decref(json);
    return rc;
}

/* One change's transaction state; reset at the start of each run. */
struct dep_tx {
    struct db_deployment d;            /* the deployment as it is to be */
    struct db_deployment before;       /* as read before the transaction (changes only) */
    const struct db_serve_version *v;  /* borrowed: what new replicas serve */
    const struct db_serve_version *cv; /* borrowed: what new canary replicas serve, or NULL */
    const struct db_job_compliance *c; /* borrowed: replica_checks' result */
    const char *team;                  /* borrowed */
    const char *action;                /* deployment.create, .update, .stop, .start */
    json_t *details;                   /* borrowed: the event's details */
    const json_t *bound;               /* borrowed: a new canary_bound, or NULL */
    int replace;                       /* cancel every live replica (version changed) */
    int lineage_override;              /* create only */
    int canary_changed;                /* also a deployment.canary event */
    json_t *added, *cancelled;         /* owned: job ids, for the answer and the log */
    json_t *nodes;                     /* owned: nodes to wake (cancelled replicas) */
};

static void dep_tx_reset(struct dep_tx *x)
{
    json_decref(x->added);
    json_decref(x->cancelled);
    json_decref(x->nodes);
    x->added = json_array();
    x->cancelled = json_array();
    x->nodes = json_array();
}

static void dep_tx_cleanup(struct dep_tx *x)
{
    json_decref(x->added);
    json_decref(x->cancelled);
    json_decref(x->nodes);
}

/* Add replica number k of x->d serving v. */
static enum rc add_replica(struct srv_req *req, struct dep_tx *x, const struct db_serve_version *v,
                           int k)
{
    struct jobspec *spec = NULL;
    json_t *json = NULL, *row = NULL;
    char actor[96], token[64];
    int64_t job_id = 0;
    enum rc rc = replica_spec(req, &x->d, x->team, v, k, &spec, &json);

    srv_actor(req, actor, sizeof(actor));
    if (rc == RC_OK)
        rc = db_job_insert(req->db, spec, json, x->d.team_id, req->who.user_id, actor, x->c, &row,
                           req->req_id);
    if (rc == RC_OK)
        rc = db_parse_i64(json_string_value(json_object_get(row, "id")), &job_id);
    if (rc == RC_OK)
        rc = crypto_random_token("", DEP_TOKEN_BYTES, token, sizeof(token));
    if (rc == RC_OK)
        rc = db_serve_replica_insert(req->db, job_id, x->d.id, v->version_id, token, req->req_id);
    crypto_wipe(token, sizeof(token));
    if (rc == RC_OK && json_array_append_new(x->added, json_integer(job_id)) != 0)
        rc = RC_ENOMEM;
    jobspec_free(spec);
    json_decref(json);
    json_decref(row);
    return rc;
}

/* Cancel replica job_id (its row already locked) by the jobs' cancel path. */
static enum rc cancel_replica(struct srv_req *req, struct dep_tx *x, int64_t job_id)
{
    char actor[96];
    json_t *nodes = NULL, *n;
    size_t i;
    int cancelled = 0;
    enum rc rc;

    srv_actor(req, actor, sizeof(actor));
    rc = db_serve_replica_cancel(req->db, job_id, actor, req->client_addr, &cancelled, &nodes,
                                 req->req_id);
    if (rc != RC_OK || !cancelled) {
        json_decref(nodes);
        return rc;
    }
    rc = notify_send_job(req->app, req->db, job_id, nodes, 1, req->req_id);
    json_array_foreach(nodes, i, n)
    {
        if (rc == RC_OK && json_array_append(x->nodes, n) != 0)
            rc = RC_ENOMEM;
    }
    json_decref(nodes);
    if (rc == RC_OK && json_array_append_new(x->cancelled, json_integer(job_id)) != 0)
        rc = RC_ENOMEM;
    return rc;
}

/* Whether x->d runs canary replicas: active, with a canary version other
 * than what its replicas serve, and a weight above 0. */
static int canary_wanted(const struct dep_tx *x)
{
    return strcmp(x->d.state, "active") == 0 && x->d.canary_version_id > 0 &&
           x->d.canary_weight > 0 && x->cv != NULL && x->cv->version_id == x->d.canary_version_id &&
           (x->v == NULL || x->v->version_id != x->d.canary_version_id);
}

/*
 * Bring the live replicas to what x->d wants, cancelling the newest first:
 * its count of the primary version while active, none while stopped (all
 * new ones when x->replace, but those already serving the new version, a
 * promoted canary's, are kept), and canary_replicas of the canary version
 * while canary_wanted(). A live replica of a canary version no longer
 * wanted is cancelled.
 * Lock order: the live replicas' job rows, in id order, before any change;
 * the new replicas' rows (new, nobody else holds them) before the audit head.
 */
static enum rc reconcile(struct srv_req *req, struct dep_tx *x)
{
    json_t *live = NULL;
    int64_t *ids = NULL, *prim = NULL, *can = NULL, *drop = NULL;
    size_t nlive, np = 0, nc = 0, nd = 0;
    size_t want = strcmp(x->d.state, "active") == 0 ? (size_t)x->d.replicas : 0;
    size_t want_c = canary_wanted(x) ? (size_t)x->d.canary_replicas : 0;
    int k = 0;
    enum rc rc = db_serve_replicas_live(req->db, x->d.id, &live, req->req_id);

    if (rc != RC_OK)
        return rc;
    nlive = json_array_size(live);
    if (nlive > 0 && ((ids = calloc(nlive, sizeof(*ids))) == NULL ||
                      (prim = calloc(nlive, sizeof(*prim))) == NULL ||
                      (can = calloc(nlive, sizeof(*can))) == NULL ||
                      (drop = calloc(nlive, sizeof(*drop))) == NULL))
        rc = RC_ENOMEM;
    for (size_t i = 0; rc == RC_OK && i < nlive; i++) {
        const json_t *r = json_array_get(live, i);
        int64_t ver = 0;
        rc = db_parse_i64(json_string_value(json_object_get(r, "job_id")), &ids[i]);
        if (rc == RC_OK)
            rc = db_parse_i64(json_string_value(json_object_get(r, "version_id")), &ver);
        if (rc != RC_OK)
            break;
        if (x->d.canary_version_id > 0 && ver == x->d.canary_version_id && ver != x->v->version_id)
            *(want_c > 0 ? &can[nc++] : &drop[nd++]) = ids[i];
        else if (x->replace ? ver == x->v->version_id
                            : !(x->before.canary_version_id > 0 &&
                                ver == x->before.canary_version_id && ver != x->v->version_id))
            prim[np++] = ids[i];
        else
            drop[nd++] = ids[i];
    }
    if (rc == RC_OK)
        rc = db_jobs_lock(req->db, ids, nlive, req->req_id);
    /* New replicas first: their inserts take key-share locks on the team's
     * and user's rows, which must come before the audit head that a cancel's
     * transition takes. */
    if (rc == RC_OK && (np < want || nc < want_c))
        rc = db_deployment_next_k(req->db, x->d.id, &k, req->req_id);
    for (size_t i = np; rc == RC_OK && i < want; i++)
        rc = add_replica(req, x, x->v, k++);
    for (size_t i = nc; rc == RC_OK && i < want_c; i++)
        rc = add_replica(req, x, x->cv, k++);
    /* Each group is newest first: cancel from the front. */
    for (size_t i = 0; rc == RC_OK && i < nd; i++)
        rc = cancel_replica(req, x, drop[i]);
    for (size_t i = 0; rc == RC_OK && want < np && i < np - want; i++)
        rc = cancel_replica(req, x, prim[i]);
    for (size_t i = 0; rc == RC_OK && want_c < nc && i < nc - want_c; i++)
        rc = cancel_replica(req, x, can[i]);
    free(ids);
    free(prim);
    free(can);
    free(drop);
    json_decref(live);
    return rc;
}

/* The audit events of a change, last: each replica's job.submit or
 * job.cancel, then the deployment's own (and its canary's). */
static enum rc audit_change(struct srv_req *req, struct dep_tx *x)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *id;
    size_t i;
    enum rc rc = RC_OK;

    json_array_foreach(x->added, i, id)
    {
        json_t *d = json_pack("{s:s,s:s,s:i,s:s}", "deployment", x->d.name, "team", x->team, "gpus",
                              x->d.gpus_per_replica, "priority", prio_names[x->d.priority]);
        if (rc == RC_OK)
            rc = audit_target_id(AUDIT_TARGET_JOB, json_integer_value(id), target);
        if (rc == RC_OK)
            rc = d ? audit_append_req(req, "job.submit", target, "success", d) : RC_ENOMEM;
        json_decref(d);
    }
    json_array_foreach(x->cancelled, i, id)
    {
        json_t *d = json_pack("{s:s}", "deployment", x->d.name);
        if (rc == RC_OK)
            rc = audit_target_id(AUDIT_TARGET_JOB, json_integer_value(id), target);
        if (rc == RC_OK)
            rc = d ? audit_append_req(req, "job.cancel", target, "success", d) : RC_ENOMEM;
        json_decref(d);
    }
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_DEPLOYMENT, x->d.name, target);
    if (rc == RC_OK && (json_object_set(x->details, "replicas_added", x->added) != 0 ||
                        json_object_set(x->details, "replicas_cancelled", x->cancelled) != 0))
        rc = RC_ENOMEM;
    if (rc == RC_OK)
        rc = audit_append_req(req, x->action, target, "success", x->details);
    if (rc == RC_OK && x->canary_changed) {
        json_t *d = json_pack("{s:i,s:I}", "canary_weight", x->d.canary_weight, "canary_version_id",
                              (json_int_t)x->d.canary_version_id);
        rc = d ? audit_append_req(req, "deployment.canary", target, "success", d) : RC_ENOMEM;
        json_decref(d);
    }
    return rc;
}

/* The rest of a change's transaction, once the deployment's row is written:
 * the replicas, the wake-up of the leader (another replica may lead; the
 * NOTIFY is delivered at commit), the audit events last. */
static enum rc change_tail(struct srv_req *req, struct dep_tx *x)
{
    enum rc rc = reconcile(req, x);

    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    if (rc == RC_OK)
        rc = audit_change(req, x);
    return rc;
}

/* After the commit: wake the nodes of cancelled replicas and the scheduler,
 * and answer with the deployment as it is now. */
static enum rc reply_dep(struct srv_req *req, struct dep_tx *x, int status)
{
    json_t *row = NULL, *n;
    size_t i;
    enum rc rc;

    json_array_foreach(x->nodes, i, n)
    {
        int64_t node_id;
        if (db_parse_i64(json_string_value(json_object_get(n, "node_id")), &node_id) == RC_OK)
            waiters_notify(req->app->waiters, node_id);
    }
    app_wake_scheduler(req->app);
    if ((rc = db_deployment_get(req->db, x->d.id, &row, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, status, row);
}

/* ---- create ---- */

static enum rc create_body(struct srv_req *req, void *arg)
{
    struct dep_tx *x = arg;
    enum rc rc;

    dep_tx_reset(x);
    if (x->added == NULL || x->cancelled == NULL || x->nodes == NULL)
        return RC_ENOMEM;
    rc = db_deployment_insert(req->db, &x->d, x->lineage_override, req->req_id);
    if (rc == RC_ECONFLICT)
        return srv_fail(req, RC_ECONFLICT, "name", "a deployment named \"%s\" already exists",
                        x->d.name);
    return rc == RC_OK ? change_tail(req, x) : rc;
}

/* An optional integer field lo..hi into *out (left alone when absent). */
static enum rc opt_int(struct srv_req *req, const char *key, int64_t lo, int64_t hi, int *out,
                       int *present)
{
    int64_t v = 0;
    int p = 0;
    enum rc rc = api_opt_int(req, key, lo, hi, &v, &p);

    if (rc == RC_OK && p)
        *out = (int)v;
    if (present != NULL)
        *present = p;
    return rc;
}

/* "priority": low, normal or high into *out (left alone when absent). */
static enum rc opt_prio(struct srv_req *req, int *out)
{
    const char *s = NULL;
    enum rc rc = api_opt_string(req, "priority", 1, 16, &s);

    if (rc != RC_OK || s == NULL)
        return rc;
    for (int i = 0; i < 3; i++)
        if (strcmp(s, prio_names[i]) == 0) {
            *out = i;
            return RC_OK;
        }
    return srv_fail(req, RC_EINVAL, "priority", "priority must be low, normal or high");
}

/* min_replicas <= replicas <= max_replicas <= DEP_MAX_REPLICAS. */
static enum rc check_counts(struct srv_req *req, const struct db_deployment *d)
{
    if (d->max_replicas < 1 || d->min_replicas > d->max_replicas)
        return srv_fail(req, RC_EINVAL, "max_replicas",
                        "max_replicas must be at least 1 and at least min_replicas (%d)",
                        d->min_replicas);
    if (d->replicas < d->min_replicas || d->replicas > d->max_replicas) {
        srv_fail(req, RC_EINVAL, "replicas", "replicas must be within min_replicas..max_replicas");
        err_detail(&req->err, "got %d, allowed %d..%d", d->replicas, d->min_replicas,
                   d->max_replicas);
        return RC_EINVAL;
    }
    return RC_OK;
}

/* "version" (an integer >= 1) or "alias" (a name), exactly one, of the
 * body into *version / *alias; *given is 0 when neither is there. */
static enum rc version_or_alias(struct srv_req *req, int *version, const char **alias, int *given)
{
    int vp = 0;
    enum rc rc = opt_int(req, "version", 1, INT32_MAX, version, &vp);

    *alias = NULL;
    if (rc == RC_OK)
        rc = api_opt_string(req, "alias", 1, 63, alias);
    if (rc != RC_OK)
        return rc;
    if (vp && *alias != NULL)
        return srv_fail(req, RC_EINVAL, "alias", "give version or alias, not both");
    *given = vp || *alias != NULL;
    return RC_OK;
}

/* The version the body names for model, with the errors a caller sees. */
static enum rc find_version(struct srv_req *req, const char *model, int version, const char *alias,
                            struct db_serve_version *v)
{
    const char *what = "model";
    enum rc rc = db_serve_version_find(req->db, model, version, alias, v, &what, req->req_id);

    if (rc == RC_ENOTFOUND && strcmp(what, "model") == 0)
        return srv_fail(req, RC_ENOTFOUND, "model", "no model named \"%s\"", model);
    if (rc == RC_ENOTFOUND && alias != NULL)
        return srv_fail(req, RC_ENOTFOUND, "alias", "model \"%s\" has no alias \"%s\"", model,
                        alias);
    if (rc == RC_ENOTFOUND && version == 0)
        return srv_fail(req, RC_ENOTFOUND, "version", "model \"%s\" has no version yet", model);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_ENOTFOUND, "version", "model \"%s\" has no version %d", model,
                        version);
    return rc;
}

/* Whether the version may be deployed: complete lineage, or an admin's
 * override (*override 1 then; audited with the deployment). */
static enum rc check_lineage(struct srv_req *req, const struct db_serve_version *v, int *override)
{
    int want = json_is_true(json_object_get(req->body, "lineage_override"));
    const json_t *o = json_object_get(req->body, "lineage_override");

    *override = 0;
    if (o != NULL && !json_is_boolean(o))
        return srv_fail(req, RC_EINVAL, "lineage_override", "lineage_override must be a boolean");
    if (v->lineage_complete)
        return RC_OK;
    if (!want) {
        srv_fail(req, RC_ECONFLICT, "lineage_override",
                 "version %d of model \"%s\" has an incomplete lineage; an admin may deploy it "
                 "with \"lineage_override\": true",
                 v->version, v->model);
        err_code(&req->err, "lineage_incomplete");
        return RC_ECONFLICT;
    }
    if (req->who.role != SRV_ROLE_ADMIN)
        return srv_fail(req, RC_EPERM, "lineage_override",
                        "only an admin may deploy a version with an incomplete lineage");
    *override = 1;
    return RC_OK;
}

enum rc api_deployment_create(struct srv_req *req)
{
    static const char *const keys[] = {"name",
                                       "model",
                                       "version",
                                       "alias",
                                       "team",
                                       "replicas",
                                       "min_replicas",
                                       "max_replicas",
                                       "gpus_per_replica",
                                       "priority",
                                       "idle_s",
                                       "keep_texts_days",
                                       "engine",
                                       "lineage_override",
                                       NULL};
    struct dep_tx x = {0};
    struct db_serve_version v = {0};
    struct db_job_compliance comp = {0};
    const char *name = NULL, *model = NULL, *alias = NULL, *team = NULL, *engine = NULL;
    int version = 0, given = 0, minp = 0, maxp = 0;
    enum rc rc;

    if ((rc = api_body_object(req, keys)) != RC_OK)
        return rc;
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read deployments but not change them");
    if ((rc = api_opt_string(req, "name", 1, 63, &name)) != RC_OK ||
        (rc = api_opt_string(req, "model", 1, 63, &model)) != RC_OK ||
        (rc = api_opt_string(req, "team", 1, 64, &team)) != RC_OK ||
        (rc = api_opt_string(req, "engine", 1, 16, &engine)) != RC_OK)
        return rc;
    if (name == NULL || !api_serving_name_ok(name))
        return srv_fail(req, RC_EINVAL, "name",
                        "name must be 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter "
                        "or digit");
    if (model == NULL)
        return srv_fail(req, RC_EINVAL, "model", "model is required");
    /* The schema names vllm and triton for the adapters docs/serving.md
     * describes; until one exists a replica would run the template's PyTorch
     * server whatever was asked, so asking for one is refused. */
    if (engine != NULL && strcmp(engine, "pytorch") != 0)
        return srv_fail(req, RC_EINVAL, "engine",
                        "engine must be pytorch (no vllm or triton adapter is installed)");
    if ((rc = version_or_alias(req, &version, &alias, &given)) != RC_OK)
        return rc;
    (void)given; /* neither: the newest version, fixed now */
    snprintf(x.d.name, sizeof(x.d.name), "%s", name);
    x.d.replicas = 1;
    x.d.gpus_per_replica = 1;
    x.d.priority = 1;
    if ((rc = opt_int(req, "replicas", 0, DEP_MAX_REPLICAS, &x.d.replicas, NULL)) != RC_OK ||
        (rc = opt_int(req, "gpus_per_replica", 1, JOBSPEC_MAX_GPUS_PER_NODE, &x.d.gpus_per_replica,
                      NULL)) != RC_OK ||
        (rc = opt_int(req, "idle_s", 0, INT32_MAX, &x.d.idle_s, NULL)) != RC_OK ||
        (rc = opt_int(req, "keep_texts_days", 0, 36500, &x.d.keep_texts_days, NULL)) != RC_OK ||
        (rc = opt_prio(req, &x.d.priority)) != RC_OK)
        return rc;
    x.d.min_replicas = x.d.replicas > 0 ? 1 : 0;
    x.d.max_replicas = x.d.replicas > 1 ? x.d.replicas : 1;
    if ((rc = opt_int(req, "min_replicas", 0, DEP_MAX_REPLICAS, &x.d.min_replicas, &minp)) !=
            RC_OK ||
        (rc = opt_int(req, "max_replicas", 1, DEP_MAX_REPLICAS, &x.d.max_replicas, &maxp)) !=
            RC_OK ||
        (rc = check_counts(req, &x.d)) != RC_OK)
        return rc;
    if ((rc = find_version(req, model, version, alias, &v)) != RC_OK)
        goto out;
    /* A model of a team the caller is not in is not there for it. */
    if ((rc = dep_access(req, v.model_team_id, 1)) != RC_OK) {
        if (rc == RC_ENOTFOUND)
            rc = srv_fail(req, RC_ENOTFOUND, "model", "no model named \"%s\"", model);
        goto out;
    }
    if (team != NULL && strcmp(team, v.team) != 0) {
        rc = srv_fail(req, RC_EINVAL, "team",
                      "a deployment belongs to its model's team; model \"%s\" is team \"%s\"'s",
                      model, v.team);
        goto out;
    }
    if ((rc = check_lineage(req, &v, &x.lineage_override)) != RC_OK ||
        (rc = version_servable(req, &v, alias ? "alias" : "version")) != RC_OK)
        goto out;
    x.d.model_id = v.model_id;
    x.d.team_id = v.model_team_id;
    x.d.user_id = req->who.user_id;
    x.d.site_id = v.site_id; /* a deployment serves on its model's site only */
    x.d.version_id = alias ? 0 : v.version_id;
    if (alias != NULL)
        snprintf(x.d.alias, sizeof(x.d.alias), "%s", alias);
    snprintf(x.d.state, sizeof(x.d.state), "active");
    if ((rc = replica_checks(req, &x.d, v.team, &v, &comp)) != RC_OK)
        goto out;
    x.v = &v;
    x.c = &comp;
    x.team = v.team;
    x.action = "deployment.create";
    x.details = json_pack("{s:s,s:i,s:I,s:i,s:i,s:s,s:b}", "model", v.model, "version", v.version,
                          "version_id", (json_int_t)v.version_id, "replicas", x.d.replicas,
                          "gpus_per_replica", x.d.gpus_per_replica, "site", v.site,
                          "lineage_override", x.lineage_override);
    if (x.details == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (alias != NULL && json_object_set_new(x.details, "alias", json_string(alias)) != 0) {
        rc = RC_ENOMEM;
        goto out;
    }
    rc = api_tx(req, create_body, &x);
    if (rc == RC_OK)
        rc = reply_dep(req, &x, 201);
out:
    json_decref(x.details);
    dep_tx_cleanup(&x);
    db_job_compliance_cleanup(&comp);
    db_serve_version_cleanup(&v);
    return rc;
}

/* ---- read ---- */

enum rc api_deployment_list(struct srv_req *req)
{
    char cursor[24];
    int64_t cur = 0;
    int limit = 50;
    json_t *rows = NULL, *last;
    enum rc rc = api_page(req, 50, 500, &limit, cursor, sizeof(cursor));

    if (rc == RC_OK && cursor[0] != '\0')
        rc = db_parse_i64(cursor, &cur);
    if (rc != RC_OK)
        return rc;
    rc = db_deployment_list(req->db, req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0, cur,
                            limit, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, (size_t)limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "deployments", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

/* Deployment params[0], visible to the caller (lock: its row FOR UPDATE). */
static enum rc load_dep(struct srv_req *req, int lock, int want_write, struct db_deployment *d)
{
    enum rc rc;

    if (!api_serving_name_ok(req->params[0]))
        return srv_fail(req, RC_ENOTFOUND, "", "no such deployment");
    rc = db_deployment_load(req->db, req->params[0], lock, d, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such deployment");
    if (rc != RC_OK)
        return rc;
    return dep_access(req, d->team_id, want_write);
}

enum rc api_deployment_find(struct srv_req *req, int64_t *id)
{
    struct db_deployment d;
    enum rc rc = load_dep(req, 0, 0, &d);

    if (rc == RC_OK)
        *id = d.id;
    return rc;
}

enum rc api_deployment_get(struct srv_req *req)
{
    struct db_deployment d;
    json_t *row = NULL;
    enum rc rc = load_dep(req, 0, 0, &d);

    if (rc == RC_OK)
        rc = db_deployment_get(req->db, d.id, &row, req->req_id);
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

/* ---- change, stop, start ---- */

/* The transaction of a change: the deployment's row first, then as create. */
static enum rc change_body(struct srv_req *req, void *arg)
{
    struct dep_tx *x = arg;
    struct db_deployment now;
    enum rc rc;

    dep_tx_reset(x);
    if (x->added == NULL || x->cancelled == NULL || x->nodes == NULL)
        return RC_ENOMEM;
    /* Lock order: the deployment's row before its replica jobs'. */
    rc = db_deployment_load(req->db, x->d.name, 1, &now, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such deployment");
    /* What was checked before the transaction must still hold: another
     * change in between would be lost, or checked against stale counts. */
    if (rc == RC_OK && memcmp(&now, &x->before, sizeof(now)) != 0)
        return srv_fail(req, RC_ECONFLICT, "",
                        "deployment \"%s\" was changed by another request meanwhile; try again",
                        x->d.name);
    if (rc == RC_OK)
        rc = db_deployment_update(req->db, &x->d, req->req_id);
    if (rc == RC_OK && x->bound != NULL)
        rc = db_deployment_set_bound(req->db, x->d.id, x->bound, req->req_id);
    return rc == RC_OK ? change_tail(req, x) : rc;
}

/* The version the deployment serves now: its version_id, or its alias's. */
static enum rc current_version(struct srv_req *req, const struct db_deployment *d,
                               struct db_serve_version *v)
{
    if (d->version_id > 0)
        return db_serve_version_by_id(req->db, d->version_id, v, req->req_id);
    return find_version(req, d->model, 0, d->alias, v);
}

/* The version a change names for model (find_version), deployable by the
 * caller: a complete lineage (or an admin), servable here. */
static enum rc find_deployable(struct srv_req *req, const char *model, int version,
                               const char *alias, struct db_serve_version *v)
{
    enum rc rc = find_version(req, model, version, alias, v);

    if (rc == RC_OK && !v->lineage_complete && req->who.role != SRV_ROLE_ADMIN) {
        srv_fail(req, RC_ECONFLICT, alias ? "alias" : "version",
                 "version %d of model \"%s\" has an incomplete lineage; only an admin may "
                 "deploy it",
                 v->version, v->model);
        err_code(&req->err, "lineage_incomplete");
        rc = RC_ECONFLICT;
    }
    if (rc == RC_OK)
        rc = version_servable(req, v, alias ? "alias" : "version");
    return rc;
}

/* Run a change: the checks of new replicas, then the transaction. The
 * canary's version is read here when the change wants its replicas. */
static enum rc run_change(struct srv_req *req, struct dep_tx *x, const struct db_serve_version *v)
{
    struct db_job_compliance comp = {0};
    struct db_serve_version cv = {0};
    int active = strcmp(x->d.state, "active") == 0;
    enum rc rc = RC_OK;

    x->team = x->d.team;
    x->v = v;
    x->cv = NULL;
    if (active && x->d.canary_version_id > 0 && x->d.canary_weight > 0) {
        rc = db_serve_version_by_id(req->db, x->d.canary_version_id, &cv, req->req_id);
        if (rc == RC_OK)
            rc = version_servable(req, &cv, "canary_version");
        x->cv = &cv;
    }
    /* A canary replica's spec differs from a primary's only in its command
     * and env, which the checks do not look at. */
    if (rc == RC_OK && active && (x->d.replicas > 0 || canary_wanted(x)))
        rc = replica_checks(req, &x->d, x->team, v, &comp);
    x->c = &comp;
    if (rc == RC_OK)
        rc = api_tx(req, change_body, x);
    if (rc == RC_OK)
        rc = reply_dep(req, x, 200);
    db_job_compliance_cleanup(&comp);
    db_serve_version_cleanup(&cv);
    return rc;
}

/* The body's canary settings into x (canary_version: a version number of
 * the same model, or null for none). */
static enum rc patch_canary(struct srv_req *req, struct dep_tx *x, const char *model)
{
    const json_t *cv = json_object_get(req->body, "canary_version");
    int present = 0, old_w = x->d.canary_weight;
    int64_t old_v = x->d.canary_version_id;
    enum rc rc = opt_int(req, "canary_weight", 0, 100, &x->d.canary_weight, &present);

    if (rc != RC_OK)
        return rc;
    if (json_is_null(cv)) {
        x->d.canary_version_id = 0;
    } else if (cv != NULL) {
        struct db_serve_version c = {0};
        if (!json_is_integer(cv) || json_integer_value(cv) < 1 ||
            json_integer_value(cv) > INT32_MAX)
            return srv_fail(req, RC_EINVAL, "canary_version",
                            "canary_version must be a version number of the model, or null");
        rc = find_version(req, model, (int)json_integer_value(cv), NULL, &c);
        if (rc == RC_ENOTFOUND)
            rc = srv_fail(req, RC_ENOTFOUND, "canary_version", "model \"%s\" has no version %d",
                          model, (int)json_integer_value(cv));
        x->d.canary_version_id = c.version_id;
        db_serve_version_cleanup(&c);
        if (rc != RC_OK)
            return rc;
    }
    if (x->d.canary_weight > 0 && x->d.canary_version_id == 0)
        return srv_fail(req, RC_EINVAL, "canary_weight", "a canary weight needs a canary_version");
    x->canary_changed = old_w != x->d.canary_weight || old_v != x->d.canary_version_id;
    return RC_OK;
}

enum rc api_deployment_update(struct srv_req *req)
{
    static const char *const keys[] = {
        "replicas",      "min_replicas",   "max_replicas", "version",         "alias",
        "canary_weight", "canary_version", "idle_s",       "keep_texts_days", NULL};
    struct dep_tx x = {0};
    struct db_serve_version v = {0};
    const char *alias = NULL;
    int version = 0, given = 0;
    enum rc rc;

    if ((rc = api_body_object(req, keys)) != RC_OK || (rc = load_dep(req, 0, 1, &x.d)) != RC_OK)
        return rc;
    memcpy(&x.before, &x.d, sizeof(x.before)); /* with its padding, for memcmp */
    if ((x.details = json_object()) == NULL)
        return RC_ENOMEM;
        /* Each field given and different goes into the event as {"from", "to"}. */
#define CHANGE_INT(key, field)                                                                     \
    do {                                                                                           \
        int old_ = x.d.field;                                                                      \
        if ((rc = opt_int(req, key, 0,                                                             \
                          key[0] == 'm' || key[0] == 'r' ? DEP_MAX_REPLICAS : INT32_MAX,           \
                          &x.d.field, NULL)) != RC_OK)                                             \
            goto out;                                                                              \
        if (old_ != x.d.field)                                                                     \
            json_object_set_new(x.details, key,                                                    \
                                json_pack("{s:i,s:i}", "from", old_, "to", x.d.field));            \
    } while (0)
    CHANGE_INT("replicas", replicas);
    CHANGE_INT("min_replicas", min_replicas);
    CHANGE_INT("max_replicas", max_replicas);
    CHANGE_INT("idle_s", idle_s);
    CHANGE_INT("keep_texts_days", keep_texts_days);
#undef CHANGE_INT
    if (x.d.keep_texts_days > 36500) {
        rc = srv_fail(req, RC_EINVAL, "keep_texts_days", "keep_texts_days must be 0..36500");
        goto out;
    }
    if ((rc = check_counts(req, &x.d)) != RC_OK ||
        (rc = version_or_alias(req, &version, &alias, &given)) != RC_OK ||
        (rc = patch_canary(req, &x, x.d.model)) != RC_OK)
        goto out;
    if (given) {
        int64_t before = 0;
        struct db_serve_version old = {0};
        if ((rc = current_version(req, &x.d, &old)) != RC_OK && rc != RC_ENOTFOUND)
            goto out;
        before = old.version_id;
        db_serve_version_cleanup(&old);
        if ((rc = find_deployable(req, x.d.model, version, alias, &v)) != RC_OK)
            goto out;
        x.replace = v.version_id != before;
        x.d.version_id = alias ? 0 : v.version_id;
        snprintf(x.d.alias, sizeof(x.d.alias), "%s", alias ? alias : "");
        json_object_set_new(
            x.details, "version",
            json_pack("{s:I,s:I}", "from", (json_int_t)before, "to", (json_int_t)v.version_id));
        if (alias != NULL)
            json_object_set_new(x.details, "alias", json_string(alias));
    } else if ((rc = current_version(req, &x.d, &v)) != RC_OK) {
        goto out;
    }
    if (x.canary_changed)
        json_object_set_new(x.details, "canary",
                            json_pack("{s:i,s:I}", "weight", x.d.canary_weight, "version_id",
                                      (json_int_t)x.d.canary_version_id));
    x.action = "deployment.update";
    rc = run_change(req, &x, &v);
out:
    json_decref(x.details);
    dep_tx_cleanup(&x);
    db_serve_version_cleanup(&v);
    return rc;
}

/* The deployment of a route that takes no body (or {}), into x->d and
 * x->before. */
static enum rc load_bodiless(struct srv_req *req, struct dep_tx *x)
{
    enum rc rc;

    if (req->body != NULL && (rc = api_body_object(req, (const char *const[]){NULL})) != RC_OK)
        return rc;
    if ((rc = load_dep(req, 0, 1, &x->d)) != RC_OK)
        return rc;
    memcpy(&x->before, &x->d, sizeof(x->before)); /* with its padding, for memcmp */
    return RC_OK;
}

/* stop (active 0) or start (active 1). */
static enum rc stop_start(struct srv_req *req, int active)
{
    struct dep_tx x = {0};
    struct db_serve_version v = {0};
    enum rc rc;

    if ((rc = load_bodiless(req, &x)) != RC_OK)
        return rc;
    if (strcmp(x.d.state, active ? "active" : "stopped") == 0)
        return srv_fail(req, RC_ECONFLICT, "", "the deployment is already %s", x.d.state);
    snprintf(x.d.state, sizeof(x.d.state), "%s", active ? "active" : "stopped");
    if (active && (rc = current_version(req, &x.d, &v)) != RC_OK)
        return rc;
    x.action = active ? "deployment.start" : "deployment.stop";
    x.details = json_pack("{s:i}", "replicas", x.d.replicas);
    rc = x.details ? run_change(req, &x, &v) : RC_ENOMEM;
    json_decref(x.details);
    dep_tx_cleanup(&x);
    db_serve_version_cleanup(&v);
    return rc;
}

enum rc api_deployment_stop(struct srv_req *req)
{
    return stop_start(req, 0);
}

enum rc api_deployment_start(struct srv_req *req)
{
    return stop_start(req, 1);
}

/* ---- canary: set, promote, roll back ---- */

/*
 * The body's "bound" (absent: {}) as a new canary_bound in *out: window_s
 * 1..3600 (default 60), min_requests 1..1000000 (default 20), and at least
 * one of max_error_rate (0..1, errors of status 500 and above over the
 * requests) and max_p99_ms (1..3600000).
 */
static enum rc parse_bound(struct srv_req *req, json_t **out)
{
    static const char *const keys[] = {"window_s", "min_requests", "max_error_rate", "max_p99_ms",
                                       NULL};
    const json_t *b = json_object_get(req->body, "bound"), *val;
    const char *key;
    json_int_t window = 60, min_req = 20;

    *out = NULL;
    if (b == NULL || json_is_null(b))
        return (*out = json_object()) ? RC_OK : RC_ENOMEM;
    if (!json_is_object(b))
        return srv_fail(req, RC_EINVAL, "bound", "bound must be an object");
    json_object_foreach((json_t *)b, key, val)
    {
        size_t i = 0;
        while (keys[i] != NULL && strcmp(keys[i], key) != 0)
            i++;
        if (keys[i] == NULL)
            return srv_fail(req, RC_EINVAL, "bound",
                            "bound takes window_s, min_requests, max_error_rate and max_p99_ms; "
                            "not \"%s\"",
                            key);
    }
#define BOUND_INT(k, lo, hi, dst)                                                                  \
    do {                                                                                           \
        const json_t *v_ = json_object_get(b, k);                                                  \
        if (v_ != NULL && (!json_is_integer(v_) || json_integer_value(v_) < (lo) ||                \
                           json_integer_value(v_) > (hi)))                                         \
            return srv_fail(req, RC_EINVAL, "bound." k, "bound." k " must be an integer %d..%d",   \
                            (int)(lo), (int)(hi));                                                 \
        if (v_ != NULL)                                                                            \
            dst = json_integer_value(v_);                                                          \
    } while (0)
    {
        json_int_t p99 = 0;
        const json_t *er = json_object_get(b, "max_error_rate");
        BOUND_INT("window_s", 1, 3600, window);
        BOUND_INT("min_requests", 1, 1000000, min_req);
        BOUND_INT("max_p99_ms", 1, 3600000, p99);
        if (er != NULL &&
            (!json_is_number(er) || json_number_value(er) < 0 || json_number_value(er) > 1))
            return srv_fail(req, RC_EINVAL, "bound.max_error_rate",
                            "bound.max_error_rate must be a number 0..1");
        if (er == NULL && p99 == 0)
            return srv_fail(req, RC_EINVAL, "bound",
                            "bound needs max_error_rate or max_p99_ms (or leave bound out)");
        *out = json_pack("{s:I,s:I}", "window_s", window, "min_requests", min_req);
        if (*out != NULL && er != NULL)
            json_object_set_new(*out, "max_error_rate", json_real(json_number_value(er)));
        if (*out != NULL && p99 > 0)
            json_object_set_new(*out, "max_p99_ms", json_integer(p99));
    }
#undef BOUND_INT
    return *out ? RC_OK : RC_ENOMEM;
}

enum rc api_deployment_canary(struct srv_req *req)
{
    static const char *const keys[] = {"version", "alias", "weight", "bound", "replicas", NULL};
    struct dep_tx x = {0};
    struct db_serve_version v = {0}, cv = {0};
    const char *alias = NULL;
    int version = 0, given = 0, wp = 0, from_w;
    json_t *bound = NULL;
    enum rc rc;

    if ((rc = api_body_object(req, keys)) != RC_OK || (rc = load_dep(req, 0, 1, &x.d)) != RC_OK)
        return rc;
    memcpy(&x.before, &x.d, sizeof(x.before)); /* with its padding, for memcmp */
    from_w = x.d.canary_weight;
    if ((rc = version_or_alias(req, &version, &alias, &given)) != RC_OK ||
        (rc = opt_int(req, "weight", 0, 100, &x.d.canary_weight, &wp)) != RC_OK ||
        (rc = opt_int(req, "replicas", 1, DEP_MAX_REPLICAS, &x.d.canary_replicas, NULL)) != RC_OK ||
        (rc = parse_bound(req, &bound)) != RC_OK)
        goto out;
    if (!given || !wp) {
        rc = srv_fail(req, RC_EINVAL, given ? "weight" : "version",
                      "a canary needs a version (or alias) and a weight 0..100");
        goto out;
    }
    if (x.d.canary_replicas > x.d.max_replicas) {
        rc = srv_fail(req, RC_EINVAL, "replicas",
                      "a canary runs at most max_replicas (%d) replicas", x.d.max_replicas);
        goto out;
    }
    if ((rc = current_version(req, &x.d, &v)) != RC_OK ||
        (rc = find_deployable(req, x.d.model, version, alias, &cv)) != RC_OK)
        goto out;
    if (cv.version_id == v.version_id) {
        rc = srv_fail(req, RC_ECONFLICT, alias ? "alias" : "version",
                      "the deployment already serves version %d; a canary is another version",
                      cv.version);
        goto out;
    }
    x.d.canary_version_id = cv.version_id;
    x.bound = bound;
    x.action = "deployment.canary";
    x.details =
        json_pack("{s:s,s:i,s:I,s:i,s:i,s:i,s:O}", "op", "set", "version", cv.version, "version_id",
                  (json_int_t)cv.version_id, "weight", x.d.canary_weight, "from_weight", from_w,
                  "canary_replicas", x.d.canary_replicas, "bound", bound);
    rc = x.details ? run_change(req, &x, &v) : RC_ENOMEM;
out:
    json_decref(x.details);
    json_decref(bound);
    dep_tx_cleanup(&x);
    db_serve_version_cleanup(&v);
    db_serve_version_cleanup(&cv);
    return rc;
}

/* promote (1): the canary's version becomes the deployment's, its replicas
 * kept as the first of the new ones; rollback (0): weight 0, its replicas
 * cancelled, the version kept as the canary. Either needs a canary. */
static enum rc promote_rollback(struct srv_req *req, int promote)
{
    struct dep_tx x = {0};
    struct db_serve_version v = {0};
    json_t *none = NULL;
    int64_t from = 0;
    enum rc rc;

    if ((rc = load_bodiless(req, &x)) != RC_OK)
        return rc;
    if (x.d.canary_version_id == 0 || (!promote && x.d.canary_weight == 0))
        return srv_fail(req, RC_ECONFLICT, "",
                        promote ? "the deployment has no canary to promote"
                                : "the deployment's canary takes no traffic already");
    if ((rc = current_version(req, &x.d, &v)) != RC_OK && rc != RC_ENOTFOUND)
        goto out;
    from = v.version_id;
    if (promote) {
        db_serve_version_cleanup(&v);
        if ((rc = db_serve_version_by_id(req->db, x.d.canary_version_id, &v, req->req_id)) != RC_OK)
            goto out;
        x.d.version_id = v.version_id;
        x.d.alias[0] = '\0';
        x.d.canary_version_id = 0;
        x.replace = 1;
        if ((none = json_object()) == NULL) {
            rc = RC_ENOMEM;
            goto out;
        }
        x.bound = none;
    } else if (rc != RC_OK) {
        goto out;
    }
    x.d.canary_weight = 0;
    x.action = "deployment.canary";
    x.details =
        json_pack("{s:s,s:I,s:I,s:i}", "op", promote ? "promote" : "rollback", "version_id",
                  (json_int_t)(promote ? from : x.before.version_id), "canary_version_id",
                  (json_int_t)x.before.canary_version_id, "from_weight", x.before.canary_weight);
    if (x.details != NULL && promote)
        json_object_set_new(x.details, "to_version_id", json_integer(v.version_id));
    rc = x.details ? run_change(req, &x, &v) : RC_ENOMEM;
out:
    json_decref(x.details);
    json_decref(none);
    dep_tx_cleanup(&x);
    db_serve_version_cleanup(&v);
    return rc;
}

enum rc api_deployment_promote(struct srv_req *req)
{
    return promote_rollback(req, 1);
}

enum rc api_deployment_rollback(struct srv_req *req)
{
    return promote_rollback(req, 0);
}

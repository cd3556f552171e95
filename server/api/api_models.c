/*
 * api_models.c - the model registry (docs/serving.md, "Registry"): versions
 * registered from a SUCCEEDED job's output directory or one recorded
 * checkpoint, with their files' SHA-256 manifest and lineage; aliases.
 *
 * A registration checks everything it can before the transaction: the
 * caller may see the job (a member of its team, or an admin), the job's
 * template serves ("serve", templates.h), the path lies in the job's site's
 * storage roots after realpath (a refusal is recorded as policy.violation
 * on the job), and hashes the files (manifest.h), which can take seconds
 * and so runs with no transaction open. The transaction then checks the job
 * again (still SUCCEEDED for an output), creates the model on first use or
 * locks it, refuses a job of another site (site_mismatch) or team, takes the
 * next version number and appends model.version.register (store/db_models.h
 * states its lock order). Alias changes lock the model and append
 * model.alias.set / model.alias.delete in the same transaction.
 *
 * Who may do what: every signed-in user lists and reads the models of their
 * teams (admins and auditors: all; a model of another team is 404, as
 * jobs are); members of the model's team and admins change it; auditors
 * change nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "config.h"
#include "db.h"
#include "db_auth.h"
#include "db_models.h"
#include "log.h"
#include "manifest.h"
#include "outputs.h"
#include "pathpol.h"
#include "templates.h"

/* Most storage roots a site lists that are checked. */
#define MODEL_MAX_ROOTS 64
#define MODEL_MAX_DESCRIPTION 2000

static enum rc check_name(struct srv_req *req, int i, const char *what)
{
    if (req->nparams <= i || !api_serving_name_ok(req->params[i])) {
        srv_fail(req, RC_EINVAL, what,
                 "%s must be 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a-z or 0-9", what);
        err_detail(&req->err, "got \"%.64s\"", req->nparams > i ? req->params[i] : "");
        return RC_EINVAL;
    }
    return RC_OK;
}

/* Whether the caller may see rows of team_id: 1 for admins and auditors. */
static enum rc can_see(struct srv_req *req, int64_t team_id, int *ok)
{
    *ok = 1;
    if (req->who.role != SRV_ROLE_MEMBER)
        return RC_OK;
    return auth_is_member(req->db, req->who.user_id, team_id, ok, req->req_id);
}

/* The model of route capture 0 that the caller may see; 404 otherwise. */
static enum rc load_model(struct srv_req *req, int lock, struct db_model *m)
{
    enum rc rc;
    int ok = 0;

    if ((rc = check_name(req, 0, "name")) != RC_OK)
        return rc;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_model_get_row(req->db, req->params[0], lock, m, req->req_id);
    if (rc == RC_OK)
        rc = can_see(req, m->team_id, &ok);
    if (rc == RC_OK && !ok)
        rc = RC_ENOTFOUND;
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such model");
    return rc;
}

enum rc api_model_list(struct srv_req *req)
{
    const char *cursor = srv_query(req, "cursor");
    json_t *rows = NULL, *last;
    int limit = 0;
    enum rc rc;

    if ((rc = api_limit(req, 50, 500, &limit)) != RC_OK)
        return rc;
    if (cursor != NULL && !api_serving_name_ok(cursor))
        return srv_fail(req, RC_EINVAL, "cursor", "cursor is not one this server issued");
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_model_list(req->db, req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0, cursor,
                       limit, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, (size_t)limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "models", rows, "next_cursor",
                               last ? json_object_get(last, "name") : json_null()));
}

enum rc api_model_get(struct srv_req *req)
{
    struct db_model m;
    char cursor[24];
    json_t *out = NULL, *versions, *last;
    int limit = 0;
    enum rc rc;

    if ((rc = api_page(req, 50, 500, &limit, cursor, sizeof(cursor))) != RC_OK ||
        (rc = load_model(req, 0, &m)) != RC_OK)
        return rc;
    rc = db_model_show(req->db, m.id, cursor[0] ? strtoll(cursor, NULL, 10) : 0, limit, &out,
                       req->req_id);
    if (rc != RC_OK)
        return rc;
    versions = json_object_get(out, "versions");
    last = json_array_size(versions) == (size_t)limit ? json_array_get(versions, (size_t)limit - 1)
                                                      : NULL;
    json_object_set_new(out, "next_cursor",
                        last ? json_sprintf("%" JSON_INTEGER_FORMAT,
                                            json_integer_value(json_object_get(last, "version")))
                             : json_null());
    return srv_reply(req, 200, out);
}

/* Route capture i as a version number (1..2^31-1); 404 otherwise. */
static enum rc param_version(struct srv_req *req, int i, int64_t *v)
{
    char *end = NULL;
    long long n = req->nparams > i ? strtoll(req->params[i], &end, 10) : 0;

    if (end == NULL || end == req->params[i] || *end != '\0' || n < 1 || n > 2147483647)
        return srv_fail(req, RC_ENOTFOUND, "", "no such version");
    *v = n;
    return RC_OK;
}

enum rc api_model_version_get(struct srv_req *req)
{
    struct db_model m;
    json_t *out = NULL;
    int64_t v = 0;
    enum rc rc;

    if ((rc = load_model(req, 0, &m)) != RC_OK || (rc = param_version(req, 1, &v)) != RC_OK)
        return rc;
    rc = db_model_version_get(req->db, m.id, v, &out, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such version");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, out);
}

/* ------------------------------------------------------------------ */
/* Registration                                                         */

/* What a registration found before its transaction, and its outcome. */
struct reg {
    const char *name, *source, *description;
    int64_t job_id;
    struct db_model_job job;
    const char *roots[MODEL_MAX_ROOTS];
    size_t nroots;
    char path[PATHPOL_BUF_SIZE]; /* the resolved output directory or checkpoint */
    int attempt;
    int64_t step; /* < 0: none recorded */
    struct manifest man;
    json_t *serve;    /* owned; the template's "serve" */
    json_t *metrics;  /* owned */
    json_t *datasets; /* owned; the lineage's datasets */
    int lineage_complete;
    /* filled by the transaction */
    int version;
    int64_t version_id, model_id;
    int created;
};

static void reg_cleanup(struct reg *x)
{
    db_model_job_cleanup(&x->job);
    manifest_cleanup(&x->man);
    json_decref(x->serve);
    json_decref(x->metrics);
    json_decref(x->datasets);
}

/* Body {"job_id", "source", "step", "description"}. */
static enum rc reg_body(struct srv_req *req, struct reg *x)
{
    static const char *const allowed[] = {"job_id", "source", "step", "description", NULL};
    const json_t *job = NULL;
    int64_t step = -1;
    int has_step = 0;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "source", 1, 16, &x->source)) != RC_OK ||
        (rc = api_opt_string(req, "description", 0, MODEL_MAX_DESCRIPTION, &x->description)) !=
            RC_OK ||
        (rc = api_opt_int(req, "step", 0, INT64_MAX, &step, &has_step)) != RC_OK)
        return rc;
    job = json_object_get(req->body, "job_id");
    if (json_is_integer(job) && json_integer_value(job) > 0) {
        x->job_id = json_integer_value(job);
    } else if (json_is_string(job)) {
        const char *s = json_string_value(job);
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (end == s || *end != '\0' || v <= 0 || s[0] == '0')
            return srv_fail(req, RC_EINVAL, "job_id", "job_id must be a job id");
        x->job_id = v;
    } else {
        return srv_fail(req, RC_EINVAL, "job_id", "job_id is required: the job to register from");
    }
    if (x->source == NULL)
        x->source = "output";
    if (strcmp(x->source, "output") != 0 && strcmp(x->source, "checkpoint") != 0) {
        srv_fail(req, RC_EINVAL, "source", "source must be output or checkpoint");
        err_detail(&req->err, "got \"%.16s\"", x->source);
        return RC_EINVAL;
    }
    if (has_step && strcmp(x->source, "checkpoint") != 0)
        return srv_fail(req, RC_EINVAL, "step", "step goes only with source \"checkpoint\"");
    x->step = has_step ? step : -1;
    if (x->description == NULL)
        x->description = "";
    return RC_OK;
}

/* Record a refusal by the path policy in its own transaction; returns RC_EPOLICY. */
static enum rc audit_violation(struct srv_req *req, const struct reg *x, const char *path)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:s}", "what", "model registration", "model", x->name,
                          "source", x->source, "path", path, "reason", req->err.message);
    enum rc rc = audit_target_id(AUDIT_TARGET_JOB, x->job_id, target);

    if (rc == RC_OK)
        rc = audit_append_alone(req, "policy.violation", target, "denied", d);
    json_decref(d);
    return rc == RC_OK ? RC_EPOLICY : rc;
}

/* The job, visible to the caller, and the template's "serve". */
static enum rc reg_job(struct srv_req *req, struct reg *x)
{
    json_t *tpl = NULL, *v;
    int ok = 0;
    size_t i;
    enum rc rc = db_model_job_get(req->db, x->job_id, &x->job, req->req_id);

    if (rc == RC_OK)
        rc = can_see(req, x->job.team_id, &ok);
    if (rc == RC_OK && !ok)
        rc = RC_ENOTFOUND;
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "job_id", "no such job");
    if (rc != RC_OK)
        return rc;
    json_array_foreach(x->job.roots, i, v)
    {
        if (json_is_string(v) && x->nroots < MODEL_MAX_ROOTS)
            x->roots[x->nroots++] = json_string_value(v);
    }
    if (x->nroots == 0)
        x->roots[x->nroots++] = req->app->cfg->storage_root;
    if (x->job.template_id[0] != '\0')
        rc = tpl_set_get(req->app->templates, x->job.template_id, &tpl);
    if (rc != RC_OK && rc != RC_ENOTFOUND)
        return rc;
    v = json_object_get(tpl, "serve");
    if (json_is_object(v))
        x->serve = json_incref(v);
    json_decref(tpl);
    if (x->serve == NULL) {
        srv_fail(req, RC_ECONFLICT, "job_id",
                 "the job's template has no \"serve\": nothing could run this model");
        err_code(&req->err, "not_servable");
        if (x->job.template_id[0] != '\0')
            err_detail(&req->err, "template \"%s\"", x->job.template_id);
        else
            err_detail(&req->err, "the job was not submitted from a template");
        return RC_ECONFLICT;
    }
    return RC_OK;
}

/* A version from another site's job, or another team's, is refused. */
static enum rc reg_model_fits(struct srv_req *req, const struct reg *x, const struct db_model *m)
{
    if (m->site_id != x->job.site_id) {
        srv_fail(req, RC_ECONFLICT, "job_id",
                 "model \"%s\" is kept on site \"%s\"; the job ran on site \"%s\"", x->name,
                 m->site, x->job.site);
        err_code(&req->err, "site_mismatch");
        return RC_ECONFLICT;
    }
    if (m->team_id != x->job.team_id)
        return srv_fail(req, RC_ECONFLICT, "name",
                        "model \"%s\" belongs to another team; register under another name",
                        x->name);
    return RC_OK;
}

/* The path and its manifest: the output directory or the checkpoint. */
static enum rc reg_files(struct srv_req *req, struct reg *x)
{
    char dir[PATHPOL_BUF_SIZE], ckpt[PATHPOL_BUF_SIZE], ids[24];
    int found = 0;
    enum rc rc;

    if (strcmp(x->source, "output") == 0) {
        if (strcmp(x->job.state, "SUCCEEDED") != 0) {
            srv_fail(req, RC_ECONFLICT, "job_id",
                     "the job is %s; only a SUCCEEDED job's output can be registered "
                     "(a checkpoint can be, with source \"checkpoint\")",
                     x->job.state);
            err_code(&req->err, "job_not_succeeded");
            return RC_ECONFLICT;
        }
        if (outputs_job_dir(x->job.paths, x->job.spec_out, x->job.roots,
                            req->app->cfg->storage_root, api_i64(x->job_id, ids, sizeof(ids)), dir,
                            sizeof(dir)) != RC_OK)
            return srv_fail(req, RC_EPOLICY, "", "the job's output directory is too long");
        rc = outputs_resolve_dir(dir, x->roots, x->nroots, x->path, sizeof(x->path), &req->err);
        if (rc == RC_EPOLICY)
            return audit_violation(req, x, dir);
        if (rc == RC_ENOTFOUND)
            return srv_fail(req, RC_ECONFLICT, "job_id", "the job wrote no output directory");
        if (rc != RC_OK)
            return rc;
        x->attempt = x->job.attempt;
        if ((rc = db_model_last_step(req->db, x->job_id, &x->step, &found, req->req_id)) != RC_OK)
            return rc;
        if (!found)
            x->step = -1;
        rc = manifest_dir(x->path, NULL, &x->man, &req->err);
    } else {
        int64_t want = x->step;
        rc = db_model_checkpoint(req->db, x->job_id, want, &x->attempt, &x->step, ckpt,
                                 sizeof(ckpt), req->req_id);
        if (rc == RC_ENOTFOUND && want >= 0)
            return srv_fail(req, rc, "step", "the job recorded no checkpoint at step %lld",
                            (long long)want);
        if (rc == RC_ENOTFOUND)
            return srv_fail(req, rc, "source", "the job recorded no checkpoint");
        if (rc != RC_OK)
            return rc;
        rc = manifest_path(ckpt, x->roots, x->nroots, NULL, x->path, sizeof(x->path), &x->man,
                           &req->err);
        if (rc == RC_EPOLICY)
            return audit_violation(req, x, ckpt);
        if (rc == RC_ENOTFOUND)
            return srv_fail(req, RC_ECONFLICT, "step", "the checkpoint's file no longer exists");
    }
    if (rc != RC_OK)
        return rc;
    if (x->man.count == 0)
        return srv_fail(req, RC_ECONFLICT, "source", "there is no file to register");
    return RC_OK;
}

static int is_local_uri(const char *uri)
{
    return uri[0] == '/' || strncasecmp(uri, "file:", 5) == 0;
}

/*
 * The lineage's datasets: [{"name", "uri", "path", "digest"}]. A local one's
 * path is the one the submit check approved (jobs.paths.datasets holds the
 * local ones in the spec's order); its digest is the manifest digest of what
 * is there now, or null when it cannot be had (then the lineage is
 * incomplete). A remote one has neither.
 */
static enum rc reg_datasets(struct srv_req *req, struct reg *x)
{
    const json_t *locals = json_object_get(x->job.paths, "datasets");
    size_t i, k = 0;
    json_t *d;

    x->lineage_complete = 1;
    if ((x->datasets = json_array()) == NULL)
        return RC_ENOMEM;
    json_array_foreach(x->job.datasets, i, d)
    {
        const char *uri = json_string_value(json_object_get(d, "uri"));
        const char *path = NULL;
        struct manifest m = {0};
        struct err e;
        json_t *entry;

        if (uri != NULL && is_local_uri(uri))
            path = json_string_value(json_array_get(locals, k++));
        err_init(&e);
        if (path == NULL ||
            manifest_path(path, x->roots, x->nroots, NULL, NULL, 0, &m, &e) != RC_OK) {
            x->lineage_complete = 0;
            if (path != NULL)
                LOG_INFO("models", "a dataset has no digest", "req_id=%s job_id=%lld why=\"%s\"",
                         req->req_id, (long long)x->job_id, e.message);
        }
        entry = json_pack("{s:O,s:s?,s:s?,s:s?}", "name", json_object_get(d, "name"), "uri", uri,
                          "path", path, "digest", m.files != NULL ? m.sha256 : NULL);
        manifest_cleanup(&m);
        if (entry == NULL || json_array_append_new(x->datasets, entry) != 0)
            return RC_ENOMEM;
    }
    return RC_OK;
}

static enum rc reg_tx(struct srv_req *req, void *arg)
{
    struct reg *x = arg;
    struct db_model m;
    struct db_model_version_new v;
    char state[16], target[AUDIT_TARGET_SIZE], ids[24];
    json_t *d;
    enum rc rc;

    x->version = 0;
    x->version_id = x->model_id = 0;
    x->created = 0;
    /* Lock order (db_models.h): the job, the model, the audit head. */
    rc = db_model_job_lock(req->db, x->job_id, state, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "job_id", "no such job");
    if (rc != RC_OK)
        return rc;
    if (strcmp(x->source, "output") == 0 && strcmp(state, "SUCCEEDED") != 0) {
        srv_fail(req, RC_ECONFLICT, "job_id",
                 "the job is %s; only a SUCCEEDED job's output can "
                 "be registered",
                 state);
        err_code(&req->err, "job_not_succeeded");
        return RC_ECONFLICT;
    }
    rc = db_model_ensure(req->db, x->name, x->job.team_id, x->job.site_id, x->description,
                         req->who.username, &m, &x->created, req->req_id);
    if (rc == RC_OK)
        rc = reg_model_fits(req, x, &m);
    if (rc != RC_OK)
        return rc;
    x->model_id = m.id;
    v = (struct db_model_version_new){
        .model_id = m.id,
        .site_id = m.site_id,
        .source_kind = x->source,
        .job_id = x->job_id,
        .attempt = x->attempt,
        .step = x->step,
        .path = x->path,
        .template_id = x->job.template_id,
        .serve_kind = json_string_value(json_object_get(x->serve, "kind")),
        .serve_script = json_string_value(json_object_get(x->serve, "script")),
        .params = x->job.params,
        .datasets = x->datasets,
        .metrics = x->metrics,
        .manifest = x->man.files,
        .manifest_sha256 = x->man.sha256,
        .lineage_complete = x->lineage_complete,
        .description = x->description,
        .created_by = req->who.username,
    };
    rc = db_model_version_insert(req->db, &v, &x->version, &x->version_id, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_MODEL, x->name, target);
    if (rc != RC_OK)
        return rc;
    d = json_pack("{s:i,s:s,s:I,s:s,s:o,s:s,s:I,s:b,s:b}", "version", x->version, "job",
                  api_i64(x->job_id, ids, sizeof(ids)), "attempt", (json_int_t)x->attempt, "source",
                  x->source, "step", x->step >= 0 ? json_integer(x->step) : json_null(),
                  "manifest_sha256", x->man.sha256, "files", (json_int_t)x->man.count,
                  "lineage_complete", x->lineage_complete, "model_created", x->created);
    rc = audit_append_req(req, "model.version.register", target, "success", d);
    json_decref(d);
    return rc;
}

enum rc api_model_register(struct srv_req *req)
{
    struct reg x;
    json_t *out = NULL;
    enum rc rc;

    memset(&x, 0, sizeof(x));
    if ((rc = check_name(req, 0, "name")) != RC_OK || (rc = reg_body(req, &x)) != RC_OK)
        return rc;
    x.name = req->params[0];
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read models but not register them");
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    if ((rc = reg_job(req, &x)) != RC_OK)
        goto out;
    {
        /* Refused before any file is hashed when the model cannot take it;
         * checked again under the model's lock. */
        struct db_model m;
        rc = db_model_get_row(req->db, x.name, 0, &m, req->req_id);
        if (rc == RC_OK)
            rc = reg_model_fits(req, &x, &m);
        if (rc == RC_ENOTFOUND)
            rc = RC_OK;
        if (rc != RC_OK)
            goto out;
    }
    if ((rc = reg_files(req, &x)) != RC_OK)
        goto out;
    if (x.step >= 0)
        rc = db_model_metrics_at(req->db, x.job_id, x.step, &x.metrics, req->req_id);
    else if ((x.metrics = json_object()) == NULL)
        rc = RC_ENOMEM;
    if (rc == RC_OK)
        rc = reg_datasets(req, &x);
    if (rc != RC_OK)
        goto out;
    if ((rc = api_tx(req, reg_tx, &x)) != RC_OK)
        goto out;
    rc = db_model_version_get(req->db, x.model_id, x.version, &out, req->req_id);
    if (rc == RC_OK)
        rc = srv_reply(req, 201, out);
out:
    reg_cleanup(&x);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Aliases                                                              */

struct alias_op {
    const char *alias;
    int64_t version; /* the version to point at (set) */
    int64_t from;    /* the version it pointed at before, 0 when new */
};

/* The model of capture 0 locked, visible and changeable by the caller. */
static enum rc lock_model_for_change(struct srv_req *req, struct db_model *m,
                                     char target[AUDIT_TARGET_SIZE])
{
    enum rc rc = load_model(req, 1, m);

    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_MODEL, req->params[0], target);
    return rc;
}

static enum rc alias_set_tx(struct srv_req *req, void *arg)
{
    struct alias_op *op = arg;
    struct db_model m;
    char target[AUDIT_TARGET_SIZE];
    int64_t vid = 0;
    json_t *d;
    enum rc rc;

    op->from = 0;
    if ((rc = lock_model_for_change(req, &m, target)) != RC_OK)
        return rc;
    rc = db_model_version_id(req->db, m.id, op->version, &vid, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "version", "model \"%s\" has no version %lld", req->params[0],
                        (long long)op->version);
    if (rc == RC_OK)
        rc = db_model_alias_set(req->db, m.id, op->alias, vid, req->who.username, &op->from,
                                req->req_id);
    if (rc != RC_OK)
        return rc;
    d = json_pack("{s:s,s:I,s:o,s:I}", "alias", op->alias, "version", (json_int_t)op->version,
                  "from", op->from > 0 ? json_integer(op->from) : json_null(), "to",
                  (json_int_t)op->version);
    rc = audit_append_req(req, "model.alias.set", target, "success", d);
    json_decref(d);
    return rc;
}

enum rc api_model_alias_set(struct srv_req *req)
{
    static const char *const allowed[] = {"version", NULL};
    struct alias_op op = {0};
    int present = 0;
    enum rc rc;

    if ((rc = check_name(req, 0, "name")) != RC_OK || (rc = check_name(req, 1, "alias")) != RC_OK ||
        (rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_int(req, "version", 1, 2147483647, &op.version, &present)) != RC_OK)
        return rc;
    if (!present)
        return srv_fail(req, RC_EINVAL, "version", "version is required");
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read models but not change them");
    op.alias = req->params[1];
    if ((rc = api_tx(req, alias_set_tx, &op)) != RC_OK)
        return rc;
    return srv_reply(req, 200,
                     json_pack("{s:s,s:s,s:I,s:o}", "model", req->params[0], "alias", op.alias,
                               "version", (json_int_t)op.version, "from",
                               op.from > 0 ? json_integer(op.from) : json_null()));
}

static enum rc alias_delete_tx(struct srv_req *req, void *arg)
{
    struct alias_op *op = arg;
    struct db_model m;
    char target[AUDIT_TARGET_SIZE];
    json_t *d;
    enum rc rc;

    op->from = 0;
    if ((rc = lock_model_for_change(req, &m, target)) != RC_OK)
        return rc;
    rc = db_model_alias_delete(req->db, m.id, op->alias, &op->from, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "alias", "model \"%s\" has no alias \"%s\"", req->params[0],
                        op->alias);
    if (rc != RC_OK)
        return rc;
    d = json_pack("{s:s,s:I,s:I}", "alias", op->alias, "version", (json_int_t)op->from, "from",
                  (json_int_t)op->from);
    rc = audit_append_req(req, "model.alias.delete", target, "success", d);
    json_decref(d);
    return rc;
}

enum rc api_model_alias_delete(struct srv_req *req)
{
    struct alias_op op = {0};
    enum rc rc;

    if ((rc = check_name(req, 0, "name")) != RC_OK || (rc = check_name(req, 1, "alias")) != RC_OK)
        return rc;
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read models but not change them");
    op.alias = req->params[1];
    if ((rc = api_tx(req, alias_delete_tx, &op)) != RC_OK)
        return rc;
    return srv_reply(req, 200,
                     json_pack("{s:s,s:s,s:I}", "model", req->params[0], "alias", op.alias,
                               "version", (json_int_t)op.from));
}

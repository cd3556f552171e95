/*
 * templates_parse.c - tpl_parse(), the strict validator of one template file
 * (pure; see templates.h): the keys in the documented order, each through
 * the checkers of templates_int.h, then the public form. Its "job" is what a
 * submit by template with no params makes of it (tpl_expand()), checked once
 * more by jobspec_parse() so that a template can never offer a job the
 * submit would refuse.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates.h"

#include <stdio.h>
#include <string.h>

#include "jobspec.h"
#include "json_check.h"
#include "jx.h"
#include "templates_int.h"
#include "tpl_expand.h"

#define MAX_ID 64
#define MAX_NAME 128
#define MAX_DESCRIPTION 1024
#define MAX_ARGS 64
#define MAX_ENV 32
#define MAX_ORDER 1000000

static const char *const known_keys[] = {
    "id",      "name",  "description",   "industry", "script",       "interpreter",  "command",
    "args",    "gpus",  "gpus_per_node", "launcher", "max_restarts", "time_limit_s", "priority",
    "dataset", "model", "strategy",      "env",      "params",       "order",        "serve",
};
static const char *const industries[] = {"manufacturing", "ecommerce", "services", "benchmark",
                                         "general"};
static const char *const launchers[] = {"native", "torchrun", "deepspeed", "horovod"};
static const char *const priorities[] = {"low", "normal", "high"};
static const char *const datasets[] = {"synthetic", "image-folder", "text-lines", "chat-jsonl"};
static const char *const strategies[] = {"auto", "ddp", "zero1", "zero2", "zero3", "fsdp"};

/* [a-z0-9][a-z0-9_-]* */
static int is_slug(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* model, strategy, env, params and order, after the job's own keys. */
static enum rc check_plan_fields(const json_t *doc, struct tpl_fields *f, struct err *e)
{
    const json_t *v;
    enum rc rc;

    if ((v = json_object_get(doc, "model")) != NULL && !json_is_null(v)) {
        if ((rc = tpl_check_model(v, e)) != RC_OK)
            return rc;
        f->model = v;
    }
    if ((rc = tpl_want_enum(json_object_get(doc, "strategy"), "strategy", strategies,
                            NELEM(strategies), "auto", &f->strategy, e)) != RC_OK)
        return rc;
    if (strcmp(f->strategy, "auto") == 0 && f->model == NULL)
        return jcheck_bad(e, "model", NULL,
                          "model is required with strategy \"auto\": the advisor plans from it");
    /* The names and values are the job spec's env, checked with its rules
     * when the template's job is (build_job). */
    v = json_object_get(doc, "env");
    if (v != NULL && (!json_is_object(v) || json_object_size(v) > MAX_ENV))
        return jcheck_bad(e, "env", v, "env must be an object of at most %d variables", MAX_ENV);
    if ((rc = tpl_check_params(json_object_get(doc, "params"), json_object_get(doc, "args"), f,
                               e)) != RC_OK)
        return rc;
    if ((rc = tpl_want_int(json_object_get(doc, "order"), "order", 0, MAX_ORDER, MAX_ORDER,
                           &f->order, e)) != RC_OK)
        return rc;
    return tpl_check_serve(json_object_get(doc, "serve"), f, e);
}

static enum rc check_fields(const json_t *doc, const char *examples_dir, struct tpl_fields *f,
                            struct err *e)
{
    const json_t *v;
    enum rc rc;

    if ((rc = tpl_check_unknown(doc, "", known_keys, NELEM(known_keys), e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "id")) == NULL)
        return jcheck_bad(e, "id", NULL, "id is required");
    if ((rc = tpl_want_str(v, "id", 1, MAX_ID, 1, &f->id, e)) != RC_OK)
        return rc;
    if (!is_slug(f->id))
        return jcheck_bad(e, "id", v,
                          "id must be 1 to %d of a-z, 0-9, '_', '-', starting with a-z or 0-9",
                          MAX_ID);
    if ((rc = tpl_want_text(json_object_get(doc, "name"), "name", MAX_NAME, e)) != RC_OK ||
        (rc = tpl_want_text(json_object_get(doc, "description"), "description", MAX_DESCRIPTION,
                            e)) != RC_OK ||
        (rc = tpl_want_enum(json_object_get(doc, "industry"), "industry", industries,
                            NELEM(industries), NULL, &f->industry, e)) != RC_OK ||
        (rc = tpl_check_program(doc, examples_dir, f, e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "args")) != NULL &&
        (rc = tpl_want_argv(v, "args", 0, MAX_ARGS, f->argv, e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "gpus")) == NULL)
        return jcheck_bad(e, "gpus", NULL, "gpus is required");
    if ((rc = tpl_want_int(v, "gpus", 1, JOBSPEC_MAX_GPUS, 0, &f->gpus, e)) != RC_OK)
        return rc;
    v = json_object_get(doc, "gpus_per_node");
    if ((rc = tpl_want_int(json_is_null(v) ? NULL : v, "gpus_per_node", 1,
                           JOBSPEC_MAX_GPUS_PER_NODE, 0, &f->gpus_per_node, e)) != RC_OK)
        return rc;
    if (f->gpus_per_node > 0 && f->gpus % f->gpus_per_node != 0)
        return jcheck_bad(e, "gpus_per_node", v, "gpus must be a multiple of gpus_per_node");
    if ((rc = tpl_want_enum(json_object_get(doc, "launcher"), "launcher", launchers,
                            NELEM(launchers), "native", &f->launcher, e)) != RC_OK ||
        (rc = tpl_want_int(json_object_get(doc, "max_restarts"), "max_restarts", 0,
                           JOBSPEC_MAX_RESTARTS, JOBSPEC_DEFAULT_RESTARTS, &f->max_restarts, e)) !=
            RC_OK ||
        (rc = tpl_want_int(json_object_get(doc, "time_limit_s"), "time_limit_s", 1,
                           JOBSPEC_MAX_TIME_LIMIT_S, JOBSPEC_DEFAULT_TIME_LIMIT_S, &f->time_limit_s,
                           e)) != RC_OK)
        return rc;
    if ((rc = tpl_want_enum(json_object_get(doc, "priority"), "priority", priorities,
                            NELEM(priorities), "normal", &f->priority, e)) != RC_OK)
        return rc;
    if ((rc = tpl_want_enum(json_object_get(doc, "dataset"), "dataset", datasets, NELEM(datasets),
                            "synthetic", &f->dataset, e)) != RC_OK)
        return rc;
    return check_plan_fields(doc, f, e);
}

/* The job spec a template offers: what a submit by template without params
 * makes of it (tpl_expand.h), checked by the submit's own validator. */
static enum rc build_job(const json_t *pub, json_t **out, struct err *e)
{
    json_t *req = json_object(), *job = NULL, *probe = NULL;
    struct jobspec *spec = NULL;
    struct err je;
    enum rc rc;

    *out = NULL;
    if (req == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    /* Only RC_ENOMEM in practice: every default passed tpl_param_check(). */
    if ((rc = tpl_expand(pub, req, &job, e)) != RC_OK)
        goto out;
    if ((probe = json_deep_copy(job)) == NULL ||
        json_object_set_new(probe, "team", json_string("template-check")) != 0) {
        rc = tpl_oom(e);
        goto out;
    }
    err_init(&je);
    rc = jobspec_parse(probe, &spec, &je);
    if (rc == RC_ENOMEM) {
        rc = tpl_oom(e);
        goto out;
    }
    /* The env's names and values are checked here only: by the job spec's
     * rules, so that a template cannot set a variable a submit could not. */
    if (rc != RC_OK && strncmp(je.field, "env", 3) == 0) {
        rc = jcheck_bad(e, je.field, NULL, "%s", je.message);
        err_detail(e, "%s", je.detail);
        goto out;
    }
    /* Every other key was checked above against the same limits, so this is
     * a template field this module forgot to check. */
    if (NEVER(rc != RC_OK)) {
        rc = jcheck_bad(e, "job", NULL, "the template's job is not a valid job spec: %s (%s)",
                        je.message, je.field);
        goto out;
    }
    *out = job;
    job = NULL;
out:
    jobspec_free(spec);
    json_decref(probe);
    json_decref(job);
    json_decref(req);
    return rc;
}

enum rc tpl_parse(const char *text, size_t len, const char *examples_dir, json_t **out,
                  struct err *e)
{
    struct tpl_fields f = {0};
    json_error_t jerr;
    json_t *doc = NULL, *job = NULL, *pub = NULL, *args, *env;
    enum rc rc;

    *out = NULL;
    rc = jx_loadb(text, len, JSON_REJECT_DUPLICATES, &doc, &jerr);
    if (rc == RC_ENOMEM) {
        rc = tpl_oom(e);
        goto out;
    }
    if (rc != RC_OK) {
        rc = jcheck_bad(e, "", NULL, "not valid JSON: %s at line %d", jerr.text, jerr.line);
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = jcheck_bad(e, "", doc, "a template must be a JSON object");
        goto out;
    }
    if ((f.argv = json_array()) == NULL || (f.params = json_object()) == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    if ((rc = check_fields(doc, examples_dir, &f, e)) != RC_OK)
        goto out;
    args = json_object_get(doc, "args");
    env = json_object_get(doc, "env");
    pub = json_pack(
        "{s:s,s:I,s:O,s:O,s:s,s:s?,s:s?,s:O?,s:o,s:I,s:o,s:s,s:I,s:I,s:s,s:s,s:O?,s:s,"
        "s:o,s:O,s:O,s:O?}",
        "id", f.id, "order", (json_int_t)f.order, "name", json_object_get(doc, "name"),
        "description", json_object_get(doc, "description"), "industry", f.industry, "script",
        f.script, "interpreter", f.interpreter, "command", json_object_get(doc, "command"), "args",
        args ? json_incref(args) : json_array(), "gpus", (json_int_t)f.gpus, "gpus_per_node",
        f.gpus_per_node > 0 ? json_integer(f.gpus_per_node) : json_null(), "launcher", f.launcher,
        "max_restarts", (json_int_t)f.max_restarts, "time_limit_s", (json_int_t)f.time_limit_s,
        "priority", f.priority, "dataset", f.dataset, "model", f.model, "strategy", f.strategy,
        "env", env ? json_incref(env) : json_object(), "params", f.params, "base_command", f.argv,
        "serve", f.serve);
    if (pub == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    if ((rc = build_job(pub, &job, e)) != RC_OK)
        goto out;
    if (json_object_set_new(pub, "job", job) != 0) {
        job = NULL;
        rc = tpl_oom(e);
        goto out;
    }
    job = NULL;
    *out = pub;
    pub = NULL;
    rc = RC_OK;
out:
    json_decref(pub);
    json_decref(job);
    json_decref(f.params);
    json_decref(f.argv);
    json_decref(doc);
    return rc;
}

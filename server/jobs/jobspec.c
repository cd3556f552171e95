/*
 * jobspec.c - strict job-spec validation and normalization (see jobspec.h).
 *
 * Structure: one small checker per JSON type (string, integer, enum) that
 * fills struct err with the dotted field path, then one function per spec
 * section, called from jobspec_parse() in the documented fixed order. The
 * spec under construction is freed with jobspec_free() on any error, so every
 * pointer field is either NULL or owned, and every count matches the entries
 * allocated so far (unfilled entries are NULL).
 *
 * Reentrant: no globals besides constant tables.
 */
#include "jobspec.h"

#include "jobplan.h"
#include "json_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NAME 128
#define MAX_TEAM 64
#define MAX_ARGS 256
#define MAX_ARG 4096
#define MAX_ENV 128
#define MAX_ENV_NAME 128
#define MAX_ENV_VALUE 8192
#define MAX_DATASETS 64
#define MAX_PATH 4096
#define MAX_TEMPLATE 128
#define MAX_SITE 64
#define MAX_PARAMS 64
#define MAX_PARAM_NAME 64

/* Flags for get_str(). */
#define STR_NO_CTRL 1 /* refuse C0, DEL and C1 control characters */

static const char *const launcher_names[] = {"native", "torchrun", "deepspeed", "horovod"};
static const char *const prio_names[] = {"low", "normal", "high"};
/* Indexed by enum jobspec_strategy; NONE has no name. */
static const char *const strategy_names[] = {NULL,    "auto",  "ddp", "zero1",
                                             "zero2", "zero3", "fsdp"};

static const char *const top_fields[] = {
    "name",         "team",   "command",  "launcher",     "resources",   "priority", "max_restarts",
    "time_limit_s", "env",    "datasets", "output_dir",   "working_dir", "template", "site",
    "strategy",     "params", "model",    "global_batch", "optimizer",
};
static const char *const resources_fields[] = {"gpus", "gpus_per_node"};
/* The advisor's optimizers (advisor.h adv_optimizer_name). */
static const char *const optimizer_names[] = {"adamw", "adam", "sgd", "sgd-momentum"};

const char *jobspec_launcher_str(enum jobspec_launcher l)
{
    if ((unsigned)l < sizeof(launcher_names) / sizeof(launcher_names[0]))
        return launcher_names[l];
    return "native";
}

const char *jobspec_prio_str(enum jobspec_prio p)
{
    if ((unsigned)p < sizeof(prio_names) / sizeof(prio_names[0]))
        return prio_names[p];
    return "normal";
}

const char *jobspec_strategy_str(enum jobspec_strategy s)
{
    if ((unsigned)s < sizeof(strategy_names) / sizeof(strategy_names[0]))
        return strategy_names[s];
    return NULL;
}

static enum rc oom(struct err *e)
{
    return err_set(e, RC_ENOMEM, NULL, "internal error");
}

/* Whether s[0..len) is valid UTF-8 (no overlongs, surrogates, > U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp, min;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
            cp = c & 0x1fu;
            min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 3;
            cp = c & 0x0fu;
            min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            cp = c & 0x07u;
            min = 0x10000;
        } else {
            return 0;
        }
        if (n > len - i)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3fu);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += n;
    }
    return 1;
}

/*
 * Check that v is a string of min..max bytes (valid UTF-8, no NUL) and copy
 * it to *out (owned by the caller). what names the field in the message.
 */
static enum rc get_str(const json_t *v, const char *field, const char *what, size_t min, size_t max,
                       int flags, char **out, struct err *e)
{
    const char *s;
    size_t len;

    if (!json_is_string(v))
        return jcheck_bad_cut(e, field, v, "%s must be a string", what);
    s = json_string_value(v);
    len = json_string_length(v);
    if (!utf8_valid((const unsigned char *)s, len))
        return jcheck_bad_cut(e, field, NULL, "%s must be valid UTF-8", what);
    if (memchr(s, '\0', len) != NULL)
        return jcheck_bad_cut(e, field, NULL, "%s must not contain NUL characters", what);
    if (len < min || len > max) {
        jcheck_bad_cut(e, field, NULL, "%s must be %zu to %zu bytes long", what, min, max);
        err_detail(e, "got %zu bytes", len);
        return RC_EINVAL;
    }
    if ((flags & STR_NO_CTRL) && jcheck_has_ctrl(s, len))
        return jcheck_bad_cut(e, field, v, "%s must not contain control characters", what);
    *out = strndup(s, len);
    return *out ? RC_OK : oom(e);
}

/* Check that v is an integer in min..max. */
static enum rc get_int(const json_t *v, const char *field, const char *what, json_int_t min,
                       json_int_t max, json_int_t *out, struct err *e)
{
    return jcheck_int(v, field, what, min, max, 1, out, e);
}

/* Check that v is one of the n strings in names; *out = its index. */
static enum rc get_enum(const json_t *v, const char *field, const char *const *names, size_t n,
                        int *out, struct err *e)
{
    char list[128];
    int i = jcheck_name_index(v, names, n);

    if (i >= 0) {
        *out = i;
        return RC_OK;
    }
    jcheck_list(list, sizeof(list), names, n);
    return jcheck_bad_cut(e, field, v, "%s must be one of %s", field, list);
}

/* Build "prefix.key" (key sanitized) into buf. */
static void field_join(char *buf, size_t size, const char *prefix, const char *key, size_t klen)
{
    char k[80];

    jcheck_printable(key, klen, 1, k, sizeof(k));
    if (prefix[0] != '\0')
        snprintf(buf, size, "%s.%s", prefix, k);
    else
        snprintf(buf, size, "%s", k);
}

/* Refuse the smallest key of obj that is not in known[]; prefix for the path. */
static enum rc check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                             size_t nknown, struct err *e)
{
    size_t worst_len;
    const char *worst = jcheck_unknown_key(obj, known, nknown, &worst_len);
    char field[96];
    char k[80];

    if (worst == NULL)
        return RC_OK;
    field_join(field, sizeof(field), prefix, worst, worst_len);
    jcheck_printable(worst, worst_len, 1, k, sizeof(k));
    return jcheck_bad_cut(e, field, NULL, "unknown field \"%s\"", k);
}

static enum rc parse_command(const json_t *v, struct jobspec *spec, struct err *e)
{
    char field[32];
    enum rc rc;

    if (v == NULL)
        return jcheck_bad_cut(e, "command", NULL, "command is required");
    if (!json_is_array(v))
        return jcheck_bad_cut(e, "command", v, "command must be an array of 1 to %d strings",
                              MAX_ARGS);
    if (json_array_size(v) == 0 || json_array_size(v) > MAX_ARGS) {
        jcheck_bad_cut(e, "command", NULL, "command must be an array of 1 to %d strings", MAX_ARGS);
        err_detail(e, "got %zu items", json_array_size(v));
        return RC_EINVAL;
    }
    spec->command = calloc(json_array_size(v), sizeof(char *));
    if (spec->command == NULL)
        return oom(e);
    spec->command_count = json_array_size(v);
    for (size_t i = 0; i < spec->command_count; i++) {
        snprintf(field, sizeof(field), "command[%zu]", i);
        rc = get_str(json_array_get(v, i), field, field, 1, MAX_ARG, 0, &spec->command[i], e);
        if (rc != RC_OK)
            return rc;
    }
    return RC_OK;
}

static enum rc parse_resources(const json_t *v, struct jobspec *spec, struct err *e)
{
    const json_t *g, *gpn;
    json_int_t n;
    enum rc rc;

    if (v == NULL)
        return jcheck_bad_cut(e, "resources", NULL, "resources is required");
    if (!json_is_object(v))
        return jcheck_bad_cut(e, "resources", v, "resources must be an object");
    rc = check_unknown(v, "resources", resources_fields,
                       sizeof(resources_fields) / sizeof(resources_fields[0]), e);
    if (rc != RC_OK)
        return rc;
    g = json_object_get(v, "gpus");
    if (g == NULL)
        return jcheck_bad_cut(e, "resources.gpus", NULL, "gpus is required");
    rc = get_int(g, "resources.gpus", "gpus", 1, JOBSPEC_MAX_GPUS, &n, e);
    if (rc != RC_OK)
        return rc;
    spec->gpus = (int)n;
    gpn = json_object_get(v, "gpus_per_node");
    if (gpn == NULL || json_is_null(gpn))
        return RC_OK;
    rc = get_int(gpn, "resources.gpus_per_node", "gpus_per_node", 1, JOBSPEC_MAX_GPUS_PER_NODE, &n,
                 e);
    if (rc != RC_OK)
        return rc;
    spec->gpus_per_node = (int)n;
    if (spec->gpus < spec->gpus_per_node) {
        jcheck_bad_cut(
            e, "resources.gpus", NULL,
            "gpus is less than gpus_per_node: ask for whole nodes or leave gpus_per_node out");
        err_detail(e, "got gpus %d, gpus_per_node %d", spec->gpus, spec->gpus_per_node);
        return RC_EINVAL;
    }
    if (spec->gpus % spec->gpus_per_node != 0) {
        jcheck_bad_cut(e, "resources.gpus", NULL, "gpus must be a multiple of gpus_per_node");
        err_detail(e, "got gpus %d, gpus_per_node %d", spec->gpus, spec->gpus_per_node);
        return RC_EINVAL;
    }
    return RC_OK;
}

/* Whether name is set by the platform or is a proxy variable; *proxy says which. */
static int env_reserved(const char *name, int *proxy)
{
    static const char *const reserved[] = {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "NODE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "CUDA_VISIBLE_DEVICES",
        "LD_PRELOAD",
        "LD_AUDIT",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_DATASETS_OFFLINE",
    };
    size_t len = strlen(name);

    *proxy = 0;
    /* http_proxy, HTTPS_PROXY, all_proxy, no_proxy, ftp_proxy, ... in any case. */
    if (len >= 6 && strcasecmp(name + len - 6, "_proxy") == 0) {
        *proxy = 1;
        return 1;
    }
    if (strncasecmp(name, "TRAINYARD_", 10) == 0)
        return 1;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        if (strcasecmp(name, reserved[i]) == 0)
            return 1;
    }
    return 0;
}

static int env_name_valid(const char *k, size_t len)
{
    if (len == 0 || len > MAX_ENV_NAME || strlen(k) != len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = k[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

struct env_item {
    const char *key;
    size_t len;
    const json_t *val;
};

static int env_item_cmp(const void *a, const void *b)
{
    const struct env_item *x = a, *y = b;

    return jcheck_key_cmp(x->key, x->len, y->key, y->len);
}

static enum rc parse_env(const json_t *v, struct jobspec *spec, struct err *e)
{
    json_t *o = (json_t *)v; /* jansson's iteration API is not const-correct */
    struct env_item *items = NULL;
    const char *key;
    size_t klen, n = 0;
    json_t *val;
    char field[160];
    char k[80];
    enum rc rc = RC_EINVAL;

    if (!json_is_object(v))
        return jcheck_bad_cut(e, "env", v, "env must be an object of strings");
    if (json_object_size(v) > MAX_ENV) {
        jcheck_bad_cut(e, "env", NULL, "env must have at most %d variables", MAX_ENV);
        err_detail(e, "got %zu", json_object_size(v));
        return RC_EINVAL;
    }
    if (json_object_size(v) == 0)
        return RC_OK;
    items = calloc(json_object_size(v), sizeof(*items));
    spec->env_names = calloc(json_object_size(v), sizeof(char *));
    spec->env_values = calloc(json_object_size(v), sizeof(char *));
    if (items == NULL || spec->env_names == NULL || spec->env_values == NULL) {
        rc = oom(e);
        goto out;
    }
    json_object_keylen_foreach(o, key, klen, val)
    {
        if (n < json_object_size(v)) {
            items[n].key = key;
            items[n].len = klen;
            items[n].val = val;
            n++;
        }
    }
    qsort(items, n, sizeof(*items), env_item_cmp);
    spec->env_count = n;
    for (size_t i = 0; i < n; i++) {
        int proxy;

        field_join(field, sizeof(field), "env", items[i].key, items[i].len);
        if (!env_name_valid(items[i].key, items[i].len)) {
            jcheck_printable(items[i].key, items[i].len, 1, k, sizeof(k));
            jcheck_bad_cut(
                e, "env", NULL,
                "environment variable names must match [A-Za-z_][A-Za-z0-9_]* and be at most "
                "%d bytes",
                MAX_ENV_NAME);
            err_detail(e, "got \"%s\"", k);
            goto out;
        }
        if (env_reserved(items[i].key, &proxy)) {
            if (proxy)
                jcheck_bad_cut(e, field, NULL,
                               "proxy variables are not allowed: data must not leave the site");
            else
                jcheck_bad_cut(e, field, NULL, "%s is set by the platform and cannot be overridden",
                               items[i].key);
            err_detail(e, "got \"%s\"", items[i].key);
            goto out;
        }
        rc = get_str(items[i].val, field, field, 0, MAX_ENV_VALUE, 0, &spec->env_values[i], e);
        if (rc != RC_OK)
            goto out;
        rc = RC_EINVAL;
        spec->env_names[i] = strndup(items[i].key, items[i].len);
        if (spec->env_names[i] == NULL) {
            rc = oom(e);
            goto out;
        }
    }
    rc = RC_OK;
out:
    free(items);
    return rc;
}

static enum rc parse_datasets(const json_t *v, struct jobspec *spec, struct err *e)
{
    char field[32];
    enum rc rc;

    if (!json_is_array(v) || json_array_size(v) > MAX_DATASETS) {
        jcheck_bad_cut(e, "datasets", v, "datasets must be an array of at most %d strings",
                       MAX_DATASETS);
        if (json_is_array(v))
            err_detail(e, "got %zu items", json_array_size(v));
        return RC_EINVAL;
    }
    if (json_array_size(v) == 0)
        return RC_OK;
    spec->datasets = calloc(json_array_size(v), sizeof(char *));
    if (spec->datasets == NULL)
        return oom(e);
    spec->dataset_count = json_array_size(v);
    for (size_t i = 0; i < spec->dataset_count; i++) {
        snprintf(field, sizeof(field), "datasets[%zu]", i);
        rc = get_str(json_array_get(v, i), field, field, 1, MAX_PATH, 0, &spec->datasets[i], e);
        if (rc != RC_OK)
            return rc;
    }
    return RC_OK;
}

/* An optional string field that may be absent or null. */
static enum rc opt_str(const json_t *in, const char *name, size_t max, char **out, struct err *e)
{
    const json_t *v = json_object_get(in, name);

    if (v == NULL || json_is_null(v))
        return RC_OK;
    return get_str(v, name, name, 1, max, 0, out, e);
}

/* site: a slug like a team name, "default" when absent or null. */
static enum rc parse_site(const json_t *v, struct jobspec *spec, struct err *e)
{
    enum rc rc;

    if (v == NULL || json_is_null(v)) {
        spec->site = strdup("default");
        return spec->site ? RC_OK : oom(e);
    }
    rc = get_str(v, "site", "site", 1, MAX_SITE, STR_NO_CTRL, &spec->site, e);
    if (rc != RC_OK)
        return rc;
    for (size_t i = 0; spec->site[i] != '\0'; i++) {
        char c = spec->site[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '_' || c == '-'))))
            return jcheck_bad_cut(
                e, "site", v,
                "site must start with a lower-case letter or digit and contain only "
                "a-z, 0-9, '_' and '-'");
    }
    return RC_OK;
}

/* strategy: absent or null is NONE; otherwise one of the names. */
static enum rc parse_strategy(const json_t *v, struct jobspec *spec, struct err *e)
{
    const size_t n = sizeof(strategy_names) / sizeof(strategy_names[0]);
    enum rc rc;
    int idx;

    if (v == NULL || json_is_null(v))
        return RC_OK;
    /* get_enum() over the names without NONE's NULL. */
    rc = get_enum(v, "strategy", strategy_names + 1, n - 1, &idx, e);
    if (rc == RC_OK)
        spec->strategy = (enum jobspec_strategy)(idx + 1);
    return rc;
}

/*
 * model, global_batch, optimizer: what the advisor plans from. The model is
 * checked by the advisor's own request parser (jobplan_model_check), so a
 * stored model always plans; it is kept as given.
 */
static enum rc parse_model(const json_t *in, struct jobspec *spec, struct err *e)
{
    const json_t *v = json_object_get(in, "model");
    json_int_t n = 0;
    int idx;
    enum rc rc;

    if (v != NULL && !json_is_null(v)) {
        if ((rc = jobplan_model_check(v, e)) != RC_OK)
            return rc;
        if ((spec->model = json_deep_copy(v)) == NULL)
            return oom(e);
    }
    if ((v = json_object_get(in, "global_batch")) != NULL && !json_is_null(v)) {
        if ((rc = get_int(v, "global_batch", "global_batch", 1, JOBSPEC_MAX_GLOBAL_BATCH, &n, e)) !=
            RC_OK)
            return rc;
        spec->global_batch = (int)n;
    }
    if ((v = json_object_get(in, "optimizer")) != NULL && !json_is_null(v)) {
        if ((rc = get_enum(v, "optimizer", optimizer_names, 4, &idx, e)) != RC_OK)
            return rc;
        spec->optimizer = optimizer_names[idx];
    }
    return RC_OK;
}

/* [a-z][a-z0-9_]{0,63}, as templates name their parameters. */
static int param_name_valid(const char *k, size_t len)
{
    if (len == 0 || len > MAX_PARAM_NAME || !(k[0] >= 'a' && k[0] <= 'z'))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
            return 0;
    return 1;
}

/* params: an object of scalars, kept as a copy. Keys are checked in byte
 * order so the same bad object always names the same parameter. */
static enum rc parse_params(const json_t *v, struct jobspec *spec, struct err *e)
{
    json_t *o = (json_t *)v; /* jansson's iteration API is not const-correct */
    struct env_item *items = NULL;
    const char *key;
    size_t klen, n = 0;
    json_t *val;
    char field[160], k[80];
    char *tmp = NULL;
    enum rc rc = RC_EINVAL;

    if (v == NULL || json_is_null(v))
        return RC_OK;
    if (!json_is_object(v))
        return jcheck_bad_cut(e, "params", v, "params must be an object of template parameters");
    if (json_object_size(v) > MAX_PARAMS) {
        jcheck_bad_cut(e, "params", NULL, "params must have at most %d entries", MAX_PARAMS);
        err_detail(e, "got %zu", json_object_size(v));
        return RC_EINVAL;
    }
    if ((items = calloc(json_object_size(v) + 1, sizeof(*items))) == NULL)
        return oom(e);
    json_object_keylen_foreach(o, key, klen, val)
    {
        if (n < json_object_size(v)) {
            items[n].key = key;
            items[n].len = klen;
            items[n].val = val;
            n++;
        }
    }
    qsort(items, n, sizeof(*items), env_item_cmp);
    for (size_t i = 0; i < n; i++) {
        field_join(field, sizeof(field), "params", items[i].key, items[i].len);
        if (!param_name_valid(items[i].key, items[i].len)) {
            jcheck_printable(items[i].key, items[i].len, 1, k, sizeof(k));
            jcheck_bad_cut(e, "params", NULL,
                           "parameter names must match [a-z][a-z0-9_]* and be at most %d bytes",
                           MAX_PARAM_NAME);
            err_detail(e, "got \"%s\"", k);
            goto out;
        }
        if (json_is_string(items[i].val)) {
            rc = get_str(items[i].val, field, field, 0, MAX_ARG, 0, &tmp, e);
            free(tmp);
            tmp = NULL;
            if (rc != RC_OK)
                goto out;
            rc = RC_EINVAL;
        } else if (!json_is_number(items[i].val) && !json_is_boolean(items[i].val)) {
            jcheck_bad_cut(e, field, items[i].val, "%s must be a string, a number or a boolean",
                           field);
            goto out;
        }
    }
    if ((spec->params = json_deep_copy(v)) == NULL) {
        rc = oom(e);
        goto out;
    }
    rc = RC_OK;
out:
    free(items);
    return rc;
}

/* An optional integer field with a default. */
static enum rc opt_int(const json_t *in, const char *name, json_int_t min, json_int_t max,
                       json_int_t *out, struct err *e)
{
    const json_t *v = json_object_get(in, name);

    if (v == NULL)
        return RC_OK;
    return get_int(v, name, name, min, max, out, e);
}

/* Everything after the type check of the top level, in the documented order. */
static enum rc parse_fields(const json_t *in, struct jobspec *spec, struct err *e)
{
    const json_t *v;
    json_int_t n;
    int idx;
    enum rc rc;

    rc = check_unknown(in, "", top_fields, sizeof(top_fields) / sizeof(top_fields[0]), e);
    if (rc != RC_OK)
        return rc;
    if ((v = json_object_get(in, "name")) == NULL)
        return jcheck_bad_cut(e, "name", NULL, "name is required");
    rc = get_str(v, "name", "name", 1, MAX_NAME, STR_NO_CTRL, &spec->name, e);
    if (rc != RC_OK)
        return rc;
    if ((v = json_object_get(in, "team")) == NULL)
        return jcheck_bad_cut(e, "team", NULL, "team is required");
    rc = get_str(v, "team", "team", 1, MAX_TEAM, STR_NO_CTRL, &spec->team, e);
    if (rc != RC_OK)
        return rc;
    for (size_t i = 0; spec->team[i] != '\0'; i++) {
        char c = spec->team[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '_' || c == '-'))))
            return jcheck_bad_cut(
                e, "team", v,
                "team must start with a lower-case letter or digit and contain only "
                "a-z, 0-9, '_' and '-'");
    }
    rc = parse_command(json_object_get(in, "command"), spec, e);
    if (rc != RC_OK)
        return rc;
    if ((v = json_object_get(in, "launcher")) != NULL) {
        rc = get_enum(v, "launcher", launcher_names, 4, &idx, e);
        if (rc != RC_OK)
            return rc;
        spec->launcher = (enum jobspec_launcher)idx;
    }
    rc = parse_resources(json_object_get(in, "resources"), spec, e);
    if (rc != RC_OK)
        return rc;
    if ((v = json_object_get(in, "priority")) != NULL) {
        rc = get_enum(v, "priority", prio_names, 3, &idx, e);
        if (rc != RC_OK)
            return rc;
        spec->priority = (enum jobspec_prio)idx;
    }
    n = JOBSPEC_DEFAULT_RESTARTS;
    rc = opt_int(in, "max_restarts", 0, JOBSPEC_MAX_RESTARTS, &n, e);
    if (rc != RC_OK)
        return rc;
    spec->max_restarts = (int)n;
    n = JOBSPEC_DEFAULT_TIME_LIMIT_S;
    rc = opt_int(in, "time_limit_s", 1, JOBSPEC_MAX_TIME_LIMIT_S, &n, e);
    if (rc != RC_OK)
        return rc;
    spec->time_limit_s = n;
    if ((v = json_object_get(in, "env")) != NULL && (rc = parse_env(v, spec, e)) != RC_OK)
        return rc;
    if ((v = json_object_get(in, "datasets")) != NULL && (rc = parse_datasets(v, spec, e)) != RC_OK)
        return rc;
    rc = opt_str(in, "output_dir", MAX_PATH, &spec->output_dir, e);
    if (rc == RC_OK)
        rc = opt_str(in, "working_dir", MAX_PATH, &spec->working_dir, e);
    if (rc == RC_OK)
        rc = opt_str(in, "template", MAX_TEMPLATE, &spec->template, e);
    if (rc == RC_OK)
        rc = parse_site(json_object_get(in, "site"), spec, e);
    if (rc == RC_OK)
        rc = parse_strategy(json_object_get(in, "strategy"), spec, e);
    if (rc == RC_OK)
        rc = parse_params(json_object_get(in, "params"), spec, e);
    if (rc == RC_OK)
        rc = parse_model(in, spec, e);
    return rc;
}

enum rc jobspec_parse(const json_t *in, struct jobspec **out, struct err *e)
{
    struct jobspec *spec = NULL;
    enum rc rc;

    if (out == NULL)
        return err_set(e, RC_EINTERNAL, NULL, "internal error");
    *out = NULL;
    if (!json_is_object(in))
        return jcheck_bad_cut(e, "", in, "job spec must be a JSON object");
    spec = calloc(1, sizeof(*spec));
    if (spec == NULL)
        return oom(e);
    spec->launcher = JOBSPEC_LAUNCHER_NATIVE;
    spec->priority = JOBSPEC_PRIO_NORMAL;
    spec->max_restarts = JOBSPEC_DEFAULT_RESTARTS;
    spec->time_limit_s = JOBSPEC_DEFAULT_TIME_LIMIT_S;
    rc = parse_fields(in, spec, e);
    if (rc != RC_OK) {
        jobspec_free(spec);
        return rc;
    }
    *out = spec;
    return RC_OK;
}

static void free_strv(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void jobspec_free(struct jobspec *spec)
{
    if (spec == NULL)
        return;
    free(spec->name);
    free(spec->team);
    free_strv(spec->command, spec->command_count);
    free_strv(spec->env_names, spec->env_count);
    free_strv(spec->env_values, spec->env_count);
    free_strv(spec->datasets, spec->dataset_count);
    free(spec->output_dir);
    free(spec->working_dir);
    free(spec->template);
    free(spec->site);
    json_decref(spec->params);
    json_decref(spec->model);
    free(spec);
}

/* A JSON array of n strings (new reference), or NULL when out of memory. */
static json_t *strv_json(char *const *v, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < n; i++) {
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

json_t *jobspec_to_json(const struct jobspec *spec)
{
    json_t *command = NULL, *env = NULL, *datasets = NULL, *gpn = NULL;

    if (spec == NULL)
        return NULL;
    command = strv_json(spec->command, spec->command_count);
    datasets = strv_json(spec->datasets, spec->dataset_count);
    gpn = spec->gpus_per_node > 0 ? json_integer(spec->gpus_per_node) : json_null();
    env = json_object();
    for (size_t i = 0; env != NULL && i < spec->env_count; i++) {
        if (json_object_set_new(env, spec->env_names[i], json_string(spec->env_values[i])) != 0) {
            json_decref(env);
            env = NULL;
        }
    }
    if (command == NULL || datasets == NULL || gpn == NULL || env == NULL) {
        json_decref(command);
        json_decref(datasets);
        json_decref(gpn);
        json_decref(env);
        return NULL;
    }
    /* "o" steals the references, also when json_pack fails (jansson >= 2.11). */
    return json_pack(
        "{s:s, s:s, s:o, s:s, s:{s:I, s:o}, s:s, s:I, s:I, s:o, s:o, s:s?, s:s?, "
        "s:s?, s:s, s:s?, s:O?, s:O?, s:o, s:s?}",
        "name", spec->name, "team", spec->team, "command", command, "launcher",
        jobspec_launcher_str(spec->launcher), "resources", "gpus", (json_int_t)spec->gpus,
        "gpus_per_node", gpn, "priority", jobspec_prio_str(spec->priority), "max_restarts",
        (json_int_t)spec->max_restarts, "time_limit_s", (json_int_t)spec->time_limit_s, "env", env,
        "datasets", datasets, "output_dir", spec->output_dir, "working_dir", spec->working_dir,
        "template", spec->template, "site", spec->site ? spec->site : "default", "strategy",
        jobspec_strategy_str(spec->strategy), "params", spec->params, "model", spec->model,
        "global_batch", spec->global_batch > 0 ? json_integer(spec->global_batch) : json_null(),
        "optimizer", spec->optimizer);
}

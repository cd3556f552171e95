/*
 * tpl_expand.c - a submit by template made into a job spec (see
 * tpl_expand.h).
 *
 * Structure: tpl_param_check() is the one check of a parameter value, used
 * here for the request's values and by templates_schema.c for each
 * default, so a template's defaults always pass the same rules as a user's
 * values.
 * tpl_expand() copies the request, builds the command and the params in the
 * schema's order, and fills the keys the request leaves out from the
 * template. Request keys are only looked at where the template fills
 * something in; everything else is left to jobspec_parse().
 *
 * Reentrant: no globals besides constant tables.
 */
#include "tpl_expand.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobplan.h"
#include "json_check.h"

/* Keys the template fills in when the request has none, as they are named
 * in both the public form and the job spec. */
static const char *const defaulted[] = {"launcher", "priority", "max_restarts", "time_limit_s",
                                        "strategy"};

/* s[0..len) for a message: [A-Za-z0-9_.-] kept, others '?', at most 64 bytes. */
static void plain(const char *s, size_t len, char *buf, size_t size)
{
    size_t o = 0;

    for (size_t i = 0; i < len && i < 64 && o + 1 < size; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        buf[o++] = ok ? c : '?';
    }
    buf[o] = '\0';
}

static enum rc oom(struct err *e)
{
    return err_set(e, RC_ENOMEM, NULL, "internal error");
}

/* The number v as a double (integer or real). */
static double num(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* " from A to B", " of at least A", " of at most B" or "" for a message. */
static void range_text(const json_t *min, const json_t *max, char *buf, size_t size)
{
    char a[32] = "", b[32] = "";

    if (json_is_integer(min))
        snprintf(a, sizeof(a), "%" JSON_INTEGER_FORMAT, json_integer_value(min));
    else if (json_is_real(min))
        snprintf(a, sizeof(a), "%g", json_real_value(min));
    if (json_is_integer(max))
        snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, json_integer_value(max));
    else if (json_is_real(max))
        snprintf(b, sizeof(b), "%g", json_real_value(max));
    if (a[0] && b[0])
        snprintf(buf, size, " from %s to %s", a, b);
    else if (a[0])
        snprintf(buf, size, " of at least %s", a);
    else if (b[0])
        snprintf(buf, size, " of at most %s", b);
    else
        buf[0] = '\0';
}

/* Whether number v lies in [min, max] (a null bound is no bound). */
static int in_range(const json_t *v, const json_t *min, const json_t *max)
{
    if (json_is_integer(v) && json_is_integer(min) &&
        json_integer_value(v) < json_integer_value(min))
        return 0;
    if (json_is_integer(v) && json_is_integer(max) &&
        json_integer_value(v) > json_integer_value(max))
        return 0;
    if (json_is_number(min) && num(v) < num(min))
        return 0;
    if (json_is_number(max) && num(v) > num(max))
        return 0;
    return 1;
}

enum rc tpl_param_check(const json_t *schema, const json_t *value, const char *field, struct err *e)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    const json_t *min = json_object_get(schema, "min"), *max = json_object_get(schema, "max");
    const json_t *values = json_object_get(schema, "values"), *x;
    char range[80], list[256] = "";
    size_t i;

    if (type == NULL)
        return err_set(e, RC_EINVAL, field, "%s has no type in the template", field);
    if (strcmp(type, "int") == 0) {
        range_text(min, max, range, sizeof(range));
        if (!json_is_integer(value) || !in_range(value, min, max))
            return jcheck_bad(e, field, value, "%s must be an integer%s", field, range);
        return RC_OK;
    }
    if (strcmp(type, "float") == 0) {
        range_text(min, max, range, sizeof(range));
        if (!json_is_number(value) || !in_range(value, min, max))
            return jcheck_bad(e, field, value, "%s must be a number%s", field, range);
        return RC_OK;
    }
    if (strcmp(type, "bool") == 0) {
        if (!json_is_boolean(value))
            return jcheck_bad(e, field, value, "%s must be true or false", field);
        return RC_OK;
    }
    if (strcmp(type, "enum") == 0) {
        json_array_foreach(values, i, x)
        {
            if (json_is_string(value) && json_equal(value, x))
                return RC_OK;
        }
        json_array_foreach(values, i, x)
        {
            jcheck_list_add(list, sizeof(list), i, json_string_value(x));
        }
        return jcheck_bad(e, field, value, "%s must be one of %s", field, list);
    }
    if (strcmp(type, "string") == 0) {
        if (!json_is_string(value))
            return jcheck_bad(e, field, value, "%s must be a string", field);
        if (json_string_length(value) > TPL_MAX_STRING_PARAM)
            return jcheck_bad(e, field, value, "%s must be at most %d bytes long", field,
                              TPL_MAX_STRING_PARAM);
        if (memchr(json_string_value(value), '\0', json_string_length(value)) != NULL ||
            jcheck_has_ctrl(json_string_value(value), json_string_length(value)))
            return jcheck_bad(e, field, NULL, "%s must not contain control characters", field);
        /* The value is the argument after the flag: one starting with '-'
         * would be read as another flag. */
        if (json_string_value(value)[0] == '-')
            return jcheck_bad(e, field, value, "%s must not start with '-'", field);
        return RC_OK;
    }
    return err_set(e, RC_EINVAL, field, "%s has an unknown type in the template", field);
}

/* The shortest "%g" form of d that reads back as d (17 digits always do),
 * plain decimals before exponents: "10", not "1e+01"; "1e-05" as is. */
static void fmt_double(double d, char *buf, size_t size)
{
    for (int allow_exp = 0; allow_exp < 2; allow_exp++) {
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, size, "%.*g", p, d);
            if ((allow_exp || strchr(buf, 'e') == NULL) && strtod(buf, NULL) == d)
                return;
        }
    }
}

/* Append the arguments of one checked value to cmd (see tpl_expand.h). */
static enum rc append_args(json_t *cmd, const json_t *schema, const json_t *v, struct err *e)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    json_t *arg = json_object_get(schema, "arg");
    char buf[40];
    json_t *val = NULL;

    if (strcmp(type, "bool") == 0) {
        if (json_is_true(v) && json_array_append(cmd, arg) != 0)
            return oom(e);
        return RC_OK;
    }
    if (json_is_string(v) && json_string_length(v) == 0)
        return RC_OK;
    if (json_is_string(v)) {
        val = json_incref((json_t *)v);
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        val = json_string(buf);
    } else {
        fmt_double(json_real_value(v), buf, sizeof(buf));
        val = json_string(buf);
    }
    if (val == NULL || json_array_append(cmd, arg) != 0 || json_array_append_new(cmd, val) != 0)
        return oom(e);
    return RC_OK;
}

/* Refuse the smallest key (byte order) of given that the schema lacks. */
static enum rc check_unknown(const json_t *given, const json_t *schema, struct err *e)
{
    json_t *o = (json_t *)given; /* jansson's iteration API is not const-correct */
    const char *key, *worst = NULL;
    size_t klen, worst_len = 0;
    char field[96], k[80];
    json_t *v;

    json_object_keylen_foreach(o, key, klen, v)
    {
        if (strlen(key) == klen && json_object_get(schema, key) != NULL)
            continue;
        if (worst == NULL || jcheck_key_cmp(key, klen, worst, worst_len) < 0) {
            worst = key;
            worst_len = klen;
        }
    }
    if (worst == NULL)
        return RC_OK;
    plain(worst, worst_len, k, sizeof(k));
    snprintf(field, sizeof(field), "params.%s", k);
    jcheck_bad(e, field, NULL, "unknown parameter \"%s\": the template has no such parameter", k);
    return RC_EINVAL;
}

/* command and params of the spec, from the schema and the given values. */
static enum rc build_command(const json_t *tpl, const json_t *given, json_t *spec, struct err *e)
{
    const json_t *schema = json_object_get(tpl, "params"), *p, *v;
    json_t *cmd = json_deep_copy(json_object_get(tpl, "base_command"));
    json_t *used = json_object();
    const char *name;
    char field[96];
    enum rc rc = RC_OK;

    if (cmd == NULL || used == NULL) {
        rc = oom(e);
        goto out;
    }
    json_object_foreach((json_t *)schema, name, p)
    {
        snprintf(field, sizeof(field), "params.%s", name);
        v = json_is_object(given) ? json_object_get(given, name) : NULL;
        if (v == NULL)
            v = json_object_get(p, "default");
        if ((rc = tpl_param_check(p, v, field, e)) != RC_OK ||
            (rc = append_args(cmd, p, v, e)) != RC_OK)
            goto out;
        if (json_object_set(used, name, (json_t *)v) != 0) {
            rc = oom(e);
            goto out;
        }
    }
    if (json_object_set(spec, "command", cmd) != 0 || json_object_set(spec, "params", used) != 0)
        rc = oom(e);
out:
    json_decref(cmd);
    json_decref(used);
    return rc;
}

/* resources and env: the template's where the request leaves them out. */
static enum rc fill_resources_env(const json_t *tpl, json_t *spec, struct err *e)
{
    json_t *res = json_object_get(spec, "resources");
    json_t *env = json_object_get(spec, "env"), *merged = NULL;
    const json_t *tenv = json_object_get(tpl, "env");
    const json_t *gpn = json_object_get(tpl, "gpus_per_node");

    if (res == NULL) {
        if (json_object_set_new(spec, "resources",
                                json_pack("{s:O,s:O}", "gpus", json_object_get(tpl, "gpus"),
                                          "gpus_per_node", gpn ? gpn : json_null())) != 0)
            return oom(e);
    } else if (json_is_object(res) && json_object_get(res, "gpus") == NULL) {
        if (json_object_set(res, "gpus", json_object_get(tpl, "gpus")) != 0)
            return oom(e);
        if (json_object_get(res, "gpus_per_node") == NULL &&
            json_object_set(res, "gpus_per_node", gpn ? (json_t *)gpn : json_null()) != 0)
            return oom(e);
    }
    if (json_object_size(tenv) == 0 || (env != NULL && !json_is_object(env)))
        return RC_OK; /* nothing to add, or a bad env that jobspec_parse() names */
    if ((merged = json_deep_copy(tenv)) == NULL)
        return oom(e);
    if (env != NULL && json_object_update(merged, env) != 0) {
        json_decref(merged);
        return oom(e);
    }
    /* set_new takes merged, also when it fails. */
    return json_object_set_new(spec, "env", merged) == 0 ? RC_OK : oom(e);
}

/*
 * What the advisor plans from: the template's model in the
 * advisor's terms and the "batch" parameter as the global batch, each only
 * when the request gives none (a request's model describes what it runs,
 * for example a tiny size of the template's script).
 */
static enum rc fill_plan_inputs(const json_t *tpl, json_t *spec, struct err *e)
{
    const json_t *tm = json_object_get(tpl, "model");
    const json_t *batch = json_object_get(json_object_get(spec, "params"), "batch");

    if (json_object_get(spec, "model") == NULL && json_is_object(tm)) {
        json_t *m = jobplan_model_from_template(tm);
        if (m == NULL || json_object_set_new(spec, "model", m) != 0)
            return oom(e);
    }
    if (json_object_get(spec, "global_batch") == NULL && json_is_integer(batch) &&
        json_object_set(spec, "global_batch", (json_t *)batch) != 0)
        return oom(e);
    return RC_OK;
}

int tpl_expand_wanted(const json_t *body)
{
    return json_is_object(body) && json_object_get(body, "template") != NULL &&
           json_object_get(body, "command") == NULL;
}

enum rc tpl_expand(const json_t *tpl, const json_t *req, json_t **out, struct err *e)
{
    const json_t *given;
    json_t *spec = NULL;
    enum rc rc;

    *out = NULL;
    if (!json_is_object(req))
        return jcheck_bad(e, "", req, "job spec must be a JSON object");
    given = json_object_get(req, "params");
    if (json_is_null(given))
        given = NULL;
    if (given != NULL && !json_is_object(given))
        return jcheck_bad(e, "params", given,
                          "params must be an object of the template's parameters");
    if (given != NULL && (rc = check_unknown(given, json_object_get(tpl, "params"), e)) != RC_OK)
        return rc;
    if ((spec = json_deep_copy(req)) == NULL)
        return oom(e);
    if ((rc = build_command(tpl, given, spec, e)) != RC_OK ||
        (rc = fill_resources_env(tpl, spec, e)) != RC_OK)
        goto out;
    if (json_object_set(spec, "template", json_object_get(tpl, "id")) != 0 ||
        (json_object_get(spec, "name") == NULL &&
         json_object_set(spec, "name", json_object_get(tpl, "id")) != 0)) {
        rc = oom(e);
        goto out;
    }
    for (size_t i = 0; i < sizeof(defaulted) / sizeof(defaulted[0]); i++) {
        const json_t *v = json_object_get(tpl, defaulted[i]);
        if (json_object_get(spec, defaulted[i]) == NULL && v != NULL &&
            json_object_set(spec, defaulted[i], (json_t *)v) != 0) {
            rc = oom(e);
            goto out;
        }
    }
    if ((rc = fill_plan_inputs(tpl, spec, e)) != RC_OK)
        goto out;
    *out = spec;
    spec = NULL;
    rc = RC_OK;
out:
    json_decref(spec);
    return rc;
}

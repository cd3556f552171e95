/*
 * templates_schema.c - a template's "params" (see templates_int.h): the
 * hyperparameter schema the wizard shows and the command gets, each
 * parameter checked and put in its public form (every key present, absent
 * ones null). A parameter's default passes tpl_param_check() (tpl_expand.h),
 * the same check as a user's value, so a default can never be refused at
 * submit.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates_int.h"

#include <stdio.h>
#include <string.h>

#include "jobspec.h"
#include "json_check.h"
#include "templates.h"
#include "tpl_expand.h"

#define MAX_LABEL 128
#define MAX_HELP 1024
#define MAX_PARAM_NAME 64
#define MAX_PARAM_ARG 64
#define MAX_ENUM_VALUES 64
#define MAX_ENUM_VALUE 64

static const char *const param_keys[] = {"type", "label", "help",   "arg",
                                         "min",  "max",   "values", "default"};
static const char *const param_types[] = {"int", "float", "enum", "bool", "string"};

/* [a-z][a-z0-9_]{0,63} */
static int is_param_name(const char *s)
{
    if (strlen(s) > MAX_PARAM_NAME || !(*s >= 'a' && *s <= 'z'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* "--" then [a-z0-9][a-z0-9-]*, at most MAX_PARAM_ARG bytes. */
static int is_flag(const char *s)
{
    if (strlen(s) > MAX_PARAM_ARG || strncmp(s, "--", 2) != 0 || s[2] == '\0' || s[2] == '-')
        return 0;
    for (s += 2; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return 0;
    return 1;
}

/* Whether arr (an array of strings) holds s. */
static int has_string(const json_t *arr, const char *s)
{
    size_t i;
    json_t *x;

    json_array_foreach(arr, i, x)
    {
        if (strcmp(json_string_value(x), s) == 0)
            return 1;
    }
    return 0;
}

/* An enum's values: 1..MAX_ENUM_VALUES distinct strings of 1..MAX_ENUM_VALUE bytes. */
static enum rc check_values(const json_t *v, const char *field, struct err *e)
{
    char sub[128];
    const char *s;
    size_t i;
    json_t *x;
    enum rc rc;

    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > MAX_ENUM_VALUES)
        return jcheck_bad(e, field, json_is_array(v) ? NULL : v,
                          "%s must be an array of 1 to %d strings", field, MAX_ENUM_VALUES);
    json_array_foreach(v, i, x)
    {
        snprintf(sub, sizeof(sub), "%s[%zu]", field, i);
        if ((rc = tpl_want_str(x, sub, 1, MAX_ENUM_VALUE, 1, &s, e)) != RC_OK)
            return rc;
        if (s[0] == '-') /* it follows the flag: it would read as another one */
            return jcheck_bad(e, sub, x, "%s must not start with '-'", sub);
        for (size_t k = 0; k < i; k++)
            if (json_equal(json_array_get(v, k), x))
                return jcheck_bad(e, sub, x, "%s repeats an earlier value", sub);
    }
    return RC_OK;
}

static double as_double(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* min and max of a number parameter: numbers of its type, min <= max. */
static enum rc check_bounds(const json_t *p, const char *pfield, int integer, json_t *out,
                            struct err *e)
{
    static const char *const names[] = {"min", "max"};
    const json_t *b[2];
    char field[128];

    for (size_t i = 0; i < 2; i++) {
        b[i] = json_object_get(p, names[i]);
        snprintf(field, sizeof(field), "%s.%s", pfield, names[i]);
        if (b[i] != NULL && (integer ? !json_is_integer(b[i]) : !json_is_number(b[i])))
            return jcheck_bad(e, field, b[i], "%s must be %s", field,
                              integer ? "an integer" : "a number");
        if (json_object_set(out, names[i], b[i] ? (json_t *)b[i] : json_null()) != 0)
            return tpl_oom(e);
    }
    if (b[0] != NULL && b[1] != NULL &&
        (integer ? json_integer_value(b[0]) > json_integer_value(b[1])
                 : as_double(b[0]) > as_double(b[1])))
        return jcheck_bad(e, field, NULL, "%s.min must not be larger than %s.max", pfield, pfield);
    return RC_OK;
}

/* type, label, help and arg of parameter p (path pf) into *pub (new: the
 * start of its public form). args is the template's args, seen holds the
 * flags of the parameters before this one; this one's flag is added. */
static enum rc check_param_head(const json_t *p, const char *pf, const json_t *args, json_t *seen,
                                const char **type, json_t **pub, struct err *e)
{
    char field[128];
    const char *arg;
    const json_t *v;
    enum rc rc;

    if ((rc = tpl_check_unknown(p, pf, param_keys, NELEM(param_keys), e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.type", pf);
    if ((rc = tpl_want_enum(json_object_get(p, "type"), field, param_types, NELEM(param_types),
                            NULL, type, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.label", pf);
    if ((rc = tpl_want_text(json_object_get(p, "label"), field, MAX_LABEL, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.help", pf);
    if ((v = json_object_get(p, "help")) != NULL &&
        (rc = tpl_want_text(v, field, MAX_HELP, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.arg", pf);
    if ((v = json_object_get(p, "arg")) == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if ((rc = tpl_want_str(v, field, 3, MAX_PARAM_ARG, 1, &arg, e)) != RC_OK)
        return rc;
    if (!is_flag(arg))
        return jcheck_bad(e, field, v, "%s must be a flag: \"--\" and then a-z, 0-9 and '-'",
                          field);
    if (has_string(seen, arg) || has_string(args, arg))
        return jcheck_bad(e, field, v,
                          "%s is already used by another parameter or the template's args", field);
    if (json_array_append(seen, (json_t *)v) != 0 ||
        (*pub = json_pack("{s:s,s:O,s:O,s:O}", "type", *type, "label", json_object_get(p, "label"),
                          "help",
                          json_object_get(p, "help") ? json_object_get(p, "help") : json_null(),
                          "arg", v)) == NULL)
        return tpl_oom(e);
    return RC_OK;
}

/* min, max and values of parameter name (path pf) of the given type, then
 * its default, into pub (borrowed: the public form begun by
 * check_param_head()). */
static enum rc check_param_values(const char *name, const json_t *p, const char *pf,
                                  const char *type, json_t *pub, struct err *e)
{
    char field[128];
    const json_t *v;
    enum rc rc = RC_OK;

    if (strcmp(type, "int") == 0 || strcmp(type, "float") == 0) {
        rc = check_bounds(p, pf, type[0] == 'i', pub, e);
    } else if (json_object_get(p, "min") != NULL || json_object_get(p, "max") != NULL) {
        snprintf(field, sizeof(field), "%s.%s", pf, json_object_get(p, "min") ? "min" : "max");
        rc = jcheck_bad(e, field, NULL, "%s is only for int and float parameters", field);
    } else if (json_object_set_new(pub, "min", json_null()) != 0 ||
               json_object_set_new(pub, "max", json_null()) != 0) {
        rc = tpl_oom(e);
    }
    if (rc != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.values", pf);
    v = json_object_get(p, "values");
    if (strcmp(type, "enum") == 0) {
        if (v == NULL)
            return jcheck_bad(e, field, NULL, "%s is required for an enum parameter", field);
        if ((rc = check_values(v, field, e)) != RC_OK)
            return rc;
        if (json_object_set(pub, "values", (json_t *)v) != 0)
            return tpl_oom(e);
    } else if (v != NULL) {
        return jcheck_bad(e, field, NULL, "%s is only for enum parameters", field);
    } else if (json_object_set_new(pub, "values", json_null()) != 0) {
        return tpl_oom(e);
    }
    /* "batch" becomes the job's global_batch (tpl_expand.h), so every value
     * the schema lets a user give must be one the job spec takes. */
    if (strcmp(name, "batch") == 0 &&
        (strcmp(type, "int") != 0 || !json_is_integer(json_object_get(p, "min")) ||
         !json_is_integer(json_object_get(p, "max")) ||
         json_integer_value(json_object_get(p, "min")) < 1 ||
         json_integer_value(json_object_get(p, "max")) > JOBSPEC_MAX_GLOBAL_BATCH))
        return jcheck_bad(e, pf, NULL,
                          "%s is the global batch: an int parameter with min >= 1 and max <= %d",
                          pf, JOBSPEC_MAX_GLOBAL_BATCH);
    /* The default passes the same check as a user's value (tpl_expand.h). */
    snprintf(field, sizeof(field), "%s.default", pf);
    v = json_object_get(p, "default");
    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if ((rc = tpl_param_check(pub, v, field, e)) != RC_OK)
        return rc;
    if (json_object_set(pub, "default", (json_t *)v) != 0)
        return tpl_oom(e);
    return RC_OK;
}

/* One parameter of the schema into its public form (*out new). args is the
 * template's args, seen holds the flags of the parameters before this one. */
static enum rc check_param(const char *name, const json_t *p, const json_t *args, json_t *seen,
                           json_t **out, struct err *e)
{
    char pf[80];
    const char *type = NULL;
    json_t *pub = NULL;
    enum rc rc;

    *out = NULL;
    snprintf(pf, sizeof(pf), "params.%s", name);
    if (!json_is_object(p))
        return jcheck_bad(e, pf, p, "%s must be an object with type, label, arg and default", pf);
    if ((rc = check_param_head(p, pf, args, seen, &type, &pub, e)) == RC_OK &&
        (rc = check_param_values(name, p, pf, type, pub, e)) == RC_OK) {
        *out = pub;
        pub = NULL;
    }
    json_decref(pub);
    return rc;
}

/* params: the ordered schema name -> parameter, into f->params. */
enum rc tpl_check_params(const json_t *v, const json_t *args, struct tpl_fields *f, struct err *e)
{
    const char *name;
    json_t *p, *pub, *seen = json_array();
    enum rc rc = RC_OK;

    if (seen == NULL)
        return tpl_oom(e);
    if (v != NULL && !json_is_object(v)) {
        rc = jcheck_bad(e, "params", v, "params must be an object of parameters");
        goto out;
    }
    if (json_object_size(v) > TPL_MAX_PARAMS) {
        rc =
            jcheck_bad(e, "params", NULL, "params must have at most %d parameters", TPL_MAX_PARAMS);
        goto out;
    }
    json_object_foreach((json_t *)v, name, p)
    {
        if (!is_param_name(name)) {
            rc =
                jcheck_bad(e, "params", NULL,
                           "parameter names must be 1 to %d of a-z, 0-9 and '_', starting with a-z",
                           MAX_PARAM_NAME);
            goto out;
        }
        if ((rc = check_param(name, p, args, seen, &pub, e)) != RC_OK)
            goto out;
        if (json_object_set_new(f->params, name, pub) != 0) {
            rc = tpl_oom(e);
            goto out;
        }
    }
out:
    json_decref(seen);
    return rc;
}

/*
 * templates.c - job templates: the strict validator of one file (pure), the
 * loader of a directory, and the read-only lookups (see templates.h).
 *
 * Structure: tpl_parse() checks the keys in the documented order with one
 * small checker per kind of value, each filling struct err with the field,
 * then builds the public form. Its "job" is what a submit by template with
 * no params makes of it (tpl_expand(), which also checks every parameter's
 * default, so defaults and users' values pass one check), checked once more
 * by jobspec_parse() so that a template can never offer a job the submit
 * would refuse. The loader reads files with a size cap, sorts them by name,
 * then stably by "order", and keeps the public forms in one array; lookups
 * hand out deep copies, so no request ever touches a reference count of the
 * shared set.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advisor.h"
#include "jobspec.h"
#include "json_check.h"
#include "log.h"
#include "tpl_expand.h"

#define MAX_ID 64
#define MAX_NAME 128
#define MAX_DESCRIPTION 1024
#define MAX_SCRIPT 255
#define MAX_PATH_ARG 4096
#define MAX_COMMAND 64
#define MAX_ARGS 64
#define MAX_LABEL 128
#define MAX_HELP 1024
#define MAX_PARAM_NAME 64
#define MAX_PARAM_ARG 64
#define MAX_ENUM_VALUES 64
#define MAX_ENUM_VALUE 64
#define MAX_ENV 32
#define MAX_ORDER 1000000
/* Model bounds: far beyond today's models, small enough that the advisor's
 * products of them cannot overflow 64 bits. */
#define MAX_MODEL_PARAMS INT64_C(10000000000000) /* 10^13 parameters */
#define MAX_ACTIVATION_BYTES (INT64_C(1) << 40)  /* 1 TiB per sample */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const known_keys[] = {
    "id",      "name",  "description",   "industry", "script",       "interpreter",  "command",
    "args",    "gpus",  "gpus_per_node", "launcher", "max_restarts", "time_limit_s", "priority",
    "dataset", "model", "strategy",      "env",      "params",       "order",
};
static const char *const languages[] = {"zh-CN", "en"};
static const char *const industries[] = {"manufacturing", "ecommerce", "services", "benchmark",
                                         "general"};
static const char *const launchers[] = {"native", "torchrun", "deepspeed", "horovod"};
static const char *const priorities[] = {"low", "normal", "high"};
static const char *const datasets[] = {"synthetic", "image-folder", "text-lines", "chat-jsonl"};
static const char *const strategies[] = {"auto", "ddp", "zero1", "zero2", "zero3", "fsdp"};
static const char *const model_keys[] = {"name", "transformer", "params",
                                         "activation_bytes_per_sample"};
static const char *const transformer_keys[] = {"layers", "hidden",  "heads", "ffn",
                                               "vocab",  "seq_len", "kind"};
static const char *const transformer_kinds[] = {"decoder", "encoder"};
static const char *const param_keys[] = {"type", "label", "help",   "arg",
                                         "min",  "max",   "values", "default"};
static const char *const param_types[] = {"int", "float", "enum", "bool", "string"};

struct tpl_set {
    json_t *list; /* array of public forms, owned; never NULL once loaded */
};

static enum rc oom(struct err *e)
{
    return err_set(e, RC_ENOMEM, NULL, "out of memory");
}

/* v must be a string of min..max bytes without NUL (and, with no_ctrl,
 * without control characters). *out is borrowed from v. */
static enum rc want_str(const json_t *v, const char *field, size_t min, size_t max, int no_ctrl,
                        const char **out, struct err *e)
{
    size_t len;

    if (!json_is_string(v))
        return jcheck_bad(e, field, v, "%s must be a string", field);
    len = json_string_length(v);
    if (len < min || len > max) {
        jcheck_bad(e, field, NULL, "%s must be %zu to %zu bytes long", field, min, max);
        err_detail(e, "got %zu bytes", len);
        return RC_EINVAL;
    }
    if (memchr(json_string_value(v), '\0', len) != NULL)
        return jcheck_bad(e, field, NULL, "%s must not contain NUL characters", field);
    if (no_ctrl && jcheck_has_ctrl(json_string_value(v), len))
        return jcheck_bad(e, field, NULL, "%s must not contain control characters", field);
    *out = json_string_value(v);
    return RC_OK;
}

/* v (NULL: absent, then def) must be an integer in min..max. */
static enum rc want_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                        json_int_t def, json_int_t *out, struct err *e)
{
    if (v == NULL) {
        *out = def;
        return RC_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return jcheck_bad(e, field, v,
                          "%s must be an integer from %" JSON_INTEGER_FORMAT
                          " to %" JSON_INTEGER_FORMAT,
                          field, min, max);
    *out = json_integer_value(v);
    return RC_OK;
}

/* v must be one of names; absent (NULL) it is def, or refused when def is NULL. */
static enum rc want_enum(const json_t *v, const char *field, const char *const *names, size_t n,
                         const char *def, const char **out, struct err *e)
{
    char list[200];

    if (v == NULL && def != NULL) {
        *out = def;
        return RC_OK;
    }
    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    for (size_t i = 0; json_is_string(v) && i < n; i++) {
        if (json_string_length(v) == strlen(names[i]) &&
            strcmp(json_string_value(v), names[i]) == 0) {
            *out = names[i];
            return RC_OK;
        }
    }
    jcheck_list(list, sizeof(list), names, n);
    return jcheck_bad(e, field, v, "%s must be one of %s", field, list);
}

/* Refuse the smallest key (in byte order) of obj that is not in known[]. */
static enum rc check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                             size_t nknown, struct err *e)
{
    size_t len;
    const char *worst = jcheck_unknown_key(obj, known, nknown, &len);
    char field[96];

    if (worst == NULL)
        return RC_OK;
    /* The name is shown only when it is short and plain: it comes from a file.
     * A parsed key has no NUL (jansson refuses one), so len is its strlen. */
    if (len > 48 || jcheck_has_ctrl(worst, len) || strpbrk(worst, "\"\\") != NULL)
        worst = "?";
    snprintf(field, sizeof(field), "%s%s%s", prefix, prefix[0] ? "." : "", worst);
    return jcheck_bad(e, field, NULL, "unknown field \"%s\"", worst);
}

/* A {"zh-CN": text, "en": text} object: both languages, no others. */
static enum rc want_text(const json_t *v, const char *field, size_t max, struct err *e)
{
    char sub[64];
    const char *s;
    enum rc rc;

    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if (!json_is_object(v))
        return jcheck_bad(e, field, v, "%s must be an object with \"zh-CN\" and \"en\" texts",
                          field);
    if ((rc = check_unknown(v, field, languages, NELEM(languages), e)) != RC_OK)
        return rc;
    for (size_t i = 0; i < NELEM(languages); i++) {
        snprintf(sub, sizeof(sub), "%s.%s", field, languages[i]);
        if (json_object_get(v, languages[i]) == NULL)
            return jcheck_bad(e, sub, NULL, "%s is required", sub);
        if ((rc = want_str(json_object_get(v, languages[i]), sub, 1, max, 1, &s, e)) != RC_OK)
            return rc;
    }
    return RC_OK;
}

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

/* A path relative to examples_dir that cannot leave it: no leading '/', no
 * empty, "." or ".." segment (symlinks inside examples_dir are the admin's). */
static int is_relative_inside(const char *s)
{
    const char *seg = s;

    if (*s == '/' || *s == '\0')
        return 0;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
        if (end == NULL)
            return 1;
        seg = end + 1;
    }
}

/* An array of min..max strings of 1..MAX_PATH_ARG bytes, appended to argv. */
static enum rc want_argv(const json_t *v, const char *field, size_t min, size_t max, json_t *argv,
                         struct err *e)
{
    char sub[64];
    const char *s;
    size_t i;
    json_t *x;
    enum rc rc;

    if (!json_is_array(v) || json_array_size(v) < min || json_array_size(v) > max) {
        jcheck_bad(e, field, json_is_array(v) ? NULL : v,
                   "%s must be an array of %zu to %zu strings", field, min, max);
        if (json_is_array(v))
            err_detail(e, "got %zu items", json_array_size(v));
        return RC_EINVAL;
    }
    json_array_foreach(v, i, x)
    {
        snprintf(sub, sizeof(sub), "%s[%zu]", field, i);
        if ((rc = want_str(x, sub, 1, MAX_PATH_ARG, 0, &s, e)) != RC_OK)
            return rc;
        if (json_array_append_new(argv, json_string(s)) != 0)
            return oom(e);
    }
    return RC_OK;
}

/* The parsed fields of one template, borrowed from its document. */
struct fields {
    const char *id, *industry, *script, *interpreter, *launcher, *priority, *dataset, *strategy;
    json_int_t gpus, gpus_per_node, max_restarts, time_limit_s, order;
    json_t *argv;        /* owned: the command before the parameters */
    const json_t *model; /* borrowed, or NULL */
    json_t *params;      /* owned: the schema in its public form */
};

/* The program part of the command: interpreter + script, or command. */
static enum rc check_program(const json_t *doc, const char *examples_dir, struct fields *f,
                             struct err *e)
{
    const json_t *script = json_object_get(doc, "script");
    const json_t *interp = json_object_get(doc, "interpreter");
    const json_t *command = json_object_get(doc, "command");
    char path[MAX_PATH_ARG + 1];
    size_t dl;
    enum rc rc;

    if (script != NULL) {
        if ((rc = want_str(script, "script", 1, MAX_SCRIPT, 1, &f->script, e)) != RC_OK)
            return rc;
        if (!is_relative_inside(f->script))
            return jcheck_bad(
                e, "script", script,
                "script must be a relative path inside examples_dir, without \".\" or "
                "\"..\" segments");
    }
    if (interp != NULL) {
        if (script == NULL)
            return jcheck_bad(e, "interpreter", NULL, "interpreter is allowed only with script");
        if ((rc = want_str(interp, "interpreter", 2, MAX_SCRIPT, 1, &f->interpreter, e)) != RC_OK)
            return rc;
        if (f->interpreter[0] != '/')
            return jcheck_bad(e, "interpreter", interp, "interpreter must be an absolute path");
    }
    if (command != NULL && script != NULL)
        return jcheck_bad(e, "command", NULL, "give script or command, not both");
    if (command == NULL && script == NULL)
        return jcheck_bad(e, "script", NULL, "script (or command) is required");
    if (command != NULL) {
        if ((rc = want_argv(command, "command", 1, MAX_COMMAND, f->argv, e)) != RC_OK)
            return rc;
        if (json_string_value(json_array_get(f->argv, 0))[0] != '/')
            return jcheck_bad(e, "command[0]", json_array_get(command, 0),
                              "command[0] must be an absolute path");
        return RC_OK;
    }
    if (examples_dir == NULL || examples_dir[0] != '/')
        return jcheck_bad(e, "script", NULL,
                          "script needs the examples_dir setting (an absolute directory)");
    if (f->interpreter == NULL)
        f->interpreter = TPL_DEFAULT_INTERPRETER;
    /* One '/' between the two however examples_dir ends. */
    dl = strlen(examples_dir);
    while (dl > 1 && examples_dir[dl - 1] == '/')
        dl--;
    if (dl + 1 + strlen(f->script) > MAX_PATH_ARG)
        return jcheck_bad(e, "script", NULL, "examples_dir and script together are too long");
    snprintf(path, sizeof(path), "%.*s/%s", (int)dl, examples_dir, f->script);
    if (json_array_append_new(f->argv, json_string(f->interpreter)) != 0 ||
        json_array_append_new(f->argv, json_string(path)) != 0)
        return oom(e);
    return RC_OK;
}

/* v (required) must be an integer in min..max. */
static enum rc need_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                        json_int_t *out, struct err *e)
{
    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    return want_int(v, field, min, max, 0, out, e);
}

/* model.transformer: the shape the advisor counts activations from. */
static enum rc check_transformer(const json_t *v, struct err *e)
{
    /* Upper bounds of transformer_keys[0..5], in that order. */
    static const json_int_t max[] = {1024, 65536, 1024, 262144, 4194304, 1048576};
    json_int_t n[NELEM(max)];
    const char *kind;
    char field[48];
    enum rc rc;

    if (!json_is_object(v))
        return jcheck_bad(
            e, "model.transformer", v,
            "model.transformer must be an object of layers, hidden, heads, ffn, vocab, "
            "seq_len and kind");
    if ((rc = check_unknown(v, "model.transformer", transformer_keys, NELEM(transformer_keys),
                            e)) != RC_OK)
        return rc;
    for (size_t i = 0; i < NELEM(max); i++) {
        snprintf(field, sizeof(field), "model.transformer.%s", transformer_keys[i]);
        if ((rc = need_int(json_object_get(v, transformer_keys[i]), field, 1, max[i], &n[i], e)) !=
            RC_OK)
            return rc;
    }
    if (n[1] % n[2] != 0)
        return jcheck_bad(e, "model.transformer.heads", json_object_get(v, "heads"),
                          "model.transformer.heads must divide hidden (%" JSON_INTEGER_FORMAT ")",
                          n[1]);
    return want_enum(json_object_get(v, "kind"), "model.transformer.kind", transformer_kinds,
                     NELEM(transformer_kinds), NULL, &kind, e);
}

/* model.name: a name of the advisor's known-model table (advisor.h), so the
 * two cannot drift apart. */
static enum rc check_known_model(const json_t *v, struct err *e)
{
    char list[320] = "";
    size_t n;
    const struct adv_known *t = adv_known_table(&n);

    if (json_is_string(v) && adv_known_find(json_string_value(v)) != NULL)
        return RC_OK;
    for (size_t i = 0; i < n; i++)
        jcheck_list_add(list, sizeof(list), i, t[i].name);
    return jcheck_bad(e, "model.name", v, "model.name must be one of %s", list);
}

/* model: exactly one of a known name, a transformer shape, or a parameter
 * count with the measured activation bytes per sample (the advisor's terms). */
static enum rc check_model(const json_t *v, struct err *e)
{
    const json_t *name, *tr, *params, *act;
    json_int_t n;
    enum rc rc;

    if (!json_is_object(v))
        return jcheck_bad(e, "model", v,
                          "model must be an object with name, transformer, or params and "
                          "activation_bytes_per_sample");
    if ((rc = check_unknown(v, "model", model_keys, NELEM(model_keys), e)) != RC_OK)
        return rc;
    name = json_object_get(v, "name");
    tr = json_object_get(v, "transformer");
    params = json_object_get(v, "params");
    act = json_object_get(v, "activation_bytes_per_sample");
    if ((name != NULL) + (tr != NULL) + (params != NULL) != 1)
        return jcheck_bad(e, "model", NULL,
                          "model must have exactly one of name, transformer and params");
    if (name != NULL)
        rc = check_known_model(name, e);
    else if (tr != NULL)
        rc = check_transformer(tr, e);
    else
        rc = want_int(params, "model.params", 1, MAX_MODEL_PARAMS, 0, &n, e);
    if (rc != RC_OK)
        return rc;
    if (params == NULL && act != NULL)
        return jcheck_bad(e, "model.activation_bytes_per_sample", NULL,
                          "model.activation_bytes_per_sample goes only with model.params");
    if (params != NULL)
        return need_int(act, "model.activation_bytes_per_sample", 1, MAX_ACTIVATION_BYTES, &n, e);
    return RC_OK;
}

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
        if ((rc = want_str(x, sub, 1, MAX_ENUM_VALUE, 1, &s, e)) != RC_OK)
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
            return oom(e);
    }
    if (b[0] != NULL && b[1] != NULL &&
        (integer ? json_integer_value(b[0]) > json_integer_value(b[1])
                 : as_double(b[0]) > as_double(b[1])))
        return jcheck_bad(e, field, NULL, "%s.min must not be larger than %s.max", pfield, pfield);
    return RC_OK;
}

/* One parameter of the schema into its public form (*out new). args is the
 * template's args, seen holds the flags of the parameters before this one. */
static enum rc check_param(const char *name, const json_t *p, const json_t *args, json_t *seen,
                           json_t **out, struct err *e)
{
    char pf[80], field[128];
    const char *type, *arg;
    const json_t *v;
    json_t *pub = NULL;
    enum rc rc;

    *out = NULL;
    snprintf(pf, sizeof(pf), "params.%s", name);
    if (!json_is_object(p))
        return jcheck_bad(e, pf, p, "%s must be an object with type, label, arg and default", pf);
    if ((rc = check_unknown(p, pf, param_keys, NELEM(param_keys), e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.type", pf);
    if ((rc = want_enum(json_object_get(p, "type"), field, param_types, NELEM(param_types), NULL,
                        &type, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.label", pf);
    if ((rc = want_text(json_object_get(p, "label"), field, MAX_LABEL, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.help", pf);
    if ((v = json_object_get(p, "help")) != NULL &&
        (rc = want_text(v, field, MAX_HELP, e)) != RC_OK)
        return rc;
    snprintf(field, sizeof(field), "%s.arg", pf);
    if ((v = json_object_get(p, "arg")) == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if ((rc = want_str(v, field, 3, MAX_PARAM_ARG, 1, &arg, e)) != RC_OK)
        return rc;
    if (!is_flag(arg))
        return jcheck_bad(e, field, v, "%s must be a flag: \"--\" and then a-z, 0-9 and '-'",
                          field);
    if (has_string(seen, arg) || has_string(args, arg))
        return jcheck_bad(e, field, v,
                          "%s is already used by another parameter or the template's args", field);
    if (json_array_append(seen, (json_t *)v) != 0 ||
        (pub = json_pack("{s:s,s:O,s:O,s:O}", "type", type, "label", json_object_get(p, "label"),
                         "help",
                         json_object_get(p, "help") ? json_object_get(p, "help") : json_null(),
                         "arg", v)) == NULL)
        return oom(e);
    if (strcmp(type, "int") == 0 || strcmp(type, "float") == 0) {
        rc = check_bounds(p, pf, type[0] == 'i', pub, e);
    } else if (json_object_get(p, "min") != NULL || json_object_get(p, "max") != NULL) {
        snprintf(field, sizeof(field), "%s.%s", pf, json_object_get(p, "min") ? "min" : "max");
        rc = jcheck_bad(e, field, NULL, "%s is only for int and float parameters", field);
    } else if (json_object_set_new(pub, "min", json_null()) != 0 ||
               json_object_set_new(pub, "max", json_null()) != 0) {
        rc = oom(e);
    }
    snprintf(field, sizeof(field), "%s.values", pf);
    v = json_object_get(p, "values");
    if (rc == RC_OK && strcmp(type, "enum") == 0) {
        if (v == NULL)
            rc = jcheck_bad(e, field, NULL, "%s is required for an enum parameter", field);
        else if ((rc = check_values(v, field, e)) == RC_OK &&
                 json_object_set(pub, "values", (json_t *)v) != 0)
            rc = oom(e);
    } else if (rc == RC_OK && v != NULL) {
        rc = jcheck_bad(e, field, NULL, "%s is only for enum parameters", field);
    } else if (rc == RC_OK && json_object_set_new(pub, "values", json_null()) != 0) {
        rc = oom(e);
    }
    /* "batch" becomes the job's global_batch (tpl_expand.h), so every value
     * the schema lets a user give must be one the job spec takes. */
    if (rc == RC_OK && strcmp(name, "batch") == 0 &&
        (strcmp(type, "int") != 0 || !json_is_integer(json_object_get(p, "min")) ||
         !json_is_integer(json_object_get(p, "max")) ||
         json_integer_value(json_object_get(p, "min")) < 1 ||
         json_integer_value(json_object_get(p, "max")) > JOBSPEC_MAX_GLOBAL_BATCH))
        rc = jcheck_bad(e, pf, NULL,
                        "%s is the global batch: an int parameter with min >= 1 and max <= %d", pf,
                        JOBSPEC_MAX_GLOBAL_BATCH);
    /* The default passes the same check as a user's value (tpl_expand.h). */
    snprintf(field, sizeof(field), "%s.default", pf);
    v = json_object_get(p, "default");
    if (rc == RC_OK && v == NULL)
        rc = jcheck_bad(e, field, NULL, "%s is required", field);
    if (rc == RC_OK && (rc = tpl_param_check(pub, v, field, e)) == RC_OK &&
        json_object_set(pub, "default", (json_t *)v) != 0)
        rc = oom(e);
    if (rc == RC_OK) {
        *out = pub;
        pub = NULL;
    }
    json_decref(pub);
    return rc;
}

/* params: the ordered schema name -> parameter, into f->params. */
static enum rc check_params(const json_t *v, const json_t *args, struct fields *f, struct err *e)
{
    const char *name;
    json_t *p, *pub, *seen = json_array();
    enum rc rc = RC_OK;

    if (seen == NULL)
        return oom(e);
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
            rc = oom(e);
            goto out;
        }
    }
out:
    json_decref(seen);
    return rc;
}

/* model, strategy, env, params and order, after the job's own keys. */
static enum rc check_plan_fields(const json_t *doc, struct fields *f, struct err *e)
{
    const json_t *v;
    enum rc rc;

    if ((v = json_object_get(doc, "model")) != NULL && !json_is_null(v)) {
        if ((rc = check_model(v, e)) != RC_OK)
            return rc;
        f->model = v;
    }
    if ((rc = want_enum(json_object_get(doc, "strategy"), "strategy", strategies, NELEM(strategies),
                        "auto", &f->strategy, e)) != RC_OK)
        return rc;
    if (strcmp(f->strategy, "auto") == 0 && f->model == NULL)
        return jcheck_bad(e, "model", NULL,
                          "model is required with strategy \"auto\": the advisor plans from it");
    /* The names and values are the job spec's env, checked with its rules
     * when the template's job is (build_job). */
    v = json_object_get(doc, "env");
    if (v != NULL && (!json_is_object(v) || json_object_size(v) > MAX_ENV))
        return jcheck_bad(e, "env", v, "env must be an object of at most %d variables", MAX_ENV);
    if ((rc = check_params(json_object_get(doc, "params"), json_object_get(doc, "args"), f, e)) !=
        RC_OK)
        return rc;
    return want_int(json_object_get(doc, "order"), "order", 0, MAX_ORDER, MAX_ORDER, &f->order, e);
}

static enum rc check_fields(const json_t *doc, const char *examples_dir, struct fields *f,
                            struct err *e)
{
    const json_t *v;
    enum rc rc;

    if ((rc = check_unknown(doc, "", known_keys, NELEM(known_keys), e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "id")) == NULL)
        return jcheck_bad(e, "id", NULL, "id is required");
    if ((rc = want_str(v, "id", 1, MAX_ID, 1, &f->id, e)) != RC_OK)
        return rc;
    if (!is_slug(f->id))
        return jcheck_bad(e, "id", v,
                          "id must be 1 to %d of a-z, 0-9, '_', '-', starting with a-z or 0-9",
                          MAX_ID);
    if ((rc = want_text(json_object_get(doc, "name"), "name", MAX_NAME, e)) != RC_OK ||
        (rc = want_text(json_object_get(doc, "description"), "description", MAX_DESCRIPTION, e)) !=
            RC_OK ||
        (rc = want_enum(json_object_get(doc, "industry"), "industry", industries, NELEM(industries),
                        NULL, &f->industry, e)) != RC_OK ||
        (rc = check_program(doc, examples_dir, f, e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "args")) != NULL &&
        (rc = want_argv(v, "args", 0, MAX_ARGS, f->argv, e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "gpus")) == NULL)
        return jcheck_bad(e, "gpus", NULL, "gpus is required");
    if ((rc = want_int(v, "gpus", 1, JOBSPEC_MAX_GPUS, 0, &f->gpus, e)) != RC_OK)
        return rc;
    v = json_object_get(doc, "gpus_per_node");
    if ((rc = want_int(json_is_null(v) ? NULL : v, "gpus_per_node", 1, JOBSPEC_MAX_GPUS_PER_NODE, 0,
                       &f->gpus_per_node, e)) != RC_OK)
        return rc;
    if (f->gpus_per_node > 0 && f->gpus % f->gpus_per_node != 0)
        return jcheck_bad(e, "gpus_per_node", v, "gpus must be a multiple of gpus_per_node");
    if ((rc = want_enum(json_object_get(doc, "launcher"), "launcher", launchers, NELEM(launchers),
                        "native", &f->launcher, e)) != RC_OK ||
        (rc = want_int(json_object_get(doc, "max_restarts"), "max_restarts", 0,
                       JOBSPEC_MAX_RESTARTS, JOBSPEC_DEFAULT_RESTARTS, &f->max_restarts, e)) !=
            RC_OK ||
        (rc = want_int(json_object_get(doc, "time_limit_s"), "time_limit_s", 1,
                       JOBSPEC_MAX_TIME_LIMIT_S, JOBSPEC_DEFAULT_TIME_LIMIT_S, &f->time_limit_s,
                       e)) != RC_OK)
        return rc;
    if ((rc = want_enum(json_object_get(doc, "priority"), "priority", priorities, NELEM(priorities),
                        "normal", &f->priority, e)) != RC_OK)
        return rc;
    if ((rc = want_enum(json_object_get(doc, "dataset"), "dataset", datasets, NELEM(datasets),
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
        rc = oom(e);
        goto out;
    }
    /* Only RC_ENOMEM in practice: every default passed tpl_param_check(). */
    if ((rc = tpl_expand(pub, req, &job, e)) != RC_OK)
        goto out;
    if ((probe = json_deep_copy(job)) == NULL ||
        json_object_set_new(probe, "team", json_string("template-check")) != 0) {
        rc = oom(e);
        goto out;
    }
    err_init(&je);
    rc = jobspec_parse(probe, &spec, &je);
    if (rc == RC_ENOMEM) {
        rc = oom(e);
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
    struct fields f = {0};
    json_error_t jerr;
    json_t *doc = NULL, *job = NULL, *pub = NULL, *args, *env;
    enum rc rc;

    *out = NULL;
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL) {
        rc = jcheck_bad(e, "", NULL, "not valid JSON: %s at line %d", jerr.text, jerr.line);
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = jcheck_bad(e, "", doc, "a template must be a JSON object");
        goto out;
    }
    if ((f.argv = json_array()) == NULL || (f.params = json_object()) == NULL) {
        rc = oom(e);
        goto out;
    }
    if ((rc = check_fields(doc, examples_dir, &f, e)) != RC_OK)
        goto out;
    args = json_object_get(doc, "args");
    env = json_object_get(doc, "env");
    pub = json_pack(
        "{s:s,s:I,s:O,s:O,s:s,s:s?,s:s?,s:O?,s:o,s:I,s:o,s:s,s:I,s:I,s:s,s:s,s:O?,s:s,"
        "s:o,s:O,s:O}",
        "id", f.id, "order", (json_int_t)f.order, "name", json_object_get(doc, "name"),
        "description", json_object_get(doc, "description"), "industry", f.industry, "script",
        f.script, "interpreter", f.interpreter, "command", json_object_get(doc, "command"), "args",
        args ? json_incref(args) : json_array(), "gpus", (json_int_t)f.gpus, "gpus_per_node",
        f.gpus_per_node > 0 ? json_integer(f.gpus_per_node) : json_null(), "launcher", f.launcher,
        "max_restarts", (json_int_t)f.max_restarts, "time_limit_s", (json_int_t)f.time_limit_s,
        "priority", f.priority, "dataset", f.dataset, "model", f.model, "strategy", f.strategy,
        "env", env ? json_incref(env) : json_object(), "params", f.params, "base_command", f.argv);
    if (pub == NULL) {
        rc = oom(e);
        goto out;
    }
    if ((rc = build_job(pub, &job, e)) != RC_OK)
        goto out;
    if (json_object_set_new(pub, "job", job) != 0) {
        job = NULL;
        rc = oom(e);
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

/* Read a whole regular file of at most TPL_MAX_FILE_BYTES into *buf (owned,
 * free()). RC_EINVAL with e's message for the reason it cannot be used. */
static enum rc read_file(const char *path, char **buf, size_t *len, struct err *e)
{
    struct stat st;
    char *b = NULL;
    size_t got = 0;
    int fd = -1;
    enum rc rc = RC_EINVAL;

    *buf = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        err_set(e, RC_EINVAL, "", "cannot read the file: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(e, RC_EINVAL, "", "not a regular file");
        goto out;
    }
    if (st.st_size > TPL_MAX_FILE_BYTES) {
        err_set(e, RC_EINVAL, "", "the file is larger than %d bytes", TPL_MAX_FILE_BYTES);
        goto out;
    }
    /* One byte more than allowed, to see a file that grew since fstat. */
    if ((b = malloc(TPL_MAX_FILE_BYTES + 1)) == NULL) {
        rc = oom(e);
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, b + got, TPL_MAX_FILE_BYTES + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_set(e, RC_EINVAL, "", "cannot read the file: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got > TPL_MAX_FILE_BYTES) {
            err_set(e, RC_EINVAL, "", "the file is larger than %d bytes", TPL_MAX_FILE_BYTES);
            goto out;
        }
    }
    *buf = b;
    *len = got;
    b = NULL;
    rc = RC_OK;
out:
    free(b);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Prefix e's message with the file's path, so the operator knows which. */
static enum rc in_file(struct err *e, const char *path, enum rc rc)
{
    char msg[sizeof(e->message)];

    if (e == NULL)
        return rc;
    snprintf(msg, sizeof(msg), "%s", e->message);
    snprintf(e->message, sizeof(e->message), "%s: %s", path, msg);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted "*.json" names of dir (each and the array owned, free()). */
static enum rc list_dir(const char *dir, char ***names, size_t *count, struct err *e)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;
    enum rc rc = RC_EINVAL;

    *names = NULL;
    *count = 0;
    if (d == NULL) {
        err_set(e, RC_EINVAL, "templates_dir", "%s: cannot open the templates directory: %s", dir,
                strerror(errno));
        return RC_EINVAL;
    }
    if ((v = calloc(TPL_MAX_TEMPLATES, sizeof(*v))) == NULL) {
        rc = oom(e);
        goto out;
    }
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (n == TPL_MAX_TEMPLATES) {
            err_set(e, RC_EINVAL, "templates_dir", "%s: more than %d template files", dir,
                    TPL_MAX_TEMPLATES);
            goto out;
        }
        if ((v[n] = strdup(de->d_name)) == NULL) {
            rc = oom(e);
            goto out;
        }
        n++;
    }
    qsort(v, n, sizeof(*v), name_cmp);
    *names = v;
    *count = n;
    v = NULL;
    rc = RC_OK;
out:
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
    closedir(d);
    return rc;
}

/* Warn when the template's script is not a regular file on this host. */
static void check_script(const json_t *tpl, const char *path)
{
    const char *script = json_string_value(json_object_get(tpl, "script"));
    const char *file = json_string_value(
        json_array_get(json_object_get(tpl, "base_command"), 1)); /* after the interpreter */
    struct stat st;

    if (script == NULL || file == NULL)
        return;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        LOG_WARN("templates", "the template's script is not on this host; it must be on every node",
                 "file=\"%s\" script=\"%s\"", path, file);
}

/* Order set->list by "order", keeping file-name order among equals (a
 * stable selection: at most TPL_MAX_TEMPLATES entries). */
static enum rc sort_by_order(struct tpl_set *set, struct err *e)
{
    size_t n = json_array_size(set->list);
    json_t *sorted = json_array();
    char taken[TPL_MAX_TEMPLATES] = {0};

    if (sorted == NULL)
        return oom(e);
    for (size_t k = 0; k < n && k < TPL_MAX_TEMPLATES; k++) {
        size_t best = n;
        for (size_t i = 0; i < n && i < TPL_MAX_TEMPLATES; i++) {
            json_int_t o =
                json_integer_value(json_object_get(json_array_get(set->list, i), "order"));
            if (!taken[i] && (best == n || o < json_integer_value(json_object_get(
                                                   json_array_get(set->list, best), "order"))))
                best = i;
        }
        taken[best] = 1;
        if (json_array_append(sorted, json_array_get(set->list, best)) != 0) {
            json_decref(sorted);
            return oom(e);
        }
    }
    json_decref(set->list);
    set->list = sorted;
    return RC_OK;
}

enum rc tpl_set_load(const char *dir, const char *examples_dir, struct tpl_set **out, struct err *e)
{
    struct tpl_set *set = NULL;
    char **names = NULL, *text = NULL, path[4096];
    size_t count = 0, len = 0;
    json_t *tpl = NULL;
    enum rc rc = RC_ENOMEM;

    *out = NULL;
    if ((set = calloc(1, sizeof(*set))) == NULL || (set->list = json_array()) == NULL) {
        rc = oom(e);
        goto out;
    }
    if (dir != NULL && dir[0] != '\0' && (rc = list_dir(dir, &names, &count, e)) != RC_OK)
        goto out;
    for (size_t i = 0; i < count; i++) {
        size_t k;
        json_t *seen;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
            rc = err_set(e, RC_EINVAL, "templates_dir", "%s: the path is too long", names[i]);
            goto out;
        }
        if ((rc = read_file(path, &text, &len, e)) != RC_OK ||
            (rc = tpl_parse(text, len, examples_dir, &tpl, e)) != RC_OK) {
            rc = in_file(e, path, rc);
            goto out;
        }
        json_array_foreach(set->list, k, seen)
        {
            if (json_equal(json_object_get(seen, "id"), json_object_get(tpl, "id"))) {
                rc = in_file(e, path,
                             jcheck_bad(e, "id", json_object_get(tpl, "id"),
                                        "another template file has this id already"));
                goto out;
            }
        }
        check_script(tpl, path);
        if (json_array_append_new(set->list, tpl) != 0) {
            tpl = NULL;
            rc = oom(e);
            goto out;
        }
        tpl = NULL;
        free(text);
        text = NULL;
    }
    if ((rc = sort_by_order(set, e)) != RC_OK)
        goto out;
    *out = set;
    set = NULL;
    rc = RC_OK;
out:
    json_decref(tpl);
    free(text);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    tpl_set_free(set);
    return rc;
}

void tpl_set_free(struct tpl_set *set)
{
    if (set == NULL)
        return;
    json_decref(set->list);
    free(set);
}

size_t tpl_set_count(const struct tpl_set *set)
{
    return set != NULL ? json_array_size(set->list) : 0;
}

json_t *tpl_set_list(const struct tpl_set *set)
{
    return set != NULL ? json_deep_copy(set->list) : json_array();
}

enum rc tpl_set_get(const struct tpl_set *set, const char *id, json_t **out)
{
    size_t i;
    json_t *t;

    *out = NULL;
    if (set == NULL)
        return RC_ENOTFOUND;
    json_array_foreach(set->list, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
            *out = json_deep_copy(t);
            return *out != NULL ? RC_OK : RC_ENOMEM;
        }
    }
    return RC_ENOTFOUND;
}

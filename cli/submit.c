/*
 * submit.c - options and request bodies of "trainyard submit" and
 * "trainyard templates" (submit.h); no network here.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "msg.h"
#include "submit.h"

/* The value of option name at argv[*i]: "--name VALUE" (advancing *i) or
 * "--name=VALUE". NULL when argv[*i] is not that option; *missing is set
 * when it is but no value follows. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);

    *missing = 0;
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

/* 1 when v is valid UTF-8 (what JSON strings must be), else 0 after a
 * message on err. */
static int utf8_text(const char *opt, const char *v, FILE *err)
{
    json_t *t = json_string(v);
    int ok = t != NULL;

    json_decref(t);
    if (!ok)
        cli_errf(err, M_NOT_UTF8, opt);
    return ok;
}

static int add_param(struct cli_submit_opts *o, const char *kv, FILE *err)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) : 0;

    if (eq == NULL || n == 0) {
        cli_errf(err, M_PARAM_KV, kv);
        return -1;
    }
    if (!utf8_text("--param", kv, err))
        return -1;
    if (n >= CLI_MAX_PARAM_NAME) {
        cli_errf(err, M_PARAM_LONG, CLI_MAX_PARAM_NAME - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = kv[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_')) {
            cli_errf(err, M_PARAM_CHARS, (int)n, kv);
            return -1;
        }
    }
    for (size_t i = 0; i < o->n_params; i++) {
        if (strlen(o->params[i].name) == n && strncmp(o->params[i].name, kv, n) == 0) {
            cli_errf(err, M_PARAM_TWICE, (int)n, kv);
            return -1;
        }
    }
    if (o->n_params >= CLI_MAX_PARAMS) {
        cli_errf(err, M_PARAM_MAX, CLI_MAX_PARAMS);
        return -1;
    }
    memcpy(o->params[o->n_params].name, kv, n);
    o->params[o->n_params].name[n] = '\0';
    o->params[o->n_params].value = eq + 1;
    o->n_params++;
    return 0;
}

static int parse_gpus(const char *v, long *gpus, FILE *err)
{
    char *end = NULL;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1 || n > CLI_MAX_GPUS) {
        cli_errf(err, M_GPUS, CLI_MAX_GPUS, v);
        return -1;
    }
    *gpus = n;
    return 0;
}

/* An empty value ("--team=") is a usage error too: the server would refuse
 * it with a message about a field the user did not type. */
static int want_text(const char *opt, const char *v, const char **dst, FILE *err)
{
    if (v[0] == '\0') {
        cli_errf(err, M_NEEDS_VALUE, opt);
        return -1;
    }
    if (!utf8_text(opt, v, err))
        return -1;
    *dst = v;
    return 0;
}

int cli_submit_parse(int argc, char **argv, struct cli_submit_opts *o, FILE *err)
{
    const char *v;
    int missing = 0;

    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if ((v = opt_value(argc, argv, &i, "--template", &missing)) != NULL) {
            if (want_text("--template", v, &o->template_id, err) != 0)
                return -1;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--param", &missing)) != NULL) {
            if (add_param(o, v, err) != 0)
                return -1;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--dataset", &missing)) != NULL) {
            if (v[0] == '\0') {
                cli_errf(err, M_DATASET_EMPTY);
                return -1;
            }
            if (!utf8_text("--dataset", v, err))
                return -1;
            if (o->n_datasets >= CLI_MAX_DATASETS) {
                cli_errf(err, M_DATASET_MAX, CLI_MAX_DATASETS);
                return -1;
            }
            o->datasets[o->n_datasets++] = v;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--gpus", &missing)) != NULL) {
            if (parse_gpus(v, &o->gpus, err) != 0)
                return -1;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--team", &missing)) != NULL) {
            if (want_text("--team", v, &o->team, err) != 0)
                return -1;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--name", &missing)) != NULL) {
            if (want_text("--name", v, &o->name, err) != 0)
                return -1;
        } else if (!missing && (v = opt_value(argc, argv, &i, "--server", &missing)) != NULL) {
            if (want_text("--server", v, &o->server, err) != 0)
                return -1;
        } else if (!missing &&
                   (v = opt_value(argc, argv, &i, "--idempotency-key", &missing)) != NULL) {
            /* The server checks the characters and answers on its field. */
            if (want_text("--idempotency-key", v, &o->idempotency_key, err) != 0)
                return -1;
        } else if (missing) {
            cli_errf(err, M_NEEDS_VALUE, a);
            return -1;
        } else if (a[0] == '-' && a[1] != '\0') {
            cli_errf(err, M_UNKNOWN_OPTION, a);
            return -1;
        } else if (o->file == NULL && strchr(a, '=') == NULL) {
            o->file = a;
        } else {
            cli_errf(err, M_BARE_PARAM, a, strchr(a, '=') ? a : "NAME=VALUE");
            return -1;
        }
    }
    if (o->file != NULL && o->template_id != NULL) {
        cli_errf(err, M_FILE_OR_TEMPLATE);
        return -1;
    }
    if (o->file != NULL &&
        (o->n_params > 0 || o->n_datasets > 0 || o->gpus > 0 || o->team || o->name)) {
        cli_errf(err, M_FILE_TPL_OPTS);
        return -1;
    }
    if (o->template_id == NULL && o->file == NULL) {
        cli_errf(err, M_NEED_SPEC);
        return -1;
    }
    return 0;
}

int cli_templates_parse(int argc, char **argv, struct cli_templates_opts *o, FILE *err)
{
    const char *v;
    int missing = 0;

    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if ((v = opt_value(argc, argv, &i, "--server", &missing)) != NULL) {
            if (want_text("--server", v, &o->server, err) != 0)
                return -1;
        } else if (missing) {
            cli_errf(err, M_NEEDS_VALUE, a);
            return -1;
        } else {
            cli_errf(err, a[0] == '-' ? M_UNKNOWN_OPTION : M_EXTRA_ARG, a);
            return -1;
        }
    }
    return 0;
}

/* value typed as the schema's type says; NULL on ENOMEM. */
static json_t *typed_value(const char *type, const char *value)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    char *end = NULL;

    if (type == NULL)
        return json_string(value);
    if (strcmp(type, "int") == 0) {
        long long n;
        errno = 0;
        n = strtoll(value, &end, 10);
        if (errno == 0 && end != value && *end == '\0')
            return json_integer((json_int_t)n);
    } else if (strcmp(type, "float") == 0) {
        double d;
        errno = 0;
        d = strtod(value, &end);
        if (errno == 0 && end != value && *end == '\0' && isfinite(d))
            return json_real(d);
    } else if (strcmp(type, "bool") == 0) {
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
            if (strcasecmp(value, yes[i]) == 0)
                return json_true();
            if (strcasecmp(value, no[i]) == 0)
                return json_false();
        }
    }
    return json_string(value);
}

enum rc cli_submit_body(const struct cli_submit_opts *o, const json_t *schema, json_t **out)
{
    enum rc rc = RC_ENOMEM;
    json_t *body = NULL, *params = NULL, *ds = NULL, *v;

    *out = NULL;
    if ((body = json_object()) == NULL || (params = json_object()) == NULL ||
        json_object_set_new(body, "template", json_string(o->template_id)) != 0)
        goto out;
    for (size_t i = 0; i < o->n_params; i++) {
        const json_t *p = json_object_get(schema, o->params[i].name);
        const char *type = json_string_value(json_object_get(p, "type"));
        if ((v = typed_value(type, o->params[i].value)) == NULL ||
            json_object_set_new(params, o->params[i].name, v) != 0)
            goto out;
    }
    if (json_object_set(body, "params", params) != 0)
        goto out;
    if (o->n_datasets > 0) {
        if ((ds = json_array()) == NULL)
            goto out;
        for (size_t i = 0; i < o->n_datasets; i++) {
            if (json_array_append_new(ds, json_string(o->datasets[i])) != 0)
                goto out;
        }
        if (json_object_set(body, "datasets", ds) != 0)
            goto out;
    }
    if (o->gpus > 0 && json_object_set_new(body, "resources",
                                           json_pack("{s:I}", "gpus", (json_int_t)o->gpus)) != 0)
        goto out;
    if (o->team != NULL && json_object_set_new(body, "team", json_string(o->team)) != 0)
        goto out;
    if (o->name != NULL && json_object_set_new(body, "name", json_string(o->name)) != 0)
        goto out;
    *out = body;
    body = NULL;
    rc = RC_OK;
out:
    json_decref(ds);
    json_decref(params);
    json_decref(body);
    return rc;
}

const char *cli_user_lang(const char *lc_all, const char *lc_messages, const char *lang)
{
    const char *v = NULL;

    if (lc_all != NULL && lc_all[0] != '\0')
        v = lc_all;
    else if (lc_messages != NULL && lc_messages[0] != '\0')
        v = lc_messages;
    else if (lang != NULL && lang[0] != '\0')
        v = lang;
    if (v != NULL && strncmp(v, "en", 2) == 0)
        return "en";
    return "zh-CN";
}

const char *cli_localized(const json_t *texts, const char *lang)
{
    const char *s = json_string_value(json_object_get(texts, lang));

    if (s == NULL)
        s = json_string_value(json_object_get(texts, strcmp(lang, "en") == 0 ? "zh-CN" : "en"));
    return s ? s : "";
}

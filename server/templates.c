/*
 * templates.c - job templates: the strict validator of one file (pure), the
 * loader of a directory, and the read-only lookups (see templates.h).
 *
 * Structure: tpl_parse() checks the keys in the documented order with one
 * small checker per kind of value, each filling struct err with the field,
 * then builds the public form, whose "job" is checked once more by
 * jobspec_parse() so that a template can never offer a job the submit would
 * refuse. The loader reads files with a size cap, sorts them by name and
 * keeps the public forms in one array; lookups hand out deep copies, so no
 * request ever touches a reference count of the shared set.
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

#include "jobspec.h"
#include "log.h"

#define MAX_ID 64
#define MAX_NAME 128
#define MAX_DESCRIPTION 1024
#define MAX_SCRIPT 255
#define MAX_PATH_ARG 4096
#define MAX_COMMAND 64
#define MAX_ARGS 64
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const known_keys[] = {
    "id",          "name",         "description",  "industry", "script",
    "interpreter", "command",      "args",         "gpus",     "gpus_per_node",
    "launcher",    "max_restarts", "time_limit_s", "priority", "dataset",
};
static const char *const languages[] = {"zh-CN", "en"};
static const char *const industries[] = {"manufacturing", "ecommerce", "services", "benchmark",
                                         "general"};
static const char *const launchers[] = {"native", "torchrun", "deepspeed", "horovod"};
static const char *const priorities[] = {"low", "normal", "high"};
static const char *const datasets[] = {"synthetic", "image-folder", "text-lines", "chat-jsonl"};

struct tpl_set {
    json_t *list; /* array of public forms, owned; never NULL once loaded */
};

/* "got ..." for an error detail: short scalars as they are, else their type. */
static void describe(const json_t *v, struct err *e)
{
    if (json_is_string(v) && json_string_length(v) <= 64 &&
        strpbrk(json_string_value(v), "\"\\") == NULL)
        err_detail(e, "got \"%s\"", json_string_value(v));
    else if (json_is_string(v))
        err_detail(e, "got a string of %zu bytes", json_string_length(v));
    else if (json_is_integer(v))
        err_detail(e, "got %" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_object(v))
        err_detail(e, "got an object");
    else if (json_is_array(v))
        err_detail(e, "got an array");
    else if (json_is_real(v))
        err_detail(e, "got %g", json_real_value(v));
    else if (json_is_boolean(v))
        err_detail(e, "got %s", json_is_true(v) ? "true" : "false");
    else if (json_is_null(v))
        err_detail(e, "got null");
}

static enum rc bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
    TY_PRINTF(4, 5);

static enum rc bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(e, RC_EINVAL, field, "%s", msg);
    if (v != NULL)
        describe(v, e);
    return RC_EINVAL;
}

static enum rc oom(struct err *e)
{
    return err_set(e, RC_ENOMEM, NULL, "out of memory");
}

/* Whether s[0..len) has a C0, DEL or C1 control character (s is valid UTF-8:
 * jansson checks that when it parses). */
static int has_ctrl(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;

    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            return 1;
        if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return 1;
    }
    return 0;
}

/* v must be a string of min..max bytes without NUL (and, with no_ctrl,
 * without control characters). *out is borrowed from v. */
static enum rc want_str(const json_t *v, const char *field, size_t min, size_t max, int no_ctrl,
                        const char **out, struct err *e)
{
    size_t len;

    if (!json_is_string(v))
        return bad(e, field, v, "%s must be a string", field);
    len = json_string_length(v);
    if (len < min || len > max) {
        bad(e, field, NULL, "%s must be %zu to %zu bytes long", field, min, max);
        err_detail(e, "got %zu bytes", len);
        return RC_EINVAL;
    }
    if (memchr(json_string_value(v), '\0', len) != NULL)
        return bad(e, field, NULL, "%s must not contain NUL characters", field);
    if (no_ctrl && has_ctrl(json_string_value(v), len))
        return bad(e, field, NULL, "%s must not contain control characters", field);
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
        return bad(e, field, v,
                   "%s must be an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT,
                   field, min, max);
    *out = json_integer_value(v);
    return RC_OK;
}

/* v must be one of names; absent (NULL) it is def, or refused when def is NULL. */
static enum rc want_enum(const json_t *v, const char *field, const char *const *names, size_t n,
                         const char *def, const char **out, struct err *e)
{
    char list[160] = "";
    size_t used = 0;

    if (v == NULL && def != NULL) {
        *out = def;
        return RC_OK;
    }
    if (v == NULL)
        return bad(e, field, NULL, "%s is required", field);
    for (size_t i = 0; json_is_string(v) && i < n; i++) {
        if (json_string_length(v) == strlen(names[i]) &&
            strcmp(json_string_value(v), names[i]) == 0) {
            *out = names[i];
            return RC_OK;
        }
    }
    for (size_t i = 0; i < n && used < sizeof(list); i++) {
        int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return bad(e, field, v, "%s must be one of %s", field, list);
}

/* Refuse the smallest key (in byte order) of obj that is not in known[]. */
static enum rc check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                             size_t nknown, struct err *e)
{
    json_t *o = (json_t *)obj; /* jansson's iteration API is not const-correct */
    const char *key, *worst = NULL;
    json_t *v;
    char field[96];

    json_object_foreach(o, key, v)
    {
        int found = 0;
        for (size_t i = 0; i < nknown && !found; i++)
            found = strcmp(key, known[i]) == 0;
        if (!found && (worst == NULL || strcmp(key, worst) < 0))
            worst = key;
    }
    if (worst == NULL)
        return RC_OK;
    /* The name is shown only when it is short and plain: it comes from a file. */
    if (strlen(worst) > 48 || has_ctrl(worst, strlen(worst)) || strpbrk(worst, "\"\\") != NULL)
        worst = "?";
    snprintf(field, sizeof(field), "%s%s%s", prefix, prefix[0] ? "." : "", worst);
    return bad(e, field, NULL, "unknown field \"%s\"", worst);
}

/* A {"zh-CN": text, "en": text} object: both languages, no others. */
static enum rc want_text(const json_t *v, const char *field, size_t max, struct err *e)
{
    char sub[64];
    const char *s;
    enum rc rc;

    if (v == NULL)
        return bad(e, field, NULL, "%s is required", field);
    if (!json_is_object(v))
        return bad(e, field, v, "%s must be an object with \"zh-CN\" and \"en\" texts", field);
    if ((rc = check_unknown(v, field, languages, NELEM(languages), e)) != RC_OK)
        return rc;
    for (size_t i = 0; i < NELEM(languages); i++) {
        snprintf(sub, sizeof(sub), "%s.%s", field, languages[i]);
        if (json_object_get(v, languages[i]) == NULL)
            return bad(e, sub, NULL, "%s is required", sub);
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
        bad(e, field, json_is_array(v) ? NULL : v, "%s must be an array of %zu to %zu strings",
            field, min, max);
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
    const char *id, *industry, *script, *interpreter, *launcher, *priority, *dataset;
    json_int_t gpus, gpus_per_node, max_restarts, time_limit_s;
    json_t *argv; /* owned: the job's command */
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
            return bad(e, "script", script,
                       "script must be a relative path inside examples_dir, without \".\" or "
                       "\"..\" segments");
    }
    if (interp != NULL) {
        if (script == NULL)
            return bad(e, "interpreter", NULL, "interpreter is allowed only with script");
        if ((rc = want_str(interp, "interpreter", 2, MAX_SCRIPT, 1, &f->interpreter, e)) != RC_OK)
            return rc;
        if (f->interpreter[0] != '/')
            return bad(e, "interpreter", interp, "interpreter must be an absolute path");
    }
    if (command != NULL && script != NULL)
        return bad(e, "command", NULL, "give script or command, not both");
    if (command == NULL && script == NULL)
        return bad(e, "script", NULL, "script (or command) is required");
    if (command != NULL) {
        if ((rc = want_argv(command, "command", 1, MAX_COMMAND, f->argv, e)) != RC_OK)
            return rc;
        if (json_string_value(json_array_get(f->argv, 0))[0] != '/')
            return bad(e, "command[0]", json_array_get(command, 0),
                       "command[0] must be an absolute path");
        return RC_OK;
    }
    if (examples_dir == NULL || examples_dir[0] != '/')
        return bad(e, "script", NULL,
                   "script needs the examples_dir setting (an absolute directory)");
    if (f->interpreter == NULL)
        f->interpreter = TPL_DEFAULT_INTERPRETER;
    /* One '/' between the two however examples_dir ends. */
    dl = strlen(examples_dir);
    while (dl > 1 && examples_dir[dl - 1] == '/')
        dl--;
    if (dl + 1 + strlen(f->script) > MAX_PATH_ARG)
        return bad(e, "script", NULL, "examples_dir and script together are too long");
    snprintf(path, sizeof(path), "%.*s/%s", (int)dl, examples_dir, f->script);
    if (json_array_append_new(f->argv, json_string(f->interpreter)) != 0 ||
        json_array_append_new(f->argv, json_string(path)) != 0)
        return oom(e);
    return RC_OK;
}

static enum rc check_fields(const json_t *doc, const char *examples_dir, struct fields *f,
                            struct err *e)
{
    const json_t *v;
    enum rc rc;

    if ((rc = check_unknown(doc, "", known_keys, NELEM(known_keys), e)) != RC_OK)
        return rc;
    if ((v = json_object_get(doc, "id")) == NULL)
        return bad(e, "id", NULL, "id is required");
    if ((rc = want_str(v, "id", 1, MAX_ID, 1, &f->id, e)) != RC_OK)
        return rc;
    if (!is_slug(f->id))
        return bad(e, "id", v, "id must be 1 to %d of a-z, 0-9, '_', '-', starting with a-z or 0-9",
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
        return bad(e, "gpus", NULL, "gpus is required");
    if ((rc = want_int(v, "gpus", 1, JOBSPEC_MAX_GPUS, 0, &f->gpus, e)) != RC_OK)
        return rc;
    v = json_object_get(doc, "gpus_per_node");
    if ((rc = want_int(json_is_null(v) ? NULL : v, "gpus_per_node", 1, JOBSPEC_MAX_GPUS_PER_NODE, 0,
                       &f->gpus_per_node, e)) != RC_OK)
        return rc;
    if (f->gpus_per_node > 0 && f->gpus % f->gpus_per_node != 0)
        return bad(e, "gpus_per_node", v, "gpus must be a multiple of gpus_per_node");
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
    return want_enum(json_object_get(doc, "dataset"), "dataset", datasets, NELEM(datasets),
                     "synthetic", &f->dataset, e);
}

/* The job spec a template offers; checked by the submit's own validator. */
static enum rc build_job(const struct fields *f, json_t **out, struct err *e)
{
    json_t *job, *probe = NULL;
    struct jobspec *spec = NULL;
    struct err je;
    enum rc rc = RC_ENOMEM;

    job = json_pack("{s:s,s:O,s:s,s:{s:I,s:o},s:I,s:I,s:s,s:s}", "name", f->id, "command", f->argv,
                    "launcher", f->launcher, "resources", "gpus", (json_int_t)f->gpus,
                    "gpus_per_node",
                    f->gpus_per_node > 0 ? json_integer(f->gpus_per_node) : json_null(),
                    "max_restarts", (json_int_t)f->max_restarts, "time_limit_s",
                    (json_int_t)f->time_limit_s, "priority", f->priority, "template", f->id);
    if (job == NULL || (probe = json_deep_copy(job)) == NULL ||
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
    /* Every key was checked above against the same limits, so this is a
     * template field this module forgot to check. */
    if (NEVER(rc != RC_OK)) {
        rc = bad(e, "job", NULL, "the template's job is not a valid job spec: %s (%s)", je.message,
                 je.field);
        goto out;
    }
    *out = job;
    job = NULL;
out:
    jobspec_free(spec);
    json_decref(probe);
    json_decref(job);
    return rc;
}

enum rc tpl_parse(const char *text, size_t len, const char *examples_dir, json_t **out,
                  struct err *e)
{
    struct fields f = {0};
    json_error_t jerr;
    json_t *doc = NULL, *job = NULL, *pub = NULL, *args;
    enum rc rc;

    *out = NULL;
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL) {
        rc = bad(e, "", NULL, "not valid JSON: %s at line %d", jerr.text, jerr.line);
        goto out;
    }
    if (!json_is_object(doc)) {
        rc = bad(e, "", doc, "a template must be a JSON object");
        goto out;
    }
    if ((f.argv = json_array()) == NULL) {
        rc = oom(e);
        goto out;
    }
    if ((rc = check_fields(doc, examples_dir, &f, e)) != RC_OK ||
        (rc = build_job(&f, &job, e)) != RC_OK)
        goto out;
    args = json_object_get(doc, "args");
    pub = json_pack(
        "{s:s,s:O,s:O,s:s,s:s?,s:s?,s:O?,s:o,s:I,s:o,s:s,s:I,s:I,s:s,s:s,s:O}", "id", f.id, "name",
        json_object_get(doc, "name"), "description", json_object_get(doc, "description"),
        "industry", f.industry, "script", f.script, "interpreter", f.interpreter, "command",
        json_object_get(doc, "command"), "args", args ? json_incref(args) : json_array(), "gpus",
        (json_int_t)f.gpus, "gpus_per_node",
        f.gpus_per_node > 0 ? json_integer(f.gpus_per_node) : json_null(), "launcher", f.launcher,
        "max_restarts", (json_int_t)f.max_restarts, "time_limit_s", (json_int_t)f.time_limit_s,
        "priority", f.priority, "dataset", f.dataset, "job", job);
    if (pub == NULL) {
        rc = oom(e);
        goto out;
    }
    *out = pub;
    pub = NULL;
    rc = RC_OK;
out:
    json_decref(pub);
    json_decref(job);
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
    const char *file = json_string_value(json_array_get(
        json_object_get(json_object_get(tpl, "job"), "command"), 1)); /* after the interpreter */
    struct stat st;

    if (script == NULL || file == NULL)
        return;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        LOG_WARN("templates", "the template's script is not on this host; it must be on every node",
                 "file=\"%s\" script=\"%s\"", path, file);
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
                             bad(e, "id", json_object_get(tpl, "id"),
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

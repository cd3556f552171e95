/*
 * assign.c - assignment validation and launch plans (see assign.h).
 *
 * The environment of a rank is built, never inherited: it starts empty, takes
 * PATH/HOME/LANG/PYTHONPATH from the worker, then the job's "env" and the
 * assignment's "nccl_env" (minus any *_proxy variable: jobs run offline),
 * then the advisor's "plan_env" (TRAINYARD_* only), then the variables the
 * protocol reserves, which always win. A later set of the same name replaces
 * the earlier one, so each name appears once; but a name the job's own "env"
 * sets is never replaced by "nccl_env": the user's choice wins over the
 * server's derivation (the server leaves such names out anyway,
 * server/nccl_env.h).
 */
#include "assign.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_DS_CONFIG                                                                          \
    "{\"train_micro_batch_size_per_gpu\":1,\"gradient_accumulation_steps\":1,"                     \
    "\"zero_optimization\":{\"stage\":0}}"

const char *wrk_launcher_name(enum wrk_launcher_kind k)
{
    switch (k) {
    case WRK_LAUNCH_NATIVE:
        return "native";
    case WRK_LAUNCH_TORCHRUN:
        return "torchrun";
    case WRK_LAUNCH_DEEPSPEED:
        return "deepspeed";
    case WRK_LAUNCH_HOROVOD:
        return "horovod";
    }
    return "unknown";
}

void wrk_strv_free(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

int wrk_id_valid(const char *s)
{
    size_t n = 0;
    if (s == NULL)
        return 0;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.'))
            return 0;
        if (n >= WRK_ID_MAX)
            return 0;
    }
    return n > 0 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int env_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || isdigit((unsigned char)s[0]))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_'))
            return 0;
    }
    return 1;
}

/* A JSON string of 1..max bytes without NUL; returns the borrowed text or NULL. */
static const char *get_str(const json_t *obj, const char *key, size_t min, size_t max)
{
    const json_t *v = json_object_get(obj, key);
    size_t n;
    if (!json_is_string(v))
        return NULL;
    n = json_string_length(v);
    if (n < min || n > max || memchr(json_string_value(v), '\0', n) != NULL)
        return NULL;
    return json_string_value(v);
}

static int get_int(const json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return 0;
    if (json_integer_value(v) < lo || json_integer_value(v) > hi)
        return 0;
    *out = json_integer_value(v);
    return 1;
}

static enum rc dupstr(const char *s, char **out)
{
    *out = strdup(s);
    return *out == NULL ? RC_ENOMEM : RC_OK;
}

static enum rc bad(struct err *e, const char *field, const char *why)
{
    return err_set(e, RC_EINVAL, field, "invalid assignment: %s %s", field, why);
}

static enum rc parse_env_obj(const json_t *env, const char *field, struct wrk_assignment *a,
                             struct err *e)
{
    const char *key;
    json_t *v;

    if (env == NULL || json_is_null(env))
        return RC_OK;
    if (!json_is_object(env))
        return bad(e, field, "must be an object");
    json_object_foreach((json_t *)env, key, v)
    {
        size_t n;
        if (!env_name_valid(key))
            return bad(e, field, "has an invalid variable name");
        if (!json_is_string(v))
            return bad(e, field, "values must be strings");
        n = json_string_length(v);
        if (n > WRK_MAX_STR || memchr(json_string_value(v), '\0', n) != NULL)
            return bad(e, field, "has an invalid value");
        if (a->nenv >= WRK_MAX_ENV)
            return bad(e, field, "has too many variables");
        a->env_keys[a->nenv] = strdup(key);
        a->env_vals[a->nenv] = strdup(json_string_value(v));
        a->nenv++;
        if (a->env_keys[a->nenv - 1] == NULL || a->env_vals[a->nenv - 1] == NULL)
            return RC_ENOMEM;
    }
    return RC_OK;
}

static enum rc parse_ranks(const json_t *ranks, struct wrk_assignment *a, struct err *e)
{
    size_t n = json_array_size(ranks);
    if (!json_is_array(ranks) || n == 0 || n > WRK_MAX_RANKS)
        return bad(e, "ranks", "must be an array of 1..64 ranks");
    a->ranks = calloc(n, sizeof(*a->ranks));
    if (a->ranks == NULL)
        return RC_ENOMEM;
    a->nranks = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(ranks, i);
        const json_t *g = json_object_get(r, "gpu_indices");
        int64_t v;
        struct wrk_assign_rank *ar = &a->ranks[i];
        if (!get_int(r, "rank", 0, a->world_size - 1, &v))
            return bad(e, "ranks.rank", "must be in 0..world_size-1");
        ar->rank = (int)v;
        if (!get_int(r, "local_rank", 0, a->local_world_size - 1, &v))
            return bad(e, "ranks.local_rank", "must be in 0..local_world_size-1");
        ar->local_rank = (int)v;
        for (size_t j = 0; j < i; j++)
            if (a->ranks[j].rank == ar->rank || a->ranks[j].local_rank == ar->local_rank)
                return bad(e, "ranks", "repeats a rank");
        if (g != NULL && !json_is_array(g))
            return bad(e, "ranks.gpu_indices", "must be an array");
        if (json_array_size(g) > WRK_MAX_GPUS)
            return bad(e, "ranks.gpu_indices", "has too many entries");
        for (size_t j = 0; j < json_array_size(g); j++) {
            const json_t *gi = json_array_get(g, j);
            if (!json_is_integer(gi) || json_integer_value(gi) < 0 ||
                json_integer_value(gi) >= WRK_MAX_GPUS)
                return bad(e, "ranks.gpu_indices", "must hold GPU indices 0..63");
            ar->gpus[ar->ngpus++] = (int)json_integer_value(gi);
        }
    }
    return RC_OK;
}

static enum rc parse_command(const json_t *cmd, struct wrk_assignment *a, struct err *e)
{
    size_t n = json_array_size(cmd);
    if (!json_is_array(cmd) || n == 0 || n > WRK_MAX_ARGS)
        return bad(e, "command", "must be an array of 1..256 strings");
    a->command = calloc(n + 1, sizeof(char *));
    if (a->command == NULL)
        return RC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(cmd, i);
        size_t len;
        if (!json_is_string(s))
            return bad(e, "command", "must hold strings");
        len = json_string_length(s);
        if ((i == 0 && len == 0) || len > WRK_MAX_STR ||
            memchr(json_string_value(s), '\0', len) != NULL)
            return bad(e, "command", "holds an invalid argument");
        a->command[i] = strdup(json_string_value(s));
        if (a->command[i] == NULL)
            return RC_ENOMEM;
        a->ncommand++;
    }
    return RC_OK;
}

/*
 * An optional array of at most max absolute paths into *out (NULL-terminated,
 * owned); absent or null leaves *out NULL, an empty array gives an empty
 * vector.
 */
static enum rc parse_paths(const json_t *v, const char *field, size_t max, char ***out, size_t *n,
                           struct err *e)
{
    size_t i;
    const json_t *p;

    if (v == NULL || json_is_null(v))
        return RC_OK;
    if (!json_is_array(v) || json_array_size(v) > max)
        return bad(e, field, "must be an array of absolute paths");
    *out = calloc(json_array_size(v) + 1, sizeof(char *));
    if (*out == NULL)
        return RC_ENOMEM;
    json_array_foreach(v, i, p)
    {
        const char *s = json_string_value(p);
        if (s == NULL || s[0] != '/' || json_string_length(p) > WRK_MAX_STR ||
            strlen(s) != json_string_length(p))
            return bad(e, field, "must be an array of absolute paths");
        (*out)[i] = strdup(s);
        if ((*out)[i] == NULL)
            return RC_ENOMEM;
        (*n)++;
    }
    return RC_OK;
}

static enum rc parse_launcher(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    const char *s = get_str(obj, "launcher", 0, 32);

    if (s == NULL || s[0] == '\0' || strcmp(s, "native") == 0)
        a->launcher = WRK_LAUNCH_NATIVE;
    else if (strcmp(s, "torchrun") == 0)
        a->launcher = WRK_LAUNCH_TORCHRUN;
    else if (strcmp(s, "deepspeed") == 0)
        a->launcher = WRK_LAUNCH_DEEPSPEED;
    else if (strcmp(s, "horovod") == 0)
        a->launcher = WRK_LAUNCH_HOROVOD;
    else
        return bad(e, "launcher", "must be native, torchrun, deepspeed or horovod");
    return RC_OK;
}

/* env, then nccl_env, then plan_env: the order wrk_plan_build() relies on. */
static enum rc parse_envs(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    enum rc rc;
    size_t from;

    a->env_keys = calloc(WRK_MAX_ENV, sizeof(char *));
    a->env_vals = calloc(WRK_MAX_ENV, sizeof(char *));
    if (a->env_keys == NULL || a->env_vals == NULL)
        return RC_ENOMEM;
    if ((rc = parse_env_obj(json_object_get(obj, "env"), "env", a, e)) != RC_OK)
        return rc;
    a->nenv_job = a->nenv;
    if ((rc = parse_env_obj(json_object_get(obj, "nccl_env"), "nccl_env", a, e)) != RC_OK)
        return rc;
    /* The advisor's plan: TRAINYARD_* names only, which a job's own env
     * cannot set; the server has already left out what the job's env sets
     * itself. */
    from = a->nenv;
    if ((rc = parse_env_obj(json_object_get(obj, "plan_env"), "plan_env", a, e)) != RC_OK)
        return rc;
    for (size_t i = from; i < a->nenv; i++)
        if (strncmp(a->env_keys[i], "TRAINYARD_", 10) != 0)
            return bad(e, "plan_env", "names must start with TRAINYARD_");
    a->nplan_env = a->nenv - from;
    return RC_OK;
}

/* world_size, nnodes, node_rank, local_world_size and the rendezvous. */
static enum rc parse_topology(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    const char *s;
    int64_t v;

    if (!get_int(obj, "world_size", 1, 1 << 20, &v))
        return bad(e, "world_size", "must be a positive integer");
    a->world_size = (int)v;
    if (!get_int(obj, "nnodes", 1, a->world_size, &v))
        return bad(e, "nnodes", "must be in 1..world_size");
    a->nnodes = (int)v;
    if (!get_int(obj, "node_rank", 0, a->nnodes - 1, &v))
        return bad(e, "node_rank", "must be in 0..nnodes-1");
    a->node_rank = (int)v;
    if (!get_int(obj, "local_world_size", 1, WRK_MAX_RANKS, &v) || v > a->world_size)
        return bad(e, "local_world_size", "must be in 1..64");
    a->local_world_size = (int)v;
    s = get_str(obj, "master_addr", 1, 255);
    if (s == NULL)
        return bad(e, "master_addr", "must be a host");
    for (const char *p = s; *p; p++)
        if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
            return bad(e, "master_addr", "must be a host");
    if (dupstr(s, &a->master_addr) != RC_OK)
        return RC_ENOMEM;
    if (!get_int(obj, "master_port", 1, 65535, &v))
        return bad(e, "master_port", "must be in 1..65535");
    a->master_port = (int)v;
    return RC_OK;
}

/* A required absolute directory (at least "/x") into *out. */
static enum rc parse_abs_dir(const json_t *obj, const char *key, char **out, struct err *e)
{
    const char *s = get_str(obj, key, 2, WRK_MAX_STR);

    if (s == NULL || s[0] != '/')
        return bad(e, key, "must be an absolute path");
    return dupstr(s, out);
}

static int present(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v != NULL && !json_is_null(v);
}

/* work_dir, output_dir, checkpoint_dir and resume_from. */
static enum rc parse_dirs(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    enum rc rc;
    const char *s = "";

    if ((rc = parse_abs_dir(obj, "work_dir", &a->work_dir, e)) != RC_OK)
        return rc;
    /* Optional: a server older than the output_dir field does not send it. */
    if (present(obj, "output_dir") &&
        (rc = parse_abs_dir(obj, "output_dir", &a->output_dir, e)) != RC_OK)
        return rc;
    if ((rc = parse_abs_dir(obj, "checkpoint_dir", &a->checkpoint_dir, e)) != RC_OK)
        return rc;
    if (present(obj, "resume_from")) {
        s = get_str(obj, "resume_from", 0, WRK_MAX_STR);
        if (s == NULL || (s[0] != '\0' && s[0] != '/'))
            return bad(e, "resume_from", "must be empty or an absolute path");
    }
    if ((rc = dupstr(s, &a->resume_from)) != RC_OK)
        return rc;
    /* Optional: the account a site mapped the job's user or team to. */
    if (present(obj, "unix_account")) {
        s = get_str(obj, "unix_account", 1, WRK_IDENT_NAME_MAX);
        if (s == NULL || !wrk_ident_name_valid(s) || strcmp(s, WRK_IDENT_SELF) == 0)
            return bad(e, "unix_account", "must be an account name");
        return dupstr(s, &a->unix_account);
    }
    return RC_OK;
}

/* time_limit_s, grace_s, allowed_roots, datasets and deepspeed_config. */
static enum rc parse_limits(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    enum rc rc;
    int64_t v;
    const json_t *ds;

    if (present(obj, "time_limit_s") &&
        !get_int(obj, "time_limit_s", 0, INT64_C(1) << 40, &a->time_limit_s))
        return bad(e, "time_limit_s", "must be a non-negative integer");
    a->grace_s = 30;
    if (present(obj, "grace_s")) {
        if (!get_int(obj, "grace_s", 0, 3600, &v))
            return bad(e, "grace_s", "must be in 0..3600");
        a->grace_s = (int)v;
    }
    if ((rc = parse_paths(json_object_get(obj, "allowed_roots"), "allowed_roots",
                          WRK_MAX_SITE_ROOTS, &a->site_roots, &a->nsite_roots, e)) != RC_OK ||
        (rc = parse_paths(json_object_get(obj, "datasets"), "datasets", WRK_MAX_DATASETS,
                          &a->datasets, &a->ndatasets, e)) != RC_OK)
        return rc;
    ds = json_object_get(obj, "deepspeed_config");
    if (ds != NULL && !json_is_null(ds)) {
        if (!json_is_object(ds))
            return bad(e, "deepspeed_config", "must be an object");
        a->ds_config = json_dumps(ds, JSON_COMPACT | JSON_SORT_KEYS);
        if (a->ds_config == NULL)
            return RC_ENOMEM;
    }
    return RC_OK;
}

/* The fields in the order they are checked: the first bad one is reported. */
static enum rc parse_body(const json_t *obj, struct wrk_assignment *a, struct err *e)
{
    enum rc rc;
    const char *s;

    s = get_str(obj, "job_id", 1, WRK_ID_MAX);
    if (s == NULL || !wrk_id_valid(s))
        return bad(e, "job_id", "must be an id");
    if ((rc = dupstr(s, &a->job_id)) != RC_OK)
        return rc;
    a->attempt = 1;
    if (json_object_get(obj, "attempt") != NULL &&
        !get_int(obj, "attempt", 0, INT32_MAX, &a->attempt))
        return bad(e, "attempt", "must be a non-negative integer");
    if ((rc = parse_launcher(obj, a, e)) != RC_OK ||
        (rc = parse_command(json_object_get(obj, "command"), a, e)) != RC_OK ||
        (rc = parse_envs(obj, a, e)) != RC_OK || (rc = parse_topology(obj, a, e)) != RC_OK ||
        (rc = parse_ranks(json_object_get(obj, "ranks"), a, e)) != RC_OK)
        return rc;
    if (a->launcher != WRK_LAUNCH_TORCHRUN && a->nranks != (size_t)a->local_world_size)
        return bad(e, "ranks", "must list local_world_size ranks");
    if ((rc = parse_dirs(obj, a, e)) != RC_OK)
        return rc;
    return parse_limits(obj, a, e);
}

enum rc wrk_assignment_parse(const json_t *obj, struct wrk_assignment **out, char **attempt_id_out,
                             struct err *e)
{
    enum rc rc;
    struct wrk_assignment *a = NULL;
    const char *id;

    *out = NULL;
    if (attempt_id_out != NULL)
        *attempt_id_out = NULL;
    if (!json_is_object(obj))
        return err_set(e, RC_EINVAL, "assignments", "invalid assignment: not an object");
    id = get_str(obj, "attempt_id", 1, WRK_ID_MAX);
    if (id == NULL || !wrk_id_valid(id))
        return bad(e, "attempt_id", "must be an id");
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        return RC_ENOMEM;
    if ((rc = dupstr(id, &a->attempt_id)) != RC_OK)
        goto out;
    rc = parse_body(obj, a, e);
    if (rc == RC_OK) {
        *out = a;
        a = NULL;
    } else if (attempt_id_out != NULL) {
        *attempt_id_out = strdup(id);
    }
out:
    wrk_assignment_free(a);
    return rc;
}

void wrk_assignment_free(struct wrk_assignment *a)
{
    if (a == NULL)
        return;
    free(a->attempt_id);
    free(a->job_id);
    wrk_strv_free(a->command);
    for (size_t i = 0; i < a->nenv; i++) {
        free(a->env_keys[i]);
        free(a->env_vals[i]);
    }
    free(a->env_keys);
    free(a->env_vals);
    free(a->master_addr);
    free(a->ranks);
    free(a->work_dir);
    free(a->output_dir);
    free(a->checkpoint_dir);
    free(a->resume_from);
    free(a->ds_config);
    free(a->unix_account);
    wrk_strv_free(a->site_roots);
    wrk_strv_free(a->datasets);
    free(a);
}

/* ---- building environments ---- */

struct strv {
    char **v; /* NULL-terminated */
    size_t n, cap;
    int oom;
};

static void strv_push_owned(struct strv *s, char *str)
{
    if (str == NULL || s->oom) {
        s->oom = 1;
        free(str);
        return;
    }
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        char **nv = realloc(s->v, cap * sizeof(char *));
        if (nv == NULL) {
            s->oom = 1;
            free(str);
            return;
        }
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

static void strv_push(struct strv *s, const char *str)
{
    strv_push_owned(s, strdup(str));
}

static char *fmt_kv(const char *k, const char *v)
{
    size_t n = strlen(k) + strlen(v) + 2;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s=%s", k, v);
    return s;
}

/* Set k=v, replacing an earlier k. */
static void env_set(struct strv *s, const char *k, const char *v)
{
    size_t kl = strlen(k);
    char *kv;

    if (v == NULL)
        return;
    kv = fmt_kv(k, v);
    if (kv == NULL) {
        s->oom = 1;
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        if (strncmp(s->v[i], k, kl) == 0 && s->v[i][kl] == '=') {
            free(s->v[i]);
            s->v[i] = kv;
            return;
        }
    }
    strv_push_owned(s, kv);
}

static void env_set_int(struct strv *s, const char *k, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    env_set(s, k, buf);
}

static int is_proxy_var(const char *k)
{
    size_t n = strlen(k);
    return n >= 5 && strcasecmp(k + n - 5, "proxy") == 0;
}

/* Names the launcher owns: a job's env cannot set them (torchrun sets the rank ones itself). */
static int is_reserved(const char *k)
{
    static const char *const names[] = {
        "RANK",      "LOCAL_RANK",  "WORLD_SIZE",  "LOCAL_WORLD_SIZE",
        "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(k, names[i]) == 0)
            return 1;
    return strncmp(k, "TRAINYARD_", 10) == 0 || strncmp(k, "HOROVOD_", 8) == 0;
}

static void gpu_list(const int *g, size_t n, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < size; i++) {
        int w = snprintf(buf + off, size - off, "%s%d", i ? "," : "", g[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* Whether the job's own "env" sets k. */
static int job_sets(const struct wrk_assignment *a, const char *k)
{
    for (size_t i = 0; i < a->nenv_job; i++)
        if (strcmp(a->env_keys[i], k) == 0)
            return 1;
    return 0;
}

/* TRAINYARD_DATASETS: the job's local dataset paths as a JSON array ("[]"). */
static void env_datasets(struct strv *s, const struct wrk_assignment *a)
{
    json_t *arr = json_array();
    char *text = NULL;

    for (size_t i = 0; arr != NULL && i < a->ndatasets; i++) {
        if (json_array_append_new(arr, json_string(a->datasets[i])) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (arr != NULL)
        text = json_dumps(arr, JSON_COMPACT);
    if (text == NULL)
        s->oom = 1;
    else
        env_set(s, "TRAINYARD_DATASETS", text);
    free(text);
    json_decref(arr);
}

/* Everything but the per-rank variables. */
static void env_common(struct strv *s, const struct wrk_assignment *a,
                       const struct wrk_plan_opts *o)
{
    size_t plan_from = a->nplan_env <= a->nenv ? a->nenv - a->nplan_env : a->nenv;

    env_set(s, "PATH", o->path);
    env_set(s, "HOME", o->home);
    env_set(s, "LANG", o->lang);
    env_set(s, "PYTHONPATH", o->pythonpath);
    for (size_t i = 0; i < plan_from; i++)
        if (!is_proxy_var(a->env_keys[i]) && !is_reserved(a->env_keys[i]) &&
            !(i >= a->nenv_job && job_sets(a, a->env_keys[i])))
            env_set(s, a->env_keys[i], a->env_vals[i]);
    /* The plan's TRAINYARD_* variables; the protocol's below still win. */
    for (size_t i = plan_from; i < a->nenv; i++)
        env_set(s, a->env_keys[i], a->env_vals[i]);
    env_set(s, "TRAINYARD_JOB_ID", a->job_id);
    env_set_int(s, "TRAINYARD_ATTEMPT", a->attempt);
    env_set(s, "TRAINYARD_CHECKPOINT_DIR", a->checkpoint_dir);
    env_set(s, "TRAINYARD_RESUME_FROM", a->resume_from);
    env_set(s, "TRAINYARD_OUTPUT_DIR", a->output_dir);
    /* The job's local datasets, as checked before the launch: the first one
     * alone (what a template's script reads), and all of them as a JSON
     * array, which no path character can break. */
    if (a->ndatasets > 0)
        env_set(s, "TRAINYARD_DATA", a->datasets[0]);
    env_datasets(s, a);
    env_set(s, "HF_HUB_OFFLINE", "1");
    env_set(s, "TRANSFORMERS_OFFLINE", "1");
    env_set(s, "HF_DATASETS_OFFLINE", "1");
}

static void env_rank(struct strv *s, const struct wrk_assignment *a,
                     const struct wrk_assign_rank *r, const struct wrk_plan_opts *o)
{
    char gpus[WRK_MAX_GPUS * 4];

    env_set_int(s, "RANK", r->rank);
    env_set_int(s, "LOCAL_RANK", r->local_rank);
    env_set_int(s, "WORLD_SIZE", a->world_size);
    env_set_int(s, "LOCAL_WORLD_SIZE", a->local_world_size);
    env_set_int(s, "NODE_RANK", a->node_rank);
    env_set(s, "MASTER_ADDR", a->master_addr);
    env_set_int(s, "MASTER_PORT", a->master_port);
    gpu_list(r->gpus, (size_t)r->ngpus, gpus, sizeof(gpus));
    env_set(s, "CUDA_VISIBLE_DEVICES", gpus);
    /* The deepspeed launcher always has a ds_config.json; other launchers
     * when the plan brought one (a DeepSpeed plan under the native launcher). */
    if (a->launcher == WRK_LAUNCH_DEEPSPEED || a->ds_config != NULL)
        env_set(s, "TRAINYARD_DS_CONFIG", o->ds_config_path);
    if (a->launcher == WRK_LAUNCH_HOROVOD) {
        env_set(s, "HOROVOD_GLOO_RENDEZVOUS_ADDR", a->master_addr);
        env_set_int(s, "HOROVOD_GLOO_RENDEZVOUS_PORT", a->master_port);
        env_set(s, "HOROVOD_CONTROLLER", "gloo");
        env_set(s, "HOROVOD_CPU_OPERATIONS", "gloo");
        env_set_int(s, "HOROVOD_RANK", r->rank);
        env_set_int(s, "HOROVOD_SIZE", a->world_size);
        env_set_int(s, "HOROVOD_LOCAL_RANK", r->local_rank);
        env_set_int(s, "HOROVOD_LOCAL_SIZE", a->local_world_size);
        env_set_int(s, "HOROVOD_CROSS_RANK", a->node_rank);
        env_set_int(s, "HOROVOD_CROSS_SIZE", a->nnodes);
        env_set(s, "HOROVOD_HOSTNAME", o->hostname ? o->hostname : "localhost");
    }
}

static int is_python(const char *argv0)
{
    const char *b = strrchr(argv0, '/');
    b = b ? b + 1 : argv0;
    return strncmp(b, "python", 6) == 0 && strspn(b + 6, "0123456789.") == strlen(b + 6);
}

/*
 * torchrun with flags that parse on every Python: Debian 12's torchrun
 * (PyTorch 1.13 on Python 3.11) dies at start on its own defaults
 * ("--redirects 0 --tee 0"): Std.from_str() looks a value up by iterating
 * the IntFlag Std, which on Python 3.11 yields only OUT (1) and ERR (2), so
 * "0" and "3" turn into None (pytorch/pytorch#92319). "1" works everywhere.
 * --tee=1 writes each rank's stdout under --log_dir and copies its lines to
 * torchrun's stdout behind "[trainyard<local rank>]:", which the launcher
 * strips to ship the line as that rank's (WRK_TORCHRUN_ROLE); stderr
 * cannot be teed as well (that takes "3"), so each rank runs under
 * "sh -c 'exec \"$@\" 2>&1'" and its stderr reaches the same file. That
 * needs --no_python: the command runs as given, its python included, as
 * under the native launcher.
 *
 * torchrun runs with PYTHONUNBUFFERED=1, or its copies would wait in its
 * stdout buffer; the wrapper unsets it again unless the job's env sets it.
 * An unbuffered rank's print() writes the text and the newline apart, and
 * torchrun, reading the file between them, would copy half a line behind
 * a header and its end behind another; buffered, as under the native
 * launcher, a flushed line is one write.
 */
static void torchrun_argv(struct strv *s, const struct wrk_assignment *a,
                          const struct wrk_plan_opts *o, int job_unbuffered)
{
    char buf[320];
    size_t n = strlen(a->work_dir) + sizeof("--log_dir=/" WRK_TORCHRUN_LOG_DIR);
    char *log_dir = malloc(n);

    strv_push(s, o->torchrun ? o->torchrun : "torchrun");
    snprintf(buf, sizeof(buf), "--nnodes=%d", a->nnodes);
    strv_push(s, buf);
    snprintf(buf, sizeof(buf), "--node_rank=%d", a->node_rank);
    strv_push(s, buf);
    snprintf(buf, sizeof(buf), "--nproc_per_node=%d", a->local_world_size);
    strv_push(s, buf);
    snprintf(buf, sizeof(buf), "--master_addr=%s", a->master_addr);
    strv_push(s, buf);
    snprintf(buf, sizeof(buf), "--master_port=%d", a->master_port);
    strv_push(s, buf);
    strv_push(s, "--role=" WRK_TORCHRUN_ROLE);
    strv_push(s, "--redirects=1");
    strv_push(s, "--tee=1");
    /* In the job's work_dir, not torchrun's default under /tmp: the copies
     * of the ranks' output stay where the job's files are allowed to be. */
    if (log_dir != NULL)
        snprintf(log_dir, n, "--log_dir=%s/" WRK_TORCHRUN_LOG_DIR, a->work_dir);
    strv_push_owned(s, log_dir); /* NULL: out of memory, noted */
    strv_push(s, "--no_python");
    strv_push(s, "/bin/sh");
    strv_push(s, "-c");
    strv_push(s, job_unbuffered ? "exec \"$@\" 2>&1" : "unset PYTHONUNBUFFERED; exec \"$@\" 2>&1");
    strv_push(s, "sh");
    for (size_t i = 0; i < a->ncommand; i++)
        strv_push(s, a->command[i]);
}

void wrk_plan_free(struct wrk_plan *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nprocs; i++) {
        wrk_strv_free(p->procs[i].argv);
        wrk_strv_free(p->procs[i].envp);
    }
    free(p->procs);
    free(p->report_ranks);
    free(p->gpus);
    free(p);
}

static void plan_gpus(struct wrk_plan *p, const struct wrk_assignment *a)
{
    for (size_t i = 0; i < a->nranks; i++) {
        for (int j = 0; j < a->ranks[i].ngpus; j++) {
            int g = a->ranks[i].gpus[j], seen = 0;
            for (size_t k = 0; k < p->ngpus; k++)
                seen |= p->gpus[k] == g;
            if (!seen && p->ngpus < WRK_MAX_GPUS)
                p->gpus[p->ngpus++] = g;
        }
    }
}

enum rc wrk_plan_build(const struct wrk_assignment *a, const struct wrk_plan_opts *o,
                       struct wrk_plan **out, struct err *e)
{
    enum rc rc = RC_ENOMEM;
    struct wrk_plan *p = NULL;
    size_t nprocs = a->launcher == WRK_LAUNCH_TORCHRUN ? 1 : a->nranks;

    *out = NULL;
    if (a->launcher == WRK_LAUNCH_TORCHRUN && a->ncommand < (is_python(a->command[0]) ? 2u : 1u)) {
        rc = err_set(e, RC_EINVAL, "command", "invalid assignment: torchrun needs a script");
        goto out;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        goto out;
    p->procs = calloc(nprocs, sizeof(*p->procs));
    p->report_ranks = calloc(a->nranks, sizeof(int));
    p->gpus = calloc(WRK_MAX_GPUS, sizeof(int));
    if (p->procs == NULL || p->report_ranks == NULL || p->gpus == NULL)
        goto out;
    p->nprocs = nprocs;
    p->nreport = a->nranks;
    for (size_t i = 0; i < a->nranks; i++)
        p->report_ranks[i] = a->ranks[i].rank;
    /* torchrun: in local rank order, so its "[trainyard<local rank>]:" names
     * an index (local ranks are 0..local_world_size-1, each once, checked). */
    if (a->launcher == WRK_LAUNCH_TORCHRUN && a->nranks == (size_t)a->local_world_size)
        for (size_t i = 0; i < a->nranks; i++)
            p->report_ranks[a->ranks[i].local_rank] = a->ranks[i].rank;
    plan_gpus(p, a);
    for (size_t i = 0; i < nprocs; i++) {
        struct strv argv = {0}, env = {0};
        struct wrk_proc_spec *ps = &p->procs[i];
        env_common(&env, a, o);
        if (a->launcher == WRK_LAUNCH_TORCHRUN) {
            char gpus[WRK_MAX_GPUS * 4];
            int job_unbuffered = job_sets(a, "PYTHONUNBUFFERED");
            gpu_list(p->gpus, p->ngpus, gpus, sizeof(gpus));
            env_set(&env, "CUDA_VISIBLE_DEVICES", gpus);
            if (!job_unbuffered)
                env_set(&env, "PYTHONUNBUFFERED", "1"); /* for torchrun (torchrun_argv) */
            torchrun_argv(&argv, a, o, job_unbuffered);
            ps->rank = p->report_ranks[0];
            ps->local_rank = 0;
            ps->torchrun_tee = 1;
        } else {
            env_rank(&env, a, &a->ranks[i], o);
            for (size_t j = 0; j < a->ncommand; j++)
                strv_push(&argv, a->command[j]);
            ps->rank = a->ranks[i].rank;
            ps->local_rank = a->ranks[i].local_rank;
        }
        ps->argv = argv.v;
        ps->envp = env.v;
        if (argv.oom || env.oom || argv.v == NULL || env.v == NULL)
            goto out;
    }
    *out = p;
    p = NULL;
    rc = RC_OK;
out:
    wrk_plan_free(p);
    return rc;
}

const char *wrk_default_ds_config(void)
{
    return DEFAULT_DS_CONFIG;
}

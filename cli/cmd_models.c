/*
 * cmd_models.c - "trainyard models": the model registry (docs/serving.md,
 * "Registry"; GET /api/v1/models, GET /api/v1/models/{name}, POST
 * /api/v1/models/{name}/versions, PUT and DELETE
 * /api/v1/models/{name}/aliases/{alias}).
 *
 *   trainyard models [list] [--limit N] [--cursor C]
 *   trainyard models show NAME
 *   trainyard models register NAME --job ID [--checkpoint [STEP]] [--description TEXT]
 *   trainyard models alias NAME ALIAS VERSION
 *   trainyard models alias NAME ALIAS --delete
 *   (each also --json, --server URL)
 *
 * register hashes the files on the server and can take a while for a large
 * model; it prints the new version and its manifest digest. Exit codes:
 * cli.h (a job that did not succeed, a template that cannot serve, another
 * site: 5; a path outside the storage roots: 5).
 */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

struct models_args {
    struct cli_common co;
    const char *sub;    /* list | show | register | alias */
    const char *pos[3]; /* NAME, ALIAS, VERSION as given */
    int npos;
    const char *job;    /* --job */
    const char *desc;   /* --description */
    long limit;         /* --limit, 0 when not given */
    const char *cursor; /* --cursor */
    int checkpoint;     /* --checkpoint given */
    long step;          /* its STEP, -1 for the newest */
    int del;            /* --delete */
};

static void models_usage(FILE *f)
{
    fprintf(f, "usage: trainyard models [list] [--limit N] [--cursor C] [--json] [--server URL]\n"
               "       trainyard models show NAME [--json] [--server URL]\n"
               "       trainyard models register NAME --job ID [--checkpoint [STEP]]\n"
               "                                 [--description TEXT] [--json] [--server URL]\n"
               "       trainyard models alias NAME ALIAS VERSION [--json] [--server URL]\n"
               "       trainyard models alias NAME ALIAS --delete [--json] [--server URL]\n"
               "List your teams' models, show one with its versions and aliases, register\n"
               "a version from a succeeded job's output directory (or with --checkpoint,\n"
               "its newest checkpoint or the one at STEP), or point, move or remove an\n"
               "alias.\n");
}

/* Whether s is a non-negative decimal (a --checkpoint STEP). */
static int is_decimal(const char *s)
{
    return s[0] != '\0' && strspn(s, "0123456789") == strlen(s);
}

static int parse(int argc, char **argv, struct models_args *a, FILE *err)
{
    const char *v;
    int r;

    a->step = -1;
    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &a->co, err)) != 0) {
            if (r < 0)
                return -1;
        } else if ((r = cli_opt(argc, argv, &i, "--job", &a->job, err)) != 0) {
            if (r < 0)
                return -1;
        } else if ((r = cli_opt(argc, argv, &i, "--description", &a->desc, err)) != 0) {
            if (r < 0)
                return -1;
        } else if ((r = cli_opt(argc, argv, &i, "--cursor", &a->cursor, err)) != 0) {
            if (r < 0)
                return -1;
        } else if ((r = cli_opt(argc, argv, &i, "--limit", &v, err)) != 0) {
            if (r < 0 || cli_long("--limit", v, 1, 500, &a->limit, err) != 0)
                return -1;
        } else if (strcmp(argv[i], "--checkpoint") == 0) {
            a->checkpoint = 1;
            /* An optional value: the next argument when it is a number. */
            if (i + 1 < argc && is_decimal(argv[i + 1]) &&
                cli_long("--checkpoint", argv[++i], 0, 9007199254740991L, &a->step, err) != 0)
                return -1;
        } else if (strncmp(argv[i], "--checkpoint=", 13) == 0) {
            a->checkpoint = 1;
            if (cli_long("--checkpoint", argv[i] + 13, 0, 9007199254740991L, &a->step, err) != 0)
                return -1;
        } else if (strcmp(argv[i], "--delete") == 0) {
            a->del = 1;
        } else if (argv[i][0] != '-' && a->sub == NULL) {
            a->sub = argv[i];
        } else if (argv[i][0] != '-' && a->npos < 3) {
            a->pos[a->npos++] = argv[i];
        } else {
            return cli_bad_arg(argv[i], err);
        }
    }
    return 0;
}

/* The positionals and options each subcommand takes; -1 after a message. */
static int check_args(struct models_args *a, FILE *err)
{
    static const char *const names[] = {"NAME", "ALIAS", "VERSION"};
    int want, reg, alias;

    if (a->sub == NULL)
        a->sub = "list";
    reg = strcmp(a->sub, "register") == 0;
    alias = strcmp(a->sub, "alias") == 0;
    if (strcmp(a->sub, "list") == 0)
        want = 0;
    else if (strcmp(a->sub, "show") == 0 || reg)
        want = 1;
    else if (alias)
        want = a->del ? 2 : 3;
    else
        return cli_bad_arg(a->sub, err);
    if (a->npos > want)
        return cli_bad_arg(a->pos[want], err);
    if (a->npos < want) {
        cli_errf(err, M_REQUIRED, names[a->npos]);
        return -1;
    }
    if (reg && a->job == NULL) {
        cli_errf(err, M_REQUIRED, "--job");
        return -1;
    }
    if (!reg && (a->job || a->desc || a->checkpoint))
        return cli_bad_arg(a->job ? "--job" : a->desc ? "--description" : "--checkpoint", err);
    if (!alias && a->del)
        return cli_bad_arg("--delete", err);
    if (strcmp(a->sub, "list") != 0 && (a->limit || a->cursor))
        return cli_bad_arg(a->limit ? "--limit" : "--cursor", err);
    if (alias && !a->del && !is_decimal(a->pos[2])) {
        cli_errf(err, M_BAD_INT, "VERSION", 1L, 2147483647L, a->pos[2]);
        return -1;
    }
    return 0;
}

/* method path (body borrowed, may be NULL); *resp the object on want. */
static int request(struct cli_client *c, const char *method, const char *path, const json_t *body,
                   enum cli_msg what, long want, json_t **resp, FILE *err)
{
    long status = 0;
    enum rc rc = cli_client_request(c, method, path, body, &status, resp, err);

    if (rc != RC_OK)
        return cli_exit_for_rc(rc);
    if (status != want)
        return cli_refused(err, what, status, *resp);
    if (!json_is_object(*resp)) {
        cli_errf(err, M_BAD_REPLY);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* "/api/v1/models/<name>" + tail, each segment escaped (tail may be NULL). */
static int model_path(char *buf, size_t n, const char *name, const char *mid, const char *seg,
                      FILE *err)
{
    char a[256], b[256];
    int k;

    if (cli_path(a, sizeof(a), "/api/v1/models/%s", name) != RC_OK ||
        (seg != NULL && cli_path(b, sizeof(b), "%s", seg) != RC_OK)) {
        cli_errf(err, M_OOM);
        return -1;
    }
    k = snprintf(buf, n, "%s%s%s", a, mid ? mid : "", seg ? b : "");
    if (k < 0 || (size_t)k >= n) {
        cli_errf(err, M_OOM);
        return -1;
    }
    return 0;
}

/* {"prod": 2, ...} as "prod=2 canary=3" into buf. */
static const char *aliases_cell(const json_t *aliases, char *buf, size_t n)
{
    const char *k;
    json_t *v;
    size_t len = 0;

    buf[0] = '\0';
    json_object_foreach((json_t *)aliases, k, v)
    {
        int w = snprintf(buf + len, n - len, "%s%s=%" JSON_INTEGER_FORMAT, len ? " " : "", k,
                         json_integer_value(v));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    return buf;
}

static int list_models(struct cli_client *c, const struct models_args *a, FILE *out, FILE *err)
{
    static const int right[] = {0, 0, 0, 1, 1, 0};
    char path[512], lim[32] = "";
    struct cli_table *t = NULL;
    json_t *resp = NULL, *x;
    int code;
    size_t i;

    if (a->limit > 0)
        snprintf(lim, sizeof(lim), "limit=%ld", a->limit);
    if (a->cursor != NULL) {
        char cur[300];
        if (cli_path(cur, sizeof(cur), "cursor=%s", a->cursor) != RC_OK) {
            cli_errf(err, M_OOM);
            return CLI_EXIT_FAIL;
        }
        snprintf(path, sizeof(path), "/api/v1/models?%s%s%s", cur, lim[0] ? "&" : "", lim);
    } else {
        snprintf(path, sizeof(path), "/api/v1/models%s%s", lim[0] ? "?" : "", lim);
    }
    if ((code = request(c, "GET", path, NULL, M_W_MODELS, 200, &resp, err)) != CLI_EXIT_OK)
        goto out;
    code = CLI_EXIT_FAIL;
    if (!json_is_array(json_object_get(resp, "models"))) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (a->co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    {
        const char *hdr[] = {cli_msg(H_NAME),   cli_msg(H_TEAM),     cli_msg(H_SITE),
                             cli_msg(H_LATEST), cli_msg(H_VERSIONS), cli_msg(H_ALIASES)};
        if ((t = cli_table_new(6, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
            goto oom;
        json_array_foreach(json_object_get(resp, "models"), i, x)
        {
            char b[6][256];
            const char *row[] = {cli_cell(json_object_get(x, "name"), b[0], 256),
                                 cli_cell(json_object_get(x, "team"), b[1], 256),
                                 cli_cell(json_object_get(x, "site"), b[2], 256),
                                 cli_cell(json_object_get(x, "latest_version"), b[3], 256),
                                 cli_cell(json_object_get(x, "versions"), b[4], 256),
                                 aliases_cell(json_object_get(x, "aliases"), b[5], 256)};
            if (cli_table_add(t, row) != RC_OK)
                goto oom;
        }
        cli_table_print(t, out);
        if (json_is_string(json_object_get(resp, "next_cursor"))) {
            char line[512];
            cli_msgf(line, sizeof(line), M_MORE_MODELS,
                     json_string_value(json_object_get(resp, "next_cursor")));
            fprintf(out, "%s\n", line);
        }
    }
    code = CLI_EXIT_OK;
    goto out;
oom:
    cli_errf(err, M_OOM);
out:
    cli_table_free(t);
    json_decref(resp);
    return code;
}

static int show_model(struct cli_client *c, const struct models_args *a, FILE *out, FILE *err)
{
    static const int right[] = {1, 0, 1, 1, 0, 1, 0, 0, 0};
    char path[512], b[8][256], line[512];
    struct cli_table *t = NULL;
    json_t *resp = NULL, *x;
    int code;
    size_t i;

    if (model_path(path, sizeof(path), a->pos[0], NULL, NULL, err) != 0)
        return CLI_EXIT_FAIL;
    if ((code = request(c, "GET", path, NULL, M_W_MODEL, 200, &resp, err)) != CLI_EXIT_OK)
        goto out;
    if (a->co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    code = CLI_EXIT_FAIL;
    cli_msgf(line, sizeof(line), M_MODEL_HEAD, cli_cell(json_object_get(resp, "name"), b[0], 256),
             cli_cell(json_object_get(resp, "team"), b[1], 256),
             cli_cell(json_object_get(resp, "site"), b[2], 256),
             aliases_cell(json_object_get(resp, "aliases"), b[3], 256));
    fprintf(out, "%s\n", line);
    {
        const char *hdr[] = {cli_msg(H_VERSION),  cli_msg(H_SOURCE),  cli_msg(H_JOB),
                             cli_msg(H_STEP),     cli_msg(H_SERVE),   cli_msg(H_FILES),
                             cli_msg(H_MANIFEST), cli_msg(H_LINEAGE), cli_msg(H_CREATED)};
        if ((t = cli_table_new(9, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
            goto oom;
        json_array_foreach(json_object_get(resp, "versions"), i, x)
        {
            char sha[16], created[64];
            const char *row[9];
            snprintf(sha, sizeof(sha), "%.12s",
                     json_string_value(json_object_get(x, "manifest_sha256"))
                         ? json_string_value(json_object_get(x, "manifest_sha256"))
                         : "");
            row[0] = cli_cell(json_object_get(x, "version"), b[0], 256);
            row[1] = cli_cell(json_object_get(x, "source_kind"), b[1], 256);
            row[2] = cli_cell(json_object_get(x, "source_job_id"), b[2], 256);
            row[3] = cli_cell(json_object_get(x, "source_step"), b[3], 256);
            row[4] = cli_cell(json_object_get(x, "serve_kind"), b[4], 256);
            row[5] = cli_cell(json_object_get(x, "files"), b[5], 256);
            row[6] = sha;
            row[7] = cli_msg(json_is_true(json_object_get(x, "lineage_complete"))
                                 ? M_LINEAGE_COMPLETE
                                 : M_LINEAGE_INCOMPLETE);
            row[8] = cli_cell_time(json_object_get(x, "created_at"), created, 64);
            if (cli_table_add(t, row) != RC_OK)
                goto oom;
        }
        cli_table_print(t, out);
    }
    code = CLI_EXIT_OK;
    goto out;
oom:
    cli_errf(err, M_OOM);
out:
    cli_table_free(t);
    json_decref(resp);
    return code;
}

static int register_version(struct cli_client *c, const struct models_args *a, FILE *out, FILE *err)
{
    char path[512], b[4][256], line[768];
    json_t *body = NULL, *resp = NULL;
    int code = CLI_EXIT_FAIL;

    if (model_path(path, sizeof(path), a->pos[0], "/versions", NULL, err) != 0)
        return CLI_EXIT_FAIL;
    body =
        json_pack("{s:s,s:s,s:s}", "job_id", a->job, "source",
                  a->checkpoint ? "checkpoint" : "output", "description", a->desc ? a->desc : "");
    if (body != NULL && a->checkpoint && a->step >= 0 &&
        json_object_set_new(body, "step", json_integer(a->step)) != 0) {
        json_decref(body);
        body = NULL;
    }
    if (body == NULL) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if ((code = request(c, "POST", path, body, M_W_MODEL_REGISTER, 201, &resp, err)) != CLI_EXIT_OK)
        goto out;
    if (a->co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    cli_msgf(line, sizeof(line), M_MODEL_REGISTERED, a->pos[0],
             cli_cell(json_object_get(resp, "version"), b[0], 256),
             cli_cell(json_object_get(resp, "files"), b[1], 256),
             cli_cell(json_object_get(resp, "manifest_sha256"), b[2], 256));
    fprintf(out, "%s\n", line);
    if (json_is_false(json_object_get(resp, "lineage_complete")))
        fprintf(out, "%s\n", cli_msg(M_LINEAGE_WARNING));
out:
    json_decref(body);
    json_decref(resp);
    return code;
}

static int change_alias(struct cli_client *c, const struct models_args *a, FILE *out, FILE *err)
{
    char path[768], b[2][256], line[512];
    json_t *body = NULL, *resp = NULL, *from;
    long v = 0;
    int code = CLI_EXIT_FAIL;

    if (model_path(path, sizeof(path), a->pos[0], "/aliases/", a->pos[1], err) != 0)
        return CLI_EXIT_FAIL;
    if (!a->del) {
        if (cli_long("VERSION", a->pos[2], 1, 2147483647L, &v, err) != 0)
            return CLI_EXIT_USAGE;
        if ((body = json_pack("{s:I}", "version", (json_int_t)v)) == NULL) {
            cli_errf(err, M_OOM);
            return CLI_EXIT_FAIL;
        }
    }
    if ((code = request(c, a->del ? "DELETE" : "PUT", path, body, M_W_MODEL_ALIAS, 200, &resp,
                        err)) != CLI_EXIT_OK)
        goto out;
    if (a->co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    from = json_object_get(resp, "from");
    if (a->del)
        cli_msgf(line, sizeof(line), M_ALIAS_DELETED, a->pos[1], a->pos[0],
                 cli_cell(json_object_get(resp, "version"), b[0], 256));
    else if (json_is_integer(from))
        cli_msgf(line, sizeof(line), M_ALIAS_MOVED, a->pos[1], a->pos[0],
                 cli_cell(json_object_get(resp, "version"), b[0], 256), cli_cell(from, b[1], 256));
    else
        cli_msgf(line, sizeof(line), M_ALIAS_SET, a->pos[1], a->pos[0],
                 cli_cell(json_object_get(resp, "version"), b[0], 256));
    fprintf(out, "%s\n", line);
out:
    json_decref(body);
    json_decref(resp);
    return code;
}

int cli_cmd_models(int argc, char **argv, FILE *out, FILE *err)
{
    struct models_args a;
    struct cli_client *c = NULL;
    int code;

    memset(&a, 0, sizeof(a));
    if (parse(argc, argv, &a, err) != 0)
        return cli_usage_error(err, "models");
    if (a.co.help) {
        models_usage(out);
        return CLI_EXIT_OK;
    }
    if (check_args(&a, err) != 0)
        return cli_usage_error(err, "models");
    if ((code = cli_connect(a.co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if (strcmp(a.sub, "list") == 0)
        code = list_models(c, &a, out, err);
    else if (strcmp(a.sub, "show") == 0)
        code = show_model(c, &a, out, err);
    else if (strcmp(a.sub, "register") == 0)
        code = register_version(c, &a, out, err);
    else
        code = change_alias(c, &a, out, err);
out:
    cli_client_free(c);
    return code;
}

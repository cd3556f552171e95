/*
 * cmd_join_tokens.c - "trainyard nodes join-tokens": the join tokens new
 * worker nodes spend once (admins only; GET/POST /api/v1/nodes/join-tokens,
 * DELETE /api/v1/nodes/join-tokens/{id}).
 *
 *   trainyard nodes join-tokens [list]
 *   trainyard nodes join-tokens create [--uses N] [--ttl-s N] [--node NAME]
 *   trainyard nodes join-tokens revoke ID
 *   (each also --json, --server URL)
 *
 * The list never shows a token's text: the server keeps only its hash. A
 * created token's text is printed once, alone on the last line of stdout,
 * for the worker's --join-token-file or TRAINYARD_JOIN_TOKEN (never its
 * command line). --node binds the token to one node name: it joins only as
 * that node, and may replace the credential of an existing node of that
 * name (a reinstalled node). Exit codes: cli.h (revoking a revoked token: 5).
 */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

/* What a join-tokens command line asked for. */
struct jt_args {
    const char *sub;  /* "list", "create" or "revoke" */
    const char *id;   /* revoke's ID */
    const char *node; /* create's --node, or NULL */
    long uses;        /* create's --uses, 0: the server's default */
    long ttl_s;       /* create's --ttl-s, 0: the server's default */
};

static void join_tokens_usage(FILE *f)
{
    fprintf(f, "usage: trainyard nodes join-tokens [list] [--json] [--server URL]\n"
               "       trainyard nodes join-tokens create [--uses N] [--ttl-s N] [--node NAME]\n"
               "                                         [--json] [--server URL]\n"
               "       trainyard nodes join-tokens revoke ID [--json] [--server URL]\n"
               "List the join tokens (never their text), create one (its text is shown once,\n"
               "as the last line: give it to the worker in a mode 0600 file, --join-token-file,\n"
               "or in TRAINYARD_JOIN_TOKEN, never on its command line), or revoke one. --node\n"
               "binds the token to that node name, to re-join a reinstalled node. Admins only.\n");
}

/* One request: CLI_EXIT_OK with *resp when the answer is want, else the exit
 * code after saying why (what: the enum cli_msg of what failed). */
static int call(struct cli_client *c, const char *method, const char *path, json_t *body, long want,
                int what, json_t **resp, FILE *err)
{
    long status = 0;
    enum rc rc = cli_client_request(c, method, path, body, &status, resp, err);

    if (rc != RC_OK)
        return cli_exit_for_rc(rc);
    if (status != want)
        return cli_refused(err, what, status, *resp);
    return CLI_EXIT_OK;
}

/* How a column of the list shows its token's field. */
enum jt_cell { JT_TEXT, JT_TIME, JT_USES };

/* The list's columns: header, field, how it is shown. */
static const struct {
    enum cli_msg header;
    const char *key;
    enum jt_cell kind;
} COLS[] = {
    {H_ID, "id", JT_TEXT},           {H_CREATED, "created_at", JT_TIME},
    {H_USER, "created_by", JT_TEXT}, {H_EXPIRES, "expires_at", JT_TIME},
    {H_USED, "used", JT_USES},       {H_NODE, "node", JT_TEXT},
    {H_STATE, "state", JT_TEXT},
};
#define NCOLS (sizeof(COLS) / sizeof(COLS[0]))

/* One cell of token x; "1/3" for the uses spent of the uses made for ("1"
 * alone for a token made before the server counted them). */
static const char *cell(const json_t *x, size_t col, char *buf, size_t n)
{
    const json_t *v = json_object_get(x, COLS[col].key), *uses = json_object_get(x, "uses");
    char used[32];

    if (COLS[col].kind == JT_TIME)
        return cli_cell_time(v, buf, n);
    if (COLS[col].kind == JT_USES && json_is_integer(uses)) {
        snprintf(buf, n, "%s/%" JSON_INTEGER_FORMAT, cli_cell(v, used, sizeof(used)),
                 json_integer_value(uses));
        return buf;
    }
    return cli_cell(v, buf, n);
}

/* Add token x's row to t, or the header when x is NULL: 0, or -1 when out
 * of memory. */
static int add_row(struct cli_table *t, const json_t *x)
{
    const char *line[NCOLS];
    char b[NCOLS][64];

    for (size_t k = 0; k < NCOLS; k++)
        line[k] = x == NULL ? cli_msg(COLS[k].header) : cell(x, k, b[k], sizeof(b[k]));
    return cli_table_add(t, line) == RC_OK ? 0 : -1;
}

static int print_list(const json_t *rows, FILE *out, FILE *err)
{
    static const int right[NCOLS] = {1, 0, 0, 0, 1, 0, 0};
    struct cli_table *t = cli_table_new(NCOLS, right);
    int ok = t != NULL && add_row(t, NULL) == 0;

    for (size_t i = 0; ok && i < json_array_size(rows); i++)
        ok = add_row(t, json_array_get(rows, i)) == 0;
    if (ok)
        cli_table_print(t, out);
    else
        cli_errf(err, M_OOM);
    cli_table_free(t);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* The create request's body: only what was given, so the server's defaults
 * hold for the rest. NULL when out of memory. */
static json_t *create_body(const struct jt_args *a)
{
    json_t *body = json_object();

    if (body == NULL ||
        (a->uses > 0 && json_object_set_new(body, "uses", json_integer(a->uses)) != 0) ||
        (a->ttl_s > 0 && json_object_set_new(body, "ttl_s", json_integer(a->ttl_s)) != 0) ||
        (a->node != NULL && json_object_set_new(body, "node", json_string(a->node)) != 0)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

static int run(struct cli_client *c, const struct jt_args *a, int json, FILE *out, FILE *err)
{
    json_t *body = NULL, *resp = NULL;
    char path[128], line[512], b[64], e[64];
    const char *tok = NULL;
    int code = CLI_EXIT_FAIL;

    if (strcmp(a->sub, "list") == 0) {
        code = call(c, "GET", "/api/v1/nodes/join-tokens", NULL, 200, M_W_JOIN_TOKENS, &resp, err);
        if (code == CLI_EXIT_OK && !json_is_array(json_object_get(resp, "join_tokens"))) {
            cli_errf(err, M_BAD_REPLY);
            code = CLI_EXIT_FAIL;
        }
    } else if (strcmp(a->sub, "create") == 0) {
        if ((body = create_body(a)) == NULL) {
            cli_errf(err, M_OOM);
            goto out;
        }
        code = call(c, "POST", "/api/v1/nodes/join-tokens", body, 201, M_W_JOIN_TOKEN_CREATE, &resp,
                    err);
        if (code == CLI_EXIT_OK &&
            (tok = json_string_value(json_object_get(resp, "token"))) == NULL) {
            cli_errf(err, M_BAD_REPLY);
            code = CLI_EXIT_FAIL;
        }
    } else if (cli_path(path, sizeof(path), "/api/v1/nodes/join-tokens/%s", a->id) != RC_OK) {
        cli_errf(err, M_OOM);
    } else {
        code = call(c, "DELETE", path, NULL, 200, M_W_JOIN_TOKEN_REVOKE, &resp, err);
    }
    if (code != CLI_EXIT_OK)
        goto out;
    if (json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    } else if (strcmp(a->sub, "list") == 0) {
        code = print_list(json_object_get(resp, "join_tokens"), out, err);
    } else if (tok != NULL) {
        cli_msgf(line, sizeof(line), M_JOIN_TOKEN_CREATED,
                 cli_cell(json_object_get(resp, "id"), b, sizeof(b)),
                 cli_cell_time(json_object_get(resp, "expires_at"), e, sizeof(e)));
        fprintf(out, "%s\n%s\n", line, tok);
    } else {
        cli_msgf(line, sizeof(line), M_JOIN_TOKEN_REVOKED, a->id);
        fprintf(out, "%s\n", line);
    }
out:
    json_decref(body);
    json_decref(resp);
    return code;
}

/* One option or word of argv[*i]: 0, or the usage error's exit code. */
static int parse_one(int argc, char **argv, int *i, struct jt_args *a, struct cli_common *co,
                     FILE *err)
{
    const char *v;
    int r;

    if ((r = cli_common_opt(argc, argv, i, co, err)) != 0)
        return r < 0 ? cli_usage_error(err, "nodes") : 0;
    if ((r = cli_opt(argc, argv, i, "--uses", &v, err)) != 0)
        return r < 0 || cli_long("--uses", v, 1, 10000, &a->uses, err) != 0
                   ? cli_usage_error(err, "nodes")
                   : 0;
    if ((r = cli_opt(argc, argv, i, "--ttl-s", &v, err)) != 0)
        return r < 0 || cli_long("--ttl-s", v, 60, 30L * 86400, &a->ttl_s, err) != 0
                   ? cli_usage_error(err, "nodes")
                   : 0;
    if ((r = cli_opt(argc, argv, i, "--node", &a->node, err)) != 0)
        return r < 0 ? cli_usage_error(err, "nodes") : 0;
    if (argv[*i][0] != '-' && a->sub == NULL) {
        a->sub = argv[*i];
        return 0;
    }
    if (argv[*i][0] != '-' && a->id == NULL) {
        a->id = argv[*i];
        return 0;
    }
    cli_bad_arg(argv[*i], err);
    return cli_usage_error(err, "nodes");
}

int cli_cmd_join_tokens(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    struct jt_args a = {0};
    struct cli_client *c = NULL;
    int code, creating;

    for (int i = 1; i < argc; i++)
        if ((code = parse_one(argc, argv, &i, &a, &co, err)) != 0)
            return code;
    if (co.help) {
        join_tokens_usage(out);
        return CLI_EXIT_OK;
    }
    if (a.sub == NULL)
        a.sub = "list";
    creating = strcmp(a.sub, "create") == 0;
    if (strcmp(a.sub, "list") != 0 && !creating && strcmp(a.sub, "revoke") != 0) {
        cli_bad_arg(a.sub, err);
        return cli_usage_error(err, "nodes");
    }
    if (strcmp(a.sub, "revoke") == 0 && a.id == NULL) {
        cli_errf(err, M_REQUIRED, "ID");
        return cli_usage_error(err, "nodes");
    }
    if ((strcmp(a.sub, "revoke") != 0 && a.id != NULL) ||
        (!creating && (a.uses > 0 || a.ttl_s > 0 || a.node != NULL))) {
        cli_bad_arg(a.id != NULL     ? a.id
                    : a.node != NULL ? "--node"
                    : a.uses > 0     ? "--uses"
                                     : "--ttl-s",
                    err);
        return cli_usage_error(err, "nodes");
    }
    if ((code = cli_connect(co.server, &c, err)) == CLI_EXIT_OK)
        code = run(c, &a, co.json, out, err);
    cli_client_free(c);
    return code;
}

/*
 * cmd_tokens.c - "trainyard tokens": the user's API tokens
 * (GET/POST /api/v1/tokens, DELETE /api/v1/tokens/{id}).
 *
 *   trainyard tokens [list] [--all]
 *   trainyard tokens create NAME [--expires-in-s N]
 *   trainyard tokens revoke ID
 *   (each also --json, --server URL)
 *
 * A created token's secret is printed once, on its own line on stdout
 * (the server keeps only its hash), so `trainyard tokens create ci | tail
 * -1` hands it to a pipeline. Exit codes: cli.h (revoking a revoked token:
 * 5).
 */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

static void tokens_usage(FILE *f)
{
    fprintf(f, "usage: trainyard tokens [list] [--all] [--json] [--server URL]\n"
               "       trainyard tokens create NAME [--expires-in-s N] [--json] [--server URL]\n"
               "       trainyard tokens revoke ID [--json] [--server URL]\n"
               "List your API tokens (--all: everyone's, admins only), create one (its\n"
               "secret is shown once, as the last line), or revoke one.\n");
}

static int list_tokens(struct cli_client *c, int all, int json, FILE *out, FILE *err)
{
    struct cli_table *t = NULL;
    json_t *resp = NULL, *x;
    long status = 0;
    int code = CLI_EXIT_FAIL;
    size_t i;
    enum rc rc;

    rc = cli_client_request(c, "GET", all ? "/api/v1/tokens?all=1" : "/api/v1/tokens", NULL,
                            &status, &resp, err);
    if (rc != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_TOKENS, status, resp);
        goto out;
    }
    if (!json_is_array(json_object_get(resp, "tokens"))) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    {
        static const int right[] = {1, 0, 0, 0, 0, 0};
        const char *hdr[] = {cli_msg(H_ID),      cli_msg(H_NAME),      cli_msg(H_CREATED),
                             cli_msg(H_EXPIRES), cli_msg(H_LAST_USED), cli_msg(H_REVOKED)};
        if ((t = cli_table_new(6, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
            goto oom;
        json_array_foreach(json_object_get(resp, "tokens"), i, x)
        {
            char b[6][64];
            const char *row[] = {cli_cell(json_object_get(x, "id"), b[0], 64),
                                 cli_cell(json_object_get(x, "name"), b[1], 64),
                                 cli_cell_time(json_object_get(x, "created_at"), b[2], 64),
                                 cli_cell_time(json_object_get(x, "expires_at"), b[3], 64),
                                 cli_cell_time(json_object_get(x, "last_used_at"), b[4], 64),
                                 cli_cell_time(json_object_get(x, "revoked_at"), b[5], 64)};
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

static int create_token(struct cli_client *c, const char *name, long expires, int json, FILE *out,
                        FILE *err)
{
    json_t *body = NULL, *resp = NULL;
    long status = 0;
    int code = CLI_EXIT_FAIL;
    char b[64], line[512];
    const char *tok;
    enum rc rc;

    body = expires > 0 ? json_pack("{s:s,s:I}", "name", name, "expires_in_s", (json_int_t)expires)
                       : json_pack("{s:s}", "name", name);
    if (body == NULL) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if ((rc = cli_client_request(c, "POST", "/api/v1/tokens", body, &status, &resp, err)) !=
        RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 201) {
        code = cli_refused(err, M_W_TOKEN_CREATE, status, resp);
        goto out;
    }
    if ((tok = json_string_value(json_object_get(resp, "token"))) == NULL) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    cli_msgf(line, sizeof(line), M_TOKEN_CREATED, cli_cell(json_object_get(resp, "id"), b, 64),
             name);
    fprintf(out, "%s\n%s\n", line, tok);
    code = CLI_EXIT_OK;
out:
    json_decref(body);
    json_decref(resp);
    return code;
}

static int revoke_token(struct cli_client *c, const char *id, int json, FILE *out, FILE *err)
{
    json_t *resp = NULL;
    char path[128], line[256];
    long status = 0;
    int code = CLI_EXIT_FAIL;
    enum rc rc;

    if (cli_path(path, sizeof(path), "/api/v1/tokens/%s", id) != RC_OK) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if ((rc = cli_client_request(c, "DELETE", path, NULL, &status, &resp, err)) != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_TOKEN_REVOKE, status, resp);
        goto out;
    }
    if (json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    cli_msgf(line, sizeof(line), M_TOKEN_REVOKED, id);
    fprintf(out, "%s\n", line);
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    return code;
}

int cli_cmd_tokens(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *sub = NULL, *arg = NULL, *v;
    long expires = 0;
    int all = 0, r, code;
    struct cli_client *c = NULL;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "tokens");
        } else if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if ((r = cli_opt(argc, argv, &i, "--expires-in-s", &v, err)) != 0) {
            if (r < 0 || cli_long("--expires-in-s", v, 60, 3650L * 86400, &expires, err) != 0)
                return cli_usage_error(err, "tokens");
        } else if (argv[i][0] != '-' && sub == NULL) {
            sub = argv[i];
        } else if (argv[i][0] != '-' && arg == NULL) {
            arg = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "tokens");
        }
    }
    if (co.help) {
        tokens_usage(out);
        return CLI_EXIT_OK;
    }
    if (sub == NULL)
        sub = "list";
    if (strcmp(sub, "list") != 0 && strcmp(sub, "create") != 0 && strcmp(sub, "revoke") != 0) {
        cli_bad_arg(sub, err);
        return cli_usage_error(err, "tokens");
    }
    if ((strcmp(sub, "list") == 0) != (arg == NULL)) {
        if (arg != NULL)
            cli_bad_arg(arg, err);
        else
            cli_errf(err, M_REQUIRED, strcmp(sub, "create") == 0 ? "NAME" : "ID");
        return cli_usage_error(err, "tokens");
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if (strcmp(sub, "list") == 0)
        code = list_tokens(c, all, co.json, out, err);
    else if (strcmp(sub, "create") == 0)
        code = create_token(c, arg, expires, co.json, out, err);
    else
        code = revoke_token(c, arg, co.json, out, err);
out:
    cli_client_free(c);
    return code;
}

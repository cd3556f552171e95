/*
 * cmd_templates.c - "trainyard templates": the server's template library
 * (GET /api/v1/templates), one line per template with its name in the
 * user's language, or the server's JSON with --json.
 *
 *   trainyard templates [--json] [--server URL]
 *
 * Exit codes: cli.h.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "submit.h"
#include "table.h"

static void templates_usage(FILE *f)
{
    fprintf(f, "usage: trainyard templates [--json] [--server URL]\n"
               "List the server's job templates: id, industry, default GPUs and name (in\n"
               "English when LC_ALL, LC_MESSAGES or LANG starts with \"en\", else Chinese).\n"
               "--json prints the server's list as it came.\n");
}

static int print_table(FILE *out, const json_t *list, const char *lang)
{
    static const int right[] = {0, 0, 1, 0};
    const char *hdr[] = {cli_msg(H_ID), cli_msg(H_INDUSTRY), cli_msg(H_GPUS), cli_msg(H_NAME)};
    struct cli_table *t = cli_table_new(4, right);
    const json_t *x;
    int rc = -1;
    size_t i;

    if (t == NULL || cli_table_add(t, hdr) != RC_OK)
        goto out;
    json_array_foreach(list, i, x)
    {
        char b[3][64];
        const char *row[] = {cli_cell(json_object_get(x, "id"), b[0], 64),
                             cli_cell(json_object_get(x, "industry"), b[1], 64),
                             cli_cell(json_object_get(x, "gpus"), b[2], 64),
                             cli_localized(json_object_get(x, "name"), lang)};
        if (cli_table_add(t, row) != RC_OK)
            goto out;
    }
    cli_table_print(t, out);
    rc = 0;
out:
    cli_table_free(t);
    return rc;
}

int cli_cmd_templates(int argc, char **argv, FILE *out, FILE *err)
{
    int code = CLI_EXIT_USAGE, p;
    struct cli_templates_opts o;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    const json_t *list;
    long status = 0;
    enum rc rc;

    if ((p = cli_templates_parse(argc, argv, &o, err)) != 0) {
        if (p == 1) {
            templates_usage(out);
            return CLI_EXIT_OK;
        }
        return cli_usage_error(err, "templates");
    }
    if ((code = cli_connect(o.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if ((rc = cli_client_request(c, "GET", "/api/v1/templates", NULL, &status, &resp, err)) !=
        RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_TEMPLATES, status, resp);
        goto out;
    }
    code = CLI_EXIT_FAIL;
    list = json_object_get(resp, "templates");
    if (!json_is_array(list)) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (o.json) {
        if (json_dumpf(resp, out, JSON_COMPACT) != 0)
            goto out;
        fputc('\n', out);
    } else {
        if (print_table(out, list,
                        cli_user_lang(getenv("LC_ALL"), getenv("LC_MESSAGES"), getenv("LANG"))) !=
            0) {
            cli_errf(err, M_OOM);
            goto out;
        }
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

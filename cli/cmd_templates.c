/*
 * cmd_templates.c - "trainyard templates": the server's template library
 * (GET /api/v1/templates), one line per template with its name in the
 * user's language, or the server's JSON with --json.
 *
 *   trainyard templates [--json] [--server URL]
 *
 * Exit codes (cli.h, cli/README.md): 0 listed, 1 the server refused (its
 * error on err), 2 usage, the server unreachable or a reply that is not
 * the list.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "submit.h"

static void templates_usage(FILE *f)
{
    fprintf(f, "usage: trainyard templates [--json] [--server URL]\n"
               "List the server's job templates: id, industry, default GPUs and name (in\n"
               "English when LC_ALL, LC_MESSAGES or LANG starts with \"en\", else Chinese).\n"
               "--json prints the server's list as it came. The server is --server, else\n"
               "$TRAINYARD_SERVER, else " CLI_DEFAULT_SERVER "; the API token is\n"
               "$TRAINYARD_TOKEN.\n"
               "Exit status: 0 listed, 1 the server refused, 2 usage error or the server\n"
               "unreachable.\n");
}

static void print_table(FILE *out, const json_t *list, const char *lang)
{
    size_t i, w = 2;
    const json_t *t;

    json_array_foreach(list, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        size_t n = id ? strlen(id) : 0;
        if (n > w)
            w = n;
    }
    fprintf(out, "%-*s  %-13s  %4s  %s\n", (int)w, "ID", "INDUSTRY", "GPUS", "NAME");
    json_array_foreach(list, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        const char *industry = json_string_value(json_object_get(t, "industry"));
        json_int_t gpus = json_integer_value(json_object_get(t, "gpus"));
        fprintf(out, "%-*s  %-13s  %4lld  %s\n", (int)w, id ? id : "", industry ? industry : "",
                (long long)gpus, cli_localized(json_object_get(t, "name"), lang));
    }
}

int cli_cmd_templates(int argc, char **argv, FILE *out, FILE *err)
{
    int code = CLI_EXIT_USAGE, p;
    struct cli_templates_opts o;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    const json_t *list;
    long status = 0;

    if ((p = cli_templates_parse(argc, argv, &o, err)) != 0) {
        if (p == 1) {
            templates_usage(out);
            return CLI_EXIT_OK;
        }
        fprintf(err, "'trainyard templates --help' describes the options\n");
        return CLI_EXIT_USAGE;
    }
    if (cli_client_new(cli_server_url(o.server, getenv("TRAINYARD_SERVER")),
                       getenv("TRAINYARD_TOKEN"), &c, err) != RC_OK ||
        cli_client_request(c, "GET", "/api/v1/templates", NULL, &status, &resp, err) != RC_OK)
        goto out;
    if (status != 200) {
        cli_print_api_error(err, "cannot list the templates", status, resp);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    list = json_object_get(resp, "templates");
    if (!json_is_array(list)) {
        fprintf(err, "trainyard: the server's reply is not a template list\n");
        goto out;
    }
    if (o.json) {
        if (json_dumpf(resp, out, JSON_COMPACT) != 0)
            goto out;
        fputc('\n', out);
    } else {
        print_table(out, list,
                    cli_user_lang(getenv("LC_ALL"), getenv("LC_MESSAGES"), getenv("LANG")));
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

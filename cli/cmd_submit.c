/*
 * cmd_submit.c - "trainyard submit": a job from a template of the server
 * (POST /api/v1/jobs with {"template","params",...}; submit.h builds the
 * body). The template's parameter schema is read first
 * (GET /api/v1/templates/{id}) so that each --param goes with its type;
 * the server checks the values and its refusal is shown with its field.
 *
 *   trainyard submit --template ID [--param NAME=VALUE ...]
 *                    [--dataset PATH_OR_NAME ...] [--gpus N] [--team T]
 *                    [--name N] [--server URL] [--json]
 *
 * Exit codes (cli.h, cli/README.md): 0 submitted, 1 the server refused
 * (its error on err), 2 usage, the server unreachable, a bad reply.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "submit.h"

static void submit_usage(FILE *f)
{
    fprintf(f, "usage: trainyard submit --template ID [--param NAME=VALUE ...]\n"
               "                        [--dataset PATH_OR_NAME ...] [--gpus N] [--team T]\n"
               "                        [--name N] [--server URL] [--json]\n"
               "Submit a job from one of the server's templates ('trainyard templates'):\n"
               "the server fills in the command, env and strategy, and checks each\n"
               "--param against the template's schema. --dataset is a path inside the\n"
               "site's storage or a registered dataset's name; --gpus overrides the\n"
               "template's default. Prints the new job's id (--json: the job).\n"
               "The server is --server, else $TRAINYARD_SERVER, else " CLI_DEFAULT_SERVER ";\n"
               "the API token is $TRAINYARD_TOKEN.\n"
               "Exit status: 0 submitted, 1 the server refused (its error names the\n"
               "field, e.g. params.steps), 2 usage error or the server unreachable.\n");
}

/* The template's "params" (new reference in *schema, NULL when the
 * server has no such template: the submit then lets the server name it).
 * Returns an exit code, CLI_EXIT_OK to go on. */
static int read_schema(struct cli_client *c, const char *id, json_t **schema, FILE *err)
{
    int code = CLI_EXIT_USAGE;
    char *esc = NULL, *path = NULL;
    json_t *resp = NULL;
    long status = 0;
    size_t n;

    *schema = NULL;
    if ((esc = curl_easy_escape(NULL, id, 0)) == NULL) {
        fprintf(err, "trainyard: out of memory\n");
        goto out;
    }
    n = strlen(esc) + sizeof("/api/v1/templates/");
    if ((path = malloc(n)) == NULL) {
        fprintf(err, "trainyard: out of memory\n");
        goto out;
    }
    snprintf(path, n, "/api/v1/templates/%s", esc);
    if (cli_client_request(c, "GET", path, NULL, &status, &resp, err) != RC_OK)
        goto out;
    if (status == 200) {
        *schema = json_incref(json_object_get(resp, "params"));
    } else if (status != 404) {
        cli_print_api_error(err, "cannot read the template", status, resp);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    free(path);
    curl_free(esc);
    return code;
}

int cli_cmd_submit(int argc, char **argv, FILE *out, FILE *err)
{
    int code = CLI_EXIT_USAGE, p;
    struct cli_submit_opts *o = NULL; /* ~5 KiB: not on the stack */
    struct cli_client *c = NULL;
    json_t *schema = NULL, *body = NULL, *resp = NULL;
    long status = 0;

    if ((o = malloc(sizeof(*o))) == NULL) {
        fprintf(err, "trainyard: out of memory\n");
        goto out;
    }
    if ((p = cli_submit_parse(argc, argv, o, err)) != 0) {
        if (p == 1) {
            submit_usage(out);
            code = CLI_EXIT_OK;
        } else {
            fprintf(err, "'trainyard submit --help' describes the options\n");
        }
        goto out;
    }
    if (cli_client_new(cli_server_url(o->server, getenv("TRAINYARD_SERVER")),
                       getenv("TRAINYARD_TOKEN"), &c, err) != RC_OK)
        goto out;
    if ((code = read_schema(c, o->template_id, &schema, err)) != CLI_EXIT_OK)
        goto out;
    code = CLI_EXIT_USAGE;
    if (cli_submit_body(o, schema, &body) != RC_OK) {
        fprintf(err, "trainyard: out of memory\n");
        goto out;
    }
    if (cli_client_request(c, "POST", "/api/v1/jobs", body, &status, &resp, err) != RC_OK)
        goto out;
    if (status != 201) {
        cli_print_api_error(err, "the server refused the job", status, resp);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (!json_is_string(json_object_get(resp, "id"))) {
        fprintf(err, "trainyard: the server's reply has no job id\n");
        goto out;
    }
    if (o->json) {
        if (json_dumpf(resp, out, JSON_COMPACT) != 0)
            goto out;
        fputc('\n', out);
    } else {
        const char *name =
            json_string_value(json_object_get(json_object_get(resp, "spec"), "name"));
        const char *state = json_string_value(json_object_get(resp, "state"));
        fprintf(out, "job %s submitted: %s (template %s), %s\n",
                json_string_value(json_object_get(resp, "id")), name ? name : o->template_id,
                o->template_id, state ? state : "QUEUED");
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    json_decref(body);
    json_decref(schema);
    cli_client_free(c);
    free(o);
    return code;
}

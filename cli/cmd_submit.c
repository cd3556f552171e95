/*
 * cmd_submit.c - "trainyard submit": a job from a template of the server
 * (POST /api/v1/jobs with {"template","params",...}; submit.h builds the
 * body). The template's parameter schema is read first
 * (GET /api/v1/templates/{id}) so that each --param goes with its type;
 * the server checks the values and its refusal is shown with its field.
 *
 *   trainyard submit FILE|- [--idempotency-key KEY] [--json] [--server URL]
 *   trainyard submit --template ID [--param NAME=VALUE ...]
 *                    [--dataset PATH_OR_NAME ...] [--gpus N] [--team T]
 *                    [--name N] [--idempotency-key KEY] [--server URL] [--json]
 *
 * Without --team a template's job goes to the user's team when there is one
 * only (GET /api/v1/me, as the dashboard starts at the user's first team);
 * with several the command names them and asks for --team, since picking
 * one would charge a team's quota by the order of names.
 *
 * With --idempotency-key the command may be run again after it could not
 * tell whether the job was made (exit 6, the server unreachable or 5xx):
 * the server answers the job the first run made (200) instead of a new one.
 *
 * Exit codes: cli.h (0 submitted; a refusal by its status: 1 a bad value,
 * 3 auth, 5 policy or quota, 6 the server down).
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "submit.h"

static void submit_usage(FILE *f)
{
    fprintf(f, "usage: trainyard submit FILE [--idempotency-key KEY] [--json] [--server URL]\n"
               "       trainyard submit --template ID [--param NAME=VALUE ...]\n"
               "                        [--dataset PATH_OR_NAME ...] [--gpus N] [--team T]\n"
               "                        [--name N] [--idempotency-key KEY] [--server URL]\n"
               "                        [--json]\n"
               "Submit the job spec in FILE (JSON, - for stdin; README \"A job spec\"), or a\n"
               "job from one of the server's templates ('trainyard templates'):\n"
               "the server fills in the command, env and strategy, and checks each\n"
               "--param against the template's schema. --dataset is a path inside the\n"
               "site's storage or a registered dataset's name; --gpus overrides the\n"
               "template's default; without --team the job goes to your team when you\n"
               "are in one only. Prints the new job's id (--json: the job).\n"
               "The server's refusal names the field (e.g. params.steps); exit codes as\n"
               "'trainyard help' lists them. With --idempotency-key KEY (any 1 to 200\n"
               "printable characters, new for each job) the same command may be run\n"
               "again when it could not tell whether the job was made: the server\n"
               "answers the job the first run made instead of making another.\n");
}

/* The template's "params" (new reference in *schema, NULL when the
 * server has no such template: the submit then lets the server name it).
 * Returns an exit code, CLI_EXIT_OK to go on. */
static int read_schema(struct cli_client *c, const char *id, json_t **schema, FILE *err)
{
    int code = CLI_EXIT_FAIL;
    char path[1024];
    json_t *resp = NULL;
    long status = 0;
    enum rc rc;

    *schema = NULL;
    if (cli_path(path, sizeof(path), "/api/v1/templates/%s", id) != RC_OK) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if ((rc = cli_client_request(c, "GET", path, NULL, &status, &resp, err)) != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status == 200) {
        *schema = json_incref(json_object_get(resp, "params"));
    } else if (status != 404) {
        code = cli_refused(err, M_W_TEMPLATE, status, resp);
        goto out;
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    return code;
}

/* The user's only team, for a template's job without --team: *team points
 * into *me (new reference, the caller frees it; NULL team when the user has
 * no team, so that the server's refusal names the field). Several teams are
 * a usage error that lists them. Returns an exit code, CLI_EXIT_OK to go on. */
static int only_team(struct cli_client *c, json_t **me, const char **team, FILE *err)
{
    const json_t *teams, *t;
    char names[1024] = "";
    size_t used = 0, i;
    long status = 0;
    enum rc rc;

    *team = NULL;
    if ((rc = cli_client_request(c, "GET", "/api/v1/me", NULL, &status, me, err)) != RC_OK)
        return cli_exit_for_rc(rc);
    if (status != 200)
        return cli_refused(err, M_W_ME, status, *me);
    teams = json_object_get(*me, "teams");
    if (json_array_size(teams) == 1) {
        *team = json_string_value(json_object_get(json_array_get(teams, 0), "name"));
        return CLI_EXIT_OK;
    }
    if (json_array_size(teams) == 0)
        return CLI_EXIT_OK;
    json_array_foreach(teams, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        int n =
            snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", name ? name : "?");
        if (n < 0 || (size_t)n >= sizeof(names) - used)
            break; /* the list is cut, the request still names the way out */
        used += (size_t)n;
    }
    cli_errf(err, M_TEAM_CHOOSE, names);
    return CLI_EXIT_USAGE;
}

int cli_cmd_submit(int argc, char **argv, FILE *out, FILE *err)
{
    int code = CLI_EXIT_USAGE, p;
    struct cli_submit_opts *o = NULL; /* ~5 KiB: not on the stack */
    struct cli_client *c = NULL;
    json_t *schema = NULL, *body = NULL, *resp = NULL, *me = NULL;
    long status = 0;
    enum rc rc;

    if ((o = malloc(sizeof(*o))) == NULL) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if ((p = cli_submit_parse(argc, argv, o, err)) != 0) {
        if (p == 1) {
            submit_usage(out);
            code = CLI_EXIT_OK;
        } else {
            cli_usage_error(err, "submit");
        }
        goto out;
    }
    /* A file that is no job spec is a usage error, before any request. */
    if (o->file != NULL && (code = cli_read_json_file(o->file, &body, err)) != CLI_EXIT_OK)
        goto out;
    if ((code = cli_connect(o->server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if (o->idempotency_key != NULL && cli_client_idempotency_key(c, o->idempotency_key) != RC_OK) {
        cli_errf(err, M_OOM);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (o->file == NULL) {
        if ((code = read_schema(c, o->template_id, &schema, err)) != CLI_EXIT_OK)
            goto out;
        if (o->team == NULL && (code = only_team(c, &me, &o->team, err)) != CLI_EXIT_OK)
            goto out;
        if (cli_submit_body(o, schema, &body) != RC_OK) {
            cli_errf(err, M_OOM);
            code = CLI_EXIT_FAIL;
            goto out;
        }
    }
    code = CLI_EXIT_FAIL;
    if ((rc = cli_client_request(c, "POST", "/api/v1/jobs", body, &status, &resp, err)) != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    /* 200: the job an earlier run with this --idempotency-key made. */
    if (status != 201 && !(status == 200 && o->idempotency_key != NULL)) {
        code = cli_refused(err, M_W_SUBMIT, status, resp);
        goto out;
    }
    if (!json_is_string(json_object_get(resp, "id"))) {
        cli_errf(err, M_BAD_REPLY);
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
        const char *id = json_string_value(json_object_get(resp, "id"));
        char line[2048];
        if (o->template_id != NULL)
            cli_msgf(line, sizeof(line), M_SUBMITTED_TPL, id, name ? name : o->template_id,
                     o->template_id, state ? state : "QUEUED");
        else
            cli_msgf(line, sizeof(line), M_SUBMITTED, id, name ? name : "-",
                     state ? state : "QUEUED");
        fprintf(out, "%s\n", line);
    }
    code = CLI_EXIT_OK;
out:
    json_decref(resp);
    json_decref(body);
    json_decref(schema);
    json_decref(me);
    cli_client_free(c);
    free(o);
    return code;
}

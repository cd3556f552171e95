/*
 * cmd_deploy.c - deployments from the command line (docs/serving.md,
 * "Deployments"; POST/GET/PATCH /api/v1/deployments...).
 *
 *   trainyard deploy MODEL[:VERSION|@ALIAS] --name N [--replicas K]
 *                    [--max-replicas M] [--gpus G] [--team T] [--priority P]
 *   trainyard deployments [list]
 *   trainyard deployments show NAME
 *   trainyard deployments scale NAME --replicas K
 *   trainyard deployments stop NAME | start NAME
 *   trainyard canary DEPLOYMENT VERSION|@ALIAS --weight N [--bound JSON] [--replicas K]
 *   trainyard canary promote DEPLOYMENT
 *   trainyard rollback DEPLOYMENT
 *   (each also --json, --server URL)
 *
 * A deployment is printed as one line (state, model, version, replicas
 * ready of wanted) and a table of its replicas; --json prints the server's
 * answer. Exit codes: cli.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

static void deploy_usage(FILE *f)
{
    fprintf(f, "usage: trainyard deploy MODEL[:VERSION|@ALIAS] --name NAME [--replicas K] "
               "[--max-replicas M]\n"
               "                        [--gpus G] [--team T] [--priority low|normal|high] "
               "[--json] [--server URL]\n"
               "Deploy a registered model version (the one given, the alias's, or the newest)\n"
               "as a service of K replicas (at most M later), G GPUs each.\n");
}

static void deployments_usage(FILE *f)
{
    fprintf(f, "usage: trainyard deployments [list] [--json] [--server URL]\n"
               "       trainyard deployments show NAME [--json] [--server URL]\n"
               "       trainyard deployments scale NAME --replicas K [--json] [--server URL]\n"
               "       trainyard deployments stop NAME | start NAME [--json] [--server URL]\n"
               "List deployments, show one with its replicas, change its replica count, or\n"
               "stop all its replicas and start them again.\n");
}

/* One deployment (the server's JSON, borrowed) as a line and its replicas. */
static int print_deployment(const json_t *d, FILE *out)
{
    static const int right[] = {1, 0, 0, 0, 1, 0, 0};
    const char *hdr[] = {cli_msg(H_ID),      cli_msg(H_NAME),  cli_msg(H_STATE),  cli_msg(H_NODE),
                         cli_msg(H_ATTEMPT), cli_msg(H_READY), cli_msg(H_VERSION)};
    struct cli_table *t = NULL;
    char b[6][64], line[512];
    const json_t *x;
    size_t i;

    cli_msgf(line, sizeof(line), M_DEPLOYMENT_LINE, cli_cell(json_object_get(d, "name"), b[0], 64),
             cli_cell(json_object_get(d, "state"), b[1], 64),
             cli_cell(json_object_get(d, "model"), b[2], 64),
             cli_cell(json_object_get(d, "version"), b[3], 64),
             cli_cell(json_object_get(d, "ready_replicas"), b[4], 64),
             cli_cell(json_object_get(d, "replicas"), b[5], 64));
    fprintf(out, "%s\n", line);
    if (json_array_size(json_object_get(d, "replicas_detail")) == 0)
        return 0;
    if ((t = cli_table_new(7, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
        goto oom;
    json_array_foreach(json_object_get(d, "replicas_detail"), i, x)
    {
        char c[7][64];
        const char *row[] = {cli_cell(json_object_get(x, "job_id"), c[0], 64),
                             cli_cell(json_object_get(x, "name"), c[1], 64),
                             cli_cell(json_object_get(x, "state"), c[2], 64),
                             cli_cell(json_object_get(x, "node"), c[3], 64),
                             cli_cell(json_object_get(x, "attempt"), c[4], 64),
                             cli_cell(json_object_get(x, "ready"), c[5], 64),
                             cli_cell(json_object_get(x, "version"), c[6], 64)};
        if (cli_table_add(t, row) != RC_OK)
            goto oom;
    }
    cli_table_print(t, out);
    cli_table_free(t);
    return 0;
oom:
    cli_table_free(t);
    return -1;
}

/* Send one request about deployments and print the answer: the list, or
 * one deployment. want: the success status. */
static int request(struct cli_client *c, const char *method, const char *path, json_t *body,
                   long want, int what, int json, FILE *out, FILE *err)
{
    json_t *resp = NULL, *x;
    long status = 0;
    int code = CLI_EXIT_FAIL;
    size_t i;
    enum rc rc = cli_client_request(c, method, path, body, &status, &resp, err);

    if (rc != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != want) {
        code = cli_refused(err, what, status, resp);
        goto out;
    }
    if (!json_is_object(resp)) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    if (json_is_array(json_object_get(resp, "deployments"))) {
        json_array_foreach(json_object_get(resp, "deployments"), i, x)
        {
            if (print_deployment(x, out) != 0)
                goto oom;
        }
    } else if (print_deployment(resp, out) != 0) {
        goto oom;
    }
    code = CLI_EXIT_OK;
    goto out;
oom:
    cli_errf(err, M_OOM);
out:
    json_decref(resp);
    return code;
}

/* MODEL[:VERSION|@ALIAS] into body's "model" and "version" or "alias". */
static int model_ref(const char *ref, json_t *body, FILE *err)
{
    const char *at = strchr(ref, '@'), *colon = strchr(ref, ':');
    const char *sep = at ? at : colon;
    char model[128];
    long version = 0;

    if ((at && colon) || (sep && (sep == ref || sep[1] == '\0')) || strlen(ref) >= sizeof(model)) {
        cli_errf(err, M_BAD_MODEL_REF, ref);
        return -1;
    }
    snprintf(model, sizeof(model), "%.*s", sep ? (int)(sep - ref) : (int)strlen(ref), ref);
    if (json_object_set_new(body, "model", json_string(model)) != 0)
        return -1;
    if (at)
        return json_object_set_new(body, "alias", json_string(at + 1)) == 0 ? 0 : -1;
    if (colon) {
        if (cli_long("MODEL:VERSION", colon + 1, 1, 2147483647L, &version, err) != 0)
            return -1;
        return json_object_set_new(body, "version", json_integer(version)) == 0 ? 0 : -1;
    }
    return 0; /* neither: the server takes the newest version */
}

int cli_cmd_deploy(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *ref = NULL, *name = NULL, *team = NULL, *prio = NULL, *v;
    long replicas = 1, gpus = 1, maxr = 0;
    int r, code = CLI_EXIT_FAIL;
    struct cli_client *c = NULL;
    json_t *body = NULL;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "deploy");
        } else if ((r = cli_opt(argc, argv, &i, "--name", &name, err)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "--team", &team, err)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "--priority", &prio, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "deploy");
        } else if ((r = cli_opt(argc, argv, &i, "--replicas", &v, err)) != 0) {
            if (r < 0 || cli_long("--replicas", v, 0, 64, &replicas, err) != 0)
                return cli_usage_error(err, "deploy");
        } else if ((r = cli_opt(argc, argv, &i, "--max-replicas", &v, err)) != 0) {
            if (r < 0 || cli_long("--max-replicas", v, 1, 64, &maxr, err) != 0)
                return cli_usage_error(err, "deploy");
        } else if ((r = cli_opt(argc, argv, &i, "--gpus", &v, err)) != 0) {
            if (r < 0 || cli_long("--gpus", v, 1, 64, &gpus, err) != 0)
                return cli_usage_error(err, "deploy");
        } else if (argv[i][0] != '-' && ref == NULL) {
            ref = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "deploy");
        }
    }
    if (co.help) {
        deploy_usage(out);
        return CLI_EXIT_OK;
    }
    if (ref == NULL || name == NULL) {
        cli_errf(err, M_REQUIRED, ref == NULL ? "MODEL" : "--name");
        return cli_usage_error(err, "deploy");
    }
    body = json_pack("{s:s,s:I,s:I}", "name", name, "replicas", (json_int_t)replicas,
                     "gpus_per_replica", (json_int_t)gpus);
    if (body == NULL || (team && json_object_set_new(body, "team", json_string(team)) != 0) ||
        (prio && json_object_set_new(body, "priority", json_string(prio)) != 0)) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if (maxr > 0 && json_object_set_new(body, "max_replicas", json_integer(maxr)) != 0) {
        cli_errf(err, M_OOM);
        goto out;
    }
    if (model_ref(ref, body, err) != 0) {
        code = CLI_EXIT_USAGE;
        goto out;
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    code = request(c, "POST", "/api/v1/deployments", body, 201, M_W_DEPLOY, co.json, out, err);
out:
    json_decref(body);
    cli_client_free(c);
    return code;
}

int cli_cmd_deployments(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *sub = NULL, *name = NULL, *v;
    long replicas = -1;
    int r, code;
    char path[200];
    struct cli_client *c = NULL;
    json_t *body = NULL;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "deployments");
        } else if ((r = cli_opt(argc, argv, &i, "--replicas", &v, err)) != 0) {
            if (r < 0 || cli_long("--replicas", v, 0, 64, &replicas, err) != 0)
                return cli_usage_error(err, "deployments");
        } else if (argv[i][0] != '-' && sub == NULL) {
            sub = argv[i];
        } else if (argv[i][0] != '-' && name == NULL) {
            name = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "deployments");
        }
    }
    if (co.help) {
        deployments_usage(out);
        return CLI_EXIT_OK;
    }
    if (sub == NULL)
        sub = "list";
    if (strcmp(sub, "list") != 0 && strcmp(sub, "show") != 0 && strcmp(sub, "scale") != 0 &&
        strcmp(sub, "stop") != 0 && strcmp(sub, "start") != 0) {
        cli_bad_arg(sub, err);
        return cli_usage_error(err, "deployments");
    }
    if ((strcmp(sub, "list") == 0) != (name == NULL) ||
        (strcmp(sub, "scale") == 0) != (replicas >= 0)) {
        if (strcmp(sub, "list") == 0 && name != NULL)
            cli_bad_arg(name, err);
        else
            cli_errf(err, M_REQUIRED, name == NULL ? "NAME" : "--replicas");
        return cli_usage_error(err, "deployments");
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if (strcmp(sub, "list") == 0) {
        code =
            request(c, "GET", "/api/v1/deployments", NULL, 200, M_W_DEPLOYMENTS, co.json, out, err);
        goto out;
    }
    if (cli_path(path, sizeof(path),
                 strcmp(sub, "stop") == 0    ? "/api/v1/deployments/%s/stop"
                 : strcmp(sub, "start") == 0 ? "/api/v1/deployments/%s/start"
                                             : "/api/v1/deployments/%s",
                 name) != RC_OK) {
        cli_errf(err, M_OOM);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (strcmp(sub, "show") == 0) {
        code = request(c, "GET", path, NULL, 200, M_W_DEPLOYMENT, co.json, out, err);
    } else if (strcmp(sub, "scale") == 0) {
        body = json_pack("{s:I}", "replicas", (json_int_t)replicas);
        code = body ? request(c, "PATCH", path, body, 200, M_W_DEPLOYMENT, co.json, out, err)
                    : CLI_EXIT_FAIL;
    } else {
        body = json_object();
        code = body ? request(c, "POST", path, body, 200, M_W_DEPLOYMENT, co.json, out, err)
                    : CLI_EXIT_FAIL;
    }
out:
    json_decref(body);
    cli_client_free(c);
    return code;
}

static void canary_usage(FILE *f)
{
    fprintf(f, "usage: trainyard canary DEPLOYMENT VERSION|@ALIAS --weight N [--bound JSON] "
               "[--replicas K] [--json] [--server URL]\n"
               "       trainyard canary promote DEPLOYMENT [--json] [--server URL]\n"
               "       trainyard rollback DEPLOYMENT [--json] [--server URL]\n"
               "Send N %% of a deployment's requests to K replicas of another version (rolled\n"
               "back by the server when it breaks JSON, e.g. '{\"max_p99_ms\":500}'), make it\n"
               "the deployment's version, or send it nothing and stop its replicas.\n");
}

/* One POST about deployment name's canary (route: "canary", "canary/promote"
 * or "rollback"), answered with the deployment. */
static int canary_post(const struct cli_common *co, const char *name, const char *route,
                       json_t *body, FILE *out, FILE *err)
{
    struct cli_client *c = NULL;
    char path[200], fmt[64];
    int code;

    snprintf(fmt, sizeof(fmt), "/api/v1/deployments/%%s/%s", route);
    if (cli_path(path, sizeof(path), fmt, name) != RC_OK) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if ((code = cli_connect(co->server, &c, err)) == CLI_EXIT_OK)
        code = request(c, "POST", path, body, 200, M_W_DEPLOYMENT, co->json, out, err);
    cli_client_free(c);
    return code;
}

int cli_cmd_canary(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *pos[3] = {NULL, NULL, NULL}, *bound = NULL, *v;
    long weight = -1, replicas = 0;
    int r, npos = 0, code = CLI_EXIT_FAIL, promote;
    json_t *body = NULL, *b = NULL;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "canary");
        } else if ((r = cli_opt(argc, argv, &i, "--bound", &bound, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "canary");
        } else if ((r = cli_opt(argc, argv, &i, "--weight", &v, err)) != 0) {
            if (r < 0 || cli_long("--weight", v, 0, 100, &weight, err) != 0)
                return cli_usage_error(err, "canary");
        } else if ((r = cli_opt(argc, argv, &i, "--replicas", &v, err)) != 0) {
            if (r < 0 || cli_long("--replicas", v, 1, 64, &replicas, err) != 0)
                return cli_usage_error(err, "canary");
        } else if (argv[i][0] != '-' && npos < 2) {
            pos[npos++] = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "canary");
        }
    }
    if (co.help) {
        canary_usage(out);
        return CLI_EXIT_OK;
    }
    promote = npos > 0 && strcmp(pos[0], "promote") == 0;
    if (npos < 2 || (promote && (weight >= 0 || bound || replicas)) || (!promote && weight < 0)) {
        cli_errf(err, M_REQUIRED, npos < 2 ? (promote ? "DEPLOYMENT" : "VERSION") : "--weight");
        return cli_usage_error(err, "canary");
    }
    if (promote)
        return canary_post(&co, pos[1], "canary/promote", NULL, out, err);
    if (bound != NULL && !json_is_object(b = json_loads(bound, 0, NULL))) {
        json_decref(b);
        cli_bad_arg(bound, err);
        return cli_usage_error(err, "canary");
    }
    body = json_pack("{s:I}", "weight", (json_int_t)weight);
    if (body == NULL || (b && json_object_set_new(body, "bound", b) != 0) ||
        (replicas > 0 && json_object_set_new(body, "replicas", json_integer(replicas)) != 0)) {
        cli_errf(err, M_OOM);
        goto out;
    }
    b = NULL;
    if (pos[1][0] == '@') {
        if (json_object_set_new(body, "alias", json_string(pos[1] + 1)) != 0)
            goto out;
    } else {
        long version = 0;
        if (cli_long("VERSION", pos[1], 1, 2147483647L, &version, err) != 0) {
            code = cli_usage_error(err, "canary");
            goto out;
        }
        if (json_object_set_new(body, "version", json_integer(version)) != 0)
            goto out;
    }
    code = canary_post(&co, pos[0], "canary", body, out, err);
out:
    json_decref(body);
    return code;
}

int cli_cmd_rollback(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *name = NULL;
    int r;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "rollback");
        } else if (argv[i][0] != '-' && name == NULL) {
            name = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "rollback");
        }
    }
    if (co.help) {
        canary_usage(out);
        return CLI_EXIT_OK;
    }
    if (name == NULL) {
        cli_errf(err, M_REQUIRED, "DEPLOYMENT");
        return cli_usage_error(err, "rollback");
    }
    return canary_post(&co, name, "rollback", NULL, out, err);
}

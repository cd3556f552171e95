/*
 * cmd_nodes.c - "trainyard nodes", "drain NODE", "undrain NODE": the
 * cluster's nodes (GET /api/v1/nodes) and an admin's switch that stops or
 * resumes placing work on one (POST /api/v1/nodes/{id}/drain|undrain).
 * NODE is a node's name, or its id; the name is looked up in the list.
 *
 *   trainyard nodes [--json] [--server URL]
 *   trainyard nodes join-tokens ...   (cmd_join_tokens.c)
 *   trainyard drain NODE [--json] [--server URL]
 *   trainyard undrain NODE [--json] [--server URL]
 *
 * Exit codes: cli.h (a member draining: 3; a down node undrained: 5).
 */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

static void nodes_usage(FILE *f)
{
    fprintf(f, "usage: trainyard nodes [--json] [--server URL]\n"
               "       trainyard nodes join-tokens [list|create|revoke ID] (--help: its options)\n"
               "List the nodes: name, host, state, GPUs, GPUs allocated, site, last heartbeat.\n");
}

static void drain_usage(FILE *f, const char *cmd)
{
    fprintf(f,
            "usage: trainyard %s NODE [--json] [--server URL]\n"
            "%s: NODE is a node's name or id (admins only).\n",
            cmd,
            strcmp(cmd, "drain") == 0
                ? "Stop placing new work on a node; what runs there keeps running"
                : "Place work on a drained node again");
}

static int list_nodes(struct cli_client *c, json_t **resp, FILE *err)
{
    long status = 0;
    enum rc rc;

    if ((rc = cli_client_request(c, "GET", "/api/v1/nodes", NULL, &status, resp, err)) != RC_OK)
        return cli_exit_for_rc(rc);
    if (status != 200)
        return cli_refused(err, M_W_NODES, status, *resp);
    if (!json_is_array(json_object_get(*resp, "nodes"))) {
        cli_errf(err, M_BAD_REPLY);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_nodes(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    struct cli_client *c = NULL;
    struct cli_table *t = NULL;
    json_t *resp = NULL, *n;
    int code, r;
    size_t i;

    if (argc > 1 && strcmp(argv[1], "join-tokens") == 0)
        return cli_cmd_join_tokens(argc - 1, argv + 1, out, err);
    for (int k = 1; k < argc; k++)
        if ((r = cli_common_opt(argc, argv, &k, &co, err)) <= 0) {
            if (r == 0)
                cli_bad_arg(argv[k], err);
            return cli_usage_error(err, "nodes");
        }
    if (co.help) {
        nodes_usage(out);
        return CLI_EXIT_OK;
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK ||
        (code = list_nodes(c, &resp, err)) != CLI_EXIT_OK)
        goto out;
    if (co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    {
        static const int right[] = {0, 0, 0, 1, 1, 0, 0};
        const char *hdr[] = {cli_msg(H_NAME), cli_msg(H_HOST), cli_msg(H_STATE),    cli_msg(H_GPUS),
                             cli_msg(H_USED), cli_msg(H_SITE), cli_msg(H_LAST_SEEN)};
        code = CLI_EXIT_FAIL;
        if ((t = cli_table_new(7, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
            goto oom;
        json_array_foreach(json_object_get(resp, "nodes"), i, n)
        {
            char b[7][64];
            const char *row[7];
            row[0] = cli_cell(json_object_get(n, "name"), b[0], 64);
            row[1] = cli_cell(json_object_get(n, "hostname"), b[1], 64);
            row[2] = cli_cell(json_object_get(n, "state"), b[2], 64);
            snprintf(b[3], 64, "%zu", json_array_size(json_object_get(n, "gpus")));
            row[3] = b[3];
            row[4] = cli_cell(json_object_get(n, "gpus_allocated"), b[4], 64);
            row[5] = cli_cell(json_object_get(n, "site"), b[5], 64);
            row[6] = cli_cell_time(json_object_get(n, "last_seen_at"), b[6], 64);
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
    cli_client_free(c);
    return code;
}

/* The id of the node named (or numbered) node into id. */
static int find_node(struct cli_client *c, const char *node, char *id, size_t n, char *name,
                     size_t nn, FILE *err)
{
    json_t *resp = NULL, *x;
    int code;
    size_t i;

    if ((code = list_nodes(c, &resp, err)) != CLI_EXIT_OK)
        goto out;
    code = CLI_EXIT_NOTFOUND;
    for (int pass = 0; pass < 2 && code != CLI_EXIT_OK; pass++)
        json_array_foreach(json_object_get(resp, "nodes"), i, x)
        {
            const char *key = json_string_value(json_object_get(x, pass == 0 ? "name" : "id"));
            if (key != NULL && strcmp(key, node) == 0) {
                snprintf(id, n, "%s", json_string_value(json_object_get(x, "id")));
                snprintf(name, nn, "%s", json_string_value(json_object_get(x, "name")));
                code = CLI_EXIT_OK;
                break;
            }
        }
    if (code != CLI_EXIT_OK)
        cli_errf(err, M_NO_NODE, node);
out:
    json_decref(resp);
    return code;
}

static int node_switch(int argc, char **argv, FILE *out, FILE *err, const char *action)
{
    struct cli_common co = {0};
    const char *node = NULL;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    char id[32] = "", name[128] = "", path[128], fmt[64], line[256];
    long status = 0;
    int code, r;
    enum rc rc;

    for (int k = 1; k < argc; k++) {
        if ((r = cli_common_opt(argc, argv, &k, &co, err)) < 0)
            return cli_usage_error(err, argv[0]);
        if (r == 0 && (argv[k][0] == '-' || node != NULL)) {
            cli_bad_arg(argv[k], err);
            return cli_usage_error(err, argv[0]);
        }
        if (r == 0)
            node = argv[k];
    }
    if (co.help) {
        drain_usage(out, action);
        return CLI_EXIT_OK;
    }
    if (node == NULL) {
        cli_errf(err, M_REQUIRED, "NODE");
        return cli_usage_error(err, action);
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK ||
        (code = find_node(c, node, id, sizeof(id), name, sizeof(name), err)) != CLI_EXIT_OK)
        goto out;
    snprintf(fmt, sizeof(fmt), "/api/v1/nodes/%%s/%s", action);
    if (cli_path(path, sizeof(path), fmt, id) != RC_OK) {
        cli_errf(err, M_OOM);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if ((rc = cli_client_request(c, "POST", path, NULL, &status, &resp, err)) != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_NODE, status, resp);
        goto out;
    }
    if (co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    cli_msgf(line, sizeof(line), strcmp(action, "drain") == 0 ? M_DRAINING : M_READY, name);
    fprintf(out, "%s\n", line);
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

int cli_cmd_drain(int argc, char **argv, FILE *out, FILE *err)
{
    return node_switch(argc, argv, out, err, "drain");
}

int cli_cmd_undrain(int argc, char **argv, FILE *out, FILE *err)
{
    return node_switch(argc, argv, out, err, "undrain");
}

/*
 * cmd_advisor.c - "trainyard advisor FILE": the strategy advisor's plan
 * for a request (POST /api/v1/advisor, docs/advisor.md), nothing stored.
 * The human form is a summary: the chosen strategy, precision, the batch
 * split, memory per GPU, the predicted step, the reason and warnings in
 * the user's language; --json is the whole plan.
 *
 *   trainyard advisor FILE|- [--json] [--server URL]
 *
 * Exit codes: cli.h (a request the advisor refuses: 1, with its field).
 */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "submit.h"
#include "table.h"

static void advisor_usage(FILE *f)
{
    fprintf(f, "usage: trainyard advisor FILE [--json] [--server URL]\n"
               "Ask the advisor how to run a training job: FILE (- for stdin) is a request\n"
               "as docs/advisor.md describes, e.g. {\"model\":{\"name\":\"gpt2\"},\n"
               "\"global_batch\":64,\"allocation\":{...}}. Prints the plan's summary\n"
               "(--json: the whole plan).\n");
}

static void kv(struct cli_table *t, enum cli_msg k, const char *v, int *bad)
{
    const char *row[] = {cli_msg(k), v ? v : "-"};

    if (!*bad && cli_table_add(t, row) != RC_OK)
        *bad = 1;
}

static void print_plan(FILE *out, const json_t *p, int *bad)
{
    const char *lang = cli_lang_env() == CLI_LANG_ZH ? "zh-CN" : "en";
    const json_t *mem = json_object_get(p, "memory"), *speed = json_object_get(p, "speed");
    const json_t *gb = json_object_get(p, "global_batch"), *w;
    struct cli_table *t = cli_table_new(2, NULL);
    char b[6][128];
    size_t i;

    if (t == NULL) {
        *bad = 1;
        return;
    }
    kv(t, K_STATUS, json_string_value(json_object_get(p, "status")), bad);
    snprintf(b[0], sizeof(b[0]), "%s (%s)",
             json_string_value(json_object_get(p, "strategy"))
                 ? json_string_value(json_object_get(p, "strategy"))
                 : "-",
             json_string_value(json_object_get(p, "engine"))
                 ? json_string_value(json_object_get(p, "engine"))
                 : "-");
    kv(t, K_STRATEGY, b[0], bad);
    kv(t, K_PRECISION, json_string_value(json_object_get(p, "precision")), bad);
    snprintf(b[1], sizeof(b[1]), "%lld x %lld x %lld = %lld",
             (long long)json_integer_value(json_object_get(p, "micro_batch")),
             (long long)json_integer_value(json_object_get(p, "grad_accum")),
             (long long)json_integer_value(json_object_get(p, "dp_degree")),
             (long long)json_integer_value(json_object_get(gb, "reached")));
    kv(t, K_BATCH, b[1], bad);
    snprintf(b[2], sizeof(b[2]), "%.2f / %.2f GiB",
             (double)json_integer_value(json_object_get(mem, "total")) / 1073741824.0,
             (double)json_integer_value(json_object_get(mem, "limit")) / 1073741824.0);
    kv(t, K_MEMORY, b[2], bad);
    if (json_is_number(json_object_get(speed, "step_s"))) {
        snprintf(b[3], sizeof(b[3]), "%.3f s, %.1f samples/s",
                 json_number_value(json_object_get(speed, "step_s")),
                 json_number_value(json_object_get(speed, "samples_per_s")));
        kv(t, K_STEP, b[3], bad);
    }
    kv(t, K_REASON, cli_localized(json_object_get(p, "reason"), lang), bad);
    json_array_foreach(json_object_get(p, "warnings"), i, w)
        kv(t, K_WARNING, cli_localized(w, lang), bad);
    if (!*bad)
        cli_table_print(t, out);
    cli_table_free(t);
}

int cli_cmd_advisor(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *file = NULL;
    struct cli_client *c = NULL;
    json_t *body = NULL, *resp = NULL;
    long status = 0;
    int code, r, bad = 0;
    enum rc rc;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) < 0)
            return cli_usage_error(err, "advisor");
        if (r == 0 && ((argv[i][0] == '-' && argv[i][1] != '\0') || file != NULL)) {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "advisor");
        }
        if (r == 0)
            file = argv[i];
    }
    if (co.help) {
        advisor_usage(out);
        return CLI_EXIT_OK;
    }
    if (file == NULL) {
        cli_errf(err, M_REQUIRED, "FILE");
        return cli_usage_error(err, "advisor");
    }
    if ((code = cli_read_json_file(file, &body, err)) != CLI_EXIT_OK ||
        (code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if ((rc = cli_client_request(c, "POST", "/api/v1/advisor", body, &status, &resp, err)) !=
        RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_ADVISOR, status, resp);
        goto out;
    }
    if (!json_is_object(resp)) {
        cli_errf(err, M_BAD_REPLY);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (co.json)
        bad = cli_print_json(out, resp) != 0;
    else
        print_plan(out, resp, &bad);
    if (bad) {
        cli_errf(err, M_OOM);
        code = CLI_EXIT_FAIL;
    }
out:
    json_decref(body);
    json_decref(resp);
    cli_client_free(c);
    return code;
}

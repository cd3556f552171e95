/*
 * cmd_queue.c - "trainyard queue": the queue forecast (GET /api/v1/queue,
 * docs/queue.md), one line per queued job in scheduling order with its
 * estimated start and why it waits; and the forecast lines that
 * "trainyard show JOB" (cmd_jobs.c) adds while a job waits
 * (GET /api/v1/jobs/{id}/forecast).
 *
 *   trainyard queue [--json] [--server URL]
 *
 * Exit codes: the stable ones of cli.h (cli_exit_for_http, cli_exit_for_rc).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "submit.h"

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

void cli_queue_reason(const json_t *entry, char *buf, size_t size)
{
    const json_t *r = json_object_get(entry, "reason");
    const json_t *p = json_object_get(r, "params");
    const char *code = str(r, "code"), *other = str(p, "other_job_id");
    long long need = (long long)json_integer_value(json_object_get(p, "need_gpus"));
    long long freeg = (long long)json_integer_value(json_object_get(p, "free_gpus"));

    if (strcmp(code, "none") == 0)
        snprintf(buf, size, "starts at the next pass");
    else if (strcmp(code, "gpus") == 0)
        snprintf(buf, size, "waiting for GPUs: needs %lld, %lld free where it fits", need, freeg);
    else if (strcmp(code, "quota") == 0)
        snprintf(buf, size, "its team is over quota");
    else if (strcmp(code, "priority") == 0 && *other)
        snprintf(buf, size, "behind job %s", other);
    else if (strcmp(code, "priority") == 0)
        snprintf(buf, size, "behind higher-priority or earlier jobs");
    else if (strcmp(code, "reserved") == 0 && *other)
        snprintf(buf, size, "the GPUs it could use are reserved for job %s", other);
    else if (strcmp(code, "reserved") == 0)
        snprintf(buf, size, "the GPUs it could use are reserved for another job");
    else if (strcmp(code, "site_too_small") == 0)
        snprintf(buf, size, "its site has too few nodes of that size: never starts");
    else if (strcmp(code, "draining") == 0)
        snprintf(buf, size, "the only nodes that fit are draining");
    else
        snprintf(buf, size, "%s", *code ? code : "unknown");
}

/* "3h05m" of a number of seconds, "-" when not a number. */
static void duration(const json_t *v, char *buf, size_t size)
{
    long long s = (long long)(json_number_value(v) + 0.5);

    if (!json_is_number(v))
        snprintf(buf, size, "-");
    else if (s >= 3600)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else
        snprintf(buf, size, "%llds", s);
}

static void print_queue(FILE *out, const json_t *resp)
{
    const json_t *jobs = json_object_get(resp, "jobs"), *j;
    size_t i;

    fprintf(out, "forecast of %s\n",
            json_is_string(json_object_get(resp, "generated_at"))
                ? str(resp, "generated_at")
                : "(none yet: the scheduler has not made one)");
    fprintf(out, "%4s  %-8s  %-16s  %-12s  %-12s  %-6s  %4s  %-24s  %-8s  %s\n", "POS", "ID",
            "NAME", "TEAM", "USER", "PRIO", "GPUS", "ESTIMATED START", "RUN", "WHY IT WAITS");
    json_array_foreach(jobs, i, j)
    {
        char why[160], run[32];
        const json_t *start = json_object_get(j, "estimated_start");
        cli_queue_reason(j, why, sizeof(why));
        duration(json_object_get(json_object_get(j, "prediction"), "run_s"), run, sizeof(run));
        fprintf(out, "%4lld  %-8s  %-16.16s  %-12.12s  %-12.12s  %-6s  %4lld  %-24s  %-8s  %s\n",
                (long long)json_integer_value(json_object_get(j, "position")), str(j, "id"),
                str(j, "name"), str(j, "team"), str(j, "user"), str(j, "priority"),
                (long long)json_integer_value(json_object_get(j, "gpus")),
                json_is_string(start) ? json_string_value(start) : "unknown", run, why);
    }
}

/* GET path into *resp; 0 on 200, else the exit code after the message. */
static int get(struct cli_client *c, const char *path, const char *what, json_t **resp,
               long *status, FILE *err)
{
    enum rc rc;

    *resp = NULL;
    if ((rc = cli_client_request(c, "GET", path, NULL, status, resp, err)) != RC_OK)
        return cli_exit_for_rc(rc);
    if (*status != 200) {
        cli_print_api_error(err, what, *status, *resp);
        return cli_exit_for_http(*status, *resp);
    }
    if (!json_is_object(*resp)) {
        fprintf(err, "trainyard: %s: the server's reply is not a JSON object\n", what);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

static int dump(FILE *out, const json_t *v)
{
    if (json_dumpf(v, out, JSON_COMPACT) != 0)
        return CLI_EXIT_USAGE;
    fputc('\n', out);
    return CLI_EXIT_OK;
}

int cli_cmd_queue(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_templates_opts o; /* the same options: --json, --server */
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    long status = 0;
    int code = CLI_EXIT_USAGE, p;

    if ((p = cli_templates_parse(argc, argv, &o, err)) != 0) {
        if (p == 1) {
            fprintf(out, "usage: trainyard queue [--json] [--server URL]\n"
                         "The queued jobs you may see, in scheduling order, with the estimated\n"
                         "start, the predicted run time and why each waits (the scheduler's\n"
                         "latest forecast). --json prints GET /api/v1/queue as it came.\n"
                         "The server and token: --server, $TRAINYARD_URL and $TRAINYARD_TOKEN,\n"
                         "else the stored login (trainyard login). Exit status as every command:\n"
                         "trainyard help.\n");
            return CLI_EXIT_OK;
        }
        fprintf(err, "'trainyard queue --help' describes the options\n");
        return CLI_EXIT_USAGE;
    }
    if ((code = cli_connect(o.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if ((code = get(c, "/api/v1/queue", "cannot read the queue", &resp, &status, err)) != 0)
        goto out;
    if (!json_is_array(json_object_get(resp, "jobs"))) {
        fprintf(err, "trainyard: the server's reply is not a queue forecast\n");
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (o.json)
        code = dump(out, resp);
    else
        print_queue(out, resp);
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

void cli_queue_print_job_forecast(struct cli_client *c, const char *job_id, FILE *out, FILE *err)
{
    json_t *fc = NULL;
    char path[96], why[160], run[32];
    long status = 0;

    snprintf(path, sizeof(path), "/api/v1/jobs/%s/forecast", job_id);
    /* 409: not queued (any more), or not forecast yet; shown as such. A
     * failed request leaves the job's own lines standing. */
    if (cli_client_request(c, "GET", path, NULL, &status, &fc, err) != RC_OK) {
        fprintf(out, "  no queue forecast: the server did not answer\n");
    } else if (status == 200) {
        const json_t *start = json_object_get(fc, "estimated_start");
        cli_queue_reason(fc, why, sizeof(why));
        duration(json_object_get(json_object_get(fc, "prediction"), "run_s"), run, sizeof(run));
        fprintf(out,
                "  queue position %lld, estimated start %s\n  predicted run %s (%s)\n"
                "  why it waits: %s\n  (forecast of %s)\n",
                (long long)json_integer_value(json_object_get(fc, "position")),
                json_is_string(start) ? json_string_value(start) : "unknown", run,
                str(json_object_get(fc, "prediction"), "source"), why, str(fc, "generated_at"));
    } else {
        const char *msg = str(json_object_get(fc, "error"), "message");
        fprintf(out, "  no queue forecast: %s\n", *msg ? msg : "the job is not queued");
    }
    json_decref(fc);
}

/*
 * cmd_queue.c - "trainyard queue": the queue forecast (GET /api/v1/queue,
 * docs/queue.md), one line per queued job in scheduling order with its
 * estimated start and why it waits; and "trainyard show JOB": the job
 * (GET /api/v1/jobs/{id}) and, while it is queued, its forecast
 * (GET /api/v1/jobs/{id}/forecast).
 *
 *   trainyard queue [--json] [--server URL]
 *   trainyard show JOB [--json] [--server URL]
 *
 * Exit codes (cli.h, cli/README.md): 0 shown, 1 the server refused (its
 * error on err), 2 usage, the server unreachable or a reply of another shape.
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
    *resp = NULL;
    if (cli_client_request(c, "GET", path, NULL, status, resp, err) != RC_OK)
        return CLI_EXIT_USAGE;
    if (*status != 200) {
        cli_print_api_error(err, what, *status, *resp);
        return CLI_EXIT_FAIL;
    }
    if (!json_is_object(*resp)) {
        fprintf(err, "trainyard: %s: the server's reply is not a JSON object\n", what);
        return CLI_EXIT_USAGE;
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
                         "The server is --server, else $TRAINYARD_SERVER, else " CLI_DEFAULT_SERVER
                         ";\nthe API token is $TRAINYARD_TOKEN.\n"
                         "Exit status: 0 shown, 1 the server refused, 2 usage error or the server\n"
                         "unreachable.\n");
            return CLI_EXIT_OK;
        }
        fprintf(err, "'trainyard queue --help' describes the options\n");
        return CLI_EXIT_USAGE;
    }
    if (cli_client_new(cli_server_url(o.server, getenv("TRAINYARD_SERVER")),
                       getenv("TRAINYARD_TOKEN"), &c, err) != RC_OK)
        goto out;
    if ((code = get(c, "/api/v1/queue", "cannot read the queue", &resp, &status, err)) != 0)
        goto out;
    if (!json_is_array(json_object_get(resp, "jobs"))) {
        fprintf(err, "trainyard: the server's reply is not a queue forecast\n");
        code = CLI_EXIT_USAGE;
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

/* A job id: 1 to 19 digits. */
static int is_id(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 20 && strspn(s, "0123456789") == n && s[0] != '0';
}

int cli_cmd_queue_show(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_templates_opts o;
    struct cli_client *c = NULL;
    json_t *job = NULL, *fc = NULL;
    const char *id = NULL;
    char path[64], why[160], run[32];
    char *args[8];
    int n = 0, code = CLI_EXIT_USAGE, p;
    long status = 0;

    /* The job id is the one argument that is not an option or its value;
     * the rest goes to the option parser (args[0] stands for the command). */
    for (int i = 0; i < argc; i++) {
        int value = i > 0 && strcmp(argv[i - 1], "--server") == 0;
        if (i > 0 && !value && argv[i][0] != '-' && id == NULL) {
            id = argv[i];
            continue;
        }
        if (n == (int)(sizeof(args) / sizeof(args[0]))) {
            fprintf(err, "trainyard: too many arguments\n");
            return CLI_EXIT_USAGE;
        }
        args[n++] = argv[i];
    }
    if ((p = cli_templates_parse(n, args, &o, err)) != 0 || id == NULL || !is_id(id)) {
        if (p == 1) {
            fprintf(out, "usage: trainyard show JOB [--json] [--server URL]\n"
                         "The job, and while it waits in the queue its forecast: place,\n"
                         "estimated start, predicted run time and why it waits. --json prints\n"
                         "{\"job\": GET /api/v1/jobs/JOB, \"forecast\": GET\n"
                         "/api/v1/jobs/JOB/forecast or null}.\n"
                         "Exit status: 0 shown, 1 the server refused, 2 usage error or the server\n"
                         "unreachable.\n");
            return CLI_EXIT_OK;
        }
        if (p == 0)
            fprintf(err, "trainyard: show needs a job id (a positive number)\n");
        fprintf(err, "'trainyard show --help' describes the options\n");
        return CLI_EXIT_USAGE;
    }
    if (cli_client_new(cli_server_url(o.server, getenv("TRAINYARD_SERVER")),
                       getenv("TRAINYARD_TOKEN"), &c, err) != RC_OK)
        goto out;
    snprintf(path, sizeof(path), "/api/v1/jobs/%s", id);
    if ((code = get(c, path, "cannot read the job", &job, &status, err)) != 0)
        goto out;
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/forecast", id);
    /* 409: not queued (any more), or not forecast yet; shown as such. */
    if (cli_client_request(c, "GET", path, NULL, &status, &fc, err) != RC_OK) {
        code = CLI_EXIT_USAGE;
        goto out;
    }
    if (status != 200 && status != 409) {
        cli_print_api_error(err, "cannot read the job's forecast", status, fc);
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (o.json) {
        json_t *both = json_pack("{s:O,s:O}", "job", job, "forecast",
                                 status == 200 && fc != NULL ? fc : json_null());
        code = both ? dump(out, both) : CLI_EXIT_USAGE;
        json_decref(both);
        goto out;
    }
    fprintf(out, "job %s: %s\n  team %s, user %s, %lld GPUs, priority %s, site %s\n  state %s\n",
            str(job, "id"), str(job, "name"), str(job, "team"), str(job, "user"),
            (long long)json_integer_value(json_object_get(job, "gpus")), str(job, "priority"),
            str(job, "site"), str(job, "state"));
    if (status == 200) {
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
    code = CLI_EXIT_OK;
out:
    json_decref(job);
    json_decref(fc);
    cli_client_free(c);
    return code;
}

/*
 * cmd_queue.c - "trainyard queue": the queue forecast (GET /api/v1/queue,
 * docs/queue.md), one line per queued job in scheduling order with its
 * estimated start and why it waits; and the forecast lines that
 * "trainyard show JOB" (cmd_jobs.c) adds while a job waits
 * (GET /api/v1/jobs/{id}/forecast).
 *
 *   trainyard queue [--team T] [--user U | --mine] [--limit N] [--cursor C | --all]
 *                   [--json] [--server URL]
 *
 * Exit codes: the stable ones of cli.h (cli_exit_for_http, cli_exit_for_rc).
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "submit.h"
#include "table.h"

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
        cli_msgf(buf, size, Q_NONE);
    else if (strcmp(code, "gpus") == 0)
        cli_msgf(buf, size, Q_GPUS, need, freeg);
    else if (strcmp(code, "quota") == 0)
        cli_msgf(buf, size, Q_QUOTA);
    else if (strcmp(code, "priority") == 0 && *other)
        cli_msgf(buf, size, Q_BEHIND, other);
    else if (strcmp(code, "priority") == 0)
        cli_msgf(buf, size, Q_BEHIND_ANY);
    else if (strcmp(code, "reserved") == 0 && *other)
        cli_msgf(buf, size, Q_RESERVED, other);
    else if (strcmp(code, "reserved") == 0)
        cli_msgf(buf, size, Q_RESERVED_ANY);
    else if (strcmp(code, "site_too_small") == 0)
        cli_msgf(buf, size, Q_SITE_SMALL);
    else if (strcmp(code, "draining") == 0)
        cli_msgf(buf, size, Q_DRAINING);
    else
        snprintf(buf, size, "%s", *code ? code : cli_msg(M_UNKNOWN));
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

/* The forecast's time, then one table row per job; 0, or -1 on ENOMEM. */
static int print_queue(FILE *out, const json_t *resp)
{
    static const int right[10] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    const char *hdr[10] = {cli_msg(H_POS),  cli_msg(H_ID),   cli_msg(H_NAME), cli_msg(H_TEAM),
                           cli_msg(H_USER), cli_msg(H_PRIO), cli_msg(H_GPUS), cli_msg(H_EST_START),
                           cli_msg(H_RUN),  cli_msg(H_WHY)};
    const json_t *jobs = json_object_get(resp, "jobs"), *j;
    struct cli_table *t = cli_table_new(10, right);
    char line[256];
    int ret = -1;
    size_t i;

    if (t == NULL || cli_table_add(t, hdr) != RC_OK)
        goto out;
    json_array_foreach(jobs, i, j)
    {
        char b[7][64], why[160], run[32], pos[24], gpus[24];
        const json_t *start = json_object_get(j, "estimated_start");
        const char *row[10];
        cli_queue_reason(j, why, sizeof(why));
        duration(json_object_get(json_object_get(j, "prediction"), "run_s"), run, sizeof(run));
        snprintf(pos, sizeof(pos), "%lld",
                 (long long)json_integer_value(json_object_get(j, "position")));
        snprintf(gpus, sizeof(gpus), "%lld",
                 (long long)json_integer_value(json_object_get(j, "gpus")));
        row[0] = pos;
        row[1] = cli_cell(json_object_get(j, "id"), b[0], 64);
        row[2] = cli_cell(json_object_get(j, "name"), b[1], 64);
        row[3] = cli_cell(json_object_get(j, "team"), b[2], 64);
        row[4] = cli_cell(json_object_get(j, "user"), b[3], 64);
        row[5] = cli_cell(json_object_get(j, "priority"), b[4], 64);
        row[6] = gpus;
        row[7] = json_is_string(start) ? cli_cell(start, b[5], 64) : cli_msg(M_UNKNOWN);
        row[8] = run;
        row[9] = why;
        if (cli_table_add(t, row) != RC_OK)
            goto out;
    }
    if (json_is_string(json_object_get(resp, "generated_at")))
        cli_msgf(line, sizeof(line), M_FORECAST_OF, str(resp, "generated_at"));
    else
        cli_msgf(line, sizeof(line), M_FORECAST_NONE);
    fprintf(out, "%s\n", line);
    cli_table_print(t, out);
    ret = 0;
out:
    cli_table_free(t);
    return ret;
}

/* GET path into *resp; 0 on 200, else the exit code, after the message
 * when report (else the caller words it from *resp and *status). */
static int get(struct cli_client *c, const char *path, const char *what, json_t **resp,
               long *status, int report, FILE *err)
{
    enum rc rc;

    *resp = NULL;
    if ((rc = cli_client_request(c, "GET", path, NULL, status, resp, err)) != RC_OK)
        return cli_exit_for_rc(rc);
    if (*status != 200) {
        if (report)
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

/* "trainyard queue"'s options. */
struct queue_opts {
    struct cli_common co;
    const char *team, *user, *cursor; /* borrowed from argv; NULL = not given */
    long limit;                       /* the page size asked for */
    int mine, all;
};

static void queue_usage(FILE *out)
{
    fprintf(out, "usage: trainyard queue [--team TEAM] [--user USER | --mine] [--limit N]\n"
                 "                       [--cursor C | --all] [--json] [--server URL]\n"
                 "The queued jobs you may see, in scheduling order, with the estimated\n"
                 "start, the predicted run time and why each waits (the scheduler's\n"
                 "latest forecast). One page of --limit jobs (1..500, default 50); --cursor\n"
                 "continues after the page whose next_cursor it is (--json shows it), --all\n"
                 "reads every page of one forecast (and starts again, a few times at most,\n"
                 "when the forecast is refreshed meanwhile). --team, --user, --mine (your\n"
                 "own jobs): only those. --json prints GET /api/v1/queue as it came (with\n"
                 "--all, the pages as one answer: every job, next_cursor null).\n"
                 "The server and token: --server, $TRAINYARD_URL and $TRAINYARD_TOKEN,\n"
                 "else the stored login (trainyard login). Exit status as every command:\n"
                 "trainyard help.\n");
}

/* 0 parsed, 1 --help, -1 after a message. */
static int queue_parse(int argc, char **argv, struct queue_opts *o, FILE *err)
{
    const char *v;
    int r;

    memset(o, 0, sizeof(*o));
    o->limit = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mine") == 0) {
            o->mine = 1;
        } else if (strcmp(argv[i], "--all") == 0) {
            o->all = 1;
        } else if ((r = cli_common_opt(argc, argv, &i, &o->co, err)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "--team", &o->team, err)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "--user", &o->user, err)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "--cursor", &o->cursor, err)) != 0) {
            if (r < 0)
                return -1;
        } else if ((r = cli_opt(argc, argv, &i, "--limit", &v, err)) != 0) {
            if (r < 0 || cli_long("--limit", v, 1, 500, &o->limit, err) != 0)
                return -1;
        } else {
            cli_bad_arg(argv[i], err);
            return -1;
        }
    }
    if (o->co.help)
        return 1;
    if ((o->mine && o->user) || (o->all && o->cursor)) {
        fprintf(err, "trainyard: %s\n",
                o->mine && o->user ? "give --mine or --user, not both"
                                   : "give --all or --cursor, not both");
        return -1;
    }
    return 0;
}

/* GET /api/v1/queue with o's filters, page size limit and cursor (NULL =
 * the first page) into *resp (on a refusal: the error answer, *status its
 * status). 0 on 200; else the exit code, after the message when report. */
static int get_page(struct cli_client *c, const struct queue_opts *o, long limit,
                    const char *cursor, json_t **resp, long *status, int report, FILE *err)
{
    const char *names[] = {"team", "user", "cursor"};
    const char *vals[] = {o->team, o->user, cursor};
    char path[1024], tmp[1024];
    int code;

    *resp = NULL;
    *status = 0;
    snprintf(path, sizeof(path), "/api/v1/queue?limit=%ld%s", limit, o->mine ? "&mine=1" : "");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(path);
        char fmt[32];
        if (vals[i] == NULL)
            continue;
        snprintf(fmt, sizeof(fmt), "&%s=%%s", names[i]);
        if (cli_path(tmp, sizeof(tmp), fmt, vals[i]) != RC_OK || n + strlen(tmp) >= sizeof(path)) {
            fprintf(err, "trainyard: a filter value is too long\n");
            return CLI_EXIT_USAGE;
        }
        memcpy(path + n, tmp, strlen(tmp) + 1);
    }
    if ((code = get(c, path, "cannot read the queue", resp, status, report, err)) != CLI_EXIT_OK)
        return code;
    if (!json_is_array(json_object_get(*resp, "jobs"))) {
        fprintf(err, "trainyard: the server's reply is not a queue forecast\n");
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* How often --all starts again when the forecast is refreshed while it reads:
 * the leader stores one at most every forecast_interval_ms (1 s by default);
 * reading 10,000 jobs took 1.1 s (bench/RESULTS.md, "Queue pages"), so a
 * queue that long can use every try up. */
#define QUEUE_ALL_TRIES 5

static int is_forecast_changed(long status, const json_t *resp)
{
    const char *code = json_string_value(json_object_get(json_object_get(resp, "error"), "code"));
    return status == 409 && code != NULL && strcmp(code, "forecast_changed") == 0;
}

/*
 * Every page of one forecast as one answer in *all: the first page's, with
 * the later pages' jobs appended and next_cursor null. A next page refused
 * with 409 forecast_changed (the leader stored a new forecast meanwhile)
 * starts again from the first page, QUEUE_ALL_TRIES times at most.
 */
static int get_all(struct cli_client *c, const struct queue_opts *o, json_t **all, FILE *err)
{
    int code = CLI_EXIT_FAIL;

    *all = NULL;
    for (int tries = 1; tries <= QUEUE_ALL_TRIES; tries++) {
        json_t *page = NULL;
        const char *next;
        char cursor[96];
        long status = 0;

        if ((code = get_page(c, o, 500, NULL, all, &status, 1, err)) != CLI_EXIT_OK)
            return code;
        while (code == CLI_EXIT_OK &&
               (next = json_string_value(json_object_get(page ? page : *all, "next_cursor"))) !=
                   NULL) {
            snprintf(cursor, sizeof(cursor), "%s", next);
            json_decref(page);
            code = get_page(c, o, 500, cursor, &page, &status, 0, err);
            if (code == CLI_EXIT_OK && json_array_extend(json_object_get(*all, "jobs"),
                                                         json_object_get(page, "jobs")) != 0)
                code = CLI_EXIT_FAIL;
        }
        if (code == CLI_EXIT_OK) {
            json_decref(page);
            return json_object_set_new(*all, "next_cursor", json_null()) == 0 ? CLI_EXIT_OK
                                                                              : CLI_EXIT_FAIL;
        }
        json_decref(*all);
        *all = NULL;
        if (!is_forecast_changed(status, page) || tries == QUEUE_ALL_TRIES) {
            if (status != 0)
                cli_print_api_error(err, "cannot read the queue", status, page);
            json_decref(page);
            return code;
        }
        json_decref(page);
    }
    return code;
}

int cli_cmd_queue(int argc, char **argv, FILE *out, FILE *err)
{
    struct queue_opts o;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    long status = 0;
    int code = CLI_EXIT_USAGE, p;

    if ((p = queue_parse(argc, argv, &o, err)) != 0) {
        if (p == 1) {
            queue_usage(out);
            return CLI_EXIT_OK;
        }
        fprintf(err, "'trainyard queue --help' describes the options\n");
        return CLI_EXIT_USAGE;
    }
    if ((code = cli_connect(o.co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    code = o.all ? get_all(c, &o, &resp, err)
                 : get_page(c, &o, o.limit, o.cursor, &resp, &status, 1, err);
    if (code != CLI_EXIT_OK)
        goto out;
    if (o.co.json) {
        code = dump(out, resp);
    } else {
        const char *next = json_string_value(json_object_get(resp, "next_cursor"));
        if (print_queue(out, resp) != 0) {
            cli_errf(err, M_OOM);
            code = CLI_EXIT_FAIL;
            goto out;
        }
        if (next != NULL) {
            char line[1024];
            cli_msgf(line, sizeof(line), M_QUEUE_MORE,
                     json_array_size(json_object_get(resp, "jobs")),
                     (long long)json_integer_value(json_object_get(resp, "total")), next);
            fprintf(out, "%s\n", line);
        }
    }
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

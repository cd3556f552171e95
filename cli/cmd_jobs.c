/*
 * cmd_jobs.c - the job commands: "trainyard ls", "show JOB", "logs JOB"
 * and "cancel JOB", each one request (logs: a page at a time, or one
 * Server-Sent Events stream with -f) against /api/v1/jobs.
 *
 *   trainyard ls [--state S] [--team T] [--user U] [--limit N] [--cursor C]
 *   trainyard show JOB
 *   trainyard logs JOB [-f] [--rank N] [--attempt N] [--stream stdout|stderr]
 *   trainyard cancel JOB [--reason TEXT]
 *   (each also --json, --server URL)
 *
 * --json prints the server's JSON as it came; for logs, one JSON object
 * per log line (the API's rows), the same with and without -f. Exit codes:
 * cli.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "msg.h"
#include "sse.h"
#include "table.h"

#define LOG_PAGE 5000
#define FOLLOW_RETRIES 5 /* consecutive cut streams before giving up: 1+2+4+8+16 s */
#define FOLLOW_IDLE_S 60 /* the server pings every 15 s */

static void ls_usage(FILE *f)
{
    fprintf(f, "usage: trainyard ls [--state STATE] [--team TEAM] [--user USER] [--limit N]\n"
               "                    [--cursor C] [--json] [--server URL]\n"
               "List jobs, newest first: id, name, team, user, state, GPUs, created.\n"
               "--limit is 1..500 (default 50); --cursor continues after the job id the\n"
               "previous page's next_cursor names (--json shows it).\n");
}

static void show_usage(FILE *f)
{
    fprintf(f, "usage: trainyard show JOB [--json] [--server URL]\n"
               "Show one job: state, resources, times, command (--json: the whole job).\n");
}

static void logs_usage(FILE *f)
{
    fprintf(f, "usage: trainyard logs JOB [-f] [--rank N] [--attempt N] [--stream stdout|stderr]\n"
               "                      [--json] [--server URL]\n"
               "Print a job's log lines, each as \"[RANK] text\" (the text alone with\n"
               "--rank). -f follows them until the job ends. --json: one JSON object per\n"
               "line, as the API gives it.\n");
}

static void cancel_usage(FILE *f)
{
    fprintf(f, "usage: trainyard cancel JOB [--reason TEXT] [--json] [--server URL]\n"
               "Ask the server to cancel a job; its ranks are stopped.\n");
}

/* A job id: digits only, so that it goes into the path as it is. */
static int job_arg(const char *a, const char **job, FILE *err)
{
    if (*job != NULL)
        return cli_bad_arg(a, err);
    *job = a;
    return 0;
}

int cli_cmd_ls(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *state = NULL, *team = NULL, *user = NULL, *cursor = NULL, *v;
    long limit = 50;
    int code = CLI_EXIT_USAGE, r;
    struct cli_client *c = NULL;
    struct cli_table *t = NULL;
    json_t *resp = NULL, *j;
    char path[1024], tmp[1024];
    long status = 0;
    size_t i;

    for (int i2 = 1; i2 < argc; i2++) {
        if ((r = cli_common_opt(argc, argv, &i2, &co, err)) != 0 ||
            (r = cli_opt(argc, argv, &i2, "--state", &state, err)) != 0 ||
            (r = cli_opt(argc, argv, &i2, "--team", &team, err)) != 0 ||
            (r = cli_opt(argc, argv, &i2, "--user", &user, err)) != 0 ||
            (r = cli_opt(argc, argv, &i2, "--cursor", &cursor, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "ls");
        } else if ((r = cli_opt(argc, argv, &i2, "--limit", &v, err)) != 0) {
            if (r < 0 || cli_long("--limit", v, 1, 500, &limit, err) != 0)
                return cli_usage_error(err, "ls");
        } else {
            cli_bad_arg(argv[i2], err);
            return cli_usage_error(err, "ls");
        }
    }
    if (co.help) {
        ls_usage(out);
        return CLI_EXIT_OK;
    }
    snprintf(path, sizeof(path), "/api/v1/jobs?limit=%ld", limit);
    {
        const char *names[] = {"state", "team", "user", "cursor"};
        const char *vals[] = {state, team, user, cursor};
        for (i = 0; i < 4; i++) {
            size_t n = strlen(path);
            char fmt[32];
            if (vals[i] == NULL)
                continue;
            snprintf(fmt, sizeof(fmt), "&%s=%%s", names[i]);
            if (cli_path(tmp, sizeof(tmp), fmt, vals[i]) != RC_OK ||
                n + strlen(tmp) >= sizeof(path)) {
                cli_errf(err, M_OOM);
                return CLI_EXIT_FAIL;
            }
            memcpy(path + n, tmp, strlen(tmp) + 1);
        }
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if ((r = cli_client_request(c, "GET", path, NULL, &status, &resp, err)) != RC_OK) {
        code = cli_exit_for_rc(r);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_JOBS, status, resp);
        goto out;
    }
    code = CLI_EXIT_FAIL;
    if (!json_is_array(json_object_get(resp, "jobs"))) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    if (co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        goto out;
    }
    {
        static const int right[] = {1, 0, 0, 0, 0, 1, 0};
        const char *hdr[] = {cli_msg(H_ID),    cli_msg(H_NAME), cli_msg(H_TEAM),   cli_msg(H_USER),
                             cli_msg(H_STATE), cli_msg(H_GPUS), cli_msg(H_CREATED)};
        if ((t = cli_table_new(7, right)) == NULL || cli_table_add(t, hdr) != RC_OK)
            goto oom;
        json_array_foreach(json_object_get(resp, "jobs"), i, j)
        {
            char b[5][64];
            const char *row[] = {cli_cell(json_object_get(j, "id"), b[0], 64),
                                 cli_cell(json_object_get(j, "name"), b[1], 64),
                                 cli_cell(json_object_get(j, "team"), b[2], 64),
                                 cli_cell(json_object_get(j, "user"), b[3], 64),
                                 json_string_value(json_object_get(j, "state")),
                                 cli_cell(json_object_get(j, "gpus"), b[4], 64),
                                 cli_cell_time(json_object_get(j, "created_at"), tmp, 64)};
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

/* Parses "CMD JOB [common options]" plus the options extra_fn knows. */
static int parse_job_cmd(int argc, char **argv, struct cli_common *co, const char **job,
                         const char *extra_name, const char **extra, FILE *err)
{
    int r;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, co, err)) != 0 ||
            (extra_name != NULL && (r = cli_opt(argc, argv, &i, extra_name, extra, err)) != 0)) {
            if (r < 0)
                return -1;
        } else if (argv[i][0] == '-' || job_arg(argv[i], job, err) != 0) {
            return cli_bad_arg(argv[i], err);
        }
    }
    if (!co->help && *job == NULL) {
        cli_errf(err, M_REQUIRED, "JOB");
        return -1;
    }
    return 0;
}

static void show_row(struct cli_table *t, enum cli_msg label, const char *value, int *bad)
{
    const char *row[] = {cli_msg(label), value ? value : "-"};

    if (!*bad && cli_table_add(t, row) != RC_OK)
        *bad = 1;
}

static void print_job(FILE *out, const json_t *j, int *bad)
{
    struct cli_table *t = cli_table_new(2, NULL);
    const json_t *cmd = json_object_get(json_object_get(j, "spec"), "command");
    char b[8][64], restarts[64], command[2048] = "";
    size_t i, used = 0;
    const json_t *a;

    if (t == NULL) {
        *bad = 1;
        return;
    }
    json_array_foreach(cmd, i, a)
    {
        int w = snprintf(command + used, sizeof(command) - used, "%s%s", i ? " " : "",
                         json_string_value(a) ? json_string_value(a) : "?");
        if (w < 0 || (size_t)w >= sizeof(command) - used)
            break;
        used += (size_t)w;
    }
    snprintf(restarts, sizeof(restarts), "%s / %s",
             cli_cell(json_object_get(j, "restarts"), b[6], 64),
             cli_cell(json_object_get(j, "max_restarts"), b[7], 64));
    show_row(t, H_ID, cli_cell(json_object_get(j, "id"), b[0], 64), bad);
    show_row(t, H_NAME, json_string_value(json_object_get(j, "name")), bad);
    show_row(t, H_TEAM, json_string_value(json_object_get(j, "team")), bad);
    show_row(t, H_USER, json_string_value(json_object_get(j, "user")), bad);
    show_row(t, H_STATE, json_string_value(json_object_get(j, "state")), bad);
    show_row(t, H_GPUS, cli_cell(json_object_get(j, "gpus"), b[1], 64), bad);
    show_row(t, K_PRIORITY, json_string_value(json_object_get(j, "priority")), bad);
    show_row(t, K_RESTARTS, restarts, bad);
    show_row(t, H_SITE, json_string_value(json_object_get(j, "site")), bad);
    show_row(t, H_CREATED, cli_cell_time(json_object_get(j, "created_at"), b[2], 64), bad);
    show_row(t, K_STARTED, cli_cell_time(json_object_get(j, "started_at"), b[3], 64), bad);
    show_row(t, K_FINISHED, cli_cell_time(json_object_get(j, "finished_at"), b[4], 64), bad);
    show_row(t, K_REASON, cli_cell(json_object_get(j, "reason"), b[5], 64), bad);
    show_row(t, K_COMMAND, command[0] ? command : NULL, bad);
    /* Only when it happened: it explains a gap in the logs or the loss curve. */
    if (json_integer_value(json_object_get(j, "dropped_lines")) > 0) {
        char dropped[64];
        show_row(t, K_DROPPED, cli_cell(json_object_get(j, "dropped_lines"), dropped, 64), bad);
    }
    if (!*bad)
        cli_table_print(t, out);
    cli_table_free(t);
}

/* GET or POST /api/v1/jobs/{job}SUFFIX; the reply in *resp. */
static int job_request(struct cli_client *c, const char *method, const char *job,
                       const char *suffix, const json_t *body, enum cli_msg what, long want,
                       json_t **resp, FILE *err)
{
    char path[512], fmt[128];
    long status = 0;
    enum rc rc;

    snprintf(fmt, sizeof(fmt), "/api/v1/jobs/%%s%s", suffix);
    if (cli_path(path, sizeof(path), fmt, job) != RC_OK) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if ((rc = cli_client_request(c, method, path, body, &status, resp, err)) != RC_OK)
        return cli_exit_for_rc(rc);
    if (status != want)
        return cli_refused(err, what, status, *resp);
    if (!json_is_object(*resp)) {
        cli_errf(err, M_BAD_REPLY);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_show(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *job = NULL;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    int code, bad = 0;

    if (parse_job_cmd(argc, argv, &co, &job, NULL, NULL, err) != 0)
        return cli_usage_error(err, "show");
    if (co.help) {
        show_usage(out);
        return CLI_EXIT_OK;
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK ||
        (code = job_request(c, "GET", job, "", NULL, M_W_JOB, 200, &resp, err)) != CLI_EXIT_OK)
        goto out;
    if (co.json) {
        bad = cli_print_json(out, resp) != 0;
    } else {
        const char *st = json_string_value(json_object_get(resp, "state"));
        print_job(out, resp, &bad);
        /* While it waits: where it stands and why (the queue forecast). */
        if (st != NULL && (strcmp(st, "QUEUED") == 0 || strcmp(st, "RESTARTING") == 0))
            cli_queue_print_job_forecast(c, job, out, err);
    }
    if (bad) {
        cli_errf(err, M_OOM);
        code = CLI_EXIT_FAIL;
    }
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

int cli_cmd_cancel(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *job = NULL, *reason = NULL;
    struct cli_client *c = NULL;
    json_t *resp = NULL, *body = NULL;
    int code;

    if (parse_job_cmd(argc, argv, &co, &job, "--reason", &reason, err) != 0)
        return cli_usage_error(err, "cancel");
    if (co.help) {
        cancel_usage(out);
        return CLI_EXIT_OK;
    }
    if (reason != NULL && (body = json_pack("{s:s}", "reason", reason)) == NULL) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK ||
        (code = job_request(c, "POST", job, "/cancel", body, M_W_CANCEL, 202, &resp, err)) !=
            CLI_EXIT_OK)
        goto out;
    if (co.json) {
        code = cli_print_json(out, resp) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    } else {
        char b[64], line[512];
        cli_msgf(line, sizeof(line), M_CANCELLED, cli_cell(json_object_get(resp, "id"), b, 64),
                 json_string_value(json_object_get(resp, "state"))
                     ? json_string_value(json_object_get(resp, "state"))
                     : "?");
        fprintf(out, "%s\n", line);
    }
out:
    json_decref(body);
    json_decref(resp);
    cli_client_free(c);
    return code;
}

struct logs_ctx {
    FILE *out, *err;
    int json, one_rank;
    struct cli_sse sse;
    char last_id[64];
    char end_state[32]; /* set by the "end" event */
    int bad;            /* a row that is not JSON */
};

static void print_log_row(struct logs_ctx *x, const json_t *row)
{
    const char *text = json_string_value(json_object_get(row, "text"));
    char b[32];

    if (x->json) {
        cli_print_json(x->out, row);
        return;
    }
    if (!x->one_rank)
        fprintf(x->out, "[%s] ", cli_cell(json_object_get(row, "rank"), b, sizeof(b)));
    /* A line as the rank printed it: with its newline, unless it was cut. */
    text = text ? text : "";
    fputs(text, x->out);
    if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
        fputc('\n', x->out);
}

static int on_event(const char *event, const char *id, const char *data, void *ud)
{
    struct logs_ctx *x = ud;
    json_t *row;

    if (strcmp(event, "end") == 0) {
        row = json_loads(data, 0, NULL);
        snprintf(x->end_state, sizeof(x->end_state), "%s",
                 json_string_value(json_object_get(row, "state"))
                     ? json_string_value(json_object_get(row, "state"))
                     : "?");
        json_decref(row);
        return -1; /* the server closes the stream too; stop now */
    }
    if (strcmp(event, "log") != 0)
        return 0;
    if ((row = json_loads(data, 0, NULL)) == NULL) {
        x->bad = 1;
        return -1;
    }
    print_log_row(x, row);
    json_decref(row);
    snprintf(x->last_id, sizeof(x->last_id), "%s", id);
    fflush(x->out);
    return 0;
}

static int on_bytes(const char *data, size_t n, void *ud)
{
    struct logs_ctx *x = ud;
    enum rc rc = cli_sse_feed(&x->sse, data, n, on_event, x);

    if (rc == RC_ETOOBIG || rc == RC_ENOMEM)
        x->bad = 1;
    return rc == RC_OK ? 0 : -1;
}

static int follow_logs(struct cli_client *c, const char *base, struct logs_ctx *x, FILE *err)
{
    char path[700];
    json_t *resp = NULL;
    long status = 0;
    int cuts = 0, code = CLI_EXIT_FAIL, followed = 0;
    enum rc rc;

    snprintf(path, sizeof(path), "%sfollow=1", base);
    for (;;) {
        char before[sizeof(x->last_id)];
        snprintf(before, sizeof(before), "%s", x->last_id);
        cli_sse_cleanup(&x->sse);
        cli_sse_init(&x->sse);
        rc = cli_client_stream(c, path, x->last_id[0] ? x->last_id : NULL, FOLLOW_IDLE_S, on_bytes,
                               x, &status, &resp, err);
        if (rc == RC_OK && status != 200) {
            code = cli_refused(err, M_W_LOGS, status, resp);
            break;
        }
        if (x->bad) {
            cli_errf(err, M_BAD_REPLY);
            break;
        }
        if (x->end_state[0] != '\0') {
            code = CLI_EXIT_OK;
            break;
        }
        followed |= status == 200;
        /* A server that never answered is down, not a stream that was cut. */
        if (rc == RC_EUNAVAIL && !followed) {
            code = CLI_EXIT_UNAVAIL;
            break;
        }
        /* Cut before the end (a restart of the server, a proxy): go on
         * after the last line shown, a few times. */
        if (rc != RC_OK && rc != RC_EUNAVAIL) {
            code = cli_exit_for_rc(rc);
            break;
        }
        if (strcmp(before, x->last_id) != 0)
            cuts = 0; /* lines came: count the cuts in a row afresh */
        if (++cuts > FOLLOW_RETRIES) {
            code = CLI_EXIT_UNAVAIL;
            break;
        }
        cli_errf(err, M_STREAM_CUT, rc == RC_OK ? "eof" : "error");
        /* Backing off gives a restarting server about 30 s to come back. */
        sleep(1u << (cuts - 1));
    }
    json_decref(resp);
    cli_sse_cleanup(&x->sse);
    return code;
}

static int page_logs(struct cli_client *c, const char *base, struct logs_ctx *x, FILE *err)
{
    char path[700];
    json_t *resp = NULL, *rows, *row;
    long status = 0;
    int code = CLI_EXIT_OK;
    size_t i, n;
    enum rc rc;

    do {
        snprintf(path, sizeof(path), "%slimit=%d%s%s", base, LOG_PAGE,
                 x->last_id[0] ? "&after=" : "", x->last_id);
        json_decref(resp);
        resp = NULL;
        if ((rc = cli_client_request(c, "GET", path, NULL, &status, &resp, err)) != RC_OK) {
            code = cli_exit_for_rc(rc);
            break;
        }
        if (status != 200) {
            code = cli_refused(err, M_W_LOGS, status, resp);
            break;
        }
        if (!json_is_array(rows = json_object_get(resp, "logs"))) {
            cli_errf(err, M_BAD_REPLY);
            code = CLI_EXIT_FAIL;
            break;
        }
        n = json_array_size(rows);
        json_array_foreach(rows, i, row)
        {
            print_log_row(x, row);
            snprintf(x->last_id, sizeof(x->last_id), "%s",
                     json_string_value(json_object_get(row, "id"))
                         ? json_string_value(json_object_get(row, "id"))
                         : "");
        }
    } while (n == LOG_PAGE && x->last_id[0] != '\0');
    json_decref(resp);
    return code;
}

int cli_cmd_logs(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *job = NULL, *v, *stream = NULL;
    long rank = -1, attempt = 0;
    int follow = 0, r, code;
    struct cli_client *c = NULL;
    struct logs_ctx x;
    char base[600], tmp[128];

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--stream", &stream, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "logs");
        } else if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            follow = 1;
        } else if ((r = cli_opt(argc, argv, &i, "--rank", &v, err)) != 0) {
            if (r < 0 || cli_long("--rank", v, 0, 1023, &rank, err) != 0)
                return cli_usage_error(err, "logs");
        } else if ((r = cli_opt(argc, argv, &i, "--attempt", &v, err)) != 0) {
            if (r < 0 || cli_long("--attempt", v, 1, 1000000, &attempt, err) != 0)
                return cli_usage_error(err, "logs");
        } else if (argv[i][0] == '-' || job_arg(argv[i], &job, err) != 0) {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "logs");
        }
    }
    if (co.help) {
        logs_usage(out);
        return CLI_EXIT_OK;
    }
    if (job == NULL) {
        cli_errf(err, M_REQUIRED, "JOB");
        return cli_usage_error(err, "logs");
    }
    if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        cli_bad_arg(stream, err);
        return cli_usage_error(err, "logs");
    }
    if (cli_path(base, sizeof(base), "/api/v1/jobs/%s/logs?", job) != RC_OK) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if (rank >= 0) {
        snprintf(tmp, sizeof(tmp), "rank=%ld&", rank);
        strncat(base, tmp, sizeof(base) - strlen(base) - 1);
    }
    if (attempt > 0) {
        snprintf(tmp, sizeof(tmp), "attempt=%ld&", attempt);
        strncat(base, tmp, sizeof(base) - strlen(base) - 1);
    }
    if (stream != NULL) {
        snprintf(tmp, sizeof(tmp), "stream=%s&", stream);
        strncat(base, tmp, sizeof(base) - strlen(base) - 1);
    }
    /* base is "...logs?" plus "k=v&" filters: the paths below add the
     * rest (limit, after, follow), the last of them without a '&'. */
    memset(&x, 0, sizeof(x));
    x.out = out;
    x.err = err;
    x.json = co.json;
    x.one_rank = rank >= 0;
    cli_sse_init(&x.sse);
    if ((code = cli_connect(co.server, &c, err)) == CLI_EXIT_OK)
        code = follow ? follow_logs(c, base, &x, err) : page_logs(c, base, &x, err);
    if (follow && code == CLI_EXIT_OK) {
        char line[256];
        cli_msgf(line, sizeof(line), M_LOGS_END, job, x.end_state);
        fprintf(err, "%s\n", line);
    }
    cli_sse_cleanup(&x.sse);
    cli_client_free(c);
    return code;
}

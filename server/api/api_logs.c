/*
 * api_logs.c - a job's logs (paged from either end, followed as Server-Sent
 * Events, or downloaded whole as text), metrics and checkpoints.
 *
 * Following: the stream callback reads new job events and lines from the
 * database; when there are none it parks the connection in the waiters
 * under the key -job_id (api_agent_output.c and api_agent_report.c notify
 * it when a batch or an exit arrives), with a 15 s deadline that yields a
 * keep-alive comment. No thread waits. Job events ("job_event", the rows of GET /jobs/{id}/events
 * after ?events_after=, default all) go first, so the page's state follows
 * them, and "end" comes only after the last one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "db.h"
#include "db_auth.h"
#include "db_jobs.h"
#include "db_logs.h"
#include "jx.h"

#define SSE_PING_MS 15000
#define SSE_BATCH 500
/* How often a followed stream asks whether its session still exists: a
 * stream outlives the check that opened it, and one whose user signed out
 * (or whose session expired) must end, so that the browser's reconnect
 * meets the 401 and the page sends the user to sign in. */
#define SSE_AUTH_MS 5000

static enum rc visible_job(struct srv_req *req, int64_t *id, char *state, size_t n)
{
    int64_t team_id;
    int member = 1;
    enum rc rc = api_param_id(req, 0, id, "job");

    if (rc != RC_OK)
        return rc;
    rc = db_job_brief(req->db, *id, 0, &team_id, state, n, req->req_id);
    if (rc == RC_OK && req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_ENOTFOUND || (rc == RC_OK && !member))
        return srv_fail(req, RC_ENOTFOUND, "", "no such job");
    return rc;
}

static enum rc int_query(struct srv_req *req, const char *key, long lo, long hi, long *out)
{
    const char *v = srv_query(req, key);
    char *end = NULL;
    long x;

    if (v == NULL)
        return RC_OK;
    x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < lo || x > hi)
        return srv_fail(req, RC_EINVAL, key, "%s must be an integer from %ld to %ld", key, lo, hi);
    *out = x;
    return RC_OK;
}

/*
 * A row id to read after: 0 up to INT64_MAX. The ids are bigserial and a
 * long-lived cluster spends them fast (replays use sequence values too), so
 * a cursor is never narrowed to 32 bits anywhere. Signs, spaces and
 * anything past the digits are refused: a client that sends them has a
 * cursor this server never issued.
 */
static int parse_cursor(const char *v, int64_t *out)
{
    char *end = NULL;
    long long x;

    if (v == NULL || *v < '0' || *v > '9')
        return 0;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0)
        return 0;
    *out = (int64_t)x;
    return 1;
}

/* A cursor from the query string (key) or a header (Last-Event-ID); a 400
 * naming it when it is not one. */
static enum rc cursor_value(struct srv_req *req, const char *key, const char *v, int64_t *out)
{
    if (v == NULL || parse_cursor(v, out))
        return RC_OK;
    srv_fail(req, RC_EINVAL, key, "%s must be an id from 0 to %lld", key, (long long)INT64_MAX);
    err_detail(&req->err, "got \"%.32s\"", v);
    return RC_EINVAL;
}

struct follow {
    struct srv_req *req; /* borrowed; the request outlives the stream */
    struct db_log_filter f;
    int64_t events_after; /* job_events.id of the last job event sent */
    int64_t auth_next_ms; /* monotonic ms of the next session check */
    char *pending;        /* owned; formatted events not yet sent */
    size_t len, off;
    int done;
};

static void follow_free(void *cls)
{
    struct follow *fw = cls;

    if (fw == NULL)
        return;
    free(fw->pending);
    free(fw);
}

/* Append one SSE event; returns 0 on ENOMEM. */
static int add_event(struct follow *fw, const char *event, const char *id, const char *data)
{
    size_t need = strlen(event) + strlen(data) + (id ? strlen(id) : 0) + 32;
    char *nb = realloc(fw->pending, fw->len + need);
    int n;

    if (nb == NULL)
        return 0;
    fw->pending = nb;
    n = id ? snprintf(nb + fw->len, need, "id: %s\nevent: %s\ndata: %s\n\n", id, event, data)
           : snprintf(nb + fw->len, need, "event: %s\ndata: %s\n\n", event, data);
    fw->len += (size_t)n;
    return 1;
}

/* Add the job events after fw->events_after; returns how many were added. */
static int add_job_events(struct follow *fw, PGconn *c)
{
    json_t *rows = NULL, *row;
    size_t i;
    int n = 0;

    /* Job events carry no SSE id: Last-Event-ID stays the log's. */
    if (db_job_events_after(c, fw->f.job_id, fw->events_after, SSE_BATCH, &rows, fw->req->req_id) !=
        RC_OK)
        return 0;
    json_array_foreach(rows, i, row)
    {
        char *data = jx_dumps(row, JSON_COMPACT);
        if (data == NULL || !add_event(fw, "job_event", NULL, data)) {
            free(data);
            break;
        }
        free(data);
        fw->events_after = strtoll(json_string_value(json_object_get(row, "id")), NULL, 10);
        n++;
    }
    json_decref(rows);
    return n;
}

/* 0 once the cookie session the stream was opened with is gone (signed
 * out, expired, deleted); API tokens are not re-checked here. */
static int still_signed_in(struct follow *fw, PGconn *c)
{
    struct db_auth_user u;

    if (!fw->req->who.via_cookie || srv_now_ms() < fw->auth_next_ms)
        return 1;
    fw->auth_next_ms = srv_now_ms() + SSE_AUTH_MS;
    return db_auth_session_user(c, fw->req->who.session_hash, &u, fw->req->req_id) != RC_ENOTFOUND;
}

/* Read the next lines (or the end) into fw->pending. */
static void follow_fill(struct follow *fw)
{
    struct srv_app *app = fw->req->app;
    PGconn *c = db_acquire(app->db, 2000);
    json_t *rows = NULL, *row;
    char state[16] = "";
    int64_t team;
    size_t i;

    if (c == NULL)
        return;
    if (!still_signed_in(fw, c)) {
        fw->done = 1; /* the stream ends with what was sent */
        db_release(app->db, c);
        return;
    }
    if (add_job_events(fw, c) > 0) {
        db_release(app->db, c);
        return; /* the lines next time round */
    }
    if (db_logs_read(c, &fw->f, &rows, fw->req->req_id) == RC_OK) {
        json_array_foreach(rows, i, row)
        {
            char *data = jx_dumps(row, JSON_COMPACT);
            const char *id = json_string_value(json_object_get(row, "id"));
            if (data == NULL || !add_event(fw, "log", id, data)) {
                free(data);
                break;
            }
            free(data);
            fw->f.after_id = strtoll(id, NULL, 10);
        }
        if (json_array_size(rows) == 0 &&
            db_job_brief(c, fw->f.job_id, 0, &team, state, sizeof(state), fw->req->req_id) ==
                RC_OK &&
            db_job_state_terminal(state)) {
            char data[64];
            /* The final transition may have committed after the look above. */
            add_job_events(fw, c);
            snprintf(data, sizeof(data), "{\"state\":\"%s\"}", state);
            add_event(fw, "end", NULL, data);
            fw->done = 1;
        }
    }
    json_decref(rows);
    db_release(app->db, c);
}

static long follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct follow *fw = cls;
    size_t n;

    (void)pos;
    if (fw->off == fw->len) {
        fw->off = fw->len = 0;
        if (fw->done || app_stopping(fw->req->app))
            return -1;
        fw->req->poll_checked_us = srv_mono_us(); /* before looking: see waiters.h */
        follow_fill(fw);
        if (fw->len == 0 && fw->done)
            return -1;
        if (fw->len == 0) {
            if (srv_now_ms() >= fw->req->poll_deadline_ms && fw->req->poll_deadline_ms != 0) {
                /* Keep-alive for proxies, then wait again. */
                fw->req->poll_deadline_ms = 0;
                n = (size_t)snprintf(buf, max, ": ping\n\n");
                return (long)n;
            }
            srv_stream_wait(fw->req, -fw->f.job_id, srv_now_ms() + SSE_PING_MS);
            return 0;
        }
    }
    n = fw->len - fw->off < max ? fw->len - fw->off : max;
    memcpy(buf, fw->pending + fw->off, n);
    fw->off += n;
    return (long)n;
}

/* A page of lines: the first `limit` after `after`, or with `tail=1` or
 * `before` the last `limit` before `before` (or the end). Both answers are
 * oldest first; prev_before is the cursor for the page before this one, or
 * null once the first line is in. */
static enum rc logs_page(struct srv_req *req, struct db_log_filter *f, const char *state)
{
    json_t *rows = NULL, *first, *last, *prev = NULL;
    enum rc rc;

    if (f->tail)
        f->limit++; /* one more than asked: says whether earlier lines remain */
    if ((rc = db_logs_read(req->db, f, &rows, req->req_id)) != RC_OK)
        return rc;
    if (f->tail && json_array_size(rows) == (size_t)f->limit) {
        json_array_remove(rows, 0);
        first = json_array_get(rows, 0);
        prev = first ? json_incref(json_object_get(first, "id")) : NULL;
    }
    last = json_array_size(rows) > 0 ? json_array_get(rows, json_array_size(rows) - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O,s:o,s:s}", "logs", rows, "next_after",
                               last ? json_object_get(last, "id") : json_null(), "prev_before",
                               prev ? prev : json_null(), "state", state));
}

enum rc api_job_logs(struct srv_req *req)
{
    struct db_log_filter f = {0};
    char state[16];
    long rank = -1, attempt = 0, limit = 1000, tail = 0;
    int64_t after = 0, before = 0, events_after = 0, last_event = -1;
    const char *stream = srv_query(req, "stream"), *follow = srv_query(req, "follow");
    const char *last_id = srv_header(req, "Last-Event-ID");
    enum rc rc;

    if ((rc = int_query(req, "rank", 0, 1023, &rank)) != RC_OK ||
        (rc = int_query(req, "attempt", 1, 1000000, &attempt)) != RC_OK ||
        (rc = cursor_value(req, "after", srv_query(req, "after"), &after)) != RC_OK ||
        (rc = cursor_value(req, "before", srv_query(req, "before"), &before)) != RC_OK ||
        (rc = int_query(req, "tail", 0, 1, &tail)) != RC_OK ||
        (rc = int_query(req, "limit", 1, 5000, &limit)) != RC_OK ||
        (rc = cursor_value(req, "events_after", srv_query(req, "events_after"), &events_after)) !=
            RC_OK)
        return rc;
    /* Only a followed stream reads it; a bad one is refused all the same.
     * An empty one is none (an SSE "id:" line may reset it to ""). */
    if (last_id != NULL && *last_id != '\0' &&
        (rc = cursor_value(req, "Last-Event-ID", last_id, &last_event)) != RC_OK)
        return rc;
    if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
        return srv_fail(req, RC_EINVAL, "stream", "stream must be stdout or stderr");
    if (srv_query(req, "before") != NULL && before == 0)
        return srv_fail(req, RC_EINVAL, "before", "before must be an id from 1 to %lld",
                        (long long)INT64_MAX);
    if (follow != NULL && strcmp(follow, "1") == 0 && (before > 0 || tail))
        return srv_fail(req, RC_EINVAL, before > 0 ? "before" : "tail",
                        "a followed log reads forwards: %s cannot be used with follow",
                        before > 0 ? "before" : "tail");
    if ((rc = visible_job(req, &f.job_id, state, sizeof(state))) != RC_OK)
        return rc;
    f.rank = (int)rank;
    f.stream = stream;
    f.attempt = (int)attempt;
    f.after_id = after;
    f.before_id = before;
    f.tail = before > 0 || tail;
    f.limit = (int)limit;
    if (follow != NULL && strcmp(follow, "1") == 0) {
        struct follow *fw = calloc(1, sizeof(*fw));
        if (fw == NULL)
            return RC_ENOMEM;
        fw->req = req;
        fw->f = f;
        fw->events_after = events_after;
        fw->auth_next_ms = srv_now_ms() + SSE_AUTH_MS;
        fw->f.limit = SSE_BATCH;
        if (last_event >= 0)
            fw->f.after_id = last_event; /* a reconnect: after the last line it had */
        /* A copy of the stream filter that outlives the query string. */
        fw->f.stream =
            stream == NULL ? NULL : (strcmp(stream, "stdout") == 0 ? "stdout" : "stderr");
        return srv_reply_stream(req, "text/event-stream; charset=utf-8", follow_read, fw,
                                follow_free);
    }
    return logs_page(req, &f, state);
}

/* The whole log as text, read in pages of DOWNLOAD_PAGE lines as the client
 * takes it: a long log is never held in memory at once. */
#define DOWNLOAD_PAGE 5000

struct download {
    struct srv_req *req; /* borrowed; the request outlives the stream */
    struct db_log_filter f;
    char *buf; /* owned; the current page as text */
    size_t len, off, cap;
    int done;
};

static void download_free(void *cls)
{
    struct download *d = cls;

    if (d == NULL)
        return;
    free(d->buf);
    free(d);
}

/* Append n bytes to d->buf; 0 on ENOMEM. */
static int download_put(struct download *d, const char *s, size_t n)
{
    if (d->len + n > d->cap) {
        size_t cap = d->cap ? d->cap : 65536;
        char *nb;
        while (cap < d->len + n)
            cap *= 2;
        if ((nb = realloc(d->buf, cap)) == NULL)
            return 0;
        d->buf = nb;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, s, n);
    d->len += n;
    return 1;
}

/* The next page into d->buf, one line each (a newline added where the line
 * has none); 0 when the database failed. */
static int download_fill(struct download *d)
{
    PGconn *c = db_acquire(d->req->app->db, 2000);
    json_t *rows = NULL, *row;
    size_t i;
    int ok = 0;

    if (c == NULL)
        return 0;
    if (db_logs_read(c, &d->f, &rows, d->req->req_id) != RC_OK)
        goto out;
    json_array_foreach(rows, i, row)
    {
        const char *text = json_string_value(json_object_get(row, "text"));
        size_t n = text ? strlen(text) : 0;
        if ((n > 0 && !download_put(d, text, n)) ||
            ((n == 0 || text[n - 1] != '\n') && !download_put(d, "\n", 1)))
            goto out;
        d->f.after_id = strtoll(json_string_value(json_object_get(row, "id")), NULL, 10);
    }
    /* A short page is the end: lines that arrive later are not this download's. */
    d->done = json_array_size(rows) < (size_t)d->f.limit;
    ok = 1;
out:
    json_decref(rows);
    db_release(d->req->app->db, c);
    return ok;
}

static long download_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct download *d = cls;
    size_t n;

    (void)pos;
    while (d->off == d->len) {
        d->off = d->len = 0;
        if (d->done)
            return -1;
        if (app_stopping(d->req->app) || !download_fill(d))
            return -2; /* a cut-off body, never a download that looks whole */
    }
    n = d->len - d->off < max ? d->len - d->off : max;
    memcpy(buf, d->buf + d->off, n);
    d->off += n;
    return (long)n;
}

enum rc api_job_logs_download(struct srv_req *req)
{
    struct download *d;
    char state[16];
    long rank = -1, attempt = 0;
    const char *stream = srv_query(req, "stream");
    enum rc rc;

    if ((rc = int_query(req, "rank", 0, 1023, &rank)) != RC_OK ||
        (rc = int_query(req, "attempt", 1, 1000000, &attempt)) != RC_OK)
        return rc;
    if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
        return srv_fail(req, RC_EINVAL, "stream", "stream must be stdout or stderr");
    if ((d = calloc(1, sizeof(*d))) == NULL)
        return RC_ENOMEM;
    if ((rc = visible_job(req, &d->f.job_id, state, sizeof(state))) != RC_OK) {
        free(d);
        return rc;
    }
    d->req = req;
    d->f.rank = (int)rank;
    d->f.stream = stream == NULL ? NULL : (strcmp(stream, "stdout") == 0 ? "stdout" : "stderr");
    d->f.attempt = (int)attempt;
    d->f.limit = DOWNLOAD_PAGE;
    if (rank >= 0)
        snprintf(req->resp_filename, sizeof(req->resp_filename), "job-%lld-rank-%ld.log",
                 (long long)d->f.job_id, rank);
    else
        snprintf(req->resp_filename, sizeof(req->resp_filename), "job-%lld.log",
                 (long long)d->f.job_id);
    return srv_reply_stream(req, "text/plain; charset=utf-8", download_read, d, download_free);
}

enum rc api_job_metrics(struct srv_req *req)
{
    char state[16];
    int64_t id, after = 0;
    long limit = 5000;
    json_t *rows = NULL;
    enum rc rc;

    if ((rc = cursor_value(req, "after", srv_query(req, "after"), &after)) != RC_OK ||
        (rc = int_query(req, "limit", 1, 20000, &limit)) != RC_OK ||
        (rc = visible_job(req, &id, state, sizeof(state))) != RC_OK)
        return rc;
    if ((rc = db_metrics_read(req->db, id, after, (int)limit, &rows, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "metrics", rows));
}

enum rc api_job_checkpoints(struct srv_req *req)
{
    char state[16];
    int64_t id;
    json_t *rows = NULL;
    enum rc rc;

    if ((rc = visible_job(req, &id, state, sizeof(state))) != RC_OK)
        return rc;
    if ((rc = db_checkpoints_read(req->db, id, &rows, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "checkpoints", rows));
}

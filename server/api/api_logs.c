/*
 * api_logs.c - a job's logs (paged, or followed as Server-Sent Events),
 * metrics and checkpoints.
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

enum rc api_job_logs(struct srv_req *req)
{
    struct db_log_filter f = {0};
    char state[16];
    long rank = -1, attempt = 0, limit = 1000;
    int64_t after = 0, events_after = 0, last_event = -1;
    const char *stream = srv_query(req, "stream"), *follow = srv_query(req, "follow");
    const char *last_id = srv_header(req, "Last-Event-ID");
    json_t *rows = NULL, *last;
    enum rc rc;

    if ((rc = int_query(req, "rank", 0, 1023, &rank)) != RC_OK ||
        (rc = int_query(req, "attempt", 1, 1000000, &attempt)) != RC_OK ||
        (rc = cursor_value(req, "after", srv_query(req, "after"), &after)) != RC_OK ||
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
    if ((rc = visible_job(req, &f.job_id, state, sizeof(state))) != RC_OK)
        return rc;
    f.rank = (int)rank;
    f.stream = stream;
    f.attempt = (int)attempt;
    f.after_id = after;
    f.limit = (int)limit;
    if (follow != NULL && strcmp(follow, "1") == 0) {
        struct follow *fw = calloc(1, sizeof(*fw));
        if (fw == NULL)
            return RC_ENOMEM;
        fw->req = req;
        fw->f = f;
        fw->events_after = events_after;
        fw->f.limit = SSE_BATCH;
        if (last_event >= 0)
            fw->f.after_id = last_event; /* a reconnect: after the last line it had */
        /* A copy of the stream filter that outlives the query string. */
        fw->f.stream =
            stream == NULL ? NULL : (strcmp(stream, "stdout") == 0 ? "stdout" : "stderr");
        return srv_reply_stream(req, "text/event-stream; charset=utf-8", follow_read, fw,
                                follow_free);
    }
    if ((rc = db_logs_read(req->db, &f, &rows, req->req_id)) != RC_OK)
        return rc;
    last = json_array_size(rows) > 0 ? json_array_get(rows, json_array_size(rows) - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O,s:s}", "logs", rows, "next_after",
                               last ? json_object_get(last, "id") : json_null(), "state", state));
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

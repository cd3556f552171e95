/*
 * gateway.c - the gateway's handlers (gateway.h). Each request's state is a
 * struct xchg, owned by the request: req->poll_state while it waits for
 * the replica, the stream's cls once it streams; it is finished (record,
 * metrics, quota count) and freed exactly once, when the request ends.
 */
#include "gateway.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "clock.h"
#include "crypto.h"
#include "db.h"
#include "gw_limits.h"
#include "gw_metrics.h"
#include "gw_proxy.h"
#include "gw_records.h"
#include "gw_view.h"
#include "jx.h"
#include "log.h"
#include "serve_record.h"

/* Waiters keys of gateway calls: far below job ids (negative) and node ids. */
#define GW_KEY_BASE (-(INT64_C(1) << 62))
/* The longest SSE event the gateway parses for usage and text; longer ones
 * are relayed all the same, only not counted. */
#define GW_SSE_MAX (1 << 20)

struct serve_gw {
    struct srv_app *app;
    struct gw_view *view;
    struct gw_limits *limits;
    struct gw_proxy *proxy;
    struct gw_records *records; /* NULL when gateway_records is off */
    struct gw_metrics *metrics;
    atomic_llong seq;
};

enum gw_kind { GW_CHAT, GW_COMPLETIONS, GW_OTHER };

struct xchg {
    struct srv_req *req;
    struct serve_gw *gw;
    const char *route;
    enum gw_kind kind;
    char ts_text[32];
    char prompt_sha[65];
    struct db_gw_key key; /* key.id 0: none checked out */
    struct gw_target t;
    char deployment[64]; /* the deployment the request reached, "" none */
    char error_code[40];
    int stream_wanted;
    int inflight;
    int retried;
    int cut; /* a stream that failed midway */
    int64_t wait_key;
    struct gw_call *call;
    size_t pos; /* stream bytes relayed */
    char *sse;  /* an SSE event not yet complete */
    size_t sse_len;
    char *answer; /* generated text */
    size_t answer_len;
    int64_t prompt_tokens, completion_tokens, chunks;
    int have_usage;
    int64_t ttft_us;
    char *answer_body; /* owned: the relayed body of a non-stream answer, for its hash */
    size_t answer_body_len;
};

/* ------------------------------------------------------------------ */

static void ts_now(char *out, size_t n)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

static void append_text(struct xchg *x, const char *s, size_t n)
{
    char *nb;

    if (n == 0 || x->answer_len + n > GW_PROXY_MAX_BODY)
        return;
    nb = realloc(x->answer, x->answer_len + n + 1);
    if (nb == NULL)
        return;
    x->answer = nb;
    memcpy(x->answer + x->answer_len, s, n);
    x->answer_len += n;
    x->answer[x->answer_len] = '\0';
}

/* usage and generated text of one answer object (a whole answer, or a
 * stream's chunk). */
static void take_answer(struct xchg *x, const json_t *o, int chunk)
{
    const json_t *usage = json_object_get(o, "usage"), *choices = json_object_get(o, "choices");
    const json_t *c;
    size_t i;
    int text = 0;

    if (json_is_object(usage)) {
        x->prompt_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
        x->completion_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
        x->have_usage = 1;
    }
    json_array_foreach(choices, i, c)
    {
        const json_t *v = NULL;
        if (x->kind == GW_CHAT)
            v = json_object_get(json_object_get(c, chunk ? "delta" : "message"), "content");
        else if (x->kind == GW_COMPLETIONS)
            v = json_object_get(c, "text");
        if (json_is_string(v) && json_string_length(v) > 0) {
            append_text(x, json_string_value(v), json_string_length(v));
            text = 1;
        }
    }
    if (chunk && text)
        x->chunks++;
}

/* Feed relayed stream bytes to the SSE parser: each "data: {...}" event's
 * usage and text. */
static void parse_sse(struct xchg *x, const char *data, size_t n)
{
    char *nb, *start, *end;

    if (x->sse_len + n > GW_SSE_MAX) {
        x->sse_len = 0; /* an event this long is relayed, not counted */
        return;
    }
    nb = realloc(x->sse, x->sse_len + n + 1);
    if (nb == NULL)
        return;
    x->sse = nb;
    memcpy(x->sse + x->sse_len, data, n);
    x->sse_len += n;
    x->sse[x->sse_len] = '\0';
    start = x->sse;
    while ((end = strstr(start, "\n\n")) != NULL) {
        *end = '\0';
        for (char *line = start; line != NULL && line < end;) {
            char *nl = strchr(line, '\n');
            if (nl != NULL)
                *nl = '\0';
            if (strncmp(line, "data:", 5) == 0) {
                const char *p = line + 5;
                json_t *o;
                while (*p == ' ')
                    p++;
                if (strcmp(p, "[DONE]") != 0 && jx_loadb(p, strlen(p), 0, &o, NULL) == RC_OK) {
                    take_answer(x, o, 1);
                    json_decref(o);
                }
            }
            line = nl ? nl + 1 : NULL;
        }
        start = end + 2;
    }
    x->sse_len -= (size_t)(start - x->sse);
    memmove(x->sse, start, x->sse_len + 1);
}

/* ------------------------------------------------------------------ */
/* The end of a request: its record, metrics and quota count.           */

static json_t *record_row(struct xchg *x, int status, int64_t latency_us)
{
    struct srv_req *req = x->req;
    char answer_sha[65], rec_sha[65];
    struct serve_record r;
    json_t *row;

    if (x->kind != GW_OTHER && status == 200)
        crypto_sha256_hex(x->answer ? x->answer : "", x->answer_len, answer_sha);
    else
        crypto_sha256_hex(x->answer_body ? x->answer_body : "", x->answer_body_len, answer_sha);
    memset(&r, 0, sizeof(r));
    r.request_id = req->req_id;
    r.ts_text = x->ts_text;
    r.key_id = x->key.id;
    r.deployment_id = x->t.deployment_id;
    r.version_id = x->t.version_id;
    r.replica_job_id = x->t.replica_job_id;
    r.manifest_sha256 = x->t.manifest;
    r.route = x->route;
    r.status = status;
    r.error_code = x->error_code;
    r.prompt_sha256 = x->prompt_sha;
    r.answer_sha256 = answer_sha;
    r.prompt_tokens = x->prompt_tokens;
    r.completion_tokens = x->completion_tokens;
    r.latency_us = latency_us;
    r.ttft_us = x->ttft_us;
    r.client_addr = req->client_addr;
    if (serve_record_sha256(&r, rec_sha) != RC_OK) {
        LOG_ERROR("gateway", "a request record cannot be hashed", "req_id=%s", req->req_id);
        return NULL;
    }
#define ID_OR_NULL(v) ((v) > 0 ? json_integer(v) : json_null())
    row = json_pack(
        "{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:s,s:s,s:i,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:s,"
        "s:s}",
        "request_id", r.request_id, "ts", r.ts_text, "ts_text", r.ts_text, "key_id",
        ID_OR_NULL(r.key_id), "deployment_id", ID_OR_NULL(r.deployment_id), "version_id",
        ID_OR_NULL(r.version_id), "replica_job_id", ID_OR_NULL(r.replica_job_id), "manifest_sha256",
        r.manifest_sha256, "route", r.route, "status", status, "error_code", r.error_code,
        "prompt_sha256", r.prompt_sha256, "answer_sha256", r.answer_sha256, "prompt_tokens",
        (json_int_t)r.prompt_tokens, "completion_tokens", (json_int_t)r.completion_tokens,
        "latency_us", (json_int_t)r.latency_us, "ttft_us", (json_int_t)r.ttft_us, "client_addr",
        r.client_addr, "record_sha256", rec_sha);
#undef ID_OR_NULL
    if (row != NULL && x->t.keep_texts_days > 0) {
        json_object_set_new(
            row, "prompt_text",
            json_stringn_nocheck(req->raw_body ? req->raw_body : "", req->raw_body_len));
        if (x->kind != GW_OTHER && status == 200)
            json_object_set_new(row, "answer_text",
                                json_stringn_nocheck(x->answer ? x->answer : "", x->answer_len));
        else
            json_object_set_new(
                row, "answer_text",
                json_stringn_nocheck(x->answer_body ? x->answer_body : "", x->answer_body_len));
    }
    return row;
}

static void xchg_finish(void *p)
{
    struct xchg *x = p;
    struct srv_req *req;
    int64_t latency_us;
    int status;

    if (x == NULL)
        return;
    req = x->req;
    latency_us = srv_mono_us() - req->start_us;
    status = x->cut ? 502 : (req->status ? req->status : 500);
    if (x->cut && x->error_code[0] == '\0')
        snprintf(x->error_code, sizeof(x->error_code), "upstream_error");
    if (!x->have_usage && x->kind != GW_OTHER)
        x->completion_tokens = x->chunks;
    if (x->inflight)
        gw_metrics_inflight(x->gw->metrics, x->deployment, x->t.version_id, -1);
    gw_metrics_observe(x->gw->metrics, x->deployment, x->t.version_id, status, latency_us,
                       x->ttft_us, x->completion_tokens);
    if (x->key.id > 0 && x->prompt_tokens + x->completion_tokens > 0)
        gw_limits_add_tokens(x->gw->limits, x->key.id, x->prompt_tokens + x->completion_tokens);
    if (x->gw->records != NULL)
        gw_records_push(x->gw->records, record_row(x, status, latency_us));
    gw_call_release(x->call);
    free(x->sse);
    free(x->answer);
    free(x->answer_body);
    free(x);
}

/* ------------------------------------------------------------------ */
/* Answers                                                              */

static const char *error_type(int status, const char *code)
{
    if (strcmp(code, "insufficient_quota") == 0)
        return "insufficient_quota";
    if (status == 429)
        return "requests";
    if (status >= 500)
        return "server_error";
    return "invalid_request_error";
}

/* An error answer in the OpenAI shape; its body kept for the record. */
static enum rc gw_error(struct xchg *x, int status, const char *code, const char *fmt, ...)
    TY_PRINTF(4, 5);

static enum rc gw_error(struct xchg *x, int status, const char *code, const char *fmt, ...)
{
    struct srv_req *req = x->req;
    char msg[256];
    va_list ap;
    json_t *body;
    char *text;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(x->error_code, sizeof(x->error_code), "%s", code);
    body = json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", msg, "type",
                     error_type(status, code), "param", "code", code);
    text = body ? jx_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    free(x->answer_body);
    x->answer_body = strdup(text);
    x->answer_body_len = x->answer_body ? strlen(text) : 0;
    free(req->resp_raw);
    req->resp_raw = text;
    req->resp_raw_len = strlen(text);
    req->resp_ctype = "application/json; charset=utf-8";
    req->status = status;
    return RC_OK;
}

static void add_headers(struct xchg *x)
{
    char v[24];

    if (x->deployment[0] != '\0')
        (void)srv_add_header(x->req, "x-trainyard-deployment", x->deployment);
    if (x->t.version_id > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)x->t.version_id);
        (void)srv_add_header(x->req, "x-trainyard-version", v);
    }
}

/* ------------------------------------------------------------------ */
/* The call and its answer                                              */

static enum rc resume(struct srv_req *req);

static enum rc start_call(struct xchg *x)
{
    struct srv_req *req = x->req;
    struct serve_gw *gw = x->gw;
    char url[160];
    int64_t deadline =
        srv_now_ms() + (int64_t)req->app->cfg->gateway_upstream_timeout_s * 1000 + 5000;

    snprintf(url, sizeof(url), "%s%s", x->t.url_base, x->route);
    gw_call_release(x->call);
    x->call = gw_call_new(url, x->t.token, req->raw_body, req->raw_body_len, x->wait_key);
    if (x->call == NULL)
        return gw_error(x, 500, "internal_error", "internal error");
    /* Stamped before the call can notify: a wake-up that lands before the
     * park makes the park return at once (waiters.h). */
    req->poll_checked_us = srv_mono_us();
    if (gw_proxy_submit(gw->proxy, x->call) != RC_OK)
        return gw_error(x, 503, "no_replica_ready", "the gateway is stopping");
    srv_suspend(req, x->wait_key, deadline, resume);
    return RC_OK;
}

static long stream_fn(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct xchg *x = cls;
    struct srv_req *req = x->req;
    struct gw_call_state st;
    size_t n;

    (void)pos;
    req->poll_checked_us = srv_mono_us();
    n = gw_call_read(x->call, x->pos, buf, max);
    if (n > 0) {
        parse_sse(x, buf, n);
        x->pos += n;
        return (long)n;
    }
    gw_call_state(x->call, &st);
    if (st.done) {
        if (st.failed)
            x->cut = 1;
        return st.failed ? -2 : -1;
    }
    if (app_stopping(req->app)) {
        x->cut = 1;
        return -2;
    }
    srv_stream_wait(req, x->wait_key, srv_now_ms() + 1000);
    return 0;
}

/* The whole answer: relay status and body, take usage and text. */
static enum rc relay_whole(struct xchg *x, const struct gw_call_state *st)
{
    struct srv_req *req = x->req;
    size_t len;
    const char *body = gw_call_body(x->call, &len);
    json_t *o = NULL;

    if (st->status == 200 && jx_loadb(body, len, 0, &o, NULL) == RC_OK) {
        take_answer(x, o, 0);
        json_decref(o);
    }
    if (st->status >= 400)
        snprintf(x->error_code, sizeof(x->error_code), "upstream_%ld", st->status);
    x->answer_body = malloc(len + 1);
    if (x->answer_body == NULL)
        return gw_error(x, 500, "internal_error", "internal error");
    memcpy(x->answer_body, body, len);
    x->answer_body[len] = '\0';
    x->answer_body_len = len;
    req->resp_raw = malloc(len + 1);
    if (req->resp_raw == NULL)
        return gw_error(x, 500, "internal_error", "internal error");
    memcpy(req->resp_raw, body, len);
    req->resp_raw_len = len;
    req->resp_ctype = "application/json; charset=utf-8";
    req->status = (int)st->status;
    return RC_OK;
}

static enum rc resume(struct srv_req *req)
{
    struct xchg *x = req->poll_state;
    struct gw_call_state st;
    int64_t deadline =
        srv_now_ms() + (int64_t)req->app->cfg->gateway_upstream_timeout_s * 1000 + 5000;

    req->poll_checked_us = srv_mono_us();
    gw_call_state(x->call, &st);
    if (st.first_byte_us > 0 && x->ttft_us == 0)
        x->ttft_us = st.first_byte_us - req->start_us;
    if (st.done && st.connect_failed && !x->retried) {
        struct gw_target other;
        x->retried = 1;
        if (gw_view_pick(x->gw->view, x->deployment, x->t.replica_job_id, &other) == RC_OK) {
            x->t = other;
            return start_call(x);
        }
    }
    if (st.done && (st.failed || st.status == 0))
        return gw_error(x, 502, "upstream_error", "the model replica failed to answer");
    if (x->stream_wanted && st.status == 200 && st.event_stream && st.have > 0) {
        /* From here the xchg is the stream's, freed when it ends. */
        req->poll_state = NULL;
        req->poll_state_free = NULL;
        return srv_reply_stream(req, "text/event-stream", stream_fn, x, xchg_finish);
    }
    if (st.done)
        return relay_whole(x, &st);
    if (req->poll_deadline_ms <= srv_now_ms() || app_stopping(req->app))
        return gw_error(x, 502, "upstream_error", "the model replica did not answer in time");
    srv_suspend(req, x->wait_key, deadline, resume);
    return RC_OK;
}

/* ------------------------------------------------------------------ */
/* The handlers                                                         */

static struct xchg *xchg_new(struct srv_req *req, const char *route, enum gw_kind kind)
{
    struct xchg *x = calloc(1, sizeof(*x));
    struct serve_gw *gw = req->app->gateway;
    uint64_t rnd;

    if (x == NULL)
        return NULL;
    x->req = req;
    x->gw = gw;
    x->route = route;
    x->kind = kind;
    ts_now(x->ts_text, sizeof(x->ts_text));
    crypto_sha256_hex(req->raw_body ? req->raw_body : "", req->raw_body_len, x->prompt_sha);
    x->wait_key = GW_KEY_BASE - (int64_t)atomic_fetch_add(&gw->seq, 1);
    /* A request id unique across restarts and replicas, for the record. */
    arc4random_buf(&rnd, sizeof(rnd));
    snprintf(req->req_id, sizeof(req->req_id), "r-%016llx", (unsigned long long)rnd);
    req->poll_state = x;
    req->poll_state_free = xchg_finish;
    return x;
}

static PGconn *req_db(void *req)
{
    return srv_db(req);
}

/* The key check: RC_OK with x->key filled, or an answer is set (return it). */
static int check_key(struct xchg *x, enum rc *out)
{
    struct srv_req *req = x->req;
    const char *auth = srv_header(req, "Authorization");
    enum rc rc;

    *out = RC_OK;
    if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 || auth[7] == '\0' ||
        strlen(auth + 7) > 200) {
        *out = gw_error(x, 401, "invalid_api_key",
                        "missing API key: send it as Authorization: Bearer <key>");
        return 0;
    }
    rc = gw_limits_key(x->gw->limits, auth + 7, req_db, req, &x->key, req->req_id);
    if (rc == RC_OK && x->key.revoked) {
        memset(&x->key, 0, sizeof(x->key));
        *out = gw_error(x, 401, "invalid_api_key", "this API key was revoked");
        return 0;
    }
    if (rc == RC_ENOTFOUND) {
        memset(&x->key, 0, sizeof(x->key));
        *out = gw_error(x, 401, "invalid_api_key", "incorrect API key");
        return 0;
    }
    if (rc != RC_OK) {
        memset(&x->key, 0, sizeof(x->key));
        *out = gw_error(x, 503, "unavailable", "the gateway cannot check keys now; retry");
        return 0;
    }
    return 1;
}

/* Quota, then rate: 1 to go on, 0 with an answer set. */
static int check_limits(struct xchg *x, enum rc *out)
{
    int retry = 0;

    if (gw_limits_over_quota(x->gw->limits, &x->key)) {
        *out = gw_error(x, 429, "insufficient_quota", "this key used its token quota of %lld",
                        (long long)x->key.token_quota);
        return 0;
    }
    if (!gw_limits_rate(x->gw->limits, &x->key, x->req->client_addr, &retry)) {
        x->req->retry_after_s = retry;
        *out = gw_error(x, 429, "rate_limit_exceeded",
                        "rate limit of %d requests per minute reached; retry in %d s",
                        x->key.rate_per_min, retry);
        return 0;
    }
    return 1;
}

static enum rc handle(struct srv_req *req, const char *route, enum gw_kind kind)
{
    struct xchg *x = xchg_new(req, route, kind);
    json_t *body = NULL;
    const char *model;
    enum rc rc;

    if (x == NULL)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    if (!check_key(x, &rc))
        return rc;
    if (jx_loadb(req->raw_body, req->raw_body_len, 0, &body, NULL) != RC_OK ||
        !json_is_object(body)) {
        json_decref(body);
        return gw_error(x, 400, "invalid_request", "the body must be a JSON object");
    }
    model = json_string_value(json_object_get(body, "model"));
    x->stream_wanted = json_is_true(json_object_get(body, "stream"));
    if (model == NULL || strlen(model) >= sizeof(x->deployment)) {
        json_decref(body);
        return gw_error(x, 400, "invalid_request", "\"model\" must name a deployment");
    }
    if (strcmp(model, x->key.deployment) != 0) {
        int known = gw_view_has(x->gw->view, model);
        json_decref(body);
        if (!known)
            return gw_error(x, 404, "model_not_found", "no such model");
        return gw_error(x, 403, "model_not_allowed", "this key may not call this model");
    }
    json_decref(body);
    snprintf(x->deployment, sizeof(x->deployment), "%s", x->key.deployment);
    x->t.deployment_id = x->key.deployment_id;
    if (!check_limits(x, &rc))
        return rc;
    rc = gw_view_pick(x->gw->view, x->deployment, 0, &x->t);
    if (rc == RC_ENOTFOUND) {
        x->t.deployment_id = x->key.deployment_id;
        return gw_error(x, 404, "model_not_found", "no such model");
    }
    add_headers(x);
    if (rc != RC_OK)
        return gw_error(x, 503, "no_replica_ready", "no replica of this model is ready");
    gw_metrics_inflight(x->gw->metrics, x->deployment, x->t.version_id, 1);
    x->inflight = 1;
    return start_call(x);
}

enum rc serve_gw_chat(struct srv_req *req)
{
    return handle(req, "/v1/chat/completions", GW_CHAT);
}

enum rc serve_gw_completions(struct srv_req *req)
{
    return handle(req, "/v1/completions", GW_COMPLETIONS);
}

enum rc serve_gw_embeddings(struct srv_req *req)
{
    return handle(req, "/v1/embeddings", GW_OTHER);
}

enum rc serve_gw_predict(struct srv_req *req)
{
    return handle(req, "/v1/predict", GW_OTHER);
}

enum rc serve_gw_models(struct srv_req *req)
{
    struct xchg *x = xchg_new(req, "/v1/models", GW_OTHER);
    json_t *list;
    char *text;
    enum rc rc;

    if (x == NULL)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    if (!check_key(x, &rc))
        return rc;
    snprintf(x->deployment, sizeof(x->deployment), "%s", x->key.deployment);
    x->t.deployment_id = x->key.deployment_id;
    list = json_pack("{s:s,s:[{s:s,s:s,s:i,s:s}]}", "object", "list", "data", "id",
                     x->key.deployment, "object", "model", "created", 0, "owned_by", "trainyard");
    text = list ? jx_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (text == NULL)
        return gw_error(x, 500, "internal_error", "internal error");
    x->answer_body = strdup(text);
    x->answer_body_len = x->answer_body ? strlen(text) : 0;
    req->resp_raw = text;
    req->resp_raw_len = strlen(text);
    req->resp_ctype = "application/json; charset=utf-8";
    req->status = 200;
    add_headers(x);
    return RC_OK;
}

/* ------------------------------------------------------------------ */

enum rc serve_gw_new(struct srv_app *app, struct serve_gw **out)
{
    struct serve_gw *gw = calloc(1, sizeof(*gw));

    *out = NULL;
    if (gw == NULL)
        return RC_ENOMEM;
    gw->app = app;
    gw->limits = gw_limits_new();
    gw->metrics = gw_metrics_new();
    gw->view = gw_view_new(app);
    gw->proxy = gw_proxy_new(app->waiters, app->cfg->gateway_upstream_timeout_s);
    if (app->cfg->gateway_records)
        gw->records = gw_records_new(app);
    else
        LOG_WARN("gateway",
                 "gateway_records is off: no request records are written (a benchmark switch; "
                 "never in production)",
                 "");
    if (gw->limits == NULL || gw->metrics == NULL || gw->view == NULL || gw->proxy == NULL ||
        (app->cfg->gateway_records && gw->records == NULL)) {
        serve_gw_free(gw);
        return RC_ENOMEM;
    }
    *out = gw;
    return RC_OK;
}

void serve_gw_free(struct serve_gw *gw)
{
    if (gw == NULL)
        return;
    gw_proxy_free(gw->proxy);
    gw_view_free(gw->view);
    gw_records_free(gw->records);
    gw_limits_free(gw->limits);
    gw_metrics_free(gw->metrics);
    free(gw);
}

enum rc serve_gw_metrics(struct serve_gw *gw, char **buf, size_t *len, size_t *cap)
{
    if (gw == NULL)
        return RC_OK;
    return gw_metrics_render(gw->metrics, gw_records_dropped(gw->records), buf, len, cap);
}

/*
 * webhooks.c - see webhooks.h.
 */
#include "webhooks.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "db.h"
#include "db_webhooks.h"
#include "httpc.h"
#include "jx.h"
#include "log.h"
#include "metrics.h"
#include "srv.h"

#define WEBHOOK_MAX_ATTEMPTS 8

/*
 * The lease of a claimed delivery: it must outlast building the
 * request, the request itself (at most timeout_ms: httpc's timeout_ms bounds
 * connect to answer) and getting a connection back to record the outcome, or
 * another replica claims the delivery again and the receiver gets it twice.
 * One request per claim keeps that bounded; twice the timeout plus a second
 * leaves the slack to a loaded database rather than to chance.
 */
#define WEBHOOK_LEASE_MS(timeout_ms) (2 * (timeout_ms) + 1000)

struct webhooks {
    struct srv_app *app;
    pthread_t thread;
    int timeout_ms; /* one request, connect to answer (cfg->webhook_timeout_ms) */
    int lease_ms;   /* of each claim: WEBHOOK_LEASE_MS(timeout_ms) */
};

/* What one request came to, for db_delivery_result(). */
struct outcome {
    int ok;                    /* the receiver answered 2xx */
    long status;               /* its HTTP status, 0 when none came */
    char err[HTTPC_ERROR_MAX]; /* why not, when !ok */
};

static const char *str_or(const char *s, const char *dflt)
{
    return s != NULL ? s : dflt;
}

/* A handoff's text in a chat group: WeCom takes at most 2048 bytes of text
 * in a message, so the text keeps the newest messages that fit, each cut to
 * HANDOFF_LINE_MAX bytes (the generic format carries them all). */
#define HANDOFF_TEXT_MAX 2000
#define HANDOFF_LINE_MAX 300

/* How many bytes of s to keep for at most n: whole UTF-8 characters. */
static size_t utf8_cut(const char *s, size_t n)
{
    size_t len = strlen(s);

    if (len <= n)
        return len;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static const char *handoff_label(const json_t *m)
{
    const char *role = json_string_value(json_object_get(m, "role"));

    return role != NULL && strcmp(role, "user") == 0 ? "访客 visitor" : "助手 bot";
}

/* The line of message m: "\n<label>: <content>", its length. */
static size_t handoff_line(const json_t *m, char *out, size_t out_size)
{
    const char *c = str_or(json_string_value(json_object_get(m, "content")), "");
    size_t keep = utf8_cut(c, HANDOFF_LINE_MAX);
    int n = snprintf(out, out_size, "\n%s: %.*s%s", handoff_label(m), (int)keep, c,
                     keep < strlen(c) ? "…" : "");

    return n > 0 ? (size_t)n : 0;
}

/* A visitor of a chat widget asked for a person: who, and the newest
 * messages of the conversation, one line each, for whoever follows up. */
static char *handoff_text(const json_t *p)
{
    const json_t *conv = json_object_get(p, "conversation");
    size_t n = json_array_size(conv), first = n, len, used;
    char *buf = malloc(HANDOFF_TEXT_MAX + 1), line[HANDOFF_LINE_MAX + 64];

    if (buf == NULL)
        return NULL;
    len = (size_t)snprintf(
        buf, HANDOFF_TEXT_MAX + 1,
        "【trainyard】访客请求人工客服 / a visitor asked for a person\n%.64s (%.64s)",
        str_or(json_string_value(json_object_get(p, "deployment")), ""),
        str_or(json_string_value(json_object_get(p, "visitor")), ""));
    /* The newest messages that fit after the heading and a "…" line. */
    used = len + strlen("\n…");
    while (first > 0) {
        size_t l = handoff_line(json_array_get(conv, first - 1), line, sizeof(line));
        if (used + l > HANDOFF_TEXT_MAX)
            break;
        used += l;
        first--;
    }
    if (first > 0)
        len += (size_t)snprintf(buf + len, HANDOFF_TEXT_MAX + 1 - len, "\n…");
    for (size_t i = first; i < n; i++)
        len += handoff_line(json_array_get(conv, i), buf + len, HANDOFF_TEXT_MAX + 1 - len);
    return buf;
}

/* One line a person reads in a chat group: Chinese first, then English. */
static char *chat_text(const json_t *p)
{
    const char *event = json_string_value(json_object_get(p, "event"));
    const json_t *job = json_object_get(p, "job");
    const char *zh = "通知", *en = "notice";
    char buf[1024];

    if (event == NULL)
        event = "";
    if (strcmp(event, "serve.handoff") == 0)
        return handoff_text(p);
    if (strcmp(event, "job.failed") == 0)
        zh = "训练作业失败", en = "job failed";
    else if (strcmp(event, "job.recovered") == 0)
        zh = "训练作业已自动恢复", en = "job recovered";
    else if (strcmp(event, "job.succeeded") == 0)
        zh = "训练作业完成", en = "job succeeded";
    else if (strcmp(event, "node.lost") == 0)
        zh = "节点失联，作业将重启", en = "node lost, job restarting";
    else if (strcmp(event, "policy.violation") == 0)
        zh = "数据合规策略拒绝了作业", en = "job refused by the data-residency policy";
    snprintf(buf, sizeof(buf), "【trainyard】%s / %s\n作业 job #%s %s (team %s)\n%s", zh, en,
             str_or(json_string_value(json_object_get(job, "id")), "?"),
             str_or(json_string_value(json_object_get(job, "name")), ""),
             str_or(json_string_value(json_object_get(job, "team")), ""),
             str_or(json_string_value(json_object_get(p, "message")), ""));
    return strdup(buf);
}

char *webhooks_render(const char *format, const char *payload, long timestamp,
                      const char *feishu_sign)
{
    json_t *p = NULL, *body = NULL;
    char *text = NULL, *out = NULL;

    if (jx_loadb(payload, strlen(payload), 0, &p, NULL) != RC_OK)
        return NULL;
    if (strcmp(format, "generic") == 0) {
        out = jx_dumps(p, JSON_COMPACT);
        json_decref(p);
        return out;
    }
    text = chat_text(p);
    if (text == NULL)
        goto done;
    if (strcmp(format, "wecom") == 0 || strcmp(format, "dingtalk") == 0) {
        body = json_pack("{s:s,s:{s:s}}", "msgtype", "text", "text", "content", text);
    } else if (strcmp(format, "feishu") == 0) {
        body = json_pack("{s:s,s:{s:s}}", "msg_type", "text", "content", "text", text);
        if (body != NULL && feishu_sign != NULL && feishu_sign[0] != '\0') {
            char ts[24];
            snprintf(ts, sizeof(ts), "%ld", timestamp);
            /* A body without its signature would only be refused: send none. */
            if (json_object_set_new(body, "timestamp", json_string(ts)) != 0 ||
                json_object_set_new(body, "sign", json_string(feishu_sign)) != 0)
                goto done;
        }
    }
    if (body != NULL)
        out = jx_dumps(body, JSON_COMPACT);
done:
    json_decref(body);
    json_decref(p);
    free(text);
    return out;
}

/* base64(HMAC-SHA256(key, msg)) as the chat robots define their signatures. */
static void robot_sign(const char *key, const char *msg, char *out, size_t out_size)
{
    unsigned char mac[32];

    crypto_hmac_sha256(key, strlen(key), msg, strlen(msg), mac);
    crypto_base64(mac, sizeof(mac), out, out_size);
}

/* Percent-encode s for a URL query value ("" when out of memory). */
static void url_escape(const char *s, char *out, size_t out_size)
{
    char *e = NULL;

    if (httpc_escape(s, &e) != RC_OK)
        e = NULL;
    snprintf(out, out_size, "%s", e ? e : "");
    free(e);
}

/* Send d once and fill *o. No database connection is held meanwhile: a slow
 * receiver must not keep one of the pool's connections from the API. */
static void send_delivery(const struct webhooks *w, const struct db_delivery *d, struct outcome *o)
{
    long now = (long)time(NULL);
    char ts[24], sig_hex[65], sig_hdr[96], ts_hdr[64], ev_hdr[64], id_hdr[64], url[2300],
        sign[64] = "";
    unsigned char mac[32];
    char *body = NULL, *signed_msg = NULL;
    const char *hdr[6];
    struct httpc *http = NULL;
    struct httpc_req req = {0};
    struct httpc_resp r = {0};
    enum rc rc = RC_ENOMEM; /* until a request went out */
    size_t need;

    memset(o, 0, sizeof(*o));
    snprintf(ts, sizeof(ts), "%ld", now);
    snprintf(url, sizeof(url), "%s", d->url);
    if (httpc_new(&http) != RC_OK)
        http = NULL;
    if (strcmp(d->format, "dingtalk") == 0 && http != NULL) {
        /* DingTalk: timestamp in ms, sign = base64(HMAC(secret, ts + "\n" + secret)). */
        char msg[256], esc[128];
        snprintf(ts, sizeof(ts), "%ld000", now);
        snprintf(msg, sizeof(msg), "%s\n%s", ts, d->secret);
        robot_sign(d->secret, msg, sign, sizeof(sign));
        url_escape(sign, esc, sizeof(esc));
        snprintf(url, sizeof(url), "%s%ctimestamp=%s&sign=%s", d->url,
                 strchr(d->url, '?') ? '&' : '?', ts, esc);
    } else if (strcmp(d->format, "feishu") == 0) {
        /* Feishu: sign = base64(HMAC(key = ts + "\n" + secret, "")). */
        char key[256];
        snprintf(key, sizeof(key), "%s\n%s", ts, d->secret);
        robot_sign(key, "", sign, sizeof(sign));
    }
    body = webhooks_render(d->format, d->payload, now, sign);
    if (body == NULL || http == NULL)
        goto out;
    need = strlen(ts) + 1 + strlen(body) + 1;
    signed_msg = malloc(need);
    if (signed_msg == NULL)
        goto out;
    snprintf(signed_msg, need, "%s.%s", ts, body);
    crypto_hmac_sha256(d->secret, strlen(d->secret), signed_msg, strlen(signed_msg), mac);
    crypto_hex(mac, sizeof(mac), sig_hex);
    snprintf(sig_hdr, sizeof(sig_hdr), "X-Trainyard-Signature: sha256=%s", sig_hex);
    snprintf(ts_hdr, sizeof(ts_hdr), "X-Trainyard-Timestamp: %s", ts);
    snprintf(ev_hdr, sizeof(ev_hdr), "X-Trainyard-Event: %s", d->event);
    snprintf(id_hdr, sizeof(id_hdr), "X-Trainyard-Delivery: %lld", (long long)d->id);
    hdr[0] = "Content-Type: application/json; charset=utf-8";
    hdr[1] = sig_hdr;
    hdr[2] = ts_hdr;
    hdr[3] = ev_hdr;
    hdr[4] = id_hdr;
    hdr[5] = NULL;
    /* No connect timeout of its own (timeout_ms bounds it), no redirects,
     * the receiver's answer body is read and dropped: only its status counts. */
    req.method = "POST";
    req.url = url;
    req.headers = hdr;
    req.body = body;
    req.body_len = strlen(body);
    req.timeout_ms = w->timeout_ms;
    req.discard_body = 1;
    rc = httpc_perform(http, &req, &r);
    o->status = r.status;
out:
    o->ok = rc == RC_OK && o->status >= 200 && o->status < 300;
    if (!o->ok && rc == RC_OK)
        snprintf(o->err, sizeof(o->err), "receiver answered non-2xx");
    else if (!o->ok && r.error[0] != '\0')
        snprintf(o->err, sizeof(o->err), "%s", r.error);
    else if (!o->ok) /* no request went out (no client, no body): the text it always had */
        snprintf(o->err, sizeof(o->err), "Failed initialization");
    httpc_resp_cleanup(&r);
    httpc_free(http);
    free(signed_msg);
    free(body);
}

/* Record o for d's claim on a connection taken again from the pool, waiting
 * for one at most until the lease runs out: past it another replica may hold
 * the delivery, and waiting longer would only hold up the queue. */
static void record_delivery(const struct webhooks *w, const struct db_delivery *d,
                            const struct outcome *o, int64_t claimed_ms)
{
    struct srv_app *app = w->app;
    int give_up = !o->ok && d->attempts >= WEBHOOK_MAX_ATTEMPTS;
    /* 1, 2, 4, ... seconds, at most five minutes. */
    int retry = d->attempts >= 9 ? 300 : (1 << (d->attempts - 1));
    PGconn *c = NULL;
    enum rc rc = RC_EUNAVAIL;

    if (retry > 300)
        retry = 300;
    if (!o->ok)
        metrics_webhook_failure();
    if (!o->ok)
        LOG_WARN("webhooks", "delivery failed",
                 "delivery_id=%lld attempt=%d status=%ld error=\"%s\"", (long long)d->id,
                 d->attempts, o->status, o->err);
    while (c == NULL && srv_now_ms() < claimed_ms + w->lease_ms)
        c = db_acquire(app->db, 1000);
    if (c != NULL) {
        rc = db_delivery_result(c, d->id, d->attempts, o->ok, (int)o->status, o->ok ? "" : o->err,
                                retry, give_up);
        db_release(app->db, c);
    }
    if (rc == RC_ECONFLICT)
        LOG_WARN("webhooks", "delivery claimed again before its result was recorded",
                 "delivery_id=%lld attempt=%d", (long long)d->id, d->attempts);
    else if (rc != RC_OK)
        LOG_WARN("webhooks", "cannot record delivery", "delivery_id=%lld attempt=%d rc=%s",
                 (long long)d->id, d->attempts, rc_str(rc));
}

/* Claim one due delivery, give the connection back, send, record. */
static void *deliver_main(void *arg)
{
    struct webhooks *w = arg;
    struct srv_app *app = w->app;

    while (!app_stopping(app)) {
        struct db_delivery d;
        int found = 0;
        int64_t claimed_ms = srv_now_ms(); /* before the claim: the lease starts later */
        PGconn *c = db_acquire(app->db, 1000);

        if (c != NULL) {
            if (db_delivery_claim(c, w->lease_ms, &d, &found) != RC_OK)
                found = 0;
            db_release(app->db, c);
        }
        if (found) {
            struct outcome o;
            send_delivery(w, &d, &o);
            record_delivery(w, &d, &o, claimed_ms);
            free(d.payload);
        } else {
            struct timespec ts = {0, 300 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

enum rc webhooks_start(struct srv_app *app, struct webhooks **out)
{
    struct webhooks *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return RC_ENOMEM;
    w->app = app;
    w->timeout_ms = app->cfg->webhook_timeout_ms;
    w->lease_ms = WEBHOOK_LEASE_MS(w->timeout_ms);
    if (pthread_create(&w->thread, NULL, deliver_main, w) != 0) {
        free(w);
        return RC_EINTERNAL;
    }
    *out = w;
    return RC_OK;
}

void webhooks_stop(struct webhooks *w)
{
    if (w == NULL)
        return;
    pthread_join(w->thread, NULL);
    free(w);
}

/*
 * webhooks.c - see webhooks.h.
 */
#include "webhooks.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "db.h"
#include "db_webhooks.h"
#include "log.h"

#define WEBHOOK_BATCH 16
#define WEBHOOK_MAX_ATTEMPTS 8
#define WEBHOOK_TIMEOUT_S 5

struct webhooks {
    struct srv_app *app;
    pthread_t thread;
};

static const char *str_or(const char *s, const char *dflt)
{
    return s != NULL ? s : dflt;
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
    json_t *p = json_loads(payload, 0, NULL), *body = NULL;
    char *text = NULL, *out = NULL;

    if (p == NULL)
        return NULL;
    if (strcmp(format, "generic") == 0) {
        out = json_dumps(p, JSON_COMPACT);
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
            json_object_set_new(body, "timestamp", json_string(ts));
            json_object_set_new(body, "sign", json_string(feishu_sign));
        }
    }
    if (body != NULL)
        out = json_dumps(body, JSON_COMPACT);
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

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

/* Percent-encode s for a URL query value. */
static void url_escape(CURL *curl, const char *s, char *out, size_t out_size)
{
    char *e = curl_easy_escape(curl, s, 0);
    snprintf(out, out_size, "%s", e ? e : "");
    curl_free(e);
}

static void deliver(struct webhooks *w, PGconn *c, struct db_delivery *d)
{
    long now = (long)time(NULL), status = 0;
    char ts[24], sig_hex[65], sig_hdr[96], ts_hdr[64], ev_hdr[64], id_hdr[64], url[2300],
        sign[64] = "", err[CURL_ERROR_SIZE] = "";
    unsigned char mac[32];
    char *body = NULL, *signed_msg = NULL;
    struct curl_slist *h = NULL;
    CURL *curl = curl_easy_init();
    CURLcode cc = CURLE_FAILED_INIT;
    int ok, give_up;
    size_t need;

    (void)w;
    snprintf(ts, sizeof(ts), "%ld", now);
    snprintf(url, sizeof(url), "%s", d->url);
    if (strcmp(d->format, "dingtalk") == 0 && curl != NULL) {
        /* DingTalk: timestamp in ms, sign = base64(HMAC(secret, ts + "\n" + secret)). */
        char msg[256], esc[128];
        snprintf(ts, sizeof(ts), "%ld000", now);
        snprintf(msg, sizeof(msg), "%s\n%s", ts, d->secret);
        robot_sign(d->secret, msg, sign, sizeof(sign));
        url_escape(curl, sign, esc, sizeof(esc));
        snprintf(url, sizeof(url), "%s%ctimestamp=%s&sign=%s", d->url,
                 strchr(d->url, '?') ? '&' : '?', ts, esc);
    } else if (strcmp(d->format, "feishu") == 0) {
        /* Feishu: sign = base64(HMAC(key = ts + "\n" + secret, "")). */
        char key[256];
        snprintf(key, sizeof(key), "%s\n%s", ts, d->secret);
        robot_sign(key, "", sign, sizeof(sign));
    }
    body = webhooks_render(d->format, d->payload, now, sign);
    if (body == NULL || curl == NULL)
        goto record;
    need = strlen(ts) + 1 + strlen(body) + 1;
    signed_msg = malloc(need);
    if (signed_msg == NULL)
        goto record;
    snprintf(signed_msg, need, "%s.%s", ts, body);
    crypto_hmac_sha256(d->secret, strlen(d->secret), signed_msg, strlen(signed_msg), mac);
    crypto_hex(mac, sizeof(mac), sig_hex);
    snprintf(sig_hdr, sizeof(sig_hdr), "X-Trainyard-Signature: sha256=%s", sig_hex);
    snprintf(ts_hdr, sizeof(ts_hdr), "X-Trainyard-Timestamp: %s", ts);
    snprintf(ev_hdr, sizeof(ev_hdr), "X-Trainyard-Event: %s", d->event);
    snprintf(id_hdr, sizeof(id_hdr), "X-Trainyard-Delivery: %lld", (long long)d->id);
    h = curl_slist_append(h, "Content-Type: application/json; charset=utf-8");
    h = curl_slist_append(h, sig_hdr);
    h = curl_slist_append(h, ts_hdr);
    h = curl_slist_append(h, ev_hdr);
    h = curl_slist_append(h, id_hdr);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)WEBHOOK_TIMEOUT_S);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
    cc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
record:
    ok = cc == CURLE_OK && status >= 200 && status < 300;
    give_up = !ok && d->attempts >= WEBHOOK_MAX_ATTEMPTS;
    if (!ok && err[0] == '\0')
        snprintf(err, sizeof(err), "%s",
                 cc == CURLE_OK ? "receiver answered non-2xx" : curl_easy_strerror(cc));
    {
        /* 1, 2, 4, ... seconds, at most five minutes. */
        int retry = d->attempts >= 9 ? 300 : (1 << (d->attempts - 1));
        if (retry > 300)
            retry = 300;
        if (db_delivery_result(c, d->id, ok, (int)status, ok ? "" : err, retry, give_up) != RC_OK)
            LOG_WARN("webhooks", "cannot record delivery", "delivery_id=%lld", (long long)d->id);
    }
    if (!ok)
        LOG_WARN("webhooks", "delivery failed",
                 "delivery_id=%lld attempt=%d status=%ld error=\"%s\"", (long long)d->id,
                 d->attempts, status, err);
    curl_slist_free_all(h);
    if (curl != NULL)
        curl_easy_cleanup(curl);
    free(signed_msg);
    free(body);
}

static void *deliver_main(void *arg)
{
    struct webhooks *w = arg;
    struct srv_app *app = w->app;

    while (!app_stopping(app)) {
        struct db_delivery batch[WEBHOOK_BATCH];
        int n = 0;
        PGconn *c = db_acquire(app->db, 1000);
        if (c != NULL) {
            if (db_delivery_claim(c, batch, WEBHOOK_BATCH, &n) == RC_OK)
                for (int i = 0; i < n; i++)
                    deliver(w, c, &batch[i]);
            for (int i = 0; i < n; i++)
                free(batch[i].payload);
            db_release(app->db, c);
        }
        if (n == 0) {
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

/*
 * http.c - the worker's protocol client (see http.h) on the common libcurl
 * client (common/httpc.h): the base URL, the credential, JSON in and out,
 * and how failures are logged. httpc.h holds the transport rules (bounded
 * body, http/https only, no redirects: a redirect could carry the
 * credential elsewhere, TLS always verified, abort from another thread).
 */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "httpc.h"
#include "log.h"

#define WRK_HTTP_CONNECT_TIMEOUT_MS 5000L

struct wrk_http {
    struct httpc *hc; /* owned; its abort flag is wrk_http_abort()'s */
    char *base;       /* owned, without trailing '/' */
    char *ca_file;    /* owned or NULL */
    char *auth;       /* owned "Authorization: Bearer ..." or NULL */
    int tls_warned;   /* the failure last logged as a TLS failure; 0 = none */
};

enum rc wrk_http_new(const char *base_url, const char *ca_file, struct wrk_http **out)
{
    struct wrk_http *h;
    size_t n;

    *out = NULL;
    if (base_url == NULL ||
        (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return RC_EINVAL;
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return RC_ENOMEM;
    h->base = strdup(base_url);
    h->ca_file = ca_file ? strdup(ca_file) : NULL;
    if (h->base == NULL || (ca_file != NULL && h->ca_file == NULL) || httpc_new(&h->hc) != RC_OK) {
        wrk_http_free(h);
        return RC_ENOMEM;
    }
    n = strlen(h->base);
    while (n > 0 && h->base[n - 1] == '/')
        h->base[--n] = '\0';
    *out = h;
    return RC_OK;
}

void wrk_http_free(struct wrk_http *h)
{
    if (h == NULL)
        return;
    httpc_free(h->hc);
    free(h->base);
    free(h->ca_file);
    crypto_free_secret(h->auth);
    free(h);
}

enum rc wrk_http_set_credential(struct wrk_http *h, const char *cred)
{
    char *a = NULL;
    if (cred != NULL) {
        size_t n = strlen(cred) + 32;
        a = malloc(n);
        if (a == NULL)
            return RC_ENOMEM;
        snprintf(a, n, "Authorization: Bearer %s", cred);
    }
    crypto_free_secret(h->auth);
    h->auth = a;
    return RC_OK;
}

void wrk_http_abort(struct wrk_http *h)
{
    httpc_abort(h->hc);
}

/* Logs a request that got no answer. Retries of a refused certificate would
 * fail forever in silence at debug level: say it once (per handle and
 * error) where an operator looks. Other failures are outages that the
 * callers retry. */
static void log_failure(struct wrk_http *h, const char *path, const struct httpc_resp *r)
{
    if (r->tls_failed && h->tls_warned != r->fail_code) {
        h->tls_warned = r->fail_code;
        LOG_WARN("http", "TLS failure talking to the server (check --ca-file)",
                 "path=%s error=\"%s\"", path, r->error);
    } else {
        LOG_DEBUG("http", "request failed", "path=%s error=\"%s\"", path, r->error);
    }
}

enum rc wrk_http_request(struct wrk_http *h, const char *method, const char *path,
                         const json_t *body, long timeout_ms, long *status, json_t **resp)
{
    enum rc rc = RC_ENOMEM;
    struct httpc_req req = {0};
    struct httpc_resp r = {0};
    const char *hdr[5];
    size_t nh = 0;
    char *text = NULL, *url = NULL;
    size_t ulen;

    *status = 0;
    if (resp != NULL)
        *resp = NULL;
    ulen = strlen(h->base) + strlen(path) + 1;
    url = malloc(ulen);
    if (url == NULL)
        return RC_ENOMEM;
    snprintf(url, ulen, "%s%s", h->base, path);
    if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)
        goto out;
    hdr[nh++] = "Accept: application/json";
    if (body != NULL)
        hdr[nh++] = "Content-Type: application/json";
    if (h->auth != NULL)
        hdr[nh++] = h->auth;
    hdr[nh++] = "Expect:";
    hdr[nh] = NULL;

    req.method = strcmp(method, "POST") == 0 ? "POST" : "GET";
    req.url = url;
    req.headers = hdr;
    req.body = text;
    req.body_len = text != NULL ? strlen(text) : 0;
    req.ca_file = h->ca_file;
    req.user_agent = "trainyard-worker";
    req.connect_timeout_ms = WRK_HTTP_CONNECT_TIMEOUT_MS;
    req.timeout_ms = timeout_ms;
    req.max_body = WRK_HTTP_MAX_BODY;
    rc = httpc_perform(h->hc, &req, &r);
    if (rc == RC_ETOOBIG) {
        LOG_WARN("http", "response too large", "path=%s", path);
        goto out;
    }
    if (rc != RC_OK) {
        if (rc == RC_EUNAVAIL)
            log_failure(h, path, &r);
        goto out;
    }
    h->tls_warned = 0;
    *status = r.status;
    if (resp != NULL && r.body_len > 0) {
        json_error_t jerr;
        *resp = json_loadb(r.body, r.body_len, JSON_REJECT_DUPLICATES, &jerr);
    }
out:
    httpc_resp_cleanup(&r);
    free(text);
    free(url);
    return rc;
}

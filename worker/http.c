/*
 * http.c - libcurl wrapper (see http.h). Bounded response buffer, abort flag
 * checked from the progress callback so a long-poll can be interrupted at
 * shutdown, http/https only, no redirects (a redirect could carry the
 * credential elsewhere).
 */
#include "http.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "crypto.h"
#include "log.h"

struct wrk_http {
    CURL *curl;
    char *base;       /* owned, without trailing '/' */
    char *ca_file;    /* owned or NULL */
    char *auth;       /* owned "Authorization: Bearer ..." or NULL */
    atomic_int abort; /* set by wrk_http_abort() */
    int tls_warned;   /* the curl code last logged as a TLS failure; 0 = none */
};

/* A certificate or handshake failure: configuration, not a passing outage. */
static int is_tls_failure(CURLcode cc)
{
    return cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
           cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_SSL_CERTPROBLEM ||
           cc == CURLE_SSL_ISSUER_ERROR;
}

struct rbuf {
    char *data;
    size_t len;
    int too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct rbuf *b = ud;
    size_t n = size * nmemb;
    char *nd;

    if (b->len + n > WRK_HTTP_MAX_BODY) {
        b->too_big = 1;
        return 0;
    }
    nd = realloc(b->data, b->len + n + 1);
    if (nd == NULL)
        return 0;
    memcpy(nd + b->len, ptr, n);
    b->data = nd;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct wrk_http *h = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return atomic_load(&h->abort) ? 1 : 0;
}

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
    atomic_init(&h->abort, 0);
    h->base = strdup(base_url);
    h->ca_file = ca_file ? strdup(ca_file) : NULL;
    h->curl = curl_easy_init();
    if (h->base == NULL || h->curl == NULL || (ca_file != NULL && h->ca_file == NULL)) {
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
    if (h->curl != NULL)
        curl_easy_cleanup(h->curl);
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
    atomic_store(&h->abort, 1);
}

enum rc wrk_http_request(struct wrk_http *h, const char *method, const char *path,
                         const json_t *body, long timeout_ms, long *status, json_t **resp)
{
    enum rc rc = RC_EUNAVAIL;
    struct curl_slist *hdr = NULL, *tmp;
    struct rbuf rb = {0};
    char *text = NULL, *url = NULL;
    size_t ulen;
    CURLcode cc;
    CURL *c = h->curl;

    *status = 0;
    if (resp != NULL)
        *resp = NULL;
    if (atomic_load(&h->abort))
        return RC_EUNAVAIL;
    ulen = strlen(h->base) + strlen(path) + 1;
    url = malloc(ulen);
    if (url == NULL)
        return RC_ENOMEM;
    snprintf(url, ulen, "%s%s", h->base, path);
    if (body != NULL) {
        text = json_dumps(body, JSON_COMPACT);
        if (text == NULL) {
            rc = RC_ENOMEM;
            goto out;
        }
    }
    tmp = curl_slist_append(hdr, "Accept: application/json");
    if (tmp != NULL)
        hdr = tmp;
    if (body != NULL && (tmp = curl_slist_append(hdr, "Content-Type: application/json")) != NULL)
        hdr = tmp;
    if (h->auth != NULL && (tmp = curl_slist_append(hdr, h->auth)) != NULL)
        hdr = tmp;
    if ((tmp = curl_slist_append(hdr, "Expect:")) != NULL)
        hdr = tmp;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &rb);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "trainyard-worker");
    if (h->ca_file != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "");
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    cc = curl_easy_perform(c);
    if (rb.too_big) {
        rc = RC_ETOOBIG;
        LOG_WARN("http", "response too large", "path=%s", path);
        goto out;
    }
    if (cc != CURLE_OK) {
        /* Retries of a refused certificate would fail forever in silence at
         * debug level: say it once (per handle and error) where an operator
         * looks. Other failures are outages that the callers retry. */
        if (is_tls_failure(cc) && h->tls_warned != (int)cc) {
            h->tls_warned = (int)cc;
            LOG_WARN("http", "TLS failure talking to the server (check --ca-file)",
                     "path=%s error=\"%s\"", path, curl_easy_strerror(cc));
        } else {
            LOG_DEBUG("http", "request failed", "path=%s error=\"%s\"", path,
                      curl_easy_strerror(cc));
        }
        goto out;
    }
    h->tls_warned = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (resp != NULL && rb.len > 0) {
        json_error_t jerr;
        *resp = json_loadb(rb.data, rb.len, JSON_REJECT_DUPLICATES, &jerr);
    }
    rc = RC_OK;
out:
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    for (tmp = hdr; tmp != NULL; tmp = tmp->next) /* one is a copy of the Authorization header */
        crypto_wipe(tmp->data, strlen(tmp->data));
    curl_slist_free_all(hdr);
    free(rb.data);
    free(text);
    free(url);
    return rc;
}

/*
 * httpc.c - the one libcurl client (see httpc.h).
 *
 * One easy handle per struct httpc, reset before each request so that no
 * option of an earlier request leaks into the next (curl_easy_reset keeps the
 * connection and DNS caches, which is why a handle lives as long as its
 * thread). The per-request state (struct xfer) lives on the caller's stack
 * for the duration of curl_easy_perform(); the handle's pointers to it are
 * cleared before returning.
 *
 * The abort flag is read from the progress callback, which libcurl calls
 * about once a second even on an idle connection, so httpc_abort() ends a
 * long-poll within about a second.
 */
#include "httpc.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "crypto.h"

_Static_assert(HTTPC_ERROR_MAX >= CURL_ERROR_SIZE, "libcurl's error buffer must fit");

#define HTTPC_MAX_REDIRS 5L
#define BODY_FIRST_CAP 16384 /* a first allocation that holds most API answers */

struct httpc {
    CURL *curl;
    atomic_int abort; /* set by httpc_abort(), from any thread */
};

/* One request in flight. */
struct xfer {
    struct httpc *h;
    const struct httpc_req *req;
    struct httpc_resp *resp;
    size_t cap;  /* bytes allocated for resp->body */
    int checked; /* the status was looked at (on_data requests) */
    int is_2xx;  /* ... and it was 2xx: the body goes to on_data */
    int too_big; /* the kept body would pass req->max_body */
    int nomem;   /* growing the body failed */
};

/* A certificate or handshake failure: configuration, not a passing outage. */
static int is_tls_failure(CURLcode cc)
{
    return cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
           cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_SSL_CERTPROBLEM ||
           cc == CURLE_SSL_ISSUER_ERROR;
}

/* Appends n bytes to the kept body, within max_body; -1 when it cannot. */
static int body_add(struct xfer *x, const char *p, size_t n)
{
    struct httpc_resp *r = x->resp;

    if (n > x->req->max_body || r->body_len > x->req->max_body - n) {
        x->too_big = 1;
        return -1;
    }
    if (r->body_len + n + 1 > x->cap) { /* + 1: the NUL */
        size_t cap = x->cap ? x->cap : BODY_FIRST_CAP;
        char *nb;

        while (cap < r->body_len + n + 1)
            cap *= 2;
        if ((nb = realloc(r->body, cap)) == NULL) {
            x->nomem = 1;
            return -1;
        }
        r->body = nb;
        x->cap = cap;
    }
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return 0;
}

/* libcurl's write callback: a size other than n stops the transfer. */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;

    if (x->req->discard_body)
        return n;
    if (x->req->on_data != NULL) {
        if (!x->checked) {
            long st = 0;
            curl_easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &st);
            x->is_2xx = st >= 200 && st < 300;
            x->checked = 1;
        }
        if (x->is_2xx) {
            if (x->req->on_data(p, n, x->req->data_ud) != 0) {
                x->resp->stopped = 1;
                return 0;
            }
            return n;
        }
    }
    return body_add(x, p, n) == 0 ? n : 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;

    x->req->on_header(p, n, x->req->header_ud);
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct xfer *x = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return atomic_load(&x->h->abort) ? 1 : 0;
}

enum rc httpc_new(struct httpc **out)
{
    struct httpc *h = calloc(1, sizeof(*h));

    *out = NULL;
    if (h == NULL)
        return RC_ENOMEM;
    atomic_init(&h->abort, 0);
    if ((h->curl = curl_easy_init()) == NULL) {
        free(h);
        return RC_ENOMEM;
    }
    *out = h;
    return RC_OK;
}

void httpc_free(struct httpc *h)
{
    if (h == NULL)
        return;
    curl_easy_cleanup(h->curl);
    free(h);
}

void httpc_abort(struct httpc *h)
{
    atomic_store(&h->abort, 1);
}

void httpc_resp_cleanup(struct httpc_resp *resp)
{
    if (resp == NULL)
        return;
    if (resp->body != NULL)
        crypto_wipe(resp->body, resp->body_len);
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}

/* The request's header list (libcurl copies each line); NULL with *nomem. */
static struct curl_slist *header_list(const char *const *headers, int *nomem)
{
    struct curl_slist *hdr = NULL, *tmp;

    *nomem = 0;
    /* A header that could not be added would change the request: fail. */
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++) {
        if ((tmp = curl_slist_append(hdr, headers[i])) == NULL) {
            *nomem = 1;
            curl_slist_free_all(hdr);
            return NULL;
        }
        hdr = tmp;
    }
    return hdr;
}

static void header_list_free(struct curl_slist *hdr)
{
    for (struct curl_slist *t = hdr; t != NULL; t = t->next) /* some are credentials */
        crypto_wipe(t->data, strlen(t->data));
    curl_slist_free_all(hdr);
}

/* Every option of one request, on a freshly reset handle. */
static void set_options(CURL *c, const struct httpc_req *req, struct curl_slist *hdr,
                        struct xfer *x, char *ebuf)
{
    const char *m = req->method != NULL ? req->method : "GET";

    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (req->ca_file != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, req->ca_file);
    if (req->follow_redirects) {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, HTTPC_MAX_REDIRS);
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    } else {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    }
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    if (req->idle_s > 0) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, req->idle_s);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (req->user_agent != NULL)
        curl_easy_setopt(c, CURLOPT_USERAGENT, req->user_agent);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    if (req->on_header != NULL) {
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    }
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    if (strcmp(m, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(m, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body != NULL ? req->body : "");
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, m);
        if (req->body != NULL) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
        }
    }
}

enum rc httpc_perform(struct httpc *h, const struct httpc_req *req, struct httpc_resp *resp)
{
    enum rc rc = RC_EUNAVAIL;
    struct xfer x = {.h = h, .req = req, .resp = resp};
    struct curl_slist *hdr = NULL;
    char ebuf[CURL_ERROR_SIZE] = "";
    CURLcode cc;
    int nomem;

    memset(resp, 0, sizeof(*resp));
    if (req == NULL || req->url == NULL) {
        snprintf(resp->error, sizeof(resp->error), "no url");
        return RC_EINVAL;
    }
    if (atomic_load(&h->abort)) {
        snprintf(resp->error, sizeof(resp->error), "aborted");
        return RC_EUNAVAIL;
    }
    if ((hdr = header_list(req->headers, &nomem)) == NULL && nomem) {
        snprintf(resp->error, sizeof(resp->error), "out of memory");
        return RC_ENOMEM;
    }
    curl_easy_reset(h->curl);
    set_options(h->curl, req, hdr, &x, ebuf);
    cc = curl_easy_perform(h->curl);
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    if (x.too_big) {
        snprintf(resp->error, sizeof(resp->error), "response body over %zu bytes", req->max_body);
        rc = RC_ETOOBIG;
    } else if (x.nomem) {
        snprintf(resp->error, sizeof(resp->error), "out of memory");
        rc = RC_ENOMEM;
    } else if (cc == CURLE_OK || resp->stopped) {
        rc = RC_OK;
    } else {
        resp->fail_code = (int)cc;
        resp->tls_failed = is_tls_failure(cc);
        snprintf(resp->error, sizeof(resp->error), "%s",
                 ebuf[0] != '\0' ? ebuf : curl_easy_strerror(cc));
        rc = RC_EUNAVAIL;
    }
    if (rc != RC_OK)
        httpc_resp_cleanup(resp);
    /* Nothing of this call may outlive it in the handle: not the stack
     * buffers, not the header list. */
    curl_easy_reset(h->curl);
    header_list_free(hdr);
    return rc;
}

enum rc httpc_escape(const char *s, char **out)
{
    char *e = curl_easy_escape(NULL, s, 0);

    *out = NULL;
    if (e == NULL)
        return RC_ENOMEM;
    *out = strdup(e);
    curl_free(e);
    return *out != NULL ? RC_OK : RC_ENOMEM;
}

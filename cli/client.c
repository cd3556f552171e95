/*
 * client.c - the command line's API client (client.h): libcurl easy
 * handle per client, the reply gathered into a bounded buffer, or handed
 * on piece by piece for a stream.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "msg.h"
#include "urlcheck.h"

#define COOKIE_MAX 512
#define STREAM_ERROR_MAX (64 * 1024) /* a refused stream's error body */

struct cli_client {
    CURL *curl;
    char *base;                  /* without a trailing '/' */
    char *auth;                  /* "Authorization: Bearer ..." or NULL; a secret */
    char *cookie;                /* "Cookie: ..." or NULL; a secret */
    char *csrf;                  /* "X-CSRF-Token: ..." or NULL */
    char set_cookie[COOKIE_MAX]; /* the last Set-Cookie's name=value; a secret */
    char *ca_file;               /* TRAINYARD_CA_FILE: PEM bundle for https; NULL = system */
    char *idempotency;           /* "Idempotency-Key: ..." or NULL */
};

struct reply_buf {
    char *data;
    size_t len, cap, max;
    int too_big;
};

struct stream_ctx {
    struct cli_client *c;
    cli_stream_fn fn;
    void *ud;
    struct reply_buf err_body; /* a non-2xx reply */
    int checked, ok, stopped;
};

enum rc cli_client_new(const char *base_url, const char *token, struct cli_client **out, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct cli_client *c = NULL;
    size_t n;

    *out = NULL;
    if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
        cli_errf(err, M_BAD_URL, base_url);
        return RC_EINVAL;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL || (c->base = strdup(base_url)) == NULL)
        goto out;
    n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = '\0';
    if (token != NULL && token[0] != '\0') {
        n = strlen(token) + sizeof("Authorization: Bearer ");
        if ((c->auth = malloc(n)) == NULL)
            goto out;
        snprintf(c->auth, n, "Authorization: Bearer %s", token);
    }
    if ((c->curl = curl_easy_init()) == NULL)
        goto out;
    {
        const char *ca = getenv("TRAINYARD_CA_FILE");
        if (ca != NULL && ca[0] != '\0' && (c->ca_file = strdup(ca)) == NULL)
            goto out;
    }
    /* The token (or the password, at login) would cross the network in the
     * clear; say so on stderr, where it does not spoil --json output. */
    if (url_is_plain_remote(c->base))
        fprintf(err,
                "trainyard: warning: %s is plain HTTP to another machine; credentials are "
                "sent unencrypted (use https://)\n",
                c->base);
    *out = c;
    c = NULL;
    rc = RC_OK;
out:
    if (rc == RC_ENOMEM)
        cli_errf(err, M_OOM);
    cli_client_free(c);
    return rc;
}

int cli_connect(const char *flag, struct cli_client **out, FILE *err)
{
    char url[CLI_CONFIG_URL_MAX], token[CLI_CONFIG_TOKEN_MAX];
    enum rc rc;

    *out = NULL;
    rc = cli_config_resolve(flag, url, sizeof(url), token, sizeof(token), err);
    if (rc == RC_OK)
        rc = cli_client_new(url, token, out, err);
    crypto_wipe(token, sizeof(token));
    if (rc == RC_OK)
        return CLI_EXIT_OK;
    return rc == RC_EPERM ? CLI_EXIT_AUTH : rc == RC_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

const char *cli_client_url(const struct cli_client *c)
{
    return c->base;
}

static char *header(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *h = malloc(n);

    if (h != NULL)
        snprintf(h, n, "%s: %s", name, value);
    return h;
}

enum rc cli_client_idempotency_key(struct cli_client *c, const char *key)
{
    free(c->idempotency);
    c->idempotency = NULL;
    if (key != NULL && (c->idempotency = header("Idempotency-Key", key)) == NULL)
        return RC_ENOMEM;
    return RC_OK;
}

enum rc cli_client_session(struct cli_client *c, const char *cookie, const char *csrf)
{
    crypto_free_secret(c->cookie);
    free(c->csrf);
    c->cookie = c->csrf = NULL;
    if (cookie != NULL && (c->cookie = header("Cookie", cookie)) == NULL)
        return RC_ENOMEM;
    if (csrf != NULL && (c->csrf = header("X-CSRF-Token", csrf)) == NULL)
        return RC_ENOMEM;
    return RC_OK;
}

const char *cli_client_set_cookie(const struct cli_client *c)
{
    return c->set_cookie[0] ? c->set_cookie : NULL;
}

void cli_client_free(struct cli_client *c)
{
    if (c == NULL)
        return;
    if (c->curl != NULL)
        curl_easy_cleanup(c->curl);
    crypto_free_secret(c->auth);
    crypto_free_secret(c->cookie);
    crypto_wipe(c->set_cookie, sizeof(c->set_cookie));
    free(c->csrf);
    free(c->base);
    free(c->ca_file);
    free(c->idempotency);
    free(c);
}

static int buf_add(struct reply_buf *b, const char *ptr, size_t n)
{
    if (b->len + n > b->max) {
        b->too_big = 1;
        return -1;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        char *p;
        while (cap < b->len + n)
            cap *= 2;
        if ((p = realloc(b->data, cap)) == NULL)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    size_t n = size * nmemb;

    return buf_add(ud, ptr, n) == 0 ? n : 0; /* 0 stops the transfer */
}

/* Keeps the name=value of a Set-Cookie header (the session of a login). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct cli_client *c = ud;
    size_t n = size * nmemb, k = sizeof("Set-Cookie:") - 1, end;

    if (n > k && strncasecmp(ptr, "Set-Cookie:", k) == 0) {
        const char *v = ptr + k;
        while (v < ptr + n && *v == ' ')
            v++;
        for (end = 0; v + end < ptr + n && v[end] != ';' && v[end] != '\r' && v[end] != '\n'; end++)
            ;
        if (end < sizeof(c->set_cookie)) {
            memcpy(c->set_cookie, v, end);
            c->set_cookie[end] = '\0';
        }
    }
    return n;
}

/* The request's headers; NULL on ENOMEM. */
static struct curl_slist *headers(const struct cli_client *c, int body, const char *last_id)
{
    struct curl_slist *hdr = NULL, *tmp;
    const char *fixed[] = {"Accept: application/json",
                           "Expect:",
                           body ? "Content-Type: application/json" : NULL,
                           c->auth,
                           c->cookie,
                           c->csrf,
                           c->idempotency};
    char lid[128];

    /* A header that could not be added would change the request: fail. */
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        if (fixed[i] == NULL)
            continue;
        if ((tmp = curl_slist_append(hdr, fixed[i])) == NULL)
            goto fail;
        hdr = tmp;
    }
    if (last_id != NULL) {
        snprintf(lid, sizeof(lid), "Last-Event-ID: %.100s", last_id);
        if ((tmp = curl_slist_append(hdr, lid)) == NULL)
            goto fail;
        hdr = tmp;
    }
    return hdr;
fail:
    curl_slist_free_all(hdr);
    return NULL;
}

static void free_headers(struct curl_slist *hdr)
{
    for (struct curl_slist *t = hdr; t != NULL; t = t->next) /* some are secrets */
        crypto_wipe(t->data, strlen(t->data));
    curl_slist_free_all(hdr);
}

static char *full_url(const struct cli_client *c, const char *path)
{
    size_t n = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(n);

    if (url != NULL)
        snprintf(url, n, "%s%s", c->base, path);
    return url;
}

static void common_opts(struct cli_client *c, const char *url, struct curl_slist *hdr, char *ebuf)
{
    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca_file != NULL)
        curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "trainyard-cli");
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
}

enum rc cli_client_request(struct cli_client *c, const char *method, const char *path,
                           const json_t *body, long *status, json_t **resp, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct curl_slist *hdr = NULL;
    struct reply_buf rb = {.max = CLI_MAX_REPLY};
    char *text = NULL, *url = NULL;
    char ebuf[CURL_ERROR_SIZE] = "";
    CURLcode cc;

    *status = 0;
    *resp = NULL;
    crypto_wipe(c->set_cookie, sizeof(c->set_cookie));
    if ((url = full_url(c, path)) == NULL)
        goto out;
    if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)
        goto out;
    if ((hdr = headers(c, body != NULL, NULL)) == NULL)
        goto out;
    common_opts(c, url, hdr, ebuf);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &rb);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text ? text : "");
    } else if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
        if (text != NULL)
            curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text);
    }
    cc = curl_easy_perform(c->curl);
    if (rb.too_big) {
        cli_errf(err, M_REPLY_TOO_BIG, CLI_MAX_REPLY);
        rc = RC_ETOOBIG;
        goto out;
    }
    if (cc != CURLE_OK) {
        cli_errf(err, M_UNREACHABLE, c->base, ebuf[0] ? ebuf : curl_easy_strerror(cc));
        rc = RC_EUNAVAIL;
        goto out;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (rb.len > 0)
        *resp = json_loadb(rb.data, rb.len, JSON_REJECT_DUPLICATES, NULL);
    rc = RC_OK;
out:
    if (rc == RC_ENOMEM)
        cli_errf(err, M_OOM);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    free_headers(hdr);
    free(rb.data);
    if (text != NULL) /* a login body holds a password */
        crypto_wipe(text, strlen(text));
    free(text);
    free(url);
    return rc;
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct stream_ctx *s = ud;
    size_t n = size * nmemb;

    if (!s->checked) {
        long st = 0;
        curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &st);
        s->ok = st >= 200 && st < 300;
        s->checked = 1;
    }
    if (!s->ok)
        return buf_add(&s->err_body, ptr, n) == 0 ? n : 0;
    if (s->fn(ptr, n, s->ud) != 0) {
        s->stopped = 1;
        return 0;
    }
    return n;
}

enum rc cli_client_stream(struct cli_client *c, const char *path, const char *last_id, long idle_s,
                          cli_stream_fn fn, void *ud, long *status, json_t **resp, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct curl_slist *hdr = NULL;
    struct stream_ctx s = {.c = c, .fn = fn, .ud = ud, .err_body = {.max = STREAM_ERROR_MAX}};
    char *url = NULL;
    char ebuf[CURL_ERROR_SIZE] = "";
    CURLcode cc;

    *status = 0;
    *resp = NULL;
    if ((url = full_url(c, path)) == NULL || (hdr = headers(c, 0, last_id)) == NULL)
        goto out;
    common_opts(c, url, hdr, ebuf);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &s);
    /* No total limit: a followed log lasts as long as its job. A server
     * that falls silent (its SSE pings come every 15 s) is cut. */
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, idle_s);
    cc = curl_easy_perform(c->curl);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (cc != CURLE_OK && !s.stopped && !(cc == CURLE_WRITE_ERROR && !s.ok && s.checked)) {
        cli_errf(err, M_UNREACHABLE, c->base, ebuf[0] ? ebuf : curl_easy_strerror(cc));
        rc = RC_EUNAVAIL;
        goto out;
    }
    if (!s.ok && s.err_body.len > 0)
        *resp = json_loadb(s.err_body.data, s.err_body.len, JSON_REJECT_DUPLICATES, NULL);
    rc = RC_OK;
out:
    if (rc == RC_ENOMEM)
        cli_errf(err, M_OOM);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    free_headers(hdr);
    free(s.err_body.data);
    free(url);
    return rc;
}

int cli_exit_for_http(long status, const json_t *resp)
{
    const char *code = json_string_value(json_object_get(json_object_get(resp, "error"), "code"));

    if (status >= 200 && status < 300)
        return CLI_EXIT_OK;
    if (status == 401)
        return CLI_EXIT_AUTH;
    if (status == 403)
        return code != NULL && strcmp(code, "policy_violation") == 0 ? CLI_EXIT_REFUSED
                                                                     : CLI_EXIT_AUTH;
    if (status == 404)
        return CLI_EXIT_NOTFOUND;
    if (status == 409)
        return CLI_EXIT_REFUSED;
    if (status >= 500)
        return CLI_EXIT_UNAVAIL;
    return CLI_EXIT_FAIL;
}

int cli_exit_for_rc(enum rc rc)
{
    if (rc == RC_OK)
        return CLI_EXIT_OK;
    if (rc == RC_EUNAVAIL)
        return CLI_EXIT_UNAVAIL;
    if (rc == RC_EINVAL)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_FAIL;
}

int cli_refused(FILE *err, int what, long status, const json_t *resp)
{
    cli_print_api_error(err, cli_msg((enum cli_msg)what), status, resp);
    return cli_exit_for_http(status, resp);
}

void cli_print_api_error(FILE *err, const char *what, long status, const json_t *resp)
{
    const json_t *e = json_object_get(resp, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *detail = json_string_value(json_object_get(e, "detail"));
    const char *field = json_string_value(json_object_get(e, "field"));

    fprintf(err, "trainyard: %s: %ld", what, status);
    if (code != NULL)
        fprintf(err, " %s", code);
    if (field != NULL && field[0] != '\0')
        fprintf(err, ": %s", field);
    if (msg != NULL)
        fprintf(err, ": %s", msg);
    if (detail != NULL && detail[0] != '\0')
        fprintf(err, " (%s)", detail);
    fprintf(err, "\n");
    if (status == 401)
        cli_errf(err, M_HINT_LOGIN);
}

enum rc cli_path(char *buf, size_t n, const char *fmt, const char *seg)
{
    char *esc = curl_easy_escape(NULL, seg, 0);
    int w;

    if (esc == NULL)
        return RC_ENOMEM;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    w = snprintf(buf, n, fmt, esc);
#pragma GCC diagnostic pop
    curl_free(esc);
    return w < 0 || (size_t)w >= n ? RC_ETOOBIG : RC_OK;
}

int cli_print_json(FILE *out, const json_t *v)
{
    if (json_dumpf(v, out, JSON_COMPACT) != 0)
        return -1;
    fputc('\n', out);
    return 0;
}

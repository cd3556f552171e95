/*
 * client.c - the command line's API client (client.h) on the common libcurl
 * client (common/httpc.h): one struct httpc per client, the reply gathered
 * there into a bounded buffer, or handed on piece by piece for a stream.
 * What is the command line's own: the headers (token, session, CSRF,
 * idempotency key), the Set-Cookie it keeps, and its messages.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "httpc.h"
#include "msg.h"
#include "urlcheck.h"

#define COOKIE_MAX 512
#define STREAM_ERROR_MAX (64 * 1024) /* a refused stream's error body */
#define CONNECT_TIMEOUT_MS 10000L
#define REQUEST_TIMEOUT_MS 120000L
#define HEADERS_MAX 9 /* the most headers(): 8 and the NULL */

struct cli_client {
    struct httpc *http;
    char *base;                  /* without a trailing '/' */
    char *auth;                  /* "Authorization: Bearer ..." or NULL; a secret */
    char *cookie;                /* "Cookie: ..." or NULL; a secret */
    char *csrf;                  /* "X-CSRF-Token: ..." or NULL */
    char set_cookie[COOKIE_MAX]; /* the last Set-Cookie's name=value; a secret */
    char *ca_file;               /* TRAINYARD_CA_FILE: PEM bundle for https; NULL = system */
    char *idempotency;           /* "Idempotency-Key: ..." or NULL */
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
    if (httpc_new(&c->http) != RC_OK)
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
    httpc_free(c->http);
    crypto_free_secret(c->auth);
    crypto_free_secret(c->cookie);
    crypto_wipe(c->set_cookie, sizeof(c->set_cookie));
    free(c->csrf);
    free(c->base);
    free(c->ca_file);
    free(c->idempotency);
    free(c);
}

/* Keeps the name=value of a Set-Cookie header (the session of a login). */
static void on_header(const char *ptr, size_t n, void *ud)
{
    struct cli_client *c = ud;
    size_t k = sizeof("Set-Cookie:") - 1, end;

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
}

/* The request's headers into hdr (HEADERS_MAX entries, NULL-terminated,
 * borrowed from c and lid, a buffer of 128 bytes for last_id's). */
static void headers(const struct cli_client *c, int body, const char *last_id, char *lid,
                    const char **hdr)
{
    const char *fixed[] = {"Accept: application/json",
                           "Expect:",
                           body ? "Content-Type: application/json" : NULL,
                           c->auth,
                           c->cookie,
                           c->csrf,
                           c->idempotency};
    size_t nh = 0;

    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (fixed[i] != NULL)
            hdr[nh++] = fixed[i];
    if (last_id != NULL) {
        snprintf(lid, 128, "Last-Event-ID: %.100s", last_id);
        hdr[nh++] = lid;
    }
    hdr[nh] = NULL;
}

static char *full_url(const struct cli_client *c, const char *path)
{
    size_t n = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(n);

    if (url != NULL)
        snprintf(url, n, "%s%s", c->base, path);
    return url;
}

/* What every request of c has in common. */
static void base_request(struct cli_client *c, const char *url, const char **hdr,
                         struct httpc_req *req /* out */)
{
    memset(req, 0, sizeof(*req));
    req->url = url;
    req->headers = hdr;
    req->ca_file = c->ca_file;
    req->user_agent = "trainyard-cli";
    req->connect_timeout_ms = CONNECT_TIMEOUT_MS;
    req->on_header = on_header;
    req->header_ud = c;
}

/* Sends req, says on err why no answer came, and parses the kept body into
 * *resp. A stream (req->on_data) keeps only a refusal's body: one over its
 * cap is shown by its status alone, as an unparseable one is. */
static enum rc exchange(struct cli_client *c, const struct httpc_req *req, long *status,
                        json_t **resp, FILE *err)
{
    struct httpc_resp r;
    enum rc rc = httpc_perform(c->http, req, &r);

    if (rc == RC_ETOOBIG && req->on_data != NULL)
        rc = RC_OK;
    if (rc == RC_OK || req->on_data != NULL)
        *status = r.status;
    if (rc == RC_ETOOBIG)
        cli_errf(err, M_REPLY_TOO_BIG, CLI_MAX_REPLY);
    else if (rc == RC_EUNAVAIL)
        cli_errf(err, M_UNREACHABLE, c->base, r.error);
    else if (rc == RC_ENOMEM)
        cli_errf(err, M_OOM);
    else if (rc == RC_OK && r.body_len > 0)
        *resp = json_loadb(r.body, r.body_len, JSON_REJECT_DUPLICATES, NULL);
    httpc_resp_cleanup(&r);
    return rc;
}

enum rc cli_client_request(struct cli_client *c, const char *method, const char *path,
                           const json_t *body, long *status, json_t **resp, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct httpc_req req;
    const char *hdr[HEADERS_MAX];
    char *text = NULL, *url = NULL;
    char lid[128];

    *status = 0;
    *resp = NULL;
    crypto_wipe(c->set_cookie, sizeof(c->set_cookie));
    if ((url = full_url(c, path)) == NULL ||
        (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)) {
        cli_errf(err, M_OOM);
        goto out;
    }
    headers(c, body != NULL, NULL, lid, hdr);
    base_request(c, url, hdr, &req);
    req.method = method;
    req.body = text;
    req.body_len = text != NULL ? strlen(text) : 0;
    req.timeout_ms = REQUEST_TIMEOUT_MS;
    req.max_body = CLI_MAX_REPLY;
    rc = exchange(c, &req, status, resp, err);
out:
    if (text != NULL) /* a login body holds a password */
        crypto_wipe(text, strlen(text));
    free(text);
    free(url);
    return rc;
}

/* The streams' common part: method with body text (may be NULL). */
static enum rc stream(struct cli_client *c, const char *method, const char *path, const char *text,
                      const char *last_id, long idle_s, cli_stream_fn fn, void *ud, long *status,
                      json_t **resp, FILE *err)
{
    struct httpc_req req;
    const char *hdr[HEADERS_MAX];
    char *url;
    char lid[128];
    enum rc rc;

    *status = 0;
    *resp = NULL;
    if ((url = full_url(c, path)) == NULL) {
        cli_errf(err, M_OOM);
        return RC_ENOMEM;
    }
    headers(c, text != NULL, last_id, lid, hdr);
    base_request(c, url, hdr, &req);
    req.method = method;
    req.body = text;
    req.body_len = text != NULL ? strlen(text) : 0;
    /* A 2xx body goes to fn; a refusal's error body is kept (bounded). */
    req.on_data = fn;
    req.data_ud = ud;
    req.max_body = STREAM_ERROR_MAX;
    /* No total limit: a followed log lasts as long as its job. A server
     * that falls silent (its SSE pings come every 15 s) is cut. */
    req.idle_s = idle_s;
    rc = exchange(c, &req, status, resp, err);
    free(url);
    return rc;
}

enum rc cli_client_stream(struct cli_client *c, const char *path, const char *last_id, long idle_s,
                          cli_stream_fn fn, void *ud, long *status, json_t **resp, FILE *err)
{
    return stream(c, "GET", path, NULL, last_id, idle_s, fn, ud, status, resp, err);
}

enum rc cli_client_stream_post(struct cli_client *c, const char *path, const json_t *body,
                               long idle_s, cli_stream_fn fn, void *ud, long *status, json_t **resp,
                               FILE *err)
{
    char *text = json_dumps(body, JSON_COMPACT);
    enum rc rc;

    if (text == NULL) {
        cli_errf(err, M_OOM);
        return RC_ENOMEM;
    }
    rc = stream(c, "POST", path, text, NULL, idle_s, fn, ud, status, resp, err);
    free(text);
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
    char *esc = NULL;
    int w;

    if (httpc_escape(seg, &esc) != RC_OK)
        return RC_ENOMEM;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    w = snprintf(buf, n, fmt, esc);
#pragma GCC diagnostic pop
    free(esc);
    return w < 0 || (size_t)w >= n ? RC_ETOOBIG : RC_OK;
}

int cli_print_json(FILE *out, const json_t *v)
{
    if (json_dumpf(v, out, JSON_COMPACT) != 0)
        return -1;
    fputc('\n', out);
    return 0;
}

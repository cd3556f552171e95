/*
 * client.c - the command line's API client (client.h): libcurl easy
 * handle per client, the reply gathered into a bounded buffer.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "crypto.h"
#include "urlcheck.h"

struct cli_client {
    CURL *curl;
    char *ca_file; /* TRAINYARD_CA_FILE: PEM bundle to verify https with; NULL = system */
    char *base;    /* without a trailing '/' */
    char *auth;    /* "Authorization: Bearer ..." or NULL; a secret */
};

struct reply_buf {
    char *data;
    size_t len, cap;
    int too_big;
};

const char *cli_server_url(const char *flag, const char *env_server)
{
    if (flag != NULL)
        return flag;
    if (env_server != NULL && env_server[0] != '\0')
        return env_server;
    return CLI_DEFAULT_SERVER;
}

enum rc cli_client_new(const char *base_url, const char *token, struct cli_client **out, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct cli_client *c = NULL;
    size_t n;

    *out = NULL;
    if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
        fprintf(err, "trainyard: --server must be an http:// or https:// URL (got %s)\n", base_url);
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
        fprintf(err, "trainyard: out of memory\n");
    cli_client_free(c);
    return rc;
}

void cli_client_free(struct cli_client *c)
{
    if (c == NULL)
        return;
    if (c->curl != NULL)
        curl_easy_cleanup(c->curl);
    crypto_free_secret(c->auth);
    free(c->base);
    free(c->ca_file);
    free(c);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct reply_buf *b = ud;
    size_t n = size * nmemb;

    if (b->len + n > CLI_MAX_REPLY) {
        b->too_big = 1;
        return 0; /* stops the transfer */
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        char *p;
        while (cap < b->len + n)
            cap *= 2;
        if ((p = realloc(b->data, cap)) == NULL)
            return 0;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    return n;
}

enum rc cli_client_request(struct cli_client *c, const char *method, const char *path,
                           const json_t *body, long *status, json_t **resp, FILE *err)
{
    enum rc rc = RC_ENOMEM;
    struct curl_slist *hdr = NULL, *tmp;
    struct reply_buf rb = {0};
    char *text = NULL, *url = NULL;
    char ebuf[CURL_ERROR_SIZE] = "";
    size_t ulen = strlen(c->base) + strlen(path) + 1;
    CURLcode cc;

    *status = 0;
    *resp = NULL;
    if ((url = malloc(ulen)) == NULL)
        goto out;
    snprintf(url, ulen, "%s%s", c->base, path);
    if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)
        goto out;
    /* A header that could not be added would change the request: fail. */
    if ((tmp = curl_slist_append(hdr, "Accept: application/json")) == NULL)
        goto out;
    hdr = tmp;
    if ((tmp = curl_slist_append(hdr, "Expect:")) == NULL)
        goto out;
    hdr = tmp;
    if (body != NULL) {
        if ((tmp = curl_slist_append(hdr, "Content-Type: application/json")) == NULL)
            goto out;
        hdr = tmp;
    }
    if (c->auth != NULL) {
        if ((tmp = curl_slist_append(hdr, c->auth)) == NULL)
            goto out;
        hdr = tmp;
    }
    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca_file != NULL)
        curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &rb);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "trainyard-cli");
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text ? text : "");
    } else {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    }
    cc = curl_easy_perform(c->curl);
    if (rb.too_big) {
        fprintf(err, "trainyard: the server's reply is over %d bytes\n", CLI_MAX_REPLY);
        rc = RC_ETOOBIG;
        goto out;
    }
    if (cc != CURLE_OK) {
        fprintf(err, "trainyard: cannot reach the server at %s: %s\n", c->base,
                ebuf[0] ? ebuf : curl_easy_strerror(cc));
        rc = RC_EUNAVAIL;
        goto out;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (rb.len > 0)
        *resp = json_loadb(rb.data, rb.len, JSON_REJECT_DUPLICATES, NULL);
    rc = RC_OK;
out:
    if (rc == RC_ENOMEM)
        fprintf(err, "trainyard: out of memory\n");
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    for (tmp = hdr; tmp != NULL; tmp = tmp->next) /* one is a copy of the token */
        crypto_wipe(tmp->data, strlen(tmp->data));
    curl_slist_free_all(hdr);
    free(rb.data);
    free(text);
    free(url);
    return rc;
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
        fprintf(err, "trainyard: set TRAINYARD_TOKEN to an API token (POST /api/v1/tokens)\n");
}

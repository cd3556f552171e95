/*
 * tls.c - see tls.h. Reading PEM files whole into memory is all there is:
 * libmicrohttpd hands the buffers to GnuTLS, which parses and checks them.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define TLS_FILE_MAX (1 << 20) /* a chain of a few certificates is a few KiB */

/* Read a whole PEM file; RC_EINVAL for unreadable, empty, huge or non-PEM. */
static enum rc read_pem(const char *what, const char *path, char **out, struct err *e)
{
    enum rc rc = RC_EINVAL;
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;

    *out = NULL;
    if (f == NULL) {
        err_set(e, RC_EINVAL, what, "%s %s: %s", what, path, strerror(errno));
        goto out;
    }
    buf = malloc(TLS_FILE_MAX + 1);
    if (buf == NULL) {
        rc = RC_ENOMEM;
        err_set(e, rc, what, "out of memory");
        goto out;
    }
    n = fread(buf, 1, TLS_FILE_MAX + 1, f);
    if (ferror(f) || n == 0 || n > TLS_FILE_MAX) {
        err_set(e, RC_EINVAL, what, "%s %s: %s", what, path,
                n == 0 ? "empty or unreadable" : "larger than 1 MiB");
        goto out;
    }
    buf[n] = '\0';
    /* A DER file or a path typo'd to some other file fails here, with the
     * option's name, instead of as an opaque GnuTLS error at start. */
    if (strstr(buf, "-----BEGIN ") == NULL) {
        err_set(e, RC_EINVAL, what, "%s %s: not a PEM file", what, path);
        goto out;
    }
    *out = buf;
    buf = NULL;
    rc = RC_OK;
out:
    if (buf != NULL) {
        OPENSSL_cleanse(buf, TLS_FILE_MAX + 1);
        free(buf);
    }
    if (f != NULL)
        fclose(f);
    return rc;
}

enum rc srv_tls_load(const struct srv_config *cfg, struct srv_tls *out, struct err *e)
{
    enum rc rc = RC_OK;
    bool have_cert = cfg->tls_cert[0] != '\0', have_key = cfg->tls_key[0] != '\0';

    memset(out, 0, sizeof(*out));
    if (!have_cert && !have_key)
        goto out;
    if (have_cert != have_key) {
        rc = RC_EINVAL;
        err_set(e, rc, have_cert ? "tls_key" : "tls_cert",
                "tls_cert and tls_key go together: %s is set, %s is not",
                have_cert ? "tls_cert" : "tls_key", have_cert ? "tls_key" : "tls_cert");
        goto out;
    }
    rc = read_pem("tls_cert", cfg->tls_cert, &out->cert_pem, e);
    if (rc == RC_OK)
        rc = read_pem("tls_key", cfg->tls_key, &out->key_pem, e);
out:
    if (rc != RC_OK)
        srv_tls_free(out);
    return rc;
}

bool srv_tls_enabled(const struct srv_tls *t)
{
    return t->cert_pem != NULL && t->key_pem != NULL;
}

void srv_tls_free(struct srv_tls *t)
{
    if (t == NULL)
        return;
    if (t->key_pem != NULL)
        OPENSSL_cleanse(t->key_pem, strlen(t->key_pem));
    free(t->key_pem);
    free(t->cert_pem);
    t->key_pem = NULL;
    t->cert_pem = NULL;
}

bool srv_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    char h6[64];
    size_t n = strlen(host);

    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (n > 2 && n - 2 < sizeof(h6) && host[0] == '[' && host[n - 1] == ']') {
        memcpy(h6, host + 1, n - 2);
        h6[n - 2] = '\0';
        return inet_pton(AF_INET6, h6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    return false;
}

/*
 * crypto.c - wrappers over OpenSSL's EVP, RAND and PBKDF2 APIs.
 */
#include "crypto.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SALT_LEN 16
#define KEY_LEN 32

/* Chunk of one read(2) while hashing a file: large enough that the syscalls
 * cost little next to the hashing. */
#define HASH_CHUNK (256 * 1024)

enum rc crypto_sha256_fd_hex(int fd, unsigned long long max_bytes, unsigned long long *nread,
                             char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    unsigned char *buf = malloc(HASH_CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    enum rc rc = RC_ENOMEM;

    *nread = 0;
    out[0] = '\0';
    if (buf == NULL || ctx == NULL)
        goto out;
    rc = RC_EINTERNAL;
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    for (;;) {
        ssize_t n = read(fd, buf, HASH_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = RC_EUNAVAIL;
            goto out;
        }
        if (n == 0)
            break;
        if ((unsigned long long)n > max_bytes - *nread) {
            rc = RC_ETOOBIG;
            goto out;
        }
        *nread += (unsigned long long)n;
        if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
            goto out;
    }
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
        goto out;
    crypto_hex(md, mdlen, out);
    rc = RC_OK;
out:
    EVP_MD_CTX_free(ctx);
    free(buf);
    return rc;
}

void crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];

    SHA256(data, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[CRYPTO_SHA256_HEX_LEN] = '\0';
}

/* base64url without padding; returns the length written (out must fit). */
static size_t b64url(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = tab[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = tab[v & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64url_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* Decode base64url (no padding) of exactly want bytes; 0 on success. */
static int b64url_decode(const char *in, size_t len, unsigned char *out, size_t want)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;

    for (size_t i = 0; i < len; i++) {
        int v = b64url_val(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= want)
                return -1;
            out[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    return o == want ? 0 : -1;
}

enum rc crypto_random_token(const char *prefix, size_t nbytes, char *out, size_t out_size)
{
    unsigned char raw[64];
    size_t plen = strlen(prefix);

    if (nbytes > sizeof(raw) || plen + (nbytes * 4 + 2) / 3 + 1 > out_size)
        return RC_EINVAL;
    if (RAND_bytes(raw, (int)nbytes) != 1)
        return RC_EINTERNAL;
    memcpy(out, prefix, plen);
    b64url(raw, nbytes, out + plen);
    OPENSSL_cleanse(raw, sizeof(raw));
    return RC_OK;
}

enum rc crypto_password_hash(const char *password, unsigned iterations, char out[CRYPTO_PWHASH_MAX])
{
    unsigned char salt[SALT_LEN], key[KEY_LEN];
    char salt64[32], key64[48];

    if (iterations == 0)
        iterations = CRYPTO_PBKDF2_ITERATIONS;
    if (RAND_bytes(salt, sizeof(salt)) != 1)
        return RC_EINTERNAL;
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, sizeof(salt), (int)iterations,
                          EVP_sha256(), sizeof(key), key) != 1)
        return RC_EINTERNAL;
    b64url(salt, sizeof(salt), salt64);
    b64url(key, sizeof(key), key64);
    OPENSSL_cleanse(key, sizeof(key));
    snprintf(out, CRYPTO_PWHASH_MAX, "pbkdf2-sha256$%u$%s$%s", iterations, salt64, key64);
    return RC_OK;
}

enum rc crypto_password_verify(const char *password, const char *stored)
{
    unsigned char salt[SALT_LEN], want[KEY_LEN], got[KEY_LEN];
    const char *p = stored, *salt_s, *key_s;
    char *end = NULL;
    unsigned long long iter;
    int same;

    if (strncmp(p, "pbkdf2-sha256$", 14) != 0)
        return RC_EINVAL;
    p += 14;
    iter = strtoull(p, &end, 10);
    if (end == p || *end != '$' || iter < 1 || iter > 100000000ULL)
        return RC_EINVAL;
    salt_s = end + 1;
    key_s = strchr(salt_s, '$');
    if (key_s == NULL)
        return RC_EINVAL;
    if (b64url_decode(salt_s, (size_t)(key_s - salt_s), salt, sizeof(salt)) != 0 ||
        b64url_decode(key_s + 1, strlen(key_s + 1), want, sizeof(want)) != 0)
        return RC_EINVAL;
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, sizeof(salt), (int)iter,
                          EVP_sha256(), sizeof(got), got) != 1)
        return RC_EINTERNAL;
    same = CRYPTO_memcmp(want, got, sizeof(got)) == 0;
    OPENSSL_cleanse(got, sizeof(got));
    return same ? RC_OK : RC_EAUTH;
}

void crypto_wipe(void *p, size_t n)
{
    if (p != NULL && n > 0)
        OPENSSL_cleanse(p, n);
}

void crypto_free_secret(char *s)
{
    if (s == NULL)
        return;
    crypto_wipe(s, strlen(s));
    free(s);
}

int crypto_str_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    if (la != lb)
        return 0;
    return CRYPTO_memcmp(a, b, la) == 0;
}

void crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        unsigned char out[32])
{
    unsigned int len = 32;

    HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, out, &len);
}

size_t crypto_base64(const unsigned char *in, size_t n, char *out, size_t out_size)
{
    if (out_size < 4 * ((n + 2) / 3) + 1) {
        if (out_size > 0)
            out[0] = '\0';
        return 0;
    }
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

void crypto_hex(const unsigned char *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

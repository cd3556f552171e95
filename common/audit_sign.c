/*
 * audit_sign.c - Ed25519 audit key and signed objects (see audit_sign.h).
 */
#include "audit_sign.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"

#define RAW_PUBLIC_LEN 32
#define RAW_SIGNATURE_LEN 64

struct audit_key {
    EVP_PKEY *pkey;
    int can_sign;
    char id[AUDIT_KEY_ID_LEN + 1];
    char public_b64[AUDIT_PUBLIC_B64_LEN + 1];
};

/* Fill id and public_b64 from pkey; takes ownership of pkey. */
static enum rc key_wrap(EVP_PKEY *pkey, int can_sign, struct audit_key **out, struct err *e)
{
    unsigned char raw[RAW_PUBLIC_LEN];
    size_t len = sizeof(raw);
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    struct audit_key *k;

    if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519 ||
        EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1 || len != RAW_PUBLIC_LEN) {
        EVP_PKEY_free(pkey);
        return err_set(e, RC_EINVAL, "", "not an Ed25519 key");
    }
    if ((k = calloc(1, sizeof(*k))) == NULL) {
        EVP_PKEY_free(pkey);
        return err_set(e, RC_ENOMEM, "", "out of memory");
    }
    k->pkey = pkey;
    k->can_sign = can_sign;
    crypto_sha256_hex(raw, len, hex);
    memcpy(k->id, hex, AUDIT_KEY_ID_LEN);
    k->id[AUDIT_KEY_ID_LEN] = '\0';
    crypto_base64(raw, len, k->public_b64, sizeof(k->public_b64));
    *out = k;
    return RC_OK;
}

static enum rc load_private(const char *path, struct audit_key **out, struct err *e)
{
    struct stat st;
    FILE *f;
    EVP_PKEY *pkey;

    if ((f = fopen(path, "rb")) == NULL)
        return err_set(e, RC_EUNAVAIL, "", "cannot open audit key %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return err_set(e, RC_EUNAVAIL, "", "audit key %s is not a regular file", path);
    }
    if ((st.st_mode & 077) != 0) {
        fclose(f);
        return err_set(e, RC_EPERM, "", "audit key %s is readable by group or others (chmod 600)",
                       path);
    }
    pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (pkey == NULL)
        return err_set(e, RC_EINVAL, "", "audit key %s is not a PEM private key", path);
    return key_wrap(pkey, 1, out, e);
}

static enum rc create_private(const char *path, struct err *e)
{
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    int fd;
    FILE *f;
    int ok;

    if (pkey == NULL)
        return err_set(e, RC_EINTERNAL, "", "cannot generate an Ed25519 key");
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        EVP_PKEY_free(pkey);
        if (errno == EEXIST)
            return RC_ECONFLICT; /* another process won the race: load its key */
        return err_set(e, RC_EUNAVAIL, "", "cannot create audit key %s: %s", path, strerror(errno));
    }
    if ((f = fdopen(fd, "wb")) == NULL) {
        close(fd);
        EVP_PKEY_free(pkey);
        return err_set(e, RC_EUNAVAIL, "", "cannot write audit key %s", path);
    }
    ok = PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL) == 1;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    EVP_PKEY_free(pkey);
    if (!ok) {
        unlink(path);
        return err_set(e, RC_EUNAVAIL, "", "cannot write audit key %s", path);
    }
    return RC_OK;
}

enum rc audit_key_load_or_create(const char *path, struct audit_key **out, int *created,
                                 struct err *e)
{
    enum rc rc;

    *out = NULL;
    *created = 0;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        rc = create_private(path, e);
        if (rc == RC_OK)
            *created = 1;
        else if (rc != RC_ECONFLICT)
            return rc;
    }
    return load_private(path, out, e);
}

static enum rc from_raw_b64(const char *b64, size_t len, struct audit_key **out, struct err *e)
{
    unsigned char raw[48];
    char buf[AUDIT_PUBLIC_B64_LEN + 1];
    EVP_PKEY *pkey;

    if (len != AUDIT_PUBLIC_B64_LEN)
        return err_set(e, RC_EINVAL, "", "public key is not 32 bytes of base64");
    memcpy(buf, b64, len);
    buf[len] = '\0';
    if (EVP_DecodeBlock(raw, (const unsigned char *)buf, (int)len) != 33)
        return err_set(e, RC_EINVAL, "", "public key is not 32 bytes of base64");
    pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, RAW_PUBLIC_LEN);
    if (pkey == NULL)
        return err_set(e, RC_EINVAL, "", "public key is not an Ed25519 key");
    return key_wrap(pkey, 0, out, e);
}

enum rc audit_key_from_public(const char *text, size_t len, struct audit_key **out, struct err *e)
{
    size_t start = 0, end = len;

    *out = NULL;
    while (start < end && (text[start] == ' ' || text[start] == '\n' || text[start] == '\r' ||
                           text[start] == '\t'))
        start++;
    while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\n' || text[end - 1] == '\r' ||
                           text[end - 1] == '\t'))
        end--;
    if (end - start > 0 && text[start] == '{') {
        json_t *doc = json_loadb(text + start, end - start, 0, NULL);
        const char *pk = json_string_value(json_object_get(doc, "public_key"));
        enum rc rc = pk == NULL ? err_set(e, RC_EINVAL, "", "no \"public_key\" in the JSON")
                                : from_raw_b64(pk, strlen(pk), out, e);
        json_decref(doc);
        return rc;
    }
    if (end - start > 10 && memcmp(text + start, "-----BEGIN", 10) == 0) {
        BIO *bio = BIO_new_mem_buf(text + start, (int)(end - start));
        EVP_PKEY *pkey = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
        if (pkey == NULL)
            return err_set(e, RC_EINVAL, "", "not a PEM public key");
        return key_wrap(pkey, 0, out, e);
    }
    return from_raw_b64(text + start, end - start, out, e);
}

void audit_key_free(struct audit_key *key)
{
    if (key == NULL)
        return;
    EVP_PKEY_free(key->pkey);
    free(key);
}

const char *audit_key_id(const struct audit_key *key)
{
    return key->id;
}

const char *audit_key_public_b64(const struct audit_key *key)
{
    return key->public_b64;
}

int audit_key_can_sign(const struct audit_key *key)
{
    return key->can_sign;
}

char *audit_key_public_pem(const struct audit_key *key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL, *copy = NULL;
    long n;

    if (bio == NULL)
        return NULL;
    if (PEM_write_bio_PUBKEY(bio, key->pkey) == 1 && (n = BIO_get_mem_data(bio, &data)) > 0 &&
        (copy = malloc((size_t)n + 1)) != NULL) {
        memcpy(copy, data, (size_t)n);
        copy[n] = '\0';
    }
    BIO_free(bio);
    return copy;
}

enum rc audit_sign(const struct audit_key *key, const void *msg, size_t len,
                   char out[AUDIT_SIGNATURE_B64_LEN + 1])
{
    unsigned char sig[RAW_SIGNATURE_LEN];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *ctx;
    int ok;

    out[0] = '\0';
    if (!key->can_sign)
        return RC_EINVAL;
    if ((ctx = EVP_MD_CTX_new()) == NULL)
        return RC_ENOMEM;
    ok = EVP_DigestSignInit(ctx, NULL, NULL, NULL, key->pkey) == 1 &&
         EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 && siglen == RAW_SIGNATURE_LEN;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return RC_EINTERNAL;
    crypto_base64(sig, siglen, out, AUDIT_SIGNATURE_B64_LEN + 1);
    return RC_OK;
}

int audit_verify(const struct audit_key *key, const void *msg, size_t len, const char *sig_b64)
{
    unsigned char sig[RAW_SIGNATURE_LEN + 3];
    EVP_MD_CTX *ctx;
    int ok;

    if (sig_b64 == NULL || strlen(sig_b64) != AUDIT_SIGNATURE_B64_LEN)
        return 0;
    /* 64 bytes encode to 88 characters ending in "=="; decoding yields 66. */
    if (EVP_DecodeBlock(sig, (const unsigned char *)sig_b64, AUDIT_SIGNATURE_B64_LEN) !=
            RAW_SIGNATURE_LEN + 2 ||
        strcmp(sig_b64 + AUDIT_SIGNATURE_B64_LEN - 2, "==") != 0)
        return 0;
    if ((ctx = EVP_MD_CTX_new()) == NULL)
        return 0;
    ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key->pkey) == 1 &&
         EVP_DigestVerify(ctx, sig, RAW_SIGNATURE_LEN, msg, len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

char *audit_signed_text(const json_t *obj)
{
    json_t *copy;
    char *s;

    if (!json_is_object(obj) || (copy = json_copy((json_t *)obj)) == NULL)
        return NULL;
    json_object_del(copy, "signature");
    s = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    json_decref(copy);
    return s;
}

enum rc audit_sign_object(const struct audit_key *key, json_t *obj)
{
    char sig[AUDIT_SIGNATURE_B64_LEN + 1];
    char *text = audit_signed_text(obj);
    enum rc rc;

    if (text == NULL)
        return RC_ENOMEM;
    rc = audit_sign(key, text, strlen(text), sig);
    free(text);
    if (rc == RC_OK && json_object_set_new(obj, "signature", json_string(sig)) != 0)
        rc = RC_ENOMEM;
    return rc;
}

int audit_verify_object(const struct audit_key *key, const json_t *obj)
{
    const char *sig = json_string_value(json_object_get(obj, "signature"));
    char *text;
    int ok;

    if (sig == NULL || (text = audit_signed_text(obj)) == NULL)
        return 0;
    ok = audit_verify(key, text, strlen(text), sig);
    free(text);
    return ok;
}

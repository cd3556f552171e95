/*
 * test_common_crypto.c - SHA-256 vectors, tokens, PBKDF2 password hashes and
 * the canonical audit form.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit_canon.h"
#include "crypto.h"

static void test_sha256(void **state)
{
    char out[CRYPTO_SHA256_HEX_LEN + 1];
    (void)state;
    crypto_sha256_hex("abc", 3, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    crypto_sha256_hex("", 0, out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* A file streamed through EVP hashes like the same bytes in memory; past
 * max_bytes it is refused, and exactly at it accepted. */
static void test_sha256_fd(void **state)
{
    char path[] = "/tmp/ty-crypto-fd-XXXXXX", want[CRYPTO_SHA256_HEX_LEN + 1],
         got[CRYPTO_SHA256_HEX_LEN + 1];
    static char data[600000]; /* more than one read's chunk */
    unsigned long long n = 0;
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    unlink(path);
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
    crypto_sha256_hex(data, sizeof(data), want);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    assert_int_equal(crypto_sha256_fd_hex(fd, sizeof(data), &n, got), RC_OK);
    assert_int_equal(n, sizeof(data));
    assert_string_equal(got, want);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    assert_int_equal(crypto_sha256_fd_hex(fd, sizeof(data) - 1, &n, got), RC_ETOOBIG);
    /* an empty rest: the digest of nothing */
    assert_int_equal(crypto_sha256_fd_hex(fd, 10, &n, got), RC_OK);
    assert_int_equal(n, 0);
    assert_string_equal(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    close(fd);
    assert_int_equal(crypto_sha256_fd_hex(fd, 10, &n, got), RC_EUNAVAIL);
}

static void test_tokens(void **state)
{
    char a[80], b[80], tiny[8];
    (void)state;
    assert_int_equal(crypto_random_token("tyt_", 32, a, sizeof(a)), RC_OK);
    assert_int_equal(crypto_random_token("tyt_", 32, b, sizeof(b)), RC_OK);
    assert_int_equal(strncmp(a, "tyt_", 4), 0);
    assert_int_equal(strlen(a), 4 + 43);
    assert_string_not_equal(a, b);
    assert_int_equal(
        strspn(a + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), 43);
    assert_int_equal(crypto_random_token("tyt_", 32, tiny, sizeof(tiny)), RC_EINVAL);
}

static void test_password_hash(void **state)
{
    char h[CRYPTO_PWHASH_MAX], h2[CRYPTO_PWHASH_MAX];
    (void)state;
    /* Few iterations keep the unit test fast; the server enforces 600,000. */
    assert_int_equal(crypto_password_hash("correct horse", 1000, h), RC_OK);
    assert_int_equal(strncmp(h, "pbkdf2-sha256$1000$", 19), 0);
    assert_int_equal(crypto_password_verify("correct horse", h), RC_OK);
    assert_int_equal(crypto_password_verify("correct horsf", h), RC_EAUTH);
    assert_int_equal(crypto_password_verify("", h), RC_EAUTH);
    /* Salted: the same password hashes differently. */
    assert_int_equal(crypto_password_hash("correct horse", 1000, h2), RC_OK);
    assert_string_not_equal(h, h2);
    assert_int_equal(crypto_password_verify("x", "md5$abc"), RC_EINVAL);
    assert_int_equal(crypto_password_verify("x", "pbkdf2-sha256$0$a$b"), RC_EINVAL);
    assert_int_equal(crypto_password_verify("x", "pbkdf2-sha256$10$!!$b"), RC_EINVAL);
    assert_int_equal(crypto_password_verify("x", "pbkdf2-sha256$10"), RC_EINVAL);
    /* The default is at least 600,000 iterations. */
    assert_true(CRYPTO_PBKDF2_ITERATIONS >= 600000);
}

static void test_str_equal(void **state)
{
    (void)state;
    assert_true(crypto_str_equal("abc", "abc"));
    assert_false(crypto_str_equal("abc", "abd"));
    assert_false(crypto_str_equal("abc", "ab"));
}

static void test_wipe(void **state)
{
    char secret[] = "tyn_secret-credential";
    char *heap = strdup("Authorization: Bearer tyn_x");
    (void)state;

    crypto_wipe(secret, strlen(secret));
    for (size_t i = 0; i < sizeof(secret); i++)
        assert_int_equal(secret[i], 0);
    crypto_wipe(NULL, 4); /* no-ops */
    crypto_wipe(secret, 0);
    assert_non_null(heap);
    crypto_free_secret(heap); /* under ASan: freed exactly once */
    crypto_free_secret(NULL);
}

static void test_audit_canonical(void **state)
{
    json_t *d = json_pack("{s:s,s:i}", "z", "\xe4\xb8\xad", "a", 1);
    struct audit_fields f = {7,
                             "2026-01-02T03:04:05.000006Z",
                             "user:li",
                             "10.0.0.1",
                             "job.submit",
                             "job:3",
                             "success",
                             d,
                             AUDIT_GENESIS_HASH};
    char *s = audit_canonical(&f);
    char h1[65], h2[65];
    (void)state;
    assert_non_null(s);
    /* Sorted keys, compact, non-ASCII escaped, id as a string. */
    assert_string_equal(s, "{\"action\":\"job.submit\",\"actor\":\"user:li\",\"details\":{\"a\":1,"
                           "\"z\":\"\\u4E2D\"},\"id\":\"7\",\"outcome\":\"success\",\"prev_hash\":"
                           "\"0000000000000000000000000000000000000000000000000000000000000000\","
                           "\"source\":\"10.0.0.1\",\"target\":\"job:3\",\"ts\":"
                           "\"2026-01-02T03:04:05.000006Z\"}");
    assert_int_equal(audit_hash(&f, h1), RC_OK);
    f.actor = "user:lj";
    assert_int_equal(audit_hash(&f, h2), RC_OK);
    assert_string_not_equal(h1, h2);
    free(s);
    json_decref(d);
}

static void test_audit_ts(void **state)
{
    char ts[40];
    (void)state;
    audit_format_ts(1764400000123456LL, ts, sizeof(ts));
    assert_string_equal(ts, "2025-11-29T07:06:40.123456Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256),          cmocka_unit_test(test_sha256_fd),
        cmocka_unit_test(test_tokens),          cmocka_unit_test(test_password_hash),
        cmocka_unit_test(test_str_equal),       cmocka_unit_test(test_wipe),
        cmocka_unit_test(test_audit_canonical), cmocka_unit_test(test_audit_ts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

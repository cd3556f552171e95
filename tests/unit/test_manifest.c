/*
 * test_manifest.c - server/jobs/manifest.h on a temporary directory: every
 * regular file hashed and listed in byte order, the digest of the canonical
 * text, links out of the directory (files and directories) not followed,
 * a linked file inside kept, special files left out, the limits refused
 * rather than cut short, and one file or a path checked against the roots.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "crypto.h"
#include "manifest.h"
#include "pathpol.h"

struct fixture {
    char root[256];    /* the storage root */
    char dir[300];     /* root/model: what is hashed */
    char outside[256]; /* a directory outside the root */
};

static void write_file(const char *dir, const char *rel, const char *content)
{
    char p[600];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    char p[600], q[600];

    assert_non_null(fx);
    snprintf(fx->root, sizeof(fx->root), "/tmp/ty-manifest-XXXXXX");
    snprintf(fx->outside, sizeof(fx->outside), "/tmp/ty-manifest-out-XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    assert_non_null(mkdtemp(fx->outside));
    snprintf(fx->dir, sizeof(fx->dir), "%s/model", fx->root);
    assert_int_equal(mkdir(fx->dir, 0700), 0);
    snprintf(p, sizeof(p), "%s/sub", fx->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    write_file(fx->dir, "weights.bin", "0123456789");
    write_file(fx->dir, "config.json", "{\"a\":1}\n");
    write_file(fx->dir, "sub/tok.txt", "hello");
    write_file(fx->dir, "empty", "");
    write_file(fx->outside, "secret", "do not read me");
    /* A link to a file outside, a link to a directory outside, a link to a
     * file inside (kept, under its own name), a FIFO (left out). */
    snprintf(p, sizeof(p), "%s/secret", fx->outside);
    snprintf(q, sizeof(q), "%s/leak", fx->dir);
    assert_int_equal(symlink(p, q), 0);
    snprintf(q, sizeof(q), "%s/leakdir", fx->dir);
    assert_int_equal(symlink(fx->outside, q), 0);
    snprintf(q, sizeof(q), "%s/alias.bin", fx->dir);
    assert_int_equal(symlink("weights.bin", q), 0);
    snprintf(q, sizeof(q), "%s/pipe", fx->dir);
    assert_int_equal(mkfifo(q, 0600), 0);
    *state = fx;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path); /* best effort: a leftover in /tmp fails nothing */
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    /* FTW_PHYS: the links are removed, never followed. */
    nftw(fx->root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    nftw(fx->outside, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static const char *at(const json_t *files, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(files, i), key));
}

static void sha_of(const char *s, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    crypto_sha256_hex(s, strlen(s), out);
}

static void test_directory(void **state)
{
    static const char *const want[][2] = {
        {"alias.bin", "0123456789"}, {"config.json", "{\"a\":1}\n"}, {"empty", ""},
        {"sub/tok.txt", "hello"},    {"weights.bin", "0123456789"},
    };
    struct fixture *fx = *state;
    struct manifest m;
    char sha[CRYPTO_SHA256_HEX_LEN + 1], text[2048] = "", line[256];
    struct err e;

    err_init(&e);
    assert_int_equal(manifest_dir(fx->dir, NULL, &m, &e), RC_OK);
    /* leak, leakdir and pipe are not there */
    assert_int_equal(m.count, 5);
    assert_int_equal(json_array_size(m.files), 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(at(m.files, i, "path"), want[i][0]);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(m.files, i), "size")),
                         strlen(want[i][1]));
        sha_of(want[i][1], sha);
        assert_string_equal(at(m.files, i, "sha256"), sha);
        snprintf(line, sizeof(line), "%s %zu %s\n", sha, strlen(want[i][1]), want[i][0]);
        strncat(text, line, sizeof(text) - strlen(text) - 1);
    }
    assert_int_equal(m.total_bytes, 10 + 8 + 0 + 5 + 10);
    /* manifest_sha256 is the SHA-256 of the canonical text built here by hand */
    sha_of(text, sha);
    assert_string_equal(m.sha256, sha);
    manifest_cleanup(&m);
    manifest_cleanup(&m); /* twice is harmless */
}

static void test_empty_directory_and_digest(void **state)
{
    struct fixture *fx = *state;
    struct manifest m;
    char p[600], sha[CRYPTO_SHA256_HEX_LEN + 1];
    json_t *files;

    snprintf(p, sizeof(p), "%s/nothing", fx->root);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(manifest_dir(p, NULL, &m, NULL), RC_OK);
    assert_int_equal(m.count, 0);
    assert_string_equal(m.sha256,
                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    manifest_cleanup(&m);
    rmdir(p);

    files = json_pack("[{s:s,s:i,s:s}]", "path", "x", "size", 1, "sha256", "ab");
    assert_int_equal(manifest_digest(files, sha), RC_OK);
    {
        char want[CRYPTO_SHA256_HEX_LEN + 1];
        sha_of("ab 1 x\n", want);
        assert_string_equal(sha, want);
    }
    json_object_del(json_array_get(files, 0), "sha256");
    assert_int_equal(manifest_digest(files, sha), RC_EINVAL);
    json_decref(files);
}

static void test_limits_refuse(void **state)
{
    struct fixture *fx = *state;
    struct manifest_limits few = {4, 1000}, small = {100, 20};
    struct manifest m;
    struct err e;

    err_init(&e);
    assert_int_equal(manifest_dir(fx->dir, &few, &m, &e), RC_ETOOBIG);
    assert_string_equal(e.code, "too_large");
    assert_null(m.files);
    err_init(&e);
    assert_int_equal(manifest_dir(fx->dir, &small, &m, &e), RC_ETOOBIG);
    assert_string_equal(e.code, "too_large");
    assert_null(m.files);
    /* exactly at the limits is fine */
    few.max_files = 5;
    small.max_bytes = 33;
    assert_int_equal(manifest_dir(fx->dir, &few, &m, NULL), RC_OK);
    manifest_cleanup(&m);
    assert_int_equal(manifest_dir(fx->dir, &small, &m, NULL), RC_OK);
    manifest_cleanup(&m);
}

static void test_one_file_and_paths(void **state)
{
    struct fixture *fx = *state;
    const char *roots[] = {fx->root};
    char p[600], real[PATHPOL_BUF_SIZE], sha[CRYPTO_SHA256_HEX_LEN + 1];
    struct manifest m;
    struct err e;

    err_init(&e);
    assert_int_equal(manifest_file(fx->dir, "sub/tok.txt", NULL, &m, &e), RC_OK);
    assert_int_equal(m.count, 1);
    assert_string_equal(at(m.files, 0, "path"), "sub/tok.txt");
    manifest_cleanup(&m);
    /* a link out is refused, a missing file not found */
    assert_int_equal(manifest_file(fx->dir, "leak", NULL, &m, &e), RC_EPOLICY);
    assert_null(m.files);
    assert_int_equal(manifest_file(fx->dir, "nope", NULL, &m, &e), RC_ENOTFOUND);

    /* A file by its absolute path: one entry under its base name. */
    snprintf(p, sizeof(p), "%s/weights.bin", fx->dir);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_OK);
    assert_int_equal(m.count, 1);
    assert_string_equal(at(m.files, 0, "path"), "weights.bin");
    sha_of("0123456789", sha);
    assert_string_equal(at(m.files, 0, "sha256"), sha);
    manifest_cleanup(&m);
    /* A directory by its path: as manifest_dir(). */
    assert_int_equal(manifest_path(fx->dir, roots, 1, NULL, real, sizeof(real), &m, &e), RC_OK);
    assert_int_equal(m.count, 5);
    manifest_cleanup(&m);
    /* Outside the roots lexically, through a link, or missing. */
    snprintf(p, sizeof(p), "%s/secret", fx->outside);
    err_init(&e);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_EPOLICY);
    assert_string_equal(e.code, "policy_violation");
    snprintf(p, sizeof(p), "%s/leak", fx->dir);
    err_init(&e);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_EPOLICY);
    assert_string_equal(e.code, "policy_violation");
    snprintf(p, sizeof(p), "%s/leakdir", fx->dir);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_EPOLICY);
    snprintf(p, sizeof(p), "%s/pipe", fx->dir);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_EPOLICY);
    snprintf(p, sizeof(p), "%s/missing", fx->dir);
    assert_int_equal(manifest_path(p, roots, 1, NULL, real, sizeof(real), &m, &e), RC_ENOTFOUND);
    assert_null(m.files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_directory_and_digest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_refuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_file_and_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_wrk_join_token.c - where the worker takes its join token from
 * (join.h wrk_join_token_load): a file only when group and others have no
 * permission on it and it is no symbolic link, or TRAINYARD_JOIN_TOKEN,
 * which is then gone from the environment with its text wiped.
 */
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

#include "join.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ty-jt-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/join-token", dir);
    unsetenv("TRAINYARD_JOIN_TOKEN");
    return 0;
}

static int teardown(void **state)
{
    char link[160];

    (void)state;
    snprintf(link, sizeof(link), "%s/link", dir);
    unlink(link);
    unlink(path);
    rmdir(dir);
    return 0;
}

static void write_token(const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static enum rc load(const char *p, char *out, struct err *e)
{
    err_init(e);
    return wrk_join_token_load(p, out, WRK_JOIN_TOKEN_MAX, e);
}

static void test_file_private(void **state)
{
    char tok[WRK_JOIN_TOKEN_MAX];
    struct err e;

    (void)state;
    write_token("tyj_abc\n", 0600);
    assert_int_equal(load(path, tok, &e), RC_OK);
    assert_string_equal(tok, "tyj_abc");
    write_token("tyj_ro", 0400);
    assert_int_equal(load(path, tok, &e), RC_OK);
    assert_string_equal(tok, "tyj_ro");
}

static void test_file_open_to_others(void **state)
{
    static const mode_t modes[] = {0644, 0640, 0604, 0610, 0620};
    char tok[WRK_JOIN_TOKEN_MAX];
    struct err e;

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        write_token("tyj_abc\n", modes[i]);
        assert_int_equal(load(path, tok, &e), RC_EPERM);
        assert_non_null(strstr(e.message, "chmod 600"));
        assert_null(strstr(e.message, "tyj_abc"));
    }
}

static void test_file_link_missing_empty(void **state)
{
    char tok[WRK_JOIN_TOKEN_MAX], link[160];
    struct err e;

    (void)state;
    write_token("tyj_abc\n", 0600);
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(load(link, tok, &e), RC_EPERM);
    assert_int_equal(load("/nonexistent/join-token", tok, &e), RC_EUNAVAIL);
    write_token("\n", 0600);
    assert_int_equal(load(path, tok, &e), RC_EINVAL);
    write_token("tyj_a b\n", 0600);
    assert_int_equal(load(path, tok, &e), RC_EINVAL);
}

static void test_environment(void **state)
{
    char tok[WRK_JOIN_TOKEN_MAX];
    struct err e;

    (void)state;
    assert_int_equal(load(NULL, tok, &e), RC_ENOTFOUND);
    setenv("TRAINYARD_JOIN_TOKEN", "", 1);
    assert_int_equal(load(NULL, tok, &e), RC_ENOTFOUND);
    assert_null(getenv("TRAINYARD_JOIN_TOKEN"));
    setenv("TRAINYARD_JOIN_TOKEN", "tyj_env", 1);
    assert_int_equal(load(NULL, tok, &e), RC_OK);
    assert_string_equal(tok, "tyj_env");
    assert_null(getenv("TRAINYARD_JOIN_TOKEN"));
    /* the file wins, and the variable is dropped all the same */
    write_token("tyj_file\n", 0600);
    setenv("TRAINYARD_JOIN_TOKEN", "tyj_env", 1);
    assert_int_equal(load(path, tok, &e), RC_OK);
    assert_string_equal(tok, "tyj_file");
    assert_null(getenv("TRAINYARD_JOIN_TOKEN"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_open_to_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_link_missing_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

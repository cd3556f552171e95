/*
 * test_config.c - precedence (flag > environment > file > default), value
 * checks, and the login rate limiter.
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

#include "config.h"
#include "ratelimit.h"

static char conf_path[64];

static int write_conf(void **state)
{
    FILE *f;
    int fd;
    (void)state;
    snprintf(conf_path, sizeof(conf_path), "/tmp/ty-conf-XXXXXX");
    fd = mkstemp(conf_path);
    if (fd < 0)
        return -1;
    f = fdopen(fd, "w");
    fprintf(f, "# comment\n\nlisten = 127.0.0.1:1111\ndatabase_url = postgresql:///x\n"
               "http_threads = 3\naccess_log = false\n");
    fclose(f);
    return 0;
}

static int remove_conf(void **state)
{
    (void)state;
    unlink(conf_path);
    unsetenv("TRAINYARD_LISTEN");
    unsetenv("TRAINYARD_HTTP_THREADS");
    return 0;
}

static void test_precedence(void **state)
{
    struct srv_config c;
    struct err e;
    char *argv1[] = {"srv", "--config", conf_path, NULL};
    char *argv2[] = {"srv", "--config", conf_path, "--listen=127.0.0.1:3333", NULL};
    (void)state;
    unsetenv("TRAINYARD_LISTEN");
    assert_int_equal(srv_config_load(&c, 3, argv1, &e), RC_OK);
    assert_string_equal(c.listen, "127.0.0.1:1111");
    assert_int_equal(c.http_threads, 3);
    assert_int_equal(c.access_log, 0);
    assert_int_equal(c.db_pool_size, 16); /* default */
    setenv("TRAINYARD_LISTEN", "127.0.0.1:2222", 1);
    assert_int_equal(srv_config_load(&c, 3, argv1, &e), RC_OK);
    assert_string_equal(c.listen, "127.0.0.1:2222");
    assert_int_equal(srv_config_load(&c, 4, argv2, &e), RC_OK);
    assert_string_equal(c.listen, "127.0.0.1:3333");
}

static void test_bad_values(void **state)
{
    struct srv_config c;
    struct err e;
    char *a1[] = {"srv", "--database-url", "x", "--http-threads", "0", NULL};
    char *a2[] = {"srv", "--database-url", "x", "--nope", "1", NULL};
    char *a3[] = {"srv", "--database-url", "x", "--pbkdf2-iterations", "1000", NULL};
    char *a4[] = {"srv", NULL};
    char *a5[] = {"srv", "--database-url", "x", "--access-log", "maybe", NULL};
    char *a6[] = {"srv", "--database-url", NULL};
    (void)state;
    assert_int_equal(srv_config_load(&c, 5, a1, &e), RC_EINVAL);
    assert_string_equal(e.field, "http_threads");
    assert_int_equal(srv_config_load(&c, 5, a2, &e), RC_EINVAL);
    assert_non_null(strstr(e.message, "--nope"));
    assert_int_equal(srv_config_load(&c, 5, a3, &e), RC_EINVAL);
    assert_int_equal(srv_config_load(&c, 1, a4, &e), RC_EINVAL);
    assert_string_equal(e.field, "database_url");
    assert_int_equal(srv_config_load(&c, 5, a5, &e), RC_EINVAL);
    assert_int_equal(srv_config_load(&c, 2, a6, &e), RC_EINVAL);
}

static void test_listen_split(void **state)
{
    struct srv_config c;
    char host[64];
    int port;
    (void)state;
    srv_config_defaults(&c);
    assert_int_equal(srv_config_listen(&c, host, sizeof(host), &port), RC_OK);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(port, 8080);
    snprintf(c.listen, sizeof(c.listen), "[::1]:9");
    assert_int_equal(srv_config_listen(&c, host, sizeof(host), &port), RC_OK);
    assert_string_equal(host, "[::1]");
    snprintf(c.listen, sizeof(c.listen), "nohost");
    assert_int_equal(srv_config_listen(&c, host, sizeof(host), &port), RC_EINVAL);
    snprintf(c.listen, sizeof(c.listen), "1.2.3.4:99999");
    assert_int_equal(srv_config_listen(&c, host, sizeof(host), &port), RC_EINVAL);
}

static void test_ratelimit(void **state)
{
    struct ratelimit *rl = ratelimit_new(3, 10);
    (void)state;
    assert_non_null(rl);
    for (int i = 0; i < 3; i++) {
        assert_false(ratelimit_blocked(rl, "u:ana", 1000));
        ratelimit_fail(rl, "u:ana", 1000 + i);
    }
    assert_true(ratelimit_blocked(rl, "u:ana", 2000));
    assert_false(ratelimit_blocked(rl, "u:bo", 2000));
    /* The window passes. */
    assert_false(ratelimit_blocked(rl, "u:ana", 1000 + 10001));
    ratelimit_fail(rl, "u:bo", 0);
    ratelimit_reset(rl, "u:bo");
    assert_false(ratelimit_blocked(rl, "u:bo", 1));
    /* Flooding many keys never blocks an untouched key. */
    for (int i = 0; i < 20000; i++) {
        char k[32];
        snprintf(k, sizeof(k), "a:%d", i);
        ratelimit_fail(rl, k, 5000);
    }
    assert_false(ratelimit_blocked(rl, "u:clean", 5000));
    ratelimit_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_precedence, write_conf, remove_conf),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_listen_split),
        cmocka_unit_test(test_ratelimit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

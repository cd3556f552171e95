/*
 * test_common_urlcheck.c - url_is_plain_remote() (common/urlcheck.c): which
 * server URLs make the worker and the CLI warn that credentials would cross
 * the network in the clear.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "urlcheck.h"

static void plain_remote_urls_warn(void **state)
{
    (void)state;
    assert_true(url_is_plain_remote("http://10.0.0.5:8080"));
    assert_true(url_is_plain_remote("http://trainyard.example.com"));
    assert_true(url_is_plain_remote("HTTP://gpu-head:8080/"));
    assert_true(url_is_plain_remote("http://[2001:db8::1]:8080"));
    assert_true(url_is_plain_remote("http://128.0.0.1:8080")); /* not 127/8 */
    /* userinfo must not make a remote host look local */
    assert_true(url_is_plain_remote("http://127.0.0.1@10.0.0.5:8080"));
}

static void loopback_and_https_do_not(void **state)
{
    (void)state;
    assert_false(url_is_plain_remote("http://127.0.0.1:8080"));
    assert_false(url_is_plain_remote("http://127.9.8.7"));
    assert_false(url_is_plain_remote("http://localhost:8080"));
    assert_false(url_is_plain_remote("http://LOCALHOST"));
    assert_false(url_is_plain_remote("http://[::1]:8080"));
    assert_false(url_is_plain_remote("https://10.0.0.5:8443"));
    assert_false(url_is_plain_remote("https://trainyard.example.com"));
}

static void unparseable_is_left_to_the_callers_check(void **state)
{
    (void)state;
    assert_false(url_is_plain_remote(NULL));
    assert_false(url_is_plain_remote(""));
    assert_false(url_is_plain_remote("not a url at all"));
    assert_false(url_is_plain_remote("http://"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_remote_urls_warn),
        cmocka_unit_test(loopback_and_https_do_not),
        cmocka_unit_test(unparseable_is_left_to_the_callers_check),
    };
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}

/*
 * test_router.c - route matching: literals, captures, methods, limits, and
 * that the real route table has no pattern that shadows another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "router.h"
#include "routes.h"

static const struct router_route table[] = {
    {"GET", "/api/v1/jobs", 1, NULL},
    {"POST", "/api/v1/jobs", 1, NULL},
    {"GET", "/api/v1/jobs/{id}", 1, NULL},
    {"POST", "/api/v1/jobs/{id}/cancel", 1, NULL},
    {"PUT", "/api/v1/teams/{id}/members/{user_id}", 2, NULL},
};
#define N (sizeof(table) / sizeof(table[0]))

static void test_literal_and_method(void **state)
{
    struct router_match m;
    (void)state;
    assert_int_equal(router_find(table, N, "GET", "/api/v1/jobs", &m), RC_OK);
    assert_ptr_equal(m.route, &table[0]);
    assert_int_equal(m.nparams, 0);
    assert_int_equal(router_find(table, N, "POST", "/api/v1/jobs", &m), RC_OK);
    assert_ptr_equal(m.route, &table[1]);
    assert_int_equal(router_find(table, N, "DELETE", "/api/v1/jobs", &m), RC_EMETHOD);
    assert_int_equal(router_find(table, N, "GET", "/api/v1/job", &m), RC_ENOTFOUND);
    assert_int_equal(router_find(table, N, "GET", "/api/v1/jobs/", &m), RC_ENOTFOUND);
    assert_int_equal(router_find(table, N, "GET", "/api/v1/jobsx", &m), RC_ENOTFOUND);
}

static void test_captures(void **state)
{
    struct router_match m;
    (void)state;
    assert_int_equal(router_find(table, N, "POST", "/api/v1/jobs/42/cancel", &m), RC_OK);
    assert_int_equal(m.nparams, 1);
    assert_string_equal(m.params[0], "42");
    assert_int_equal(router_find(table, N, "PUT", "/api/v1/teams/7/members/9", &m), RC_OK);
    assert_int_equal(m.nparams, 2);
    assert_string_equal(m.params[0], "7");
    assert_string_equal(m.params[1], "9");
    /* A capture never spans a slash and is never empty. */
    assert_int_equal(router_find(table, N, "GET", "/api/v1/jobs/4/2", &m), RC_ENOTFOUND);
    assert_int_equal(router_find(table, N, "POST", "/api/v1/jobs//cancel", &m), RC_ENOTFOUND);
}

static void test_limits(void **state)
{
    struct router_match m;
    char path[ROUTER_MAX_PATH + 16];
    (void)state;
    assert_int_equal(router_find(table, N, "GET", "api/v1/jobs", &m), RC_EINVAL);
    memset(path, 'a', sizeof(path) - 1);
    path[0] = '/';
    path[sizeof(path) - 1] = '\0';
    assert_int_equal(router_find(table, N, "GET", path, &m), RC_EINVAL);
    /* A capture longer than the limit does not match. */
    memcpy(path, "/api/v1/jobs/", 13);
    memset(path + 13, '9', ROUTER_MAX_PARAM_LEN + 1);
    path[13 + ROUTER_MAX_PARAM_LEN + 1] = '\0';
    assert_int_equal(router_find(table, N, "GET", path, &m), RC_ENOTFOUND);
}

/* Each route of the real table is reachable: no earlier pattern takes it. */
static void test_real_table_unshadowed(void **state)
{
    size_t n;
    const struct router_route *t = routes_table(&n);
    (void)state;
    for (size_t i = 0; i < n; i++) {
        char path[256];
        size_t o = 0;
        struct router_match m;
        for (const char *p = t[i].pattern; *p && o + 2 < sizeof(path); p++) {
            if (*p == '{') {
                path[o++] = '1';
                p = strchr(p, '}');
            } else {
                path[o++] = *p;
            }
        }
        path[o] = '\0';
        assert_int_equal(router_find(t, n, t[i].method, path, &m), RC_OK);
        assert_ptr_equal(m.route, &t[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_and_method),
        cmocka_unit_test(test_captures),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_real_table_unshadowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

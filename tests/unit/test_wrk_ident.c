/*
 * test_wrk_ident.c - the job account's pure parts: account names, the
 * --job-users list, the CapEff check; and the refusals of resolve that
 * need no root (no such account, root, a bad name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ident.h"

static void test_name_valid(void **state)
{
    (void)state;
    assert_true(wrk_ident_name_valid("trainyard-job"));
    assert_true(wrk_ident_name_valid("_svc"));
    assert_true(wrk_ident_name_valid("a"));
    assert_true(wrk_ident_name_valid("alice2_ml-team"));
    assert_true(wrk_ident_name_valid("abcdefghijklmnopqrstuvwxyz012345")); /* 32 */
    assert_false(wrk_ident_name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
    assert_false(wrk_ident_name_valid(""));
    assert_false(wrk_ident_name_valid(NULL));
    assert_false(wrk_ident_name_valid("Alice"));
    assert_false(wrk_ident_name_valid("1abc"));
    assert_false(wrk_ident_name_valid("-abc"));
    assert_false(wrk_ident_name_valid("a b"));
    assert_false(wrk_ident_name_valid("a:b"));
    assert_false(wrk_ident_name_valid("a/b"));
    assert_false(wrk_ident_name_valid("../etc"));
    assert_false(wrk_ident_name_valid("machine$"));
    assert_false(wrk_ident_name_valid("al\xc3\xaf"
                                      "ce"));
    assert_false(wrk_ident_name_valid("a\nb"));
}

static void test_parse_list(void **state)
{
    char names[4][WRK_IDENT_NAME_MAX + 1];
    size_t n = 99;
    struct err e;

    (void)state;
    err_init(&e);
    assert_int_equal(wrk_ident_parse_list("alice,bob,alice,ml-team", names, 4, &n, &e), RC_OK);
    assert_int_equal(n, 3); /* the duplicate is dropped */
    assert_string_equal(names[0], "alice");
    assert_string_equal(names[2], "ml-team");
    assert_true(wrk_ident_listed("bob", (const char(*)[WRK_IDENT_NAME_MAX + 1]) names, n));
    assert_false(wrk_ident_listed("bo", (const char(*)[WRK_IDENT_NAME_MAX + 1]) names, n));
    assert_false(wrk_ident_listed("root", (const char(*)[WRK_IDENT_NAME_MAX + 1]) names, n));

    assert_int_equal(wrk_ident_parse_list("carol", names, 4, &n, &e), RC_OK);
    assert_int_equal(n, 1);

    static const char *bad[] = {"",         ",",          "alice,",
                                ",alice",   "alice,,bob", "Alice",
                                "self",     "alice,self", "a b",
                                "a;rm -rf", "alice,BOB",  "abcdefghijklmnopqrstuvwxyz0123456"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_init(&e);
        assert_int_equal(wrk_ident_parse_list(bad[i], names, 4, &n, &e), RC_EINVAL);
        assert_non_null(strstr(e.message, "--job-users"));
    }
    err_init(&e);
    assert_int_equal(wrk_ident_parse_list("a,b,c,d,e", names, 4, &n, &e), RC_EINVAL);
    assert_non_null(strstr(e.message, "at most 4"));
}

static void test_status_can_switch(void **state)
{
    (void)state;
    /* bit 6 CAP_SETGID, bit 7 CAP_SETUID */
    assert_true(wrk_ident_status_can_switch("Name:\tx\nCapInh:\t0\nCapEff:\t00000000000000c0\n"));
    assert_true(wrk_ident_status_can_switch("\nCapEff:\t000001ffffffffff\n"));
    assert_false(wrk_ident_status_can_switch("\nCapEff:\t0000000000000080\n")); /* setuid only */
    assert_false(wrk_ident_status_can_switch("\nCapEff:\t0000000000000040\n")); /* setgid only */
    assert_false(wrk_ident_status_can_switch("\nCapEff:\t0000000000000000\n"));
    assert_false(wrk_ident_status_can_switch("\nCapPrm:\t00000000000000c0\n")); /* not effective */
    assert_false(wrk_ident_status_can_switch("\nCapEff:\tzz\n"));
    assert_false(wrk_ident_status_can_switch(""));
    assert_false(wrk_ident_status_can_switch(NULL));
}

static void test_resolve_refusals(void **state)
{
    struct wrk_ident id;
    struct err e;

    (void)state;
    err_init(&e);
    assert_int_equal(wrk_ident_resolve("ty-no-such-account-x", &id, &e), RC_ENOTFOUND);
    assert_non_null(strstr(e.message, "useradd --system"));
    assert_false(id.switch_ids);
    err_init(&e);
    assert_int_equal(wrk_ident_resolve("root", &id, &e), RC_EPOLICY);
    assert_non_null(strstr(e.message, "root"));
    err_init(&e);
    assert_int_equal(wrk_ident_resolve("Bad Name", &id, &e), RC_EINVAL);
    /* not switching: a no-op, and fn runs here */
    memset(&id, 0, sizeof(id));
    assert_int_equal(wrk_ident_switch(&id), 0);
    assert_int_equal(wrk_ident_switch(NULL), 0);
}

static int ret_pid_parity(void *arg)
{
    *(pid_t *)arg = getpid();
    return 7;
}

static void test_call_without_switch(void **state)
{
    pid_t seen = 0;

    (void)state;
    assert_int_equal(wrk_ident_call(NULL, ret_pid_parity, &seen), 7);
    assert_int_equal(seen, getpid()); /* ran in this process */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_valid),          cmocka_unit_test(test_parse_list),
        cmocka_unit_test(test_status_can_switch),   cmocka_unit_test(test_resolve_refusals),
        cmocka_unit_test(test_call_without_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

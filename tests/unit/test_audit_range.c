/*
 * test_audit_range.c - the from/to bounds of the audit export.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit_range.h"

static int time_ok(const char *in)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", in);
    return audit_time_ok(buf);
}

static void test_times(void **state)
{
    (void)state;
    assert_true(time_ok("2026-11-29T21:00:00Z"));
    assert_true(time_ok("2026-11-29t21:00:00z"));
    assert_true(time_ok("2026-11-29T21:00:00.123456789+08:00"));
    assert_true(time_ok("2024-02-29T23:59:59-05:30")); /* a leap day */
    assert_false(time_ok("2026-02-29T00:00:00Z"));     /* not a leap year */
    assert_false(time_ok("1900-02-29T00:00:00Z"));     /* century, not leap */
    assert_true(time_ok("2000-02-29T00:00:00Z"));      /* 400th year, leap */
    assert_false(time_ok("2026-11-29T21:00:00"));      /* no zone */
    assert_false(time_ok("2026-11-29 21:00:00Z"));     /* no T */
    assert_false(time_ok("2026-11-29T24:00:00Z"));
    assert_false(time_ok("2026-11-29T21:60:00Z"));
    assert_false(time_ok("2026-11-29T21:00:60Z")); /* no leap seconds */
    assert_false(time_ok("2026-11-31T00:00:00Z"));
    assert_false(time_ok("2026-11-29T21:00:00.Z"));
    assert_false(time_ok("2026-11-29T21:00:00.1234567890Z"));
    assert_false(time_ok("2026-11-29T21:00:00+15:00"));
    assert_false(time_ok("2026-11-29T21:00:00+08:00x"));
    assert_false(time_ok("2026-11-29T21:00:00Z; DROP TABLE jobs"));
    assert_false(time_ok(""));
}

static void test_plus_from_a_query_string(void **state)
{
    (void)state;
    char s[] = "2026-11-29T21:00:00 08:00"; /* "+" decoded as a space */
    assert_true(audit_time_ok(s));
    assert_string_equal(s, "2026-11-29T21:00:00+08:00");
}

static void test_ids(void **state)
{
    (void)state;
    assert_true(audit_id_ok("1"));
    assert_true(audit_id_ok("123456789012345678"));
    assert_false(audit_id_ok("1234567890123456789"));
    assert_false(audit_id_ok(""));
    assert_false(audit_id_ok("-1"));
    assert_false(audit_id_ok("1e3"));
    assert_false(audit_id_ok(" 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_plus_from_a_query_string),
        cmocka_unit_test(test_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

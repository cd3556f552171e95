/*
 * test_notify.c - the NOTIFY payload of cross-replica wake-ups: what
 * notify_format() writes notify_parse() reads back; too many keys become
 * "0"; malformed payloads (they come from the database) are refused whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "notify.h"

static struct notify_msg msg; /* 32 KiB: off the stack */

static void test_round_trip(void **state)
{
    const int64_t keys[] = {12, -7, INT64_MAX, INT64_MIN};
    char buf[NOTIFY_PAYLOAD_MAX];
    (void)state;

    assert_int_equal(notify_format("r-A_9", keys, 4, 1, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "r-A_9:s,12,-7,9223372036854775807,-9223372036854775808");
    assert_int_equal(notify_parse(buf, &msg), RC_OK);
    assert_string_equal(msg.sender, "r-A_9");
    assert_int_equal(msg.wake_scheduler, 1);
    assert_int_equal(msg.nkeys, 4);
    assert_memory_equal(msg.keys, keys, sizeof(keys));

    assert_int_equal(notify_format("x", keys, 1, 0, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "x:12");
    assert_int_equal(notify_parse(buf, &msg), RC_OK);
    assert_int_equal(msg.wake_scheduler, 0);
    assert_int_equal(msg.nkeys, 1);

    assert_int_equal(notify_format("x", NULL, 0, 1, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "x:s");
    assert_int_equal(notify_parse(buf, &msg), RC_OK);
    assert_int_equal(msg.wake_scheduler, 1);
    assert_int_equal(msg.nkeys, 0);
}

static void test_overflow_wakes_everyone(void **state)
{
    size_t n = 3000;
    int64_t *keys = calloc(n, sizeof(*keys));
    char buf[NOTIFY_PAYLOAD_MAX], small[16];
    const int64_t some[] = {5, 0, 6};
    (void)state;

    assert_non_null(keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = 1000000 + (int64_t)i;
    assert_int_equal(notify_format("x", keys, n, 1, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "x:s,0");
    assert_int_equal(notify_format("x", keys, n, 0, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "x:0");
    /* The caller's buffer limits too. */
    assert_int_equal(notify_format("x", keys, 2, 0, small, sizeof(small)), RC_OK);
    assert_string_equal(small, "x:0");
    /* A key 0 is everyone already. */
    assert_int_equal(notify_format("x", some, 3, 0, buf, sizeof(buf)), RC_OK);
    assert_string_equal(buf, "x:0");
    assert_int_equal(notify_parse("x:5,0,6", &msg), RC_OK);
    assert_int_equal(msg.nkeys, 1);
    assert_int_equal(msg.keys[0], 0);
    free(keys);
}

static void test_parse_longest(void **state)
{
    /* As many one-digit keys as the longest payload holds. */
    size_t n = (NOTIFY_PAYLOAD_MAX - 3) / 2, off = 2;
    char *p = malloc(2 + 2 * n + 1);
    (void)state;

    assert_non_null(p);
    memcpy(p, "x:", 2);
    for (size_t i = 0; i < n; i++) {
        p[off++] = (char)('1' + i % 9);
        p[off++] = ',';
    }
    p[off - 1] = '\0';
    assert_int_equal(notify_parse(p, &msg), RC_OK);
    assert_int_equal(msg.nkeys, n);
    assert_int_equal(msg.keys[n - 1], 1 + (int64_t)((n - 1) % 9));
    free(p);
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "",
        "12",
        ":12",
        "x:",
        "x:,1",
        "x:1,",
        "x:1,,2",
        "x:t",
        "x:ss",
        "x: 1",
        "x:+1",
        "x:1x",
        "x:-",
        "x:9223372036854775808",
        "x:-9223372036854775809",
        "x:123456789012345678901234",
        "a b:1",
        "0123456789abcdef:1", /* sender too long */
        "x:1;DROP",
    };
    char *huge = malloc(NOTIFY_PAYLOAD_MAX + 8);
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        msg.nkeys = 99;
        assert_int_equal(notify_parse(bad[i], &msg), RC_EINVAL);
        assert_int_equal(msg.nkeys, 0);
        assert_int_equal(msg.wake_scheduler, 0);
    }
    assert_int_equal(notify_parse(NULL, &msg), RC_EINVAL);
    assert_non_null(huge);
    memcpy(huge, "x:s", 3);
    memset(huge + 3, ',', NOTIFY_PAYLOAD_MAX + 4);
    for (size_t i = 4; i < NOTIFY_PAYLOAD_MAX + 7; i += 2)
        huge[i] = '1';
    huge[NOTIFY_PAYLOAD_MAX + 7] = '\0';
    assert_int_equal(notify_parse(huge, &msg), RC_EINVAL);
    free(huge);
}

static void test_bad_sender(void **state)
{
    char buf[64];
    const int64_t k = 1;
    (void)state;

    assert_int_equal(notify_format("", &k, 1, 0, buf, sizeof(buf)), RC_EINVAL);
    assert_string_equal(buf, "");
    assert_int_equal(notify_format("a:b", &k, 1, 0, buf, sizeof(buf)), RC_EINVAL);
    assert_int_equal(notify_format("0123456789abcdef", &k, 1, 0, buf, sizeof(buf)), RC_EINVAL);
    assert_int_equal(notify_format(NULL, &k, 1, 0, buf, sizeof(buf)), RC_EINVAL);
    /* Too small for even "x:s,0". */
    assert_int_equal(notify_format("x", &k, 1, 0, buf, 5), RC_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),    cmocka_unit_test(test_overflow_wakes_everyone),
        cmocka_unit_test(test_parse_longest), cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_bad_sender),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_common_utf8cut.c - cutting text on UTF-8 character boundaries
 * (common/utf8cut.h): every cut of two-, three- and four-byte characters,
 * ASCII and bytes that were invalid before the cut left alone, and
 * snprintf-filled buffers trimmed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "utf8cut.h"

/* "a" then é (2 bytes), 中 (3), 😀 (4) */
static const char TEXT[] = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";

static void test_cut_len_every_length(void **state)
{
    /* For each cut length, where a cut must stop: after "a" (1), after é
     * (3), after 中 (6), after 😀 (10). */
    static const size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10};
    (void)state;
    for (size_t n = 0; n <= 10; n++)
        assert_int_equal(utf8_cut_len(TEXT, n), want[n]);
}

static void test_ascii_and_invalid_bytes_left_alone(void **state)
{
    (void)state;
    assert_int_equal(utf8_cut_len("hello", 5), 5);
    assert_int_equal(utf8_cut_len("", 0), 0);
    /* A stray continuation byte or a byte that starts nothing is not a cut. */
    assert_int_equal(utf8_cut_len("ab\x80", 3), 3);
    assert_int_equal(utf8_cut_len("\x80\x80", 2), 2);
    assert_int_equal(utf8_cut_len("ab\xFF", 3), 3);
    assert_int_equal(utf8_cut_len("ab\xC0", 3), 3);
    /* A lead byte at the very end is a cut. */
    assert_int_equal(utf8_cut_len("ab\xE4", 3), 2);
    assert_int_equal(utf8_cut_len("\xF0\x9F\x98", 3), 0);
}

static void test_copy(void **state)
{
    char b[8];
    (void)state;
    /* 7 bytes fit: "a" é 中 is 6, the 😀 does not fit whole. */
    assert_int_equal(utf8_copy(b, sizeof(b), TEXT), 6);
    assert_string_equal(b, "a\xC3\xA9\xE4\xB8\xAD");
    assert_int_equal(utf8_copy(b, 3, TEXT), 1);
    assert_string_equal(b, "a");
    assert_int_equal(utf8_copy(b, 1, TEXT), 0);
    assert_string_equal(b, "");
    assert_int_equal(utf8_copy(b, 0, TEXT), 0);
    assert_int_equal(utf8_copy(b, sizeof(b), "short"), 5);
    assert_string_equal(b, "short");
}

static void test_cut_tail_after_snprintf(void **state)
{
    char b[10];
    (void)state;
    /* "rank 0: " is 8 bytes; é needs 2 and only 1 fits before the NUL. */
    snprintf(b, sizeof(b), "rank 0: %s", "\xC3\xA9t\xC3\xA9");
    assert_int_equal(strlen(b), 9);
    utf8_cut_tail(b);
    assert_string_equal(b, "rank 0: ");
    snprintf(b, sizeof(b), "ok %s", "\xC3\xA9");
    utf8_cut_tail(b);
    assert_string_equal(b, "ok \xC3\xA9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_len_every_length),
        cmocka_unit_test(test_ascii_and_invalid_bytes_left_alone),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_cut_tail_after_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

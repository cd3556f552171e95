/*
 * test_common_json_check.c - the shared refusal helpers (common/json_check.c):
 * the two ways a bad value is shown, the list of allowed names cut to its
 * buffer, and which unknown key is named. The validators' own tests
 * (test_jobspec, test_templates, test_tpl_expand, test_advisor_json) check
 * the whole messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json_check.h"

static void describe_whole_or_by_length(void **state)
{
    struct err e;
    json_t *v;

    (void)state;
    err_init(&e);
    v = json_string("zero9");
    assert_int_equal(jcheck_bad(&e, "strategy", v, "%s must be one of %s", "strategy", "a, b"),
                     RC_EINVAL);
    assert_string_equal(e.field, "strategy");
    assert_string_equal(e.message, "strategy must be one of a, b");
    assert_string_equal(e.detail, "got \"zero9\"");
    json_decref(v);

    v = json_string("with \"quote\"");
    jcheck_describe(v, &e);
    assert_string_equal(e.detail, "got a string of 12 bytes");
    json_decref(v);

    v = json_integer(-3);
    jcheck_describe(v, &e);
    assert_string_equal(e.detail, "got -3");
    json_decref(v);

    v = json_object();
    jcheck_describe(v, &e);
    assert_string_equal(e.detail, "got an object");
    json_decref(v);
    jcheck_describe(NULL, NULL);
}

static void describe_cut_at_64_printable_bytes(void **state)
{
    char long_s[100];
    struct err e;
    json_t *v;

    (void)state;
    err_init(&e);
    v = json_string("a\"b\tc");
    assert_int_equal(jcheck_bad_cut(&e, "name", v, "name must be %d", 1), RC_EINVAL);
    assert_string_equal(e.detail, "got \"a?b?c\"");
    json_decref(v);

    memset(long_s, 'x', sizeof(long_s) - 1);
    long_s[sizeof(long_s) - 1] = '\0';
    v = json_string(long_s);
    jcheck_describe_cut(v, &e);
    assert_int_equal(strlen(e.detail), strlen("got \"\"") + 64 + 3);
    assert_non_null(strstr(e.detail, "x...\""));
    json_decref(v);

    v = json_true();
    jcheck_describe_cut(v, &e);
    assert_string_equal(e.detail, "got true");
    json_decref(v);
}

static void printable_marks_the_cut_only_when_asked(void **state)
{
    char s[70], buf[80];

    (void)state;
    memset(s, 'k', sizeof(s));
    jcheck_printable(s, sizeof(s), 1, buf, sizeof(buf));
    assert_int_equal(strlen(buf), 67);
    assert_string_equal(buf + 64, "...");
    jcheck_printable(s, sizeof(s), 0, buf, sizeof(buf));
    assert_int_equal(strlen(buf), 64);
    jcheck_printable("a\0b\x80", 4, 1, buf, sizeof(buf));
    assert_string_equal(buf, "a?b?");
}

static void list_is_cut_to_its_buffer(void **state)
{
    static const char *const names[] = {"native", "torchrun", "deepspeed"};
    char buf[16];

    (void)state;
    jcheck_list(buf, sizeof(buf), names, 3);
    assert_string_equal(buf, "native, torchru");
    jcheck_list(buf, sizeof(buf), names, 1);
    assert_string_equal(buf, "native");
    jcheck_list(buf, sizeof(buf), names, 0);
    assert_string_equal(buf, "");
}

static void unknown_key_is_the_smallest(void **state)
{
    static const char *const known[] = {"gpus", "gpus_per_node"};
    json_t *o = json_pack("{s:i,s:i,s:i,s:i}", "gpus", 1, "zz", 2, "gpu", 3, "gpus_x", 4);
    const char *k;
    size_t len = 99;

    (void)state;
    assert_non_null(o);
    k = jcheck_unknown_key(o, known, 2, &len);
    assert_non_null(k);
    assert_int_equal(len, 3);
    assert_memory_equal(k, "gpu", 3);
    assert_true(jcheck_key_cmp("ab", 2, "abc", 3) < 0);
    assert_true(jcheck_key_cmp("b", 1, "abc", 3) > 0);
    assert_int_equal(jcheck_key_cmp("ab", 2, "ab", 2), 0);
    json_object_del(o, "zz");
    json_object_del(o, "gpu");
    json_object_del(o, "gpus_x");
    assert_null(jcheck_unknown_key(o, known, 2, &len));
    assert_int_equal(len, 0);
    json_decref(o);
}

static void control_characters(void **state)
{
    (void)state;
    assert_false(jcheck_has_ctrl("plain \xc3\xa9", 8));
    assert_true(jcheck_has_ctrl("a\x7f", 2));
    assert_true(jcheck_has_ctrl("a\xc2\x85", 3));
    assert_true(jcheck_has_ctrl("a\nb", 3));
}

static void names_and_integer_ranges(void **state)
{
    static const char *const names[] = {"low", "normal", "high"};
    json_t *v = json_string("high"), *n = json_integer(70), *s = json_string("\x01");
    json_int_t out = 0;
    struct err e;

    (void)state;
    err_init(&e);
    assert_int_equal(jcheck_name_index(v, names, 3), 2);
    assert_int_equal(jcheck_name_index(n, names, 3), -1);
    assert_int_equal(jcheck_int(n, "gpus", "gpus", 1, 64, 0, &out, &e), RC_EINVAL);
    assert_string_equal(e.message, "gpus must be an integer from 1 to 64");
    assert_string_equal(e.detail, "got 70");
    assert_int_equal(jcheck_int(s, "gpus", "gpus", 1, 64, 1, &out, &e), RC_EINVAL);
    assert_string_equal(e.detail, "got \"?\"");
    assert_int_equal(jcheck_int(s, "gpus", "gpus", 1, 64, 0, &out, &e), RC_EINVAL);
    assert_string_equal(e.detail, "got a string of 1 bytes");
    assert_int_equal(jcheck_int(n, "gpus", "gpus", 1, 100, 0, &out, &e), RC_OK);
    assert_int_equal(out, 70);
    json_decref(v);
    json_decref(n);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(describe_whole_or_by_length),
        cmocka_unit_test(describe_cut_at_64_printable_bytes),
        cmocka_unit_test(printable_marks_the_cut_only_when_asked),
        cmocka_unit_test(list_is_cut_to_its_buffer),
        cmocka_unit_test(unknown_key_is_the_smallest),
        cmocka_unit_test(control_characters),
        cmocka_unit_test(names_and_integer_ranges),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

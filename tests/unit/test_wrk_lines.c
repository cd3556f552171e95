/*
 * test_wrk_lines.c - the TRAINYARD_METRIC / TRAINYARD_CHECKPOINT line parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lines.h"

static void parse(const char *s, struct wrk_line *l)
{
    assert_int_equal(wrk_line_parse(s, strlen(s), l), RC_OK);
}

static void test_plain(void **state)
{
    struct wrk_line l;
    (void)state;
    parse("hello world\n", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    parse("TRAINYARD_METRIC", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    parse("  TRAINYARD_METRIC {\"step\":1,\"loss\":2}", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    assert_int_equal(wrk_line_parse(NULL, 0, &l), RC_OK);
    assert_int_equal(l.kind, WRK_LINE_LOG);
}

static void test_metric(void **state)
{
    struct wrk_line l;
    (void)state;
    parse("TRAINYARD_METRIC {\"step\":120,\"loss\":0.41,\"samples_per_sec\":5300}\r\n", &l);
    assert_int_equal(l.kind, WRK_LINE_METRIC);
    assert_int_equal(l.step, 120);
    assert_int_equal(json_object_size(l.values), 2);
    assert_true(json_real_value(json_object_get(l.values, "loss")) == 0.41);
    assert_int_equal(json_integer_value(json_object_get(l.values, "samples_per_sec")), 5300);
    wrk_line_cleanup(&l);

    /* non-numeric members are ignored, a real step with an integral value is fine */
    parse("TRAINYARD_METRIC {\"step\":3.0,\"loss\":1,\"tag\":\"x\",\"ok\":true}", &l);
    assert_int_equal(l.kind, WRK_LINE_METRIC);
    assert_int_equal(l.step, 3);
    assert_int_equal(json_object_size(l.values), 1);
    wrk_line_cleanup(&l);
}

static void test_metric_bad(void **state)
{
    static const char *bad[] = {
        "TRAINYARD_METRIC {\"loss\":1}",                    /* no step */
        "TRAINYARD_METRIC {\"step\":-1,\"loss\":1}",        /* negative */
        "TRAINYARD_METRIC {\"step\":1.5,\"loss\":1}",       /* fraction */
        "TRAINYARD_METRIC {\"step\":\"1\",\"loss\":1}",     /* string */
        "TRAINYARD_METRIC {\"step\":1}",                    /* no value */
        "TRAINYARD_METRIC {\"step\":1,\"loss\":1",          /* truncated */
        "TRAINYARD_METRIC [1,2]",                           /* not an object */
        "TRAINYARD_METRIC {\"step\":1,\"step\":2,\"x\":1}", /* duplicate key */
        "TRAINYARD_METRIC {\"step\":1e300,\"loss\":1}",     /* too large */
        "TRAINYARD_METRIC {\"step\":1,\"loss\":1e999}",     /* inf */
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct wrk_line l;
        parse(bad[i], &l);
        assert_int_equal(l.kind, WRK_LINE_LOG);
        assert_null(l.values);
    }
}

static void test_checkpoint(void **state)
{
    struct wrk_line l;
    const char nul[] = "TRAINYARD_CHECKPOINT {\"step\":1,\"path\":\"/a\"}\0junk";
    (void)state;
    parse("TRAINYARD_CHECKPOINT {\"step\":120,\"path\":\"/srv/ckpt/7/step-120.pt\"}\n", &l);
    assert_int_equal(l.kind, WRK_LINE_CHECKPOINT);
    assert_int_equal(l.step, 120);
    assert_string_equal(l.path, "/srv/ckpt/7/step-120.pt");
    wrk_line_cleanup(&l);
    parse("TRAINYARD_CHECKPOINT {\"step\":1,\"path\":\"\"}", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    parse("TRAINYARD_CHECKPOINT {\"step\":1,\"path\":\"a\\u0000b\"}", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    parse("TRAINYARD_CHECKPOINT {\"step\":1,\"path\":7}", &l);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    /* bytes after a NUL make the JSON invalid */
    assert_int_equal(wrk_line_parse(nul, sizeof(nul) - 1, &l), RC_OK);
    assert_int_equal(l.kind, WRK_LINE_LOG);
    wrk_line_cleanup(&l);
    wrk_line_cleanup(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_metric),
        cmocka_unit_test(test_metric_bad),
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

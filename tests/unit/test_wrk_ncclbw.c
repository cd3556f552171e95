/*
 * test_wrk_ncclbw.c - trainyard-nccl-probe's arithmetic and JSON, without
 * CUDA: nccl-tests' bus-bandwidth factor 2(n-1)/n, algbw in GB/s (1e9), the
 * 8 B..1 GiB doubling sweep, the JSON the worker uploads, and the check
 * that keeps a bad probe file out of register.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ncclbw.h"

static void assert_near(double a, double b)
{
    if (fabs(a - b) > 1e-9 * (fabs(b) + 1)) {
        print_error("%.12g != %.12g\n", a, b);
        fail();
    }
}

static void test_formula(void **state)
{
    struct wrk_ncclbw_point p;

    (void)state;
    assert_near(wrk_ncclbw_bus_factor(1), 0.0);
    assert_near(wrk_ncclbw_bus_factor(2), 1.0);
    assert_near(wrk_ncclbw_bus_factor(4), 1.5);
    assert_near(wrk_ncclbw_bus_factor(8), 1.75);
    /* 1 GiB in 10 ms: 107.374 GB/s algbw, 187.9 GB/s busbw on 8 ranks */
    wrk_ncclbw_point_set(&p, 1ULL << 30, 10000.0, 8);
    assert_near(p.algbw_gbs, 1073741824.0 / 0.01 / 1e9);
    assert_near(p.busbw_gbs, p.algbw_gbs * 1.75);
    assert_near(wrk_ncclbw_algbw_gbs(8, 0), 0);
}

static void test_sizes(void **state)
{
    uint64_t s[WRK_NCCLBW_MAX_POINTS];
    size_t n;

    (void)state;
    n = wrk_ncclbw_sizes(WRK_NCCLBW_MIN_BYTES, WRK_NCCLBW_MAX_BYTES, s, WRK_NCCLBW_MAX_POINTS);
    assert_int_equal(n, 28); /* 2^3 .. 2^30 */
    assert_int_equal(s[0], 8);
    assert_int_equal(s[1], 16);
    assert_int_equal(s[27], 1ULL << 30);
    assert_int_equal(wrk_ncclbw_sizes(8, 20, s, 64), 2); /* 8, 16: 32 is past the end */
    assert_int_equal(wrk_ncclbw_sizes(0, 20, s, 64), 0);
    assert_int_equal(wrk_ncclbw_sizes(32, 16, s, 64), 0);
    assert_int_equal(wrk_ncclbw_sizes(8, 1ULL << 30, s, 4), 4);
}

static void fill_run(struct wrk_ncclbw_run *r)
{
    memset(r, 0, sizeof(*r));
    r->gpus = 4;
    r->nccl_version = 22105;
    r->warmup = 5;
    r->iters = 20;
    r->nseries = 2;
    for (int s = 0; s < 2; s++) {
        struct wrk_ncclbw_series *x = &r->series[s];
        x->n = 3;
        for (int i = 0; i < 3; i++)
            wrk_ncclbw_point_set(&x->pts[i], 8ULL << (10 * i), 10.0 * (i + 1) / (s + 1), 4);
    }
    snprintf(r->series[1].env_name, sizeof(r->series[1].env_name), "NCCL_ALGO");
    snprintf(r->series[1].env_value, sizeof(r->series[1].env_value), "Tree");
}

static void test_json(void **state)
{
    static struct wrk_ncclbw_run r;
    json_t *j, *p0, *v0;
    char why[160];

    (void)state;
    fill_run(&r);
    j = wrk_ncclbw_json(&r);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "op")), "all_reduce");
    assert_int_equal(json_integer_value(json_object_get(j, "gpus")), 4);
    assert_int_equal(json_array_size(json_object_get(j, "results")), 3);
    p0 = json_array_get(json_object_get(j, "results"), 2);
    assert_int_equal(json_integer_value(json_object_get(p0, "bytes")), 8 << 20);
    /* 8 MiB in 30 us: 279.620 GB/s algbw, x1.5 for 4 ranks; three decimals */
    assert_near(json_real_value(json_object_get(p0, "algbw_gbs")), 279.62);
    assert_near(json_real_value(json_object_get(p0, "busbw_gbs")), 419.43);
    v0 = json_array_get(json_object_get(j, "variants"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v0, "env"), "NCCL_ALGO")),
                        "Tree");
    assert_true(wrk_ncclbw_check(j, why, sizeof(why)));
    json_decref(j);
}

static void test_check_refuses(void **state)
{
    static struct wrk_ncclbw_run r;
    static const char *const bad[] = {
        "{\"version\":2}",
        "{\"colour\":1}",
        "{\"version\":1,\"op\":\"all_gather\"}",
    };
    char why[160];
    json_t *j;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_false(wrk_ncclbw_check(j, why, sizeof(why)));
        json_decref(j);
    }
    fill_run(&r);
    j = wrk_ncclbw_json(&r);
    json_object_set_new(json_object_get(json_array_get(json_object_get(j, "variants"), 0), "env"),
                        "NCCL_DEBUG", json_string("INFO"));
    assert_false(wrk_ncclbw_check(j, why, sizeof(why)));
    assert_non_null(strstr(why, "variants[0]"));
    json_decref(j);
    j = wrk_ncclbw_json(&r);
    json_object_set_new(json_array_get(json_object_get(j, "results"), 1), "busbw_gbs",
                        json_real(-1));
    assert_false(wrk_ncclbw_check(j, why, sizeof(why)));
    assert_non_null(strstr(why, "results[1]"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formula),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_check_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

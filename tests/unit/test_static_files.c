/*
 * test_static_files.c - Content-Types, validators and the 304 decision of
 * the dashboard's static files, and the fixed /vendor/ paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "static_files.h"

static void test_types(void **state)
{
    (void)state;
    /* Browsers run a module script only with a JavaScript MIME type. */
    assert_string_equal(static_content_type("/w/js/app.mjs"), "text/javascript; charset=utf-8");
    assert_string_equal(static_content_type("/w/js/app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(static_content_type("/w/i18n/en.json"), "application/json");
    assert_string_equal(static_content_type("/w/x.js.map"), "application/json");
    assert_string_equal(static_content_type("/w/css/app.css"), "text/css; charset=utf-8");
    assert_string_equal(static_content_type("/w/logo.svg"), "image/svg+xml");
    assert_string_equal(static_content_type("/w/f.woff2"), "font/woff2");
    assert_string_equal(static_content_type("/w/index.html"), "text/html; charset=utf-8");
    assert_string_equal(static_content_type("/w/x.mjsx"), "application/octet-stream");
    assert_string_equal(static_content_type("/w/README"), "application/octet-stream");
    /* A dot in a folder name is no extension. */
    assert_string_equal(static_content_type("/w/v1.js/README"), "application/octet-stream");
}

static void test_etag(void **state)
{
    char a[STATIC_ETAG_SIZE], b[STATIC_ETAG_SIZE], c[STATIC_ETAG_SIZE];

    (void)state;
    static_etag(100, 1764583200, 5, a, sizeof(a));
    static_etag(101, 1764583200, 5, b, sizeof(b));
    static_etag(100, 1764583200, 6, c, sizeof(c));
    assert_true(a[0] == '"' && a[strlen(a) - 1] == '"');
    assert_string_not_equal(a, b); /* the size changed */
    assert_string_not_equal(a, c); /* rewritten within the same second */
    /* The largest values still fit. */
    static_etag(UINT64_MAX, INT64_MAX / 1000000000, 999999999, a, sizeof(a));
    assert_true(strlen(a) < STATIC_ETAG_SIZE - 1);
}

static void test_date(void **state)
{
    char d[STATIC_DATE_SIZE];

    (void)state;
    static_http_date(1764583200, d, sizeof(d));
    assert_string_equal(d, "Mon, 01 Dec 2025 10:00:00 GMT");
}

static void test_not_modified(void **state)
{
    const char *tag = "\"64-1\"";
    const time_t mt = 1764583200; /* Mon, 01 Dec 2025 10:00:00 GMT */

    (void)state;
    assert_false(static_not_modified(NULL, NULL, tag, mt));
    assert_true(static_not_modified("\"64-1\"", NULL, tag, mt));
    assert_true(static_not_modified("W/\"64-1\"", NULL, tag, mt)); /* weak comparison */
    assert_true(static_not_modified("\"x\", \"64-1\"", NULL, tag, mt));
    assert_true(static_not_modified(" \"x\" ,\"64-1\" ", NULL, tag, mt));
    assert_true(static_not_modified("*", NULL, tag, mt));
    assert_false(static_not_modified("\"64-2\"", NULL, tag, mt));
    assert_false(static_not_modified("\"64-1", NULL, tag, mt));
    assert_false(static_not_modified("", NULL, tag, mt));
    /* If-None-Match wins: a date that would match is not looked at. */
    assert_false(static_not_modified("\"old\"", "Mon, 01 Dec 2025 10:00:00 GMT", tag, mt));
    assert_true(static_not_modified(NULL, "Mon, 01 Dec 2025 10:00:00 GMT", tag, mt));
    assert_true(static_not_modified(NULL, "Tue, 02 Dec 2025 10:00:00 GMT", tag, mt));
    assert_false(static_not_modified(NULL, "Mon, 01 Dec 2025 09:59:59 GMT", tag, mt));
    assert_false(static_not_modified(NULL, "yesterday", tag, mt));
    assert_false(static_not_modified(NULL, "Mon, 01 Dec 2025 10:00:00 GMT junk", tag, mt));
}

static void test_vendor(void **state)
{
    (void)state;
    assert_string_equal(static_vendor_file("/vendor/echarts/echarts.min.js"),
                        "vendor/node_modules/echarts/dist/echarts.min.js");
    assert_string_equal(static_vendor_file("/vendor/echarts/i18n/langZH.mjs"),
                        "vendor/node_modules/echarts/lib/i18n/langZH.js");
    assert_null(static_vendor_file("/vendor/echarts/package.json"));
    assert_null(static_vendor_file("/vendor/node_modules/echarts/dist/echarts.min.js"));
    assert_null(static_vendor_file("/js/app.js"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),  cmocka_unit_test(test_etag),
        cmocka_unit_test(test_date),   cmocka_unit_test(test_not_modified),
        cmocka_unit_test(test_vendor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

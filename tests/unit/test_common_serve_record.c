/*
 * test_common_serve_record.c - the canonical text of a gateway request
 * record (common/serve_record.h): a fixed record hashes to the value an
 * independent implementation (Python's hashlib over the text docs/serving.md
 * describes) gives, missing ids are empty, a field with a newline is
 * refused, and a buffer too small is an error, never a cut text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "serve_record.h"

static struct serve_record sample(void)
{
    struct serve_record r = {
        .request_id = "req-1",
        .ts_text = "2026-12-02T08:00:00.000001Z",
        .key_id = 7,
        .deployment_id = 3,
        .version_id = 0, /* missing: a request refused before a version was picked */
        .replica_job_id = 42,
        .manifest_sha256 = "ab",
        .route = "/v1/chat/completions",
        .status = 200,
        .error_code = NULL,
        .prompt_sha256 = "cd",
        .answer_sha256 = "ef",
        .prompt_tokens = 5,
        .completion_tokens = 9,
        .latency_us = 1234,
        .ttft_us = 0,
        .client_addr = "127.0.0.1",
    };
    return r;
}

static void test_known_hash(void **state)
{
    (void)state;
    struct serve_record r = sample();
    char hex[65];
    assert_int_equal(serve_record_sha256(&r, hex), RC_OK);
    /* hashlib.sha256 of the text in docs/serving.md's layout for this record */
    assert_string_equal(hex, "c9ea90998bd854fe9b88a86dcc67beb170732027600ec334abe6b2a668263134");
}

static void test_text_layout(void **state)
{
    (void)state;
    struct serve_record r = sample();
    char text[2048];
    size_t len = 0;
    assert_int_equal(serve_record_canon(&r, text, sizeof text, &len), RC_OK);
    assert_int_equal(len, strlen(text));
    assert_true(strncmp(text, SERVE_RECORD_VERSION "\nrequest_id=req-1\n",
                        strlen(SERVE_RECORD_VERSION "\nrequest_id=req-1\n")) == 0);
    assert_non_null(strstr(text, "\nversion_id=\n"));
    assert_non_null(strstr(text, "\nerror_code=\n"));
    assert_non_null(strstr(text, "\nkey_id=7\n"));
    assert_true(text[len - 1] == '\n');
}

static void test_every_field_changes_the_hash(void **state)
{
    (void)state;
    struct serve_record base = sample();
    char want[65], got[65];
    assert_int_equal(serve_record_sha256(&base, want), RC_OK);
    struct serve_record r = base;
    r.status = 500;
    assert_int_equal(serve_record_sha256(&r, got), RC_OK);
    assert_string_not_equal(got, want);
    r = base;
    r.completion_tokens = 10;
    assert_int_equal(serve_record_sha256(&r, got), RC_OK);
    assert_string_not_equal(got, want);
    r = base;
    r.answer_sha256 = "ee";
    assert_int_equal(serve_record_sha256(&r, got), RC_OK);
    assert_string_not_equal(got, want);
}

static void test_newline_refused(void **state)
{
    (void)state;
    struct serve_record r = sample();
    char hex[65];
    /* One record must never read as another: "x\nstatus=200" would add a line. */
    r.error_code = "x\nstatus=200";
    assert_int_equal(serve_record_sha256(&r, hex), RC_EINVAL);
    r = sample();
    r.client_addr = "a\rb";
    assert_int_equal(serve_record_sha256(&r, hex), RC_EINVAL);
}

static void test_small_buffer(void **state)
{
    (void)state;
    struct serve_record r = sample();
    char text[64];
    assert_int_equal(serve_record_canon(&r, text, sizeof text, NULL), RC_ETOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_hash),
        cmocka_unit_test(test_text_layout),
        cmocka_unit_test(test_every_field_changes_the_hash),
        cmocka_unit_test(test_newline_refused),
        cmocka_unit_test(test_small_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_cli_serve_proof.c - the request record object of an export line
 * (cli/serve_proof.h): a record as the server exports it parses into the
 * fields of its canonical text, hashes (common/serve_record.h) to its
 * record_sha256 and proves its place (common/merkle.h); every member the
 * object must have, with the wrong type or form, is refused naming that
 * member; an unknown member, a duplicate, an index past the count and a
 * proof hash that is not 64 lower-case hex digits are refused.
 *
 * The record is the seed corpus/fuzz_cli_serve_proof/valid_1_of_3.json,
 * made by tests/integration/test_serve_seal.py's independent Python (index
 * 1 of a batch of 3; the root below is its batch's, from the same code).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "serve_proof.h"

#ifndef TY_SOURCE_DIR
#define TY_SOURCE_DIR "."
#endif

/* The Merkle root of the seed's batch (records req-11, req-12, req-15). */
#define SEED_ROOT "3a1bb8fe1f8dd97f9c834c4cc807f91c06c5895a797101df7d6a89ba9ceda0aa"

static char *seed(void)
{
    char path[1024];
    FILE *f;
    char *buf = calloc(1, 8192);
    size_t n;

    snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_cli_serve_proof/valid_1_of_3.json",
             TY_SOURCE_DIR);
    assert_non_null(buf);
    assert_non_null(f = fopen(path, "r"));
    n = fread(buf, 1, 8191, f);
    fclose(f);
    assert_true(n > 0);
    return buf;
}

/* The seed with member k set to v (a JSON text; NULL removes it). */
static char *with(const char *k, const char *v)
{
    char *text = seed(), *out;
    json_t *o = json_loads(text, 0, NULL);

    assert_non_null(o);
    if (v == NULL)
        json_object_del(o, k);
    else
        json_object_set_new(o, k, json_loads(v, JSON_DECODE_ANY, NULL));
    out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    free(text);
    return out;
}

static void test_valid(void **state)
{
    (void)state;
    char *text = seed(), hex[CRYPTO_SHA256_HEX_LEN + 1];
    struct serve_proof p;
    struct err e;
    uint8_t value[MERKLE_HASH_LEN], root[MERKLE_HASH_LEN];

    err_init(&e);
    assert_int_equal(serve_proof_parse(text, strlen(text), &p, &e), RC_OK);
    assert_int_equal(p.event, 40);
    assert_int_equal(p.batch, 3);
    assert_int_equal(p.index, 1);
    assert_int_equal(p.count, 3);
    assert_int_equal(p.id, 12);
    assert_int_equal(p.path_len, 2);
    assert_string_equal(p.rec.request_id, "req-12");
    assert_int_equal(p.rec.key_id, 3);
    assert_int_equal(p.rec.version_id, 0); /* null: missing */
    assert_int_equal(p.rec.status, 200);
    assert_int_equal(p.rec.completion_tokens, 12);
    assert_int_equal(serve_record_sha256(&p.rec, hex), RC_OK);
    assert_string_equal(hex, p.record_sha256);
    assert_int_equal(merkle_from_hex(hex, value), 0);
    assert_int_equal(merkle_from_hex(SEED_ROOT, root), 0);
    assert_true(
        merkle_verify(value, 1, 3, (const uint8_t(*)[MERKLE_HASH_LEN])p.path, p.path_len, root));
    assert_false(
        merkle_verify(value, 0, 3, (const uint8_t(*)[MERKLE_HASH_LEN])p.path, p.path_len, root));
    serve_proof_cleanup(&p);
    free(text);
}

static void refused(const char *k, const char *v, const char *field)
{
    char *text = with(k, v);
    struct serve_proof p;
    struct err e;

    err_init(&e);
    if (serve_proof_parse(text, strlen(text), &p, &e) != RC_EINVAL)
        fail_msg("%s = %s was accepted", k, v ? v : "(absent)");
    assert_true(e.message[0] != '\0');
    if (strcmp(e.field, field) != 0)
        fail_msg("%s = %s: field \"%s\", not \"%s\" (%s)", k, v ? v : "(absent)", e.field, field,
                 e.message);
    serve_proof_cleanup(&p);
    free(text);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const required[] = {
        "event",      "batch",          "index",           "count",         "proof",
        "id",         "request_id",     "ts_text",         "key_id",        "deployment_id",
        "version_id", "replica_job_id", "manifest_sha256", "route",         "status",
        "error_code", "prompt_sha256",  "answer_sha256",   "prompt_tokens", "completion_tokens",
        "latency_us", "ttft_us",        "client_addr",     "record_sha256", "prompt_text",
        "answer_text"};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        refused(required[i], NULL, required[i]);
        refused(required[i], "{}", required[i]);
    }
    refused("event", "\"012\"", "event");
    refused("event", "12", "event");
    refused("key_id", "\"0\"", "key_id");
    refused("index", "3", "index");
    refused("index", "-1", "index");
    refused("count", "0", "count");
    refused("status", "\"200\"", "status");
    refused("prompt_tokens", "1.5", "prompt_tokens");
    refused("record_sha256", "\"AC71617E08655D4C8B5E7175AFC3E304378A70E387E2E1003D3AFE5D7B291896\"",
            "record_sha256");
    refused("proof", "[\"00\"]", "proof");
    refused("proof", "\"abc\"", "proof");
    refused("texts_omitted", "false", "texts_omitted");
    refused("surprise", "1", "");
}

static void test_not_an_object(void **state)
{
    (void)state;
    static const char *const texts[] = {"", "[]", "null", "{\"event\":\"1\",\"event\":\"2\"}",
                                        "{\"event\":"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct serve_proof p;
        struct err e;
        err_init(&e);
        assert_int_equal(serve_proof_parse(texts[i], strlen(texts[i]), &p, &e), RC_EINVAL);
        assert_true(e.message[0] != '\0');
        serve_proof_cleanup(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_not_an_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

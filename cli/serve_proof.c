/*
 * serve_proof.c - a gateway request record line's object (see
 * serve_proof.h).
 */
#include "serve_proof.h"

#include <string.h>

#include "export_reader.h"

/* The members of a record object; each is checked once, any other refused. */
static const char *const members[] = {
    "event",       "batch",          "index",           "count",         "proof",
    "id",          "request_id",     "ts_text",         "key_id",        "deployment_id",
    "version_id",  "replica_job_id", "manifest_sha256", "route",         "status",
    "error_code",  "prompt_sha256",  "answer_sha256",   "prompt_tokens", "completion_tokens",
    "latency_us",  "ttft_us",        "client_addr",     "record_sha256", "prompt_text",
    "answer_text", "texts_omitted",
};

static int known(const char *k)
{
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
        if (strcmp(k, members[i]) == 0)
            return 1;
    return 0;
}

/* A decimal id string: *out, 0 for null when null_ok. */
static enum rc id_member(const json_t *o, const char *k, int null_ok, int64_t *out, struct err *e)
{
    const json_t *v = json_object_get(o, k);
    const char *s = json_string_value(v);

    *out = 0;
    if (null_ok && json_is_null(v))
        return RC_OK;
    if (s == NULL || export_parse_id(s, json_string_length(v), 0, out) != 0)
        return err_set(e, RC_EINVAL, k, "%s is not an id (a decimal string%s)", k,
                       null_ok ? " or null" : "");
    return RC_OK;
}

static enum rc int_member(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out,
                          struct err *e)
{
    const json_t *v = json_object_get(o, k);

    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return err_set(e, RC_EINVAL, k, "%s is not an integer in %lld..%lld", k, (long long)lo,
                       (long long)hi);
    *out = (int64_t)json_integer_value(v);
    return RC_OK;
}

/* A string without NUL (the canonical text cannot hold one). */
static enum rc str_member(const json_t *o, const char *k, const char **out, struct err *e)
{
    const json_t *v = json_object_get(o, k);

    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return err_set(e, RC_EINVAL, k, "%s is not a string", k);
    *out = json_string_value(v);
    return RC_OK;
}

static enum rc proof_member(const json_t *o, struct serve_proof *p, struct err *e)
{
    const json_t *a = json_object_get(o, "proof");
    size_t i;
    const json_t *h;

    if (!json_is_array(a) || json_array_size(a) > MERKLE_MAX_PATH)
        return err_set(e, RC_EINVAL, "proof", "proof is not an array of at most %d hashes",
                       MERKLE_MAX_PATH);
    json_array_foreach(a, i, h)
    {
        if (merkle_from_hex(json_string_value(h), p->path[i]) != 0)
            return err_set(e, RC_EINVAL, "proof", "proof hash %zu is not 64 lower-case hex digits",
                           i + 1);
    }
    p->path_len = json_array_size(a);
    return RC_OK;
}

static enum rc check(const json_t *o, struct serve_proof *p, struct err *e)
{
    struct serve_record *r = &p->rec;
    int64_t status = 0;
    const char *k;
    const json_t *v;
    enum rc rc;

    json_object_foreach((json_t *)o, k, v)
    {
        (void)v;
        if (!known(k))
            return err_set(e, RC_EINVAL, "", "the record has an unknown member \"%.40s\"", k);
    }
    if ((rc = id_member(o, "event", 0, &p->event, e)) != RC_OK ||
        (rc = id_member(o, "batch", 0, &p->batch, e)) != RC_OK ||
        (rc = int_member(o, "count", 1, SERVE_PROOF_MAX_COUNT, &p->count, e)) != RC_OK ||
        (rc = int_member(o, "index", 0, p->count - 1, &p->index, e)) != RC_OK ||
        (rc = proof_member(o, p, e)) != RC_OK || (rc = id_member(o, "id", 0, &p->id, e)) != RC_OK)
        return rc;
    if ((rc = str_member(o, "request_id", &r->request_id, e)) != RC_OK ||
        (rc = str_member(o, "ts_text", &r->ts_text, e)) != RC_OK ||
        (rc = id_member(o, "key_id", 1, &r->key_id, e)) != RC_OK ||
        (rc = id_member(o, "deployment_id", 1, &r->deployment_id, e)) != RC_OK ||
        (rc = id_member(o, "version_id", 1, &r->version_id, e)) != RC_OK ||
        (rc = id_member(o, "replica_job_id", 1, &r->replica_job_id, e)) != RC_OK ||
        (rc = str_member(o, "manifest_sha256", &r->manifest_sha256, e)) != RC_OK ||
        (rc = str_member(o, "route", &r->route, e)) != RC_OK ||
        (rc = int_member(o, "status", 0, 999, &status, e)) != RC_OK ||
        (rc = str_member(o, "error_code", &r->error_code, e)) != RC_OK ||
        (rc = str_member(o, "prompt_sha256", &r->prompt_sha256, e)) != RC_OK ||
        (rc = str_member(o, "answer_sha256", &r->answer_sha256, e)) != RC_OK ||
        (rc = int_member(o, "prompt_tokens", INT64_MIN, INT64_MAX, &r->prompt_tokens, e)) !=
            RC_OK ||
        (rc = int_member(o, "completion_tokens", INT64_MIN, INT64_MAX, &r->completion_tokens, e)) !=
            RC_OK ||
        (rc = int_member(o, "latency_us", INT64_MIN, INT64_MAX, &r->latency_us, e)) != RC_OK ||
        (rc = int_member(o, "ttft_us", INT64_MIN, INT64_MAX, &r->ttft_us, e)) != RC_OK ||
        (rc = str_member(o, "client_addr", &r->client_addr, e)) != RC_OK ||
        (rc = str_member(o, "record_sha256", &p->record_sha256, e)) != RC_OK)
        return rc;
    r->status = (int)status;
    if (!export_is_hex64(p->record_sha256, strlen(p->record_sha256)))
        return err_set(e, RC_EINVAL, "record_sha256",
                       "record_sha256 is not 64 lower-case hex digits");
    for (int t = 0; t < 2; t++) {
        const char *name = t ? "answer_text" : "prompt_text";
        v = json_object_get(o, name);
        if (!json_is_string(v) && !json_is_null(v))
            return err_set(e, RC_EINVAL, name, "%s is not a string or null", name);
    }
    v = json_object_get(o, "texts_omitted");
    if (v != NULL && !json_is_true(v))
        return err_set(e, RC_EINVAL, "texts_omitted", "texts_omitted is not true");
    return RC_OK;
}

enum rc serve_proof_parse(const char *json, size_t len, struct serve_proof *out, struct err *e)
{
    json_error_t jerr;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    out->doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (out->doc == NULL)
        return err_set(e, RC_EINVAL, "", "the record is not JSON: %s", jerr.text);
    if (!json_is_object(out->doc))
        return err_set(e, RC_EINVAL, "", "the record is not a JSON object");
    rc = check(out->doc, out, e);
    if (rc != RC_OK) {
        /* Nothing borrowed from a record that failed is used. */
        memset(&out->rec, 0, sizeof(out->rec));
        out->record_sha256 = NULL;
    }
    return rc;
}

void serve_proof_cleanup(struct serve_proof *p)
{
    json_decref(p->doc);
    p->doc = NULL;
}

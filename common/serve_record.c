/*
 * serve_record.c - canonical text of a gateway request record; see
 * serve_record.h.
 */
#include "serve_record.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static int has_newline(const char *s)
{
    return s != NULL && strpbrk(s, "\r\n") != NULL;
}

/* An id as decimal, or "" when missing (0 or less). buf: 24 bytes. */
static const char *id_text(int64_t id, char buf[24])
{
    if (id <= 0)
        buf[0] = '\0';
    else
        snprintf(buf, 24, "%" PRId64, id);
    return buf;
}

enum rc serve_record_canon(const struct serve_record *r, char *out, size_t out_size, size_t *len)
{
    const char *strs[] = {r->request_id, r->ts_text,       r->manifest_sha256, r->route,
                          r->error_code, r->prompt_sha256, r->answer_sha256,   r->client_addr};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (has_newline(strs[i]))
            return RC_EINVAL;
    char key[24], dep[24], ver[24], job[24];
    int n =
        snprintf(out, out_size,
                 SERVE_RECORD_VERSION "\n"
                                      "request_id=%s\n"
                                      "ts_text=%s\n"
                                      "key_id=%s\n"
                                      "deployment_id=%s\n"
                                      "version_id=%s\n"
                                      "replica_job_id=%s\n"
                                      "manifest_sha256=%s\n"
                                      "route=%s\n"
                                      "status=%d\n"
                                      "error_code=%s\n"
                                      "prompt_sha256=%s\n"
                                      "answer_sha256=%s\n"
                                      "prompt_tokens=%" PRId64 "\n"
                                      "completion_tokens=%" PRId64 "\n"
                                      "latency_us=%" PRId64 "\n"
                                      "ttft_us=%" PRId64 "\n"
                                      "client_addr=%s\n",
                 str_or_empty(r->request_id), str_or_empty(r->ts_text), id_text(r->key_id, key),
                 id_text(r->deployment_id, dep), id_text(r->version_id, ver),
                 id_text(r->replica_job_id, job), str_or_empty(r->manifest_sha256),
                 str_or_empty(r->route), r->status, str_or_empty(r->error_code),
                 str_or_empty(r->prompt_sha256), str_or_empty(r->answer_sha256), r->prompt_tokens,
                 r->completion_tokens, r->latency_us, r->ttft_us, str_or_empty(r->client_addr));
    if (n < 0 || (size_t)n >= out_size)
        return RC_ETOOBIG;
    if (len != NULL)
        *len = (size_t)n;
    return RC_OK;
}

enum rc serve_record_sha256(const struct serve_record *r, char out[65])
{
    char text[2048];
    size_t len = 0;
    enum rc rc = serve_record_canon(r, text, sizeof text, &len);
    if (rc != RC_OK)
        return rc;
    crypto_sha256_hex(text, len, out);
    return RC_OK;
}

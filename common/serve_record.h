/*
 * serve_record.h - the canonical text of one gateway request record and its
 * SHA-256 (docs/serving.md, "Request records and their seal").
 *
 * The gateway hashes each record when it writes it (serve_requests.
 * record_sha256); the seal loop builds a batch's Merkle tree over those
 * hashes; `trainyard audit verify` recomputes each exported record's hash
 * from its fields with this same code, so a record changed after it was
 * written no longer proves its inclusion. Any change to the text is a new
 * version line, never an edit of this one.
 *
 * A field must not hold a newline (the text is one "name=value" line per
 * field): serve_record_canon() refuses such a record, so a writer can never
 * store a record that would verify as another.
 *
 * Thread-safety: pure functions, any thread.
 */
#ifndef TY_COMMON_SERVE_RECORD_H
#define TY_COMMON_SERVE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The first line of the canonical text. */
#define SERVE_RECORD_VERSION "trainyard.serve.request.v1"

/*
 * One record. Strings are borrowed and NUL-terminated (NULL is taken as "");
 * an id of 0 or less is "missing" and written as the empty string.
 */
struct serve_record {
    const char *request_id;
    const char *ts_text; /* UTC "YYYY-MM-DDTHH:MM:SS.ffffffZ" */
    int64_t key_id;
    int64_t deployment_id;
    int64_t version_id;
    int64_t replica_job_id;
    const char *manifest_sha256;
    const char *route; /* "/v1/chat/completions", ... */
    int status;        /* HTTP status of the answer */
    const char *error_code;
    const char *prompt_sha256;
    const char *answer_sha256;
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t latency_us;
    int64_t ttft_us;
    const char *client_addr;
};

/*
 * The canonical text of r into out (NUL-terminated), *len (out, may be NULL)
 * its length without the NUL. RC_OK; RC_EINVAL when a field holds a newline
 * or a carriage return; RC_ETOOBIG when out_size is too small (2 KiB holds
 * any record whose strings are each under 200 bytes, which the gateway
 * keeps them to).
 */
enum rc serve_record_canon(const struct serve_record *r, char *out, size_t out_size,
                           size_t *len) TY_WUR;

/* SHA-256 of the canonical text (built in a 2 KiB buffer) as 64 lower-case
 * hex digits and a NUL; as serve_record_canon() for errors. */
enum rc serve_record_sha256(const struct serve_record *r, char out[65]) TY_WUR;

#endif

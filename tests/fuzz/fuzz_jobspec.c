/*
 * fuzz_jobspec.c - libFuzzer target for the job-spec validator: bytes ->
 * json_loadb (duplicates rejected, depth capped like the server's body
 * parser) -> jobspec_parse -> jobspec_to_json -> free. Checks that a valid
 * spec normalizes to JSON that parses back to the same normalized JSON, and
 * that a refusal always names a message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH 32

/* Nesting depth of JSON text, ignoring brackets inside strings. */
static int too_deep(const uint8_t *data, size_t size)
{
    int depth = 0, in_str = 0, esc = 0;

    for (size_t i = 0; i < size; i++) {
        uint8_t c = data[i];
        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > MAX_DEPTH)
                return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *in, *norm, *norm2;
    struct jobspec *spec = NULL, *spec2 = NULL;
    struct err e;

    if (too_deep(data, size))
        return 0;
    in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (in == NULL)
        return 0;
    err_init(&e);
    if (jobspec_parse(in, &spec, &e) != RC_OK) {
        if (spec != NULL || e.rc != RC_EINVAL || e.message[0] == '\0')
            abort();
        json_decref(in);
        return 0;
    }
    norm = jobspec_to_json(spec);
    if (norm == NULL)
        abort();
    if (jobspec_parse(norm, &spec2, &e) != RC_OK)
        abort(); /* the normalized form must be valid */
    norm2 = jobspec_to_json(spec2);
    if (norm2 == NULL || !json_equal(norm, norm2))
        abort();
    json_decref(norm2);
    json_decref(norm);
    jobspec_free(spec2);
    jobspec_free(spec);
    json_decref(in);
    return 0;
}

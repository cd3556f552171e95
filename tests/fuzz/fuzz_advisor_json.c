/*
 * fuzz_advisor_json.c - libFuzzer target for the advisor's JSON layer:
 * bytes -> json_loadb (duplicates rejected, depth capped like the server's
 * body parser) -> adv_json_advise -> the plan. Checks that a refusal is
 * RC_EINVAL with a message, and that every plan renders with a status and,
 * when a DeepSpeed config is emitted, train_batch_size = micro-batch x
 * accumulation x data-parallel degree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "advisor_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH 32

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

static json_int_t get_int(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        abort();
    return json_integer_value(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *in, *out = NULL;
    const json_t *ds;
    struct err e;

    if (too_deep(data, size))
        return 0;
    in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (in == NULL)
        return 0;
    err_init(&e);
    if (adv_json_advise(in, &out, &e) != RC_OK) {
        if (out != NULL || e.rc != RC_EINVAL || e.message[0] == '\0')
            abort();
        json_decref(in);
        return 0;
    }
    if (!json_is_string(json_object_get(out, "status")))
        abort();
    ds = json_object_get(json_object_get(out, "config"), "deepspeed");
    if (json_is_object(ds) &&
        get_int(ds, "train_batch_size") != get_int(ds, "train_micro_batch_size_per_gpu") *
                                               get_int(ds, "gradient_accumulation_steps") *
                                               get_int(out, "dp_degree"))
        abort();
    json_decref(out);
    json_decref(in);
    return 0;
}

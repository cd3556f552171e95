/*
 * fuzz_templates.c - libFuzzer target for the job-template validator: bytes
 * -> tpl_parse (which parses the JSON itself, as the loader does with a
 * file's text). Checks that a refusal always names a message and leaves no
 * result, and that an accepted template offers a job whose command starts
 * with an absolute path and whose id is the template's.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "templates.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *t = NULL, *job;
    const char *argv0;
    struct err e;

    err_init(&e);
    if (tpl_parse((const char *)data, size, "/srv/examples", &t, &e) != RC_OK) {
        if (t != NULL || (e.rc != RC_EINVAL && e.rc != RC_ENOMEM) || e.message[0] == '\0')
            abort();
        return 0;
    }
    job = json_object_get(t, "job");
    argv0 = json_string_value(json_array_get(json_object_get(job, "command"), 0));
    if (argv0 == NULL || argv0[0] != '/')
        abort();
    if (!json_equal(json_object_get(job, "template"), json_object_get(t, "id")))
        abort();
    json_decref(t);
    return 0;
}

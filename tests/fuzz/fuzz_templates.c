/*
 * fuzz_templates.c - libFuzzer target for the job-template validator: bytes
 * -> tpl_parse (which parses the JSON itself, as the loader does with a
 * file's text). Checks that a refusal always names a message and leaves no
 * result, and that an accepted template offers a job whose command starts
 * with an absolute path and with the template's base_command, whose id is
 * the template's, whose params name every parameter of the schema, and that
 * the same job is what a submit by template without params makes of it
 * (tpl_expand.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "templates.h"
#include "tpl_expand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *t = NULL, *job, *base, *req = NULL, *again = NULL;
    const char *argv0;
    struct err e;
    enum rc rc;

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
    base = json_object_get(t, "base_command");
    for (size_t i = 0; i < json_array_size(base); i++)
        if (!json_equal(json_array_get(base, i),
                        json_array_get(json_object_get(job, "command"), i)))
            abort();
    if (json_object_size(json_object_get(job, "params")) !=
        json_object_size(json_object_get(t, "params")))
        abort();
    /* Out of memory is the only way this can fail: the defaults were checked. */
    req = json_object();
    rc = req ? tpl_expand(t, req, &again, &e) : RC_ENOMEM;
    if ((rc != RC_OK && rc != RC_ENOMEM) || (rc == RC_OK && !json_equal(again, job)))
        abort();
    json_decref(again);
    json_decref(req);
    json_decref(t);
    return 0;
}

/*
 * advise_json.c - the advisor's JSON layer as a filter, for
 * bench/advisor/memory_cpu.py: one request (docs/advisor.md) on stdin, the
 * plan on stdout, exactly what POST /api/v1/advisor answers (exit 1 and the
 * error on stderr for a refused request). No server or database needed.
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "advisor_json.h"

int main(void)
{
    json_error_t je;
    json_t *req = json_loadf(stdin, 0, &je), *plan = NULL;
    struct err e;
    int status = 1;

    err_init(&e);
    if (req == NULL) {
        fprintf(stderr, "advise_json: bad JSON: %s\n", je.text);
        return 1;
    }
    if (adv_json_advise(req, &plan, &e) != RC_OK) {
        fprintf(stderr, "advise_json: %s: %s (%s)\n", e.field, e.message, e.detail);
        goto out;
    }
    if (json_dumpf(plan, stdout, JSON_COMPACT) == 0 && fputc('\n', stdout) != EOF)
        status = 0;
out:
    json_decref(req);
    json_decref(plan);
    return status;
}

/*
 * fuzz_wrk_assign.c - libFuzzer target for the assignment validator and the
 * launch-plan builder: whatever the server (or a man in the middle) sends in
 * an assignments answer must be refused cleanly or produce a sane plan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    const json_t *arr = json_object_get(root, "assignments");
    static const struct wrk_plan_opts o = {"/usr/bin",          "/root", "C", NULL, "10.0.0.1",
                                           "/w/ds_config.json", NULL};

    for (size_t i = 0; i < json_array_size(arr) && i < 8; i++) {
        struct wrk_assignment *a = NULL;
        struct wrk_plan *p = NULL;
        char *id = NULL;
        if (wrk_assignment_parse(json_array_get(arr, i), &a, &id, NULL) == RC_OK) {
            if (a == NULL || a->nranks == 0 || a->command[0] == NULL)
                abort();
            if (wrk_plan_build(a, &o, &p, NULL) == RC_OK) {
                for (size_t k = 0; k < p->nprocs; k++)
                    if (p->procs[k].argv[0] == NULL || p->procs[k].envp[0] == NULL)
                        abort();
            }
            wrk_plan_free(p);
        } else if (a != NULL) {
            abort();
        }
        free(id);
        wrk_assignment_free(a);
    }
    json_decref(root);
    return 0;
}

/*
 * fuzz_router.c - the request router over arbitrary methods and paths: it
 * must never read out of bounds, and a match must carry captures that fit.
 * Input: "METHOD PATH" (the first space splits them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"
#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    char *sp;
    size_t n;
    const struct router_route *t = routes_table(&n);
    struct router_match m;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    sp = strchr(buf, ' ');
    if (sp != NULL) {
        *sp = '\0';
        if (router_find(t, n, buf, sp + 1, &m) == RC_OK) {
            if (m.nparams < 0 || m.nparams > ROUTER_MAX_PARAMS)
                abort();
            for (int i = 0; i < m.nparams; i++)
                if (strlen(m.params[i]) == 0 || strlen(m.params[i]) > ROUTER_MAX_PARAM_LEN ||
                    strchr(m.params[i], '/') != NULL)
                    abort();
        }
    }
    free(buf);
    return 0;
}

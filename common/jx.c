/*
 * jx.c - see jx.h. The failure counter is thread-local, so a parse on one
 * thread is not refused for a failure on another, and no lock is needed.
 */
#include "jx.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local unsigned long jx_alloc_failures; /* this thread's, ever */

static void *jx_malloc(size_t n)
{
    void *p = malloc(n);

    if (p == NULL)
        jx_alloc_failures++;
    return p;
}

static void jx_free(void *p)
{
    free(p);
}

void jx_init(void)
{
    json_set_alloc_funcs(jx_malloc, jx_free);
}

enum rc jx_loadb(const char *buf, size_t len, size_t flags, json_t **out, json_error_t *jerr)
{
    unsigned long before = jx_alloc_failures;
    json_error_t local;
    json_t *j;

    if (jerr == NULL)
        jerr = &local;
    j = json_loadb(buf, len, flags, jerr);
    if (jx_alloc_failures != before ||
        (j == NULL && json_error_code(jerr) == json_error_out_of_memory)) {
        json_decref(j);
        *out = NULL;
        return RC_ENOMEM;
    }
    *out = j;
    return j != NULL ? RC_OK : RC_EINVAL;
}

json_t *jx_loads(const char *text, size_t flags)
{
    json_t *j = NULL;

    if (jx_loadb(text, strlen(text), flags, &j, NULL) != RC_OK)
        return NULL;
    return j;
}

char *jx_dumps(const json_t *j, size_t flags)
{
    unsigned long before = jx_alloc_failures;
    char *s = json_dumps(j, flags);

    if (jx_alloc_failures != before) {
        free(s);
        s = NULL;
    }
    return s;
}

/*
 * router.c - segment-by-segment matching of paths against route patterns.
 *
 * A linear scan over the table is fine: there are a few dozen routes and a
 * match costs a handful of string comparisons, far below one SQL round trip.
 */
#include "router.h"

#include <string.h>

/* Match path against pattern; fill captures into m. Returns 1 on a match. */
static int match_pattern(const char *pattern, const char *path, struct router_match *m)
{
    const char *p = pattern, *s = path;

    m->nparams = 0;
    while (*p != '\0' && *s != '\0') {
        if (*p == '{') {
            const char *pend = strchr(p, '}');
            const char *send = strchr(s, '/');
            size_t len;
            if (pend == NULL)
                return 0;
            if (send == NULL)
                send = s + strlen(s);
            len = (size_t)(send - s);
            if (len == 0 || len > ROUTER_MAX_PARAM_LEN || m->nparams >= ROUTER_MAX_PARAMS)
                return 0;
            memcpy(m->params[m->nparams], s, len);
            m->params[m->nparams][len] = '\0';
            m->nparams++;
            p = pend + 1;
            s = send;
            continue;
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    return *p == '\0' && *s == '\0';
}

enum rc router_find(const struct router_route *table, size_t n, const char *method,
                    const char *path, struct router_match *out)
{
    int path_known = 0;
    struct router_match m;

    if (path == NULL || method == NULL || path[0] != '/' || strlen(path) > ROUTER_MAX_PATH)
        return RC_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!match_pattern(table[i].pattern, path, &m))
            continue;
        if (strcmp(table[i].method, method) == 0) {
            m.route = &table[i];
            *out = m;
            return RC_OK;
        }
        path_known = 1;
    }
    return path_known ? RC_EMETHOD : RC_ENOTFOUND;
}

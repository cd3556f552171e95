/*
 * router.h - maps (method, path) to a route of the API table.
 *
 * Patterns are literal segments and "{name}" captures, e.g.
 * "/api/v1/jobs/{id}/cancel". A capture matches one non-empty segment of at
 * most ROUTER_MAX_PARAM_LEN bytes. Matching is pure (no allocation, no I/O),
 * which makes it easy to fuzz.
 *
 * Thread-safety: reentrant; route tables are read-only.
 */
#ifndef TY_SERVER_ROUTER_H
#define TY_SERVER_ROUTER_H

#include <stddef.h>

#include "err.h"

#define ROUTER_MAX_PARAMS 4
#define ROUTER_MAX_PARAM_LEN 128
#define ROUTER_MAX_PATH 2048

struct router_route {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/api/v1/jobs/{id}" */
    int auth;            /* enum srv_auth, opaque here */
    void *handler;       /* srv_handler_fn, opaque here */
};

struct router_match {
    const struct router_route *route; /* borrowed from the table */
    int nparams;
    char params[ROUTER_MAX_PARAMS][ROUTER_MAX_PARAM_LEN + 1];
};

/*
 * Find the route for method and path in table[0..n). Query strings must be
 * stripped already. Returns RC_OK and fills *out, RC_EMETHOD when the path
 * exists with other methods, RC_ENOTFOUND when no pattern matches, RC_EINVAL
 * for a path that is too long or not absolute.
 */
enum rc router_find(const struct router_route *table, size_t n, const char *method,
                    const char *path, struct router_match *out) TY_WUR;

#endif

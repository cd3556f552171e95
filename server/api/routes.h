/*
 * routes.h - the API's route table: method, path pattern, who may call it,
 * and the handler. The authorization-matrix test walks this same table.
 */
#ifndef TY_SERVER_ROUTES_H
#define TY_SERVER_ROUTES_H

#include <stddef.h>

#include "router.h"

/* The table (static storage) and its length. */
const struct router_route *routes_table(size_t *n);

/* The method and pattern of route i (< the table's length), both static:
 * the metrics_route_name_fn (metrics.h) that labels the HTTP series. */
void routes_name(size_t i, const char **method, const char **pattern);

#endif

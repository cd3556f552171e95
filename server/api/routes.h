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

#endif

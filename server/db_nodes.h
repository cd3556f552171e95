/*
 * db_nodes.h - SQL for worker nodes and their GPUs.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_NODES_H
#define TY_SERVER_DB_NODES_H

#include <jansson.h>
#include <libpq-fe.h>

#include "err.h"

/* Every node with its GPUs (array "gpus"), live GPU use, site name and what
 * its worker reported at register (capabilities, interconnect, nccl_probe:
 * server/topology.h), by name. */
enum rc db_node_list(PGconn *c, json_t **out, const char *req_id) TY_WUR;

#endif

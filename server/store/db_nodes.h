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
 * server/jobs/topology.h), by name. */
enum rc db_node_list(PGconn *c, json_t **out, const char *req_id) TY_WUR;

/* What the registered nodes of one site can hold, whatever their state
 * (a down or draining node may come back): filled by db_site_capacity(). */
struct db_site_capacity {
    int nodes;            /* nodes of the site with at least one GPU */
    int gpus;             /* their GPUs in all */
    int largest_node;     /* GPUs of the largest of them; 0 when none */
    int nodes_per_node_k; /* nodes with at least gpus_per_node GPUs (the k asked for) */
};

/* The capacity of site_id's nodes; gpus_per_node (0 = any) sets which nodes
 * nodes_per_node_k counts. RC_OK (zeros when the site has no node yet). */
enum rc db_site_capacity(PGconn *c, int64_t site_id, int gpus_per_node,
                         struct db_site_capacity *out, const char *req_id) TY_WUR;
/*
 * The cluster as the dashboard's overview shows it (GET /api/v1/overview,
 * web/README.md "Server contract for the app"), into *out (new reference):
 *   "nodes": each node (id, name, state, site) with "gpus", each GPU's
 *     index, model, memory_mb, newest util_pct and mem_used_mb and state:
 *     "down" (its node is down), "busy" (allocated; job_id and team),
 *     "draining" (free on a draining node) or "free";
 *   "queue_by_team": per team with waiting jobs (QUEUED or RESTARTING), its
 *     id, name, jobs and gpus asked, most jobs first;
 *   "idle_allocated": the allocated GPUs below idle_util_pct for at least
 *     idle_min_s without a break (node, index, job_id, team, util_pct,
 *     low_since, low_for_s), longest first.
 * One consistent snapshot (one statement). Thread-safety: any thread.
 */
enum rc db_overview(PGconn *c, int idle_util_pct, int idle_min_s, json_t **out,
                    const char *req_id) TY_WUR;

#endif

/*
 * db_nodes.c - see db_nodes.h.
 */
#include "db_nodes.h"

#include "db.h"

enum rc db_node_list(PGconn *c, json_t **out, const char *req_id)
{
    return db_query_json(
        c,
        "SELECT n.id, n.name, n.hostname, n.addr, n.labels, n.state, n.cpus, n.memory_mb, "
        "n.version, n.gpu_stats, n.last_seen_at, n.capabilities, n.interconnect, n.nccl_probe, "
        "coalesce((SELECT json_agg(json_build_object("
        "'index', g.idx, 'uuid', g.uuid, 'model', g.model, 'memory_mb', g.memory_mb, "
        "'compute_capability', g.compute_capability, 'nvlink_peers', g.nvlink_peers) ORDER BY "
        "g.idx) FROM gpus g WHERE g.node_id = n.id), '[]'::json) AS gpus, (SELECT "
        "coalesce(sum(cardinality(a.gpu_indices)), 0) FROM allocations a WHERE a.node_id = n.id "
        "AND a.released_at IS NULL) AS gpus_allocated, (SELECT s.name FROM sites s WHERE s.id = "
        "n.site_id) AS site FROM nodes n ORDER BY n.name",
        0, NULL, 0, out, req_id);
}

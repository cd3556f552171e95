/*
 * db_nodes.c - see db_nodes.h.
 */
#include "db_nodes.h"

#include <stdlib.h>
#include <string.h>

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

enum rc db_site_capacity(PGconn *c, int64_t site_id, int gpus_per_node,
                         struct db_site_capacity *out, const char *req_id)
{
    char sid[24], k[24];
    const char *p[] = {db_i64(site_id, sid, sizeof(sid)), db_i64(gpus_per_node, k, sizeof(k))};
    PGresult *r = db_exec(c,
                          "SELECT count(*), coalesce(sum(n.g), 0), coalesce(max(n.g), 0), "
                          "count(*) FILTER (WHERE n.g >= $2::int) FROM (SELECT (SELECT count(*) "
                          "FROM gpus g WHERE g.node_id = nodes.id) AS g FROM nodes WHERE site_id = "
                          "$1) n WHERE n.g > 0",
                          2, p);
    enum rc rc = db_result_rc(r, req_id);

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(r) == 1) {
        out->nodes = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
        out->gpus = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
        out->largest_node = (int)strtol(PQgetvalue(r, 0, 2), NULL, 10);
        out->nodes_per_node_k = (int)strtol(PQgetvalue(r, 0, 3), NULL, 10);
    }
    PQclear(r);
    return rc;
}

/*
 * db_nodes.c - see db_nodes.h.
 */
#include "db_nodes.h"

#include <stdio.h>
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

/* A timestamp as the rest of the API writes it (db_row_to_json). */
#define TS_JSON(x) "to_char((" x ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

enum rc db_overview(PGconn *c, int idle_util_pct, int idle_min_s, json_t **out, const char *req_id)
{
    char pct[16], min_s[16];
    const char *p[] = {pct, min_s};

    snprintf(pct, sizeof(pct), "%d", idle_util_pct);
    snprintf(min_s, sizeof(min_s), "%d", idle_min_s);
    return db_query_json(
        c,
        "WITH live AS (SELECT a.node_id, a.attempt_id, a.job_id, a.gpu_indices, t.name AS team "
        "FROM allocations a JOIN jobs j ON j.id = a.job_id JOIN teams t ON t.id = j.team_id "
        "WHERE a.released_at IS NULL), g AS (SELECT g.node_id, g.idx, g.model, g.memory_mb, "
        "g.util_pct, g.mem_used_mb, g.low_util_since, g.low_util_attempt, l.attempt_id, "
        "l.job_id, l.team FROM gpus g LEFT JOIN live l ON l.node_id = g.node_id AND g.idx = "
        "ANY(l.gpu_indices)), "
        /* Grouped once, not a subquery per node: linear in the GPUs. */
        "gj AS (SELECT g.node_id, json_agg(json_build_object('index', g.idx, 'model', g.model, "
        "'memory_mb', g.memory_mb, 'util_pct', g.util_pct, 'mem_used_mb', g.mem_used_mb, "
        "'state', CASE WHEN n.state = 'down' THEN 'down' WHEN g.job_id IS NOT NULL THEN 'busy' "
        "WHEN n.state = 'draining' THEN 'draining' ELSE 'free' END, 'job_id', g.job_id::text, "
        "'team', g.team) ORDER BY g.idx) AS gpus FROM g JOIN nodes n ON n.id = g.node_id GROUP "
        "BY g.node_id) SELECT "
        "coalesce((SELECT json_agg(json_build_object('id', n.id::text, 'name', n.name, "
        "'state', n.state, 'site', s.name, 'gpus', coalesce(gj.gpus, '[]'::json)) ORDER BY "
        "n.name) FROM nodes n LEFT JOIN sites s ON s.id = n.site_id LEFT JOIN gj ON gj.node_id "
        "= n.id), '[]'::json) AS nodes, "
        "coalesce((SELECT json_agg(json_build_object('team_id', q.team_id::text, 'team', "
        "q.team, 'jobs', q.jobs, 'gpus', q.gpus) ORDER BY q.jobs DESC, q.team) FROM (SELECT "
        "t.id AS team_id, t.name AS team, count(*) AS jobs, sum(j.gpus) AS gpus FROM jobs j "
        "JOIN teams t ON t.id = j.team_id WHERE j.state IN ('QUEUED', 'RESTARTING') GROUP BY "
        "t.id, t.name) q), '[]'::json) AS queue_by_team, "
        "coalesce((SELECT json_agg(json_build_object('node_id', n.id::text, 'node', n.name, "
        "'index', g.idx, 'model', g.model, 'job_id', g.job_id::text, 'team', g.team, "
        "'util_pct', g.util_pct, 'low_since', " TS_JSON(
            "g.low_util_since") ", 'low_for_s', "
                                "extract(epoch FROM now() - g.low_util_since)::bigint) ORDER "
                                "BY "
                                "g.low_util_since, "
                                "n.name, g.idx) FROM g JOIN nodes n ON n.id = g.node_id WHERE "
                                "n.state <> 'down' AND "
                                "g.low_util_attempt = g.attempt_id AND g.low_util_since <= "
                                "now() - "
                                "make_interval(secs "
                                "=> $2::int)), '[]'::json) AS idle_allocated, $1::int AS "
                                "idle_util_pct, $2::int AS "
                                "idle_min_s",
        2, p, 1, out, req_id);
}

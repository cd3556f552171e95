/*
 * db_scrape.c - see db_scrape.h.
 */
#include "db_scrape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* One round trip, one row per (kind, label). The kinds are the numbers of
 * enum db_scrape_kind. Every part is bounded by teams, states, nodes, GPUs
 * or waiting jobs, never by jobs over time: the job counts by state are the
 * sums of job_state_counts, which the jobs' own changes keep and the
 * retention loop folds (sql/020_retention.sql). The unsealed request
 * records are read from their partial index (serve_requests_unsealed), which
 * holds only what the seal loop has yet to seal: about a second's requests. */
static const char *const metrics_sql =
    "SELECT 0, t.name, count(j.id)::float8 FROM teams t LEFT JOIN jobs j ON j.team_id = t.id "
    "AND j.state IN ('QUEUED', 'RESTARTING') GROUP BY t.name "
    "UNION ALL SELECT 1, state, sum(n)::float8 FROM job_state_counts GROUP BY state "
    "HAVING sum(n) <> 0 "
    "UNION ALL SELECT 2, '', count(*)::float8 FROM gpus "
    "UNION ALL SELECT 3, '', coalesce(sum(cardinality(a.gpu_indices)), 0)::float8 "
    "FROM allocations a WHERE a.released_at IS NULL "
    /* gpu_stats is the node's last heartbeat: [{"index":0,"util_pct":37,...}] */
    "UNION ALL SELECT 4, '', count(*)::float8 FROM allocations a JOIN nodes n ON n.id = a.node_id "
    "CROSS JOIN LATERAL unnest(a.gpu_indices) AS gi(idx) "
    "JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(n.gpu_stats) = 'array' THEN "
    "n.gpu_stats ELSE '[]'::jsonb END) AS s(v) ON (s.v->>'index') = gi.idx::text "
    "WHERE a.released_at IS NULL AND jsonb_typeof(s.v->'util_pct') = 'number' "
    "AND (s.v->>'util_pct')::float8 < 5 "
    "UNION ALL SELECT 5, '', count(*)::float8 FROM gpus g JOIN nodes n ON n.id = g.node_id "
    "WHERE n.state = 'down' "
    "UNION ALL SELECT 6, state, count(*)::float8 FROM nodes GROUP BY state "
    "UNION ALL SELECT 7, name, extract(epoch FROM now() - last_seen_at)::float8 FROM nodes "
    "WHERE last_seen_at IS NOT NULL "
    "UNION ALL SELECT 8, '', seq::float8 FROM audit_head "
    "UNION ALL SELECT 9, '', count(*)::float8 FROM serve_requests WHERE batch_id IS NULL "
    /* A replica is ready for its job's current attempt while it runs
     * (serve_health.h). */
    "UNION ALL SELECT 10, d.name, (SELECT count(*) FROM serve_replicas r JOIN jobs j ON j.id = "
    "r.job_id WHERE r.deployment_id = d.id AND NOT r.retired AND r.ready AND j.state = 'RUNNING' "
    "AND j.attempt = r.attempt)::float8 FROM deployments d "
    "UNION ALL SELECT 11, name, CASE WHEN state = 'active' THEN replicas ELSE 0 END::float8 FROM "
    "deployments";

enum rc db_scrape_read(PGconn *c, struct db_scrape_snapshot *out)
{
    enum rc rc;
    PGresult *r = db_exec(c, metrics_sql, 0, NULL);
    int n;

    memset(out, 0, sizeof(*out));
    if ((rc = db_result_rc(r, "metrics")) != RC_OK)
        goto out;
    n = PQntuples(r);
    if (n > 0 && (out->rows = calloc((size_t)n, sizeof(*out->rows))) == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        long kind = strtol(PQgetvalue(r, i, 0), NULL, 10);
        struct db_scrape_row *row = &out->rows[out->nrows];
        if (kind < 0 || kind >= DB_SCRAPE_NKINDS)
            continue;
        row->kind = (enum db_scrape_kind)kind;
        snprintf(row->label, sizeof(row->label), "%s", PQgetvalue(r, i, 1));
        row->value = strtod(PQgetvalue(r, i, 2), NULL);
        out->nrows++;
    }
    rc = RC_OK;
out:
    PQclear(r);
    return rc;
}

enum rc db_scrape_copy(struct db_scrape_snapshot *dst, const struct db_scrape_snapshot *src)
{
    memset(dst, 0, sizeof(*dst));
    if (src->nrows == 0)
        return RC_OK;
    dst->rows = malloc(src->nrows * sizeof(*dst->rows));
    if (dst->rows == NULL)
        return RC_ENOMEM;
    memcpy(dst->rows, src->rows, src->nrows * sizeof(*dst->rows));
    dst->nrows = src->nrows;
    return RC_OK;
}

void db_scrape_cleanup(struct db_scrape_snapshot *s)
{
    if (s == NULL)
        return;
    free(s->rows);
    s->rows = NULL;
    s->nrows = 0;
}

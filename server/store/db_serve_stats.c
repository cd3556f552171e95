/*
 * db_serve_stats.c - see db_serve_stats.h.
 */
#include "db_serve_stats.h"

#include <stdio.h>

#include "db.h"

enum rc db_serve_stats(PGconn *c, int64_t deployment_id, int minutes, json_t **out,
                       const char *req_id)
{
    char d[24], m[24];
    const char *p[] = {db_i64(deployment_id, d, sizeof(d)), db_i64(minutes, m, sizeof(m))};

    /* The deployment's records of the window are read once (its index
     * leads with deployment_id), then grouped by minute and laid over the
     * series of minutes so that an idle minute is a row of zeros. */
    return db_query_json(
        c,
        "WITH w AS (SELECT date_trunc('minute', now()) - ($2::int - 1) * interval '1 minute' AS "
        "first), r AS (SELECT date_trunc('minute', s.ts) AS minute, s.status, s.latency_us FROM "
        "serve_requests s, w WHERE s.deployment_id = $1 AND s.ts >= w.first), g AS (SELECT "
        "minute, count(*) AS requests, count(*) FILTER (WHERE status >= 400) AS errors, "
        "percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us) AS p50_latency_us, "
        "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) AS p99_latency_us FROM r "
        "GROUP BY minute) SELECT m.minute, coalesce(g.requests, 0) AS requests, "
        "coalesce(g.errors, 0) AS errors, g.p50_latency_us, g.p99_latency_us FROM w, "
        "generate_series(w.first, date_trunc('minute', now()), interval '1 minute') m(minute) "
        "LEFT JOIN g ON g.minute = m.minute ORDER BY m.minute",
        2, p, 0, out, req_id);
}

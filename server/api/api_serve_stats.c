/*
 * api_serve_stats.c - GET /api/v1/deployments/{name}/stats?minutes=60: a
 * deployment's gateway traffic per minute (requests, errors, p50 and p99
 * latency) from its request records, for the dashboard's charts. Members
 * see their teams' deployments; admins and auditors every one; anyone else
 * is told the deployment does not exist.
 */
#include "api.h"

#include <stdint.h>
#include <stdlib.h>

#include "db.h"
#include "db_serve_stats.h"
#include "jx.h"

#include "api_util.h"

#define STATS_DEFAULT_MINUTES 60

/* ?minutes= in 1..DB_SERVE_STATS_MAX_MINUTES (default 60). */
static enum rc minutes_of(struct srv_req *req, int *out)
{
    const char *s = srv_query(req, "minutes");
    char *end = NULL;
    long v;

    *out = STATS_DEFAULT_MINUTES;
    if (s == NULL)
        return RC_OK;
    v = strtol(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || v < 1 || v > DB_SERVE_STATS_MAX_MINUTES) {
        srv_fail(req, RC_EINVAL, "minutes", "minutes must be an integer from 1 to %d",
                 DB_SERVE_STATS_MAX_MINUTES);
        err_detail(&req->err, "got \"%.32s\"", s);
        return RC_EINVAL;
    }
    *out = (int)v;
    return RC_OK;
}

enum rc api_serve_stats(struct srv_req *req)
{
    int64_t id = 0;
    int minutes = 0;
    json_t *series = NULL;
    enum rc rc;

    if ((rc = minutes_of(req, &minutes)) != RC_OK)
        return rc;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    if ((rc = api_deployment_find(req, &id)) != RC_OK)
        return rc;
    if ((rc = db_serve_stats(req->db, id, minutes, &series, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200,
                     json_pack("{s:s,s:i,s:o}", "deployment", req->params[0], "minutes", minutes,
                               "series", series));
}

/*
 * api_misc.c - health, readiness, the node list and audit reads.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "db.h"
#include "db_audit.h"
#include "db_nodes.h"

enum rc api_healthz(struct srv_req *req)
{
    return srv_reply(req, 200, json_pack("{s:s}", "status", "ok"));
}

enum rc api_readyz(struct srv_req *req)
{
    if (!db_ping(req->app->db))
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    return srv_reply(req, 200, json_pack("{s:s}", "status", "ready"));
}

enum rc api_node_list(struct srv_req *req)
{
    json_t *rows = NULL;
    enum rc rc = db_node_list(req->db, &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "nodes", rows));
}

/* An ISO-8601 timestamp filter: digits, '-', ':', 'T', 'Z', '.', '+'. */
static int ts_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (s == NULL)
        return 1;
    if (n < 10 || n > 40)
        return 0;
    return strspn(s, "0123456789-:TZ.+ ") == n;
}

enum rc api_audit_events(struct srv_req *req)
{
    char cursor[24];
    int limit;
    json_t *rows = NULL, *last;
    const char *action = srv_query(req, "action"), *actor = srv_query(req, "actor"),
               *target = srv_query(req, "target"), *since = srv_query(req, "since"),
               *until = srv_query(req, "until");
    enum rc rc;

    if ((rc = api_page(req, 100, 500, &limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    if (!ts_ok(since))
        return srv_fail(req, RC_EINVAL, "since", "since must be an ISO-8601 time");
    if (!ts_ok(until))
        return srv_fail(req, RC_EINVAL, "until", "until must be an ISO-8601 time");
    if ((action && strlen(action) > 64) || (actor && strlen(actor) > 128) ||
        (target && strlen(target) > 128))
        return srv_fail(req, RC_EINVAL, "", "filter value is too long");
    rc = audit_list(req->db, action, actor, target, since, until, cursor[0] ? cursor : NULL, limit,
                    &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, (size_t)limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "events", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_audit_verify(struct srv_req *req)
{
    int64_t checked = 0, bad = 0;
    enum rc rc = audit_verify_db(req->db, &checked, &bad, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200,
                     json_pack("{s:b,s:I,s:I}", "valid", bad == 0, "checked", (json_int_t)checked,
                               "first_bad_id", (json_int_t)bad));
}

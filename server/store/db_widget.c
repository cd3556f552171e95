/*
 * db_widget.c - see db_widget.h.
 */
#include "db_widget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jx.h"

enum rc db_widget_load(PGconn *c, const char *name, int lock, struct db_widget_dep *out,
                       const char *req_id)
{
    const char *p[] = {name};
    PGresult *res = db_exec(c,
                            lock ? "SELECT id, team_id, widget::text FROM deployments "
                                   "WHERE name = $1 FOR UPDATE"
                                 : "SELECT id, team_id, widget::text FROM deployments "
                                   "WHERE name = $1",
                            1, p);
    enum rc rc = db_result_rc(res, req_id);
    const char *w;

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK && (db_parse_i64(PQgetvalue(res, 0, 0), &out->id) != RC_OK ||
                        db_parse_i64(PQgetvalue(res, 0, 1), &out->team_id) != RC_OK))
        rc = RC_EINTERNAL;
    if (rc == RC_OK) {
        w = PQgetvalue(res, 0, 2);
        rc = jx_loadb(w, strlen(w), 0, &out->widget, NULL);
        if (rc == RC_OK && !json_is_object(out->widget)) {
            json_decref(out->widget);
            out->widget = NULL;
            rc = RC_EINTERNAL;
        }
    }
    PQclear(res);
    return rc;
}

enum rc db_widget_store(PGconn *c, int64_t id, const json_t *widget, const char *req_id)
{
    char ids[24];
    char *text = jx_dumps(widget, JSON_COMPACT);
    const char *p[] = {db_i64(id, ids, sizeof(ids)), text};
    enum rc rc;

    if (text == NULL)
        return RC_ENOMEM;
    rc = db_exec_ok(c, req_id, "UPDATE deployments SET widget = $2::jsonb WHERE id = $1", 2, p);
    free(text);
    return rc;
}

enum rc db_widget_key_reuse(PGconn *c, int64_t id, int64_t key_id, int rate_per_min, int *live,
                            const char *req_id)
{
    char ids[24], kid[24], rate[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), db_i64(key_id, kid, sizeof(kid)),
                       db_i64(rate_per_min, rate, sizeof(rate))};
    PGresult *res = db_exec(c,
                            "UPDATE serve_keys SET rate_per_min = $3 WHERE id = $2 "
                            "AND deployment_id = $1 AND public AND revoked_at IS NULL RETURNING id",
                            3, p);
    enum rc rc = db_result_rc(res, req_id);

    *live = rc == RC_OK && PQntuples(res) == 1;
    PQclear(res);
    return rc;
}

enum rc db_widget_handoffs_since(PGconn *c, const char *target, const char *addr, int window_s,
                                 int *n, const char *req_id)
{
    char secs[24];
    const char *p[] = {target, addr, db_i64(window_s, secs, sizeof(secs))};
    PGresult *res = db_exec(c,
                            "SELECT count(*) FROM audit_events WHERE action = 'serve.handoff' "
                            "AND ts > now() - make_interval(secs => $3::int) "
                            "AND target = $1 AND source = $2",
                            3, p);
    enum rc rc = db_result_rc(res, req_id);
    int64_t v = 0;

    if (rc == RC_OK && db_parse_i64(PQgetvalue(res, 0, 0), &v) != RC_OK)
        rc = RC_EINTERNAL;
    *n = (int)v;
    PQclear(res);
    return rc;
}

enum rc db_widget_webhook(PGconn *c, int64_t webhook_id, int64_t team_id, char *format,
                          size_t format_size, const char *req_id)
{
    char wid[24], tid[24];
    const char *p[] = {db_i64(webhook_id, wid, sizeof(wid)), db_i64(team_id, tid, sizeof(tid))};
    PGresult *res = db_exec(c, "SELECT format FROM webhooks WHERE id = $1 AND team_id = $2", 2, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        snprintf(format, format_size, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

enum rc db_widget_enqueue(PGconn *c, int64_t webhook_id, const char *event, const char *payload,
                          const char *req_id)
{
    char wid[24];
    const char *p[] = {db_i64(webhook_id, wid, sizeof(wid)), event, payload};

    return db_exec_ok(c, req_id,
                      "INSERT INTO webhook_deliveries (webhook_id, event, payload) "
                      "VALUES ($1, $2, $3)",
                      3, p);
}

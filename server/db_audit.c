/*
 * db_audit.c - the audit chain in PostgreSQL (see db_audit.h and
 * common/audit_canon.h for the hashed form).
 */
#include "db_audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "audit_canon.h"
#include "db.h"
#include "log.h"
#include "srv.h"

static int64_t now_unix_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

enum rc audit_append(PGconn *conn, const struct audit_event *ev, const char *req_id)
{
    enum rc rc;
    PGresult *res = NULL;
    char ts[40], idbuf[32], hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];
    char *details = NULL;
    json_t *empty = NULL;
    int64_t seq;
    struct audit_fields f;

    res = db_exec(conn, "SELECT seq, hash FROM audit_head FOR UPDATE", 0, NULL);
    if ((rc = db_result_rc(res, req_id)) != RC_OK)
        goto out;
    if (PQntuples(res) != 1 || db_parse_i64(PQgetvalue(res, 0, 0), &seq) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    snprintf(prev, sizeof(prev), "%s", PQgetvalue(res, 0, 1));
    PQclear(res);
    res = NULL;

    audit_format_ts(now_unix_us(), ts, sizeof(ts));
    if (ev->details == NULL)
        empty = json_object();
    f = (struct audit_fields){.id = seq + 1,
                              .ts = ts,
                              .actor = ev->actor,
                              .source = ev->source,
                              .action = ev->action,
                              .target = ev->target,
                              .outcome = ev->outcome,
                              .details = ev->details ? ev->details : empty,
                              .prev_hash = prev};
    if ((rc = audit_hash(&f, hash)) != RC_OK)
        goto out;
    details = json_dumps(f.details, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (details == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    snprintf(idbuf, sizeof(idbuf), "%lld", (long long)(seq + 1));
    {
        const char *p[] = {idbuf,
                           ts,
                           ts,
                           ev->actor ? ev->actor : "",
                           ev->source ? ev->source : "",
                           ev->action,
                           ev->target ? ev->target : "",
                           ev->outcome,
                           details,
                           prev,
                           hash};
        rc = db_exec_ok(conn, req_id,
                        "INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, "
                        "outcome, details, prev_hash, hash) VALUES ($1, $2::timestamptz, $3, $4, "
                        "$5, $6, $7, $8, $9, $10, $11)",
                        11, p);
    }
    if (rc != RC_OK)
        goto out;
    {
        const char *p[] = {idbuf, hash};
        rc = db_exec_ok(conn, req_id, "UPDATE audit_head SET seq = $1, hash = $2", 2, p);
    }
out:
    json_decref(empty);
    free(details);
    PQclear(res);
    return rc;
}

enum rc audit_append_req(struct srv_req *req, const char *action, const char *target,
                         const char *outcome, json_t *details)
{
    char actor[96];
    struct audit_event ev;

    srv_actor(req, actor, sizeof(actor));
    ev = (struct audit_event){actor, req->client_addr, action, target, outcome, details};
    return audit_append(req->db, &ev, req->req_id);
}

enum rc audit_append_alone(struct srv_req *req, const char *action, const char *target,
                           const char *outcome, json_t *details)
{
    enum rc rc;

    if (srv_db(req) == NULL)
        return RC_EUNAVAIL;
    if ((rc = db_begin(req->db)) != RC_OK)
        return rc;
    rc = audit_append_req(req, action, target, outcome, details);
    if (rc == RC_OK)
        rc = db_commit(req->db);
    else
        db_rollback(req->db);
    return rc;
}

enum rc audit_list(PGconn *conn, const char *action, const char *actor, const char *target,
                   const char *since, const char *until, const char *before_id, int limit,
                   json_t **out, const char *req_id)
{
    char lim[16];
    const char *p[7];
    PGresult *res;
    enum rc rc;
    json_t *arr = NULL;

    snprintf(lim, sizeof(lim), "%d", limit);
    p[0] = action;
    p[1] = actor;
    p[2] = target;
    p[3] = since;
    p[4] = until;
    p[5] = before_id;
    p[6] = lim;
    res = db_exec(
        conn,
        "SELECT id, ts_text AS ts, actor, source, action, target, outcome, "
        "details::jsonb AS details, prev_hash, hash FROM audit_events "
        "WHERE ($1::text IS NULL OR action = $1 OR (right($1, 1) = '.' AND "
        "starts_with(action, $1))) AND ($2::text IS NULL OR actor = $2) "
        "AND ($3::text IS NULL OR target = $3) "
        "AND ($4::timestamptz IS NULL OR ts >= $4) AND ($5::timestamptz IS NULL OR ts < $5) "
        "AND ($6::bigint IS NULL OR id < $6) ORDER BY id DESC LIMIT $7",
        7, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK) {
        arr = json_array();
        for (int i = 0; arr != NULL && i < PQntuples(res); i++)
            json_array_append_new(arr, db_row_to_json(res, i));
        rc = arr ? RC_OK : RC_ENOMEM;
    }
    PQclear(res);
    *out = arr;
    return rc;
}

enum rc audit_verify_db(PGconn *conn, int64_t *checked, int64_t *bad_id, const char *req_id)
{
    char prev[CRYPTO_SHA256_HEX_LEN + 1] = AUDIT_GENESIS_HASH;
    char after[32] = "0";
    int64_t expect = 0, n = 0;
    enum rc rc = RC_OK;

    *bad_id = 0;
    for (;;) {
        const char *p[] = {after};
        PGresult *res = db_exec(conn,
                                "SELECT id, ts_text, actor, source, action, target, outcome, "
                                "details, prev_hash, hash FROM audit_events WHERE id > $1 "
                                "ORDER BY id LIMIT 5000",
                                1, p);
        int rows;
        if ((rc = db_result_rc(res, req_id)) != RC_OK) {
            PQclear(res);
            break;
        }
        rows = PQntuples(res);
        for (int i = 0; i < rows && *bad_id == 0; i++) {
            int64_t id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
            char h[CRYPTO_SHA256_HEX_LEN + 1];
            json_t *details = json_loads(PQgetvalue(res, i, 7), 0, NULL);
            struct audit_fields f = {id,
                                     PQgetvalue(res, i, 1),
                                     PQgetvalue(res, i, 2),
                                     PQgetvalue(res, i, 3),
                                     PQgetvalue(res, i, 4),
                                     PQgetvalue(res, i, 5),
                                     PQgetvalue(res, i, 6),
                                     details,
                                     PQgetvalue(res, i, 8)};
            if (details == NULL || id != expect + 1 || strcmp(f.prev_hash, prev) != 0 ||
                audit_hash(&f, h) != RC_OK || strcmp(h, PQgetvalue(res, i, 9)) != 0)
                *bad_id = expect + 1;
            json_decref(details);
            expect = id;
            snprintf(prev, sizeof(prev), "%s", PQgetvalue(res, i, 9));
            n++;
        }
        if (rows > 0)
            snprintf(after, sizeof(after), "%s", PQgetvalue(res, rows - 1, 0));
        PQclear(res);
        if (rows == 0 || *bad_id != 0)
            break;
    }
    *checked = n;
    return rc;
}

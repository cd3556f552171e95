/*
 * db_audit_keys.c - the ring of audit signing keys (see db_audit_keys.h).
 */
#include "db_audit_keys.h"

#include <stdio.h>
#include <string.h>

#include "db.h"
#include "db_audit.h"

/* The steps of audit_keys_register() inside its transaction. */
static enum rc register_in_tx(PGconn *conn, const struct audit_key *key,
                              char rotated_from[AUDIT_KEY_ID_LEN + 1])
{
    const char *p[] = {audit_key_id(key), audit_key_public_b64(key)};
    PGresult *res;
    json_t *details;
    struct audit_event ev;
    enum rc rc;
    int known;

    if ((rc = db_exec_ok(conn, NULL, "LOCK TABLE audit_keys IN EXCLUSIVE MODE", 0, NULL)) != RC_OK)
        return rc;
    res = db_exec(conn, "SELECT 1 FROM audit_keys WHERE key_id = $1", 1, p);
    if ((rc = db_result_rc(res, NULL)) == RC_OK)
        known = PQntuples(res) > 0;
    PQclear(res);
    if (rc != RC_OK || known)
        return rc;
    /* A new key: the current one (if any) is retired, this one is current. */
    res = db_exec(conn,
                  "UPDATE audit_keys SET retired_at = now() WHERE retired_at IS NULL "
                  "RETURNING key_id",
                  0, NULL);
    if ((rc = db_result_rc(res, NULL)) == RC_OK && PQntuples(res) > 0)
        snprintf(rotated_from, AUDIT_KEY_ID_LEN + 1, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    if (rc != RC_OK)
        return rc;
    rc =
        db_exec_ok(conn, NULL, "INSERT INTO audit_keys (key_id, public_key) VALUES ($1, $2)", 2, p);
    if (rc != RC_OK || rotated_from[0] == '\0')
        return rc;
    details = json_pack("{s:s,s:s}", "from", rotated_from, "to", audit_key_id(key));
    if (details == NULL)
        return RC_ENOMEM;
    ev = (struct audit_event){.actor = "system",
                              .source = "",
                              .action = "audit.key_rotated",
                              .target = AUDIT_TARGET_NONE,
                              .outcome = "success",
                              .details = details};
    rc = audit_append(conn, &ev, NULL);
    json_decref(details);
    return rc;
}

enum rc audit_keys_register(PGconn *conn, const struct audit_key *key,
                            char rotated_from[AUDIT_KEY_ID_LEN + 1])
{
    enum rc rc;

    rotated_from[0] = '\0';
    if ((rc = db_begin(conn)) != RC_OK)
        return rc;
    rc = register_in_tx(conn, key, rotated_from);
    if (rc == RC_OK)
        rc = db_commit(conn);
    else
        db_rollback(conn);
    if (rc != RC_OK)
        rotated_from[0] = '\0';
    return rc;
}

enum rc audit_keys_list(PGconn *conn, json_t **out, const char *req_id)
{
    return db_query_json(conn,
                         "SELECT key_id, public_key, created_at, retired_at FROM audit_keys "
                         "ORDER BY created_at, key_id",
                         0, NULL, 0, out, req_id);
}

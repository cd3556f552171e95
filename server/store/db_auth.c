/*
 * db_auth.c - credential lookups and session SQL (see db_auth.h).
 */
#include "db_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "log.h"

/* The user behind an API token or a session: columns id, username, role,
 * then the token's id or the session's CSRF token. */
static enum rc user_row(PGresult *res, struct db_auth_user *out, int session)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->username, sizeof(out->username), "%s", PQgetvalue(res, 0, 1));
    snprintf(out->role, sizeof(out->role), "%s", PQgetvalue(res, 0, 2));
    if (db_parse_i64(PQgetvalue(res, 0, 0), &out->user_id) != RC_OK)
        return RC_EINTERNAL;
    if (session) {
        snprintf(out->csrf, sizeof(out->csrf), "%s", PQgetvalue(res, 0, 3));
        return RC_OK;
    }
    return db_parse_i64(PQgetvalue(res, 0, 3), &out->token_id);
}

enum rc db_auth_token_user(PGconn *conn, const char *token_hash, struct db_auth_user *out,
                           const char *req_id)
{
    const char *p[1] = {token_hash};
    PGresult *res;
    enum rc rc;

    res = db_exec(conn,
                  "SELECT u.id, u.username, u.role, t.id FROM api_tokens t JOIN users u ON "
                  "u.id = t.user_id WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND "
                  "(t.expires_at IS NULL OR t.expires_at > now()) AND NOT u.disabled",
                  1, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = user_row(res, out, 0);
    PQclear(res);
    return rc;
}

enum rc db_auth_session_user(PGconn *conn, const char *session_hash, struct db_auth_user *out,
                             const char *req_id)
{
    const char *p[1] = {session_hash};
    PGresult *res;
    enum rc rc;

    res = db_exec(conn,
                  "SELECT u.id, u.username, u.role, s.csrf_token FROM sessions s JOIN users u ON "
                  "u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > now() AND NOT "
                  "u.disabled",
                  1, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = user_row(res, out, 1);
    PQclear(res);
    return rc;
}

enum rc db_auth_node(PGconn *conn, const char *credential_hash, int64_t *node_id, char *name,
                     size_t name_size, const char *req_id)
{
    const char *p[1] = {credential_hash};
    PGresult *res;
    enum rc rc;

    res = db_exec(conn, "SELECT id, name FROM nodes WHERE credential_hash = $1", 1, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        rc = db_parse_i64(PQgetvalue(res, 0, 0), node_id);
        snprintf(name, name_size, "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return rc;
}

enum rc auth_user_for_login(PGconn *conn, const char *username, int64_t *user_id, char *role,
                            size_t role_size, char *pwhash, size_t pwhash_size, int *disabled,
                            const char *req_id)
{
    const char *p[1] = {username};
    PGresult *res = db_exec(conn,
                            "SELECT id, role, password_hash, disabled FROM users WHERE "
                            "username = $1",
                            1, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        rc = db_parse_i64(PQgetvalue(res, 0, 0), user_id);
        snprintf(role, role_size, "%s", PQgetvalue(res, 0, 1));
        snprintf(pwhash, pwhash_size, "%s", PQgetvalue(res, 0, 2));
        *disabled = PQgetvalue(res, 0, 3)[0] == 't';
    }
    PQclear(res);
    return rc;
}

enum rc auth_session_create(PGconn *conn, int64_t user_id, const char *token_hash, const char *csrf,
                            int ttl_s, const char *req_id)
{
    char uid[32], ttl[32];
    const char *p[4] = {token_hash, uid, csrf, ttl};

    snprintf(uid, sizeof(uid), "%lld", (long long)user_id);
    snprintf(ttl, sizeof(ttl), "%d", ttl_s);
    return db_exec_ok(conn, req_id,
                      "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) VALUES "
                      "($1, $2, $3, now() + make_interval(secs => $4))",
                      4, p);
}

enum rc auth_session_delete(PGconn *conn, const char *token_hash, const char *req_id)
{
    const char *p[1] = {token_hash};
    return db_exec_ok(conn, req_id, "DELETE FROM sessions WHERE token_hash = $1", 1, p);
}

enum rc auth_user_teams(PGconn *conn, int64_t user_id, json_t **out, const char *req_id)
{
    char uid[32];
    const char *p[1] = {uid};
    PGresult *res;
    enum rc rc;

    snprintf(uid, sizeof(uid), "%lld", (long long)user_id);
    res = db_exec(conn,
                  "SELECT t.id, t.name FROM teams t JOIN memberships m ON m.team_id = t.id "
                  "WHERE m.user_id = $1 ORDER BY t.name",
                  1, p);
    rc = db_result_rc(res, req_id);
    *out = NULL;
    if (rc == RC_OK) {
        *out = json_array();
        for (int i = 0; *out && i < PQntuples(res); i++)
            json_array_append_new(*out, db_row_to_json(res, i));
    }
    PQclear(res);
    return rc;
}

enum rc auth_is_member(PGconn *conn, int64_t user_id, int64_t team_id, int *member,
                       const char *req_id)
{
    char uid[32], tid[32];
    const char *p[2] = {uid, tid};
    PGresult *res;
    enum rc rc;

    snprintf(uid, sizeof(uid), "%lld", (long long)user_id);
    snprintf(tid, sizeof(tid), "%lld", (long long)team_id);
    res = db_exec(conn, "SELECT 1 FROM memberships WHERE user_id = $1 AND team_id = $2", 2, p);
    rc = db_result_rc(res, req_id);
    *member = rc == RC_OK && PQntuples(res) == 1;
    PQclear(res);
    return rc;
}

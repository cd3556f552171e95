/*
 * db_users.c - see db_users.h.
 */
#include "db_users.h"

#include <stdio.h>
#include <string.h>

#include "db.h"

#define USER_COLS "id, username, display_name, role, disabled, created_at, unix_account"
#define TEAM_COLS "id, name, gpu_quota, priority_weight, created_at, unix_account"

enum rc db_user_create(PGconn *c, const char *username, const char *display_name, const char *role,
                       const char *pwhash, json_t **out, const char *req_id)
{
    const char *p[] = {username, display_name ? display_name : "", role, pwhash};
    return db_query_json(c,
                         "INSERT INTO users (username, display_name, role, password_hash) VALUES "
                         "($1, $2, $3, $4) RETURNING " USER_COLS,
                         4, p, 1, out, req_id);
}

enum rc db_user_update(PGconn *c, int64_t id, const char *display_name, const char *role,
                       const char *pwhash, int disabled, json_t **out, const char *req_id)
{
    char ids[24];
    const char *dis = disabled < 0 ? NULL : (disabled ? "true" : "false");
    const char *p[] = {db_i64(id, ids, sizeof(ids)), display_name, role, pwhash, dis};
    return db_query_json(
        c,
        "UPDATE users SET display_name = coalesce($2, display_name), role = "
        "coalesce($3, role), password_hash = coalesce($4, password_hash), disabled = "
        "coalesce($5::boolean, disabled) WHERE id = $1 RETURNING " USER_COLS,
        5, p, 1, out, req_id);
}

enum rc db_user_get(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    return db_query_json(c, "SELECT " USER_COLS " FROM users WHERE id = $1", 1, p, 1, out, req_id);
}

enum rc db_user_list(PGconn *c, const char *cursor, int limit, json_t **out, const char *req_id)
{
    char lim[24];
    const char *p[] = {cursor, db_i64(limit, lim, sizeof(lim))};
    return db_query_json(c,
                         "SELECT " USER_COLS " FROM users WHERE ($1::bigint IS NULL OR id < $1) "
                         "ORDER BY id DESC LIMIT $2",
                         2, p, 0, out, req_id);
}

enum rc db_user_drop_sessions(PGconn *c, int64_t id, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    return db_exec_ok(c, req_id, "DELETE FROM sessions WHERE user_id = $1", 1, p);
}

enum rc db_user_drop_other_sessions(PGconn *c, int64_t id, const char *keep, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), keep != NULL && keep[0] ? keep : NULL};
    return db_exec_ok(c, req_id,
                      "DELETE FROM sessions WHERE user_id = $1 AND ($2::text IS NULL OR "
                      "token_hash <> $2)",
                      2, p);
}

enum rc db_team_create(PGconn *c, const char *name, int64_t quota, double weight, json_t **out,
                       const char *req_id)
{
    char q[24], w[48];
    const char *p[] = {name, db_i64(quota, q, sizeof(q)), w};
    snprintf(w, sizeof(w), "%.17g", weight);
    return db_query_json(c,
                         "INSERT INTO teams (name, gpu_quota, priority_weight) VALUES ($1, $2, $3) "
                         "RETURNING " TEAM_COLS,
                         3, p, 1, out, req_id);
}

enum rc db_team_update(PGconn *c, int64_t id, int64_t quota, double weight, json_t **out,
                       const char *req_id)
{
    char ids[24], q[24], w[48];
    const char *p[] = {db_i64(id, ids, sizeof(ids)),
                       quota >= 0 ? db_i64(quota, q, sizeof(q)) : NULL, weight > 0 ? w : NULL};
    snprintf(w, sizeof(w), "%.17g", weight);
    return db_query_json(c,
                         "UPDATE teams SET gpu_quota = coalesce($2::integer, gpu_quota), "
                         "priority_weight = coalesce($3::double precision, priority_weight) "
                         "WHERE id = $1 RETURNING " TEAM_COLS,
                         3, p, 1, out, req_id);
}

/* One UPDATE ... SET unix_account = $2 WHERE id = $1 RETURNING the row (sql). */
static enum rc set_unix_account(PGconn *c, const char *sql, int64_t id, const char *account,
                                json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), account};
    return db_query_json(c, sql, 2, p, 1, out, req_id);
}

enum rc db_user_set_unix_account(PGconn *c, int64_t id, const char *account, json_t **out,
                                 const char *req_id)
{
    return set_unix_account(c,
                            "UPDATE users SET unix_account = $2 WHERE id = $1 RETURNING " USER_COLS,
                            id, account, out, req_id);
}

enum rc db_team_set_unix_account(PGconn *c, int64_t id, const char *account, json_t **out,
                                 const char *req_id)
{
    return set_unix_account(c,
                            "UPDATE teams SET unix_account = $2 WHERE id = $1 RETURNING " TEAM_COLS,
                            id, account, out, req_id);
}

enum rc db_team_get(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    return db_query_json(c, "SELECT " TEAM_COLS " FROM teams WHERE id = $1", 1, p, 1, out, req_id);
}

enum rc db_team_id(PGconn *c, const char *name, int64_t *id, const char *req_id)
{
    const char *p[] = {name};
    PGresult *res = db_exec(c, "SELECT id FROM teams WHERE name = $1", 1, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(res, 0, 0), id);
    PQclear(res);
    return rc;
}

enum rc db_team_list(PGconn *c, int64_t member_of, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {member_of > 0 ? db_i64(member_of, ids, sizeof(ids)) : NULL};
    return db_query_json(c,
                         "SELECT " TEAM_COLS " FROM teams t WHERE $1::bigint IS NULL OR EXISTS "
                         "(SELECT 1 FROM memberships m WHERE m.team_id = t.id AND m.user_id = $1) "
                         "ORDER BY name",
                         1, p, 0, out, req_id);
}

enum rc db_membership_set(PGconn *c, int64_t team_id, int64_t user_id, int add, const char *req_id)
{
    char t[24], u[24];
    const char *p[] = {db_i64(team_id, t, sizeof(t)), db_i64(user_id, u, sizeof(u))};
    PGresult *res;
    enum rc rc;

    if (add)
        return db_exec_ok(c, req_id, "INSERT INTO memberships (team_id, user_id) VALUES ($1, $2)",
                          2, p);
    res = db_exec(c, "DELETE FROM memberships WHERE team_id = $1 AND user_id = $2", 2, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && strcmp(PQcmdTuples(res), "0") == 0)
        rc = RC_ENOTFOUND;
    PQclear(res);
    return rc;
}

enum rc db_team_members(PGconn *c, int64_t team_id, json_t **out, const char *req_id)
{
    char t[24];
    const char *p[] = {db_i64(team_id, t, sizeof(t))};
    return db_query_json(
        c,
        "SELECT u.id, u.username, u.display_name, u.role FROM users u JOIN "
        "memberships m ON m.user_id = u.id WHERE m.team_id = $1 ORDER BY u.username",
        1, p, 0, out, req_id);
}

#define TOKEN_COLS "id, user_id, name, created_at, expires_at, revoked_at, last_used_at"

enum rc db_token_create(PGconn *c, int64_t user_id, const char *name, const char *token_hash,
                        int64_t expires_in_s, json_t **out, const char *req_id)
{
    char u[24], e[24];
    const char *p[] = {db_i64(user_id, u, sizeof(u)), name, token_hash,
                       expires_in_s > 0 ? db_i64(expires_in_s, e, sizeof(e)) : NULL};
    return db_query_json(
        c,
        "INSERT INTO api_tokens (user_id, name, token_hash, expires_at) VALUES ($1, "
        "$2, $3, CASE WHEN $4::bigint IS NULL THEN NULL ELSE now() + "
        "make_interval(secs => $4::bigint) END) RETURNING " TOKEN_COLS,
        4, p, 1, out, req_id);
}

enum rc db_token_list(PGconn *c, int64_t user_id, json_t **out, const char *req_id)
{
    char u[24];
    const char *p[] = {user_id > 0 ? db_i64(user_id, u, sizeof(u)) : NULL};
    return db_query_json(c,
                         "SELECT " TOKEN_COLS " FROM api_tokens WHERE $1::bigint IS NULL OR "
                         "user_id = $1 ORDER BY id DESC LIMIT 500",
                         1, p, 0, out, req_id);
}

enum rc db_token_revoke(PGconn *c, int64_t id, int64_t owner_id, const char *req_id)
{
    char t[24], o[24];
    const char *p[] = {db_i64(id, t, sizeof(t)),
                       owner_id > 0 ? db_i64(owner_id, o, sizeof(o)) : NULL};
    PGresult *res = db_exec(c,
                            "SELECT revoked_at IS NOT NULL FROM api_tokens WHERE id = $1 AND "
                            "($2::bigint IS NULL OR user_id = $2) FOR UPDATE",
                            2, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    else if (rc == RC_OK && PQgetvalue(res, 0, 0)[0] == 't')
        rc = RC_ECONFLICT;
    PQclear(res);
    if (rc == RC_OK)
        rc = db_exec_ok(c, req_id, "UPDATE api_tokens SET revoked_at = now() WHERE id = $1", 1, p);
    return rc;
}

/*
 * db_auth.c - credential lookups and session SQL (see db_auth.h).
 */
#include "db_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cache.h"
#include "config.h"
#include "crypto.h"
#include "db.h"
#include "log.h"

enum srv_role auth_role_parse(const char *s)
{
    if (s == NULL)
        return SRV_ROLE_NONE;
    if (strcmp(s, "admin") == 0)
        return SRV_ROLE_ADMIN;
    if (strcmp(s, "auditor") == 0)
        return SRV_ROLE_AUDITOR;
    if (strcmp(s, "member") == 0)
        return SRV_ROLE_MEMBER;
    return SRV_ROLE_NONE;
}

const char *auth_role_name(enum srv_role role)
{
    switch (role) {
    case SRV_ROLE_ADMIN:
        return "admin";
    case SRV_ROLE_AUDITOR:
        return "auditor";
    case SRV_ROLE_MEMBER:
        return "member";
    case SRV_ROLE_NONE:
        break;
    }
    return "none";
}

/* The value of cookie name in a Cookie header, copied into out. */
static int cookie_value(const char *header, const char *name, char *out, size_t out_size)
{
    size_t n = strlen(name);
    const char *p = header;

    while (p != NULL && *p) {
        while (*p == ' ' || *p == ';')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            const char *v = p + n + 1, *end = strchr(v, ';');
            size_t len = end ? (size_t)(end - v) : strlen(v);
            if (len == 0 || len >= out_size)
                return 0;
            memcpy(out, v, len);
            out[len] = '\0';
            return 1;
        }
        p = strchr(p, ';');
    }
    return 0;
}

static enum rc identify_user_row(struct srv_req *req, PGresult *res)
{
    snprintf(req->who.username, sizeof(req->who.username), "%s", PQgetvalue(res, 0, 1));
    req->who.role = auth_role_parse(PQgetvalue(res, 0, 2));
    if (db_parse_i64(PQgetvalue(res, 0, 0), &req->who.user_id) != RC_OK ||
        req->who.role == SRV_ROLE_NONE)
        return RC_EINTERNAL;
    req->who.authenticated = 1;
    return RC_OK;
}

static enum rc identify_token(struct srv_req *req, const char *token)
{
    char h[CRYPTO_SHA256_HEX_LEN + 1];
    const char *p[1] = {h};
    PGresult *res;
    enum rc rc;

    crypto_sha256_hex(token, strlen(token), h);
    res = db_exec(req->db,
                  "SELECT u.id, u.username, u.role, t.id FROM api_tokens t JOIN users u ON "
                  "u.id = t.user_id WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND "
                  "(t.expires_at IS NULL OR t.expires_at > now()) AND NOT u.disabled",
                  1, p);
    rc = db_result_rc(res, req->req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = srv_fail(req, RC_EAUTH, "", "the API token is unknown, expired or revoked");
    if (rc == RC_OK)
        rc = identify_user_row(req, res);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(res, 0, 3), &req->who.token_id);
    PQclear(res);
    return rc;
}

static enum rc identify_session(struct srv_req *req, const char *sid)
{
    const char *p[1];
    PGresult *res;
    enum rc rc;

    crypto_sha256_hex(sid, strlen(sid), req->who.session_hash);
    p[0] = req->who.session_hash;
    res = db_exec(req->db,
                  "SELECT u.id, u.username, u.role, s.csrf_token FROM sessions s JOIN users u ON "
                  "u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > now() AND NOT "
                  "u.disabled",
                  1, p);
    rc = db_result_rc(res, req->req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = srv_fail(req, RC_EAUTH, "", "the session has expired; sign in again");
    if (rc == RC_OK)
        rc = identify_user_row(req, res);
    if (rc == RC_OK) {
        snprintf(req->who.csrf, sizeof(req->who.csrf), "%s", PQgetvalue(res, 0, 3));
        req->who.via_cookie = 1;
    }
    PQclear(res);
    return rc;
}

static enum rc identify_node(struct srv_req *req, const char *cred)
{
    char h[CRYPTO_SHA256_HEX_LEN + 1];
    const char *p[1] = {h};
    PGresult *res;
    enum rc rc;

    crypto_sha256_hex(cred, strlen(cred), h);
    res = db_exec(req->db, "SELECT id, name FROM nodes WHERE credential_hash = $1", 1, p);
    rc = db_result_rc(res, req->req_id);
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = srv_fail(req, RC_EAUTH, "", "the node credential is unknown; join the node again");
    if (rc == RC_OK) {
        rc = db_parse_i64(PQgetvalue(res, 0, 0), &req->who.node_id);
        snprintf(req->who.node_name, sizeof(req->who.node_name), "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return rc;
}

/* Serve the identity from the cache, or look it up and remember it. */
static enum rc identify_cached(struct srv_req *req, char kind, const char *secret,
                               enum rc (*lookup)(struct srv_req *, const char *))
{
    struct cache *c = req->app->auth_cache;
    int ttl = req->app->cfg->cache_ttl_ms;
    char key[300], *val = NULL;
    size_t len = 0;
    enum rc rc;

    snprintf(key, sizeof(key), "%c:%s", kind, secret);
    if (ttl > 0 && c != NULL && cache_get(c, key, srv_now_ms(), 0, &val, &len)) {
        if (len == sizeof(req->who)) {
            memcpy(&req->who, val, sizeof(req->who));
            free(val);
            val = NULL;
        }
        free(val);
    }
    /* Handlers expect the request's connection checked out (no round trip). */
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    if (req->who.authenticated || req->who.node_id != 0)
        return RC_OK;
    rc = lookup(req, secret);
    if (rc == RC_OK && ttl > 0 && c != NULL)
        cache_put(c, key, &req->who, sizeof(req->who), srv_now_ms() + ttl, 0);
    return rc;
}

void auth_forget_all(struct srv_app *app)
{
    if (app->auth_cache != NULL)
        cache_clear(app->auth_cache);
}

enum rc auth_identify(struct srv_req *req, int agent)
{
    const char *authz = srv_header(req, "Authorization");
    const char *cookies;
    char sid[128];

    if (authz != NULL) {
        const char *tok;
        if (strncasecmp(authz, "Bearer ", 7) != 0)
            return srv_fail(req, RC_EAUTH, "", "the Authorization header must be \"Bearer TOKEN\"");
        tok = authz + 7;
        if (strlen(tok) > 256)
            return srv_fail(req, RC_EAUTH, "", "the bearer token is malformed");
        if (agent) {
            if (strncmp(tok, "tyn_", 4) != 0)
                return srv_fail(req, RC_EAUTH, "", "a node credential is required");
            return identify_cached(req, 'n', tok, identify_node);
        }
        if (strncmp(tok, "tyt_", 4) != 0)
            return srv_fail(req, RC_EAUTH, "", "the bearer token is not an API token");
        return identify_cached(req, 't', tok, identify_token);
    }
    if (agent)
        return srv_fail(req, RC_EAUTH, "", "a node credential is required");
    cookies = srv_header(req, "Cookie");
    if (cookies != NULL && cookie_value(cookies, AUTH_SESSION_COOKIE, sid, sizeof(sid)))
        return identify_cached(req, 's', sid, identify_session);
    return srv_fail(req, RC_EAUTH, "", "sign in or send an API token");
}

int auth_csrf_ok(const struct srv_req *req, const char *csrf)
{
    return req->who.csrf[0] != '\0' && crypto_str_equal(req->who.csrf, csrf);
}

enum rc auth_user_for_login(PGconn *conn, const char *username, int64_t *user_id,
                            enum srv_role *role, char *pwhash, size_t pwhash_size, int *disabled,
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
        *role = auth_role_parse(PQgetvalue(res, 0, 1));
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

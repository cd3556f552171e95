/*
 * auth.c - who is calling (see auth.h); the SQL is store/db_auth.c.
 */
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cache.h"
#include "config.h"
#include "crypto.h"
#include "db_auth.h"

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

static enum rc identify_user(struct srv_req *req, const struct db_auth_user *u)
{
    snprintf(req->who.username, sizeof(req->who.username), "%s", u->username);
    req->who.role = auth_role_parse(u->role);
    req->who.user_id = u->user_id;
    if (req->who.role == SRV_ROLE_NONE)
        return RC_EINTERNAL;
    req->who.authenticated = 1;
    return RC_OK;
}

static enum rc identify_token(struct srv_req *req, const char *token)
{
    char h[CRYPTO_SHA256_HEX_LEN + 1];
    struct db_auth_user u;
    enum rc rc;

    crypto_sha256_hex(token, strlen(token), h);
    rc = db_auth_token_user(req->db, h, &u, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EAUTH, "", "the API token is unknown, expired or revoked");
    if (rc == RC_OK)
        rc = identify_user(req, &u);
    if (rc == RC_OK)
        req->who.token_id = u.token_id;
    return rc;
}

static enum rc identify_session(struct srv_req *req, const char *sid)
{
    struct db_auth_user u;
    enum rc rc;

    crypto_sha256_hex(sid, strlen(sid), req->who.session_hash);
    rc = db_auth_session_user(req->db, req->who.session_hash, &u, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EAUTH, "", "the session has expired; sign in again");
    if (rc == RC_OK)
        rc = identify_user(req, &u);
    if (rc == RC_OK) {
        snprintf(req->who.csrf, sizeof(req->who.csrf), "%s", u.csrf);
        req->who.via_cookie = 1;
    }
    return rc;
}

static enum rc identify_node(struct srv_req *req, const char *cred)
{
    char h[CRYPTO_SHA256_HEX_LEN + 1];
    enum rc rc;

    crypto_sha256_hex(cred, strlen(cred), h);
    rc = db_auth_node(req->db, h, &req->who.node_id, req->who.node_name, sizeof(req->who.node_name),
                      req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EAUTH, "", "the node credential is unknown; join the node again");
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

/*
 * api_auth.c - sign-in, sign-out, the current user and API tokens.
 *
 * Login is rate-limited per username and per source address. A wrong
 * username costs the same PBKDF2 work as a wrong password, so response time
 * does not reveal which usernames exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "auth.h"
#include "crypto.h"
#include "db.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_users.h"
#include "log.h"
#include "ratelimit.h"

/* A real PBKDF2 hash of a throwaway password, verified when the user is unknown. */
static const char dummy_hash[] =
    "pbkdf2-sha256$600000$dHJhaW55YXJkLWR1bW15IQ$_ngvfmxposZhQI0u9IKUkJ0gDuM4ao6yzRKNawe_PSg";

static enum rc login_refused(struct srv_req *req, const char *username, const char *why, enum rc rc,
                             const char *msg)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *details = json_pack("{s:s}", "reason", why);
    enum rc arc;

    /* A username no user can have is not a target: it is kept as typed in
     * the details instead, so that it cannot pose as another target. */
    if (audit_target_name(AUDIT_TARGET_USER, username, target) != RC_OK && details != NULL)
        json_object_set_new(details, "username", json_string(username));
    arc = audit_append_alone(req, "auth.login", target, rc == RC_ERATE ? "denied" : "failure",
                             details);
    json_decref(details);
    if (arc != RC_OK)
        return srv_fail(req, arc, "", "cannot record the login attempt");
    return srv_fail(req, rc, "", "%s", msg);
}

enum rc api_login(struct srv_req *req)
{
    static const char *const allowed[] = {"username", "password", NULL};
    struct ratelimit *rl = req->app->login_limit, *al = req->app->addr_limit;
    const char *username, *password;
    char ukey[128], akey[96], pwhash[CRYPTO_PWHASH_MAX], sid[64], csrf[64],
        sid_hash[CRYPTO_SHA256_HEX_LEN + 1], cookie[256], target[AUDIT_TARGET_SIZE], id[24];
    int64_t user_id = 0, now = srv_now_ms();
    char role[16] = "";
    int disabled = 0;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "username", 1, 64, &username)) != RC_OK ||
        (rc = api_opt_string(req, "password", 1, 1024, &password)) != RC_OK)
        return rc;
    if (username == NULL)
        return srv_fail(req, RC_EINVAL, "username", "username is required");
    if (password == NULL)
        return srv_fail(req, RC_EINVAL, "password", "password is required");
    snprintf(ukey, sizeof(ukey), "u:%s", username);
    snprintf(akey, sizeof(akey), "a:%s", req->client_addr);
    if (ratelimit_blocked(rl, ukey, now) || ratelimit_blocked(al, akey, now))
        return login_refused(req, username, "rate_limited", RC_ERATE,
                             "too many failed sign-ins; wait a few minutes");
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = auth_user_for_login(req->db, username, &user_id, role, sizeof(role), pwhash,
                             sizeof(pwhash), &disabled, req->req_id);
    if (rc != RC_OK && rc != RC_ENOTFOUND)
        return rc;
    if (rc == RC_ENOTFOUND || disabled) {
        (void)crypto_password_verify(password, dummy_hash);
        ratelimit_fail(rl, ukey, now);
        ratelimit_fail(al, akey, now);
        return login_refused(req, username, rc == RC_ENOTFOUND ? "unknown_user" : "disabled",
                             RC_EAUTH, "wrong username or password");
    }
    if (crypto_password_verify(password, pwhash) != RC_OK) {
        ratelimit_fail(rl, ukey, now);
        ratelimit_fail(al, akey, now);
        return login_refused(req, username, "bad_password", RC_EAUTH, "wrong username or password");
    }
    ratelimit_reset(rl, ukey);
    if (crypto_random_token("tys_", 32, sid, sizeof(sid)) != RC_OK ||
        crypto_random_token("", 24, csrf, sizeof(csrf)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(sid, strlen(sid), sid_hash);
    snprintf(req->who.username, sizeof(req->who.username), "%s", username);
    req->who.authenticated = 1;
    req->who.user_id = user_id;
    if ((rc = audit_target_name(AUDIT_TARGET_USER, username, target)) != RC_OK ||
        (rc = api_begin(req)) != RC_OK)
        return rc;
    rc = auth_session_create(req->db, user_id, sid_hash, csrf, req->app->cfg->session_ttl_s,
                             req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "auth.login", target, "success", NULL);
    if ((rc = api_end(req, rc)) != RC_OK)
        return rc;
    snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s",
             AUTH_SESSION_COOKIE, sid, req->app->cfg->session_ttl_s,
             strncmp(req->app->cfg->public_url, "https:", 6) == 0 ? "; Secure" : "");
    req->set_cookie = strdup(cookie);
    if (req->set_cookie == NULL)
        return RC_ENOMEM;
    return srv_reply(req, 200,
                     json_pack("{s:{s:s,s:s,s:s},s:s,s:i}", "user", "id",
                               api_i64(user_id, id, sizeof(id)), "username", username, "role",
                               auth_role_name(auth_role_parse(role)), "csrf_token", csrf,
                               "expires_in_s", req->app->cfg->session_ttl_s));
}

enum rc api_logout(struct srv_req *req)
{
    char target[AUDIT_TARGET_SIZE];
    enum rc rc;

    if (!req->who.via_cookie)
        return srv_fail(req, RC_EINVAL, "",
                        "logout ends a browser session; revoke API tokens "
                        "with DELETE /api/v1/tokens/{id}");
    if ((rc = audit_target_name(AUDIT_TARGET_USER, req->who.username, target)) != RC_OK ||
        (rc = api_begin(req)) != RC_OK)
        return rc;
    rc = auth_session_delete(req->db, req->who.session_hash, req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "auth.logout", target, "success", NULL);
    if ((rc = api_end(req, rc)) != RC_OK)
        return rc;
    auth_forget_all(req->app);
    req->set_cookie = strdup(AUTH_SESSION_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
}

enum rc api_me(struct srv_req *req)
{
    json_t *teams = NULL, *out;
    char id[24];
    enum rc rc = auth_user_teams(req->db, req->who.user_id, &teams, req->req_id);

    if (rc != RC_OK)
        return rc;
    out = json_pack("{s:s,s:s,s:s,s:o,s:s}", "id", api_i64(req->who.user_id, id, sizeof(id)),
                    "username", req->who.username, "role", auth_role_name(req->who.role), "teams",
                    teams, "auth", req->who.via_cookie ? "session" : "token");
    if (out != NULL && req->who.via_cookie)
        json_object_set_new(out, "csrf_token", json_string(req->who.csrf));
    return srv_reply(req, 200, out);
}

/* A refused password change, recorded on its own (nothing else changes). */
static enum rc password_refused(struct srv_req *req, const char *target, const char *why,
                                enum rc rc, const char *msg)
{
    json_t *details = json_pack("{s:s}", "reason", why);
    enum rc arc = audit_append_alone(req, "user.password", target,
                                     rc == RC_ERATE ? "denied" : "failure", details);

    json_decref(details);
    if (arc != RC_OK)
        return srv_fail(req, arc, "", "cannot record the password change attempt");
    return srv_fail(req, rc, "current_password", "%s", msg);
}

enum rc api_me_password(struct srv_req *req)
{
    static const char *const allowed[] = {"current_password", "new_password", NULL};
    struct ratelimit *rl = req->app->login_limit;
    const char *cur, *next;
    char key[96], pwhash[CRYPTO_PWHASH_MAX], newhash[CRYPTO_PWHASH_MAX], target[AUDIT_TARGET_SIZE];
    int64_t user_id = 0, now = srv_now_ms();
    char role[16] = "";
    int disabled = 0;
    json_t *row = NULL;
    enum rc rc;

    /* The same rules as a password an admin sets (api_user_create). */
    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "current_password", 1, 1024, &cur)) != RC_OK ||
        (rc = api_opt_string(req, "new_password", 12, 1024, &next)) != RC_OK)
        return rc;
    if (cur == NULL)
        return srv_fail(req, RC_EINVAL, "current_password", "current_password is required");
    if (next == NULL)
        return srv_fail(req, RC_EINVAL, "new_password", "new_password is required");
    if ((rc = audit_target_name(AUDIT_TARGET_USER, req->who.username, target)) != RC_OK)
        return rc;
    /* A stolen session or token must not become a way to guess the
     * password: wrong guesses count like failed sign-ins of that user. */
    snprintf(key, sizeof(key), "u:%s", req->who.username);
    if (ratelimit_blocked(rl, key, now))
        return password_refused(req, target, "rate_limited", RC_ERATE,
                                "too many wrong passwords; wait a few minutes");
    rc = auth_user_for_login(req->db, req->who.username, &user_id, role, sizeof(role), pwhash,
                             sizeof(pwhash), &disabled, req->req_id);
    if (rc != RC_OK)
        return rc;
    if (crypto_password_verify(cur, pwhash) != RC_OK) {
        ratelimit_fail(rl, key, now);
        return password_refused(req, target, "bad_password", RC_EPERM,
                                "the current password is wrong");
    }
    if (crypto_password_hash(next, (unsigned)req->app->cfg->pbkdf2_iterations, newhash) != RC_OK)
        return RC_EINTERNAL;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_user_update(req->db, req->who.user_id, NULL, NULL, newhash, -1, &row, req->req_id);
    /* Every other sign-in of the user ends; the session that changed it
     * (if any) goes on. API tokens are revoked on their own page. */
    if (rc == RC_OK)
        rc = db_user_drop_other_sessions(req->db, req->who.user_id,
                                         req->who.via_cookie ? req->who.session_hash : NULL,
                                         req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "user.password", target, "success", NULL);
    rc = api_end(req, rc);
    json_decref(row);
    if (rc != RC_OK)
        return rc;
    ratelimit_reset(rl, key);
    auth_forget_all(req->app);
    return srv_reply(req, 200, json_pack("{s:b}", "ok", 1));
}

enum rc api_token_create(struct srv_req *req)
{
    static const char *const allowed[] = {"name", "expires_in_s", NULL};
    const char *name;
    int64_t expires = 0;
    int has_exp;
    char tok[80], h[CRYPTO_SHA256_HEX_LEN + 1], target[AUDIT_TARGET_SIZE];
    json_t *row = NULL;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 128, &name)) != RC_OK ||
        (rc = api_opt_int(req, "expires_in_s", 60, 3650LL * 86400, &expires, &has_exp)) != RC_OK)
        return rc;
    if (name == NULL)
        return srv_fail(req, RC_EINVAL, "name", "name is required");
    if (crypto_random_token("tyt_", 32, tok, sizeof(tok)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(tok, strlen(tok), h);
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_token_create(req->db, req->who.user_id, name, h, has_exp ? expires : 0, &row,
                         req->req_id);
    if (rc == RC_OK) {
        json_t *d =
            json_pack("{s:s,s:O}", "name", name, "expires_at", json_object_get(row, "expires_at"));
        rc = audit_target_id_text(AUDIT_TARGET_TOKEN, json_string_value(json_object_get(row, "id")),
                                  target);
        if (rc == RC_OK)
            rc = audit_append_req(req, "token.create", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    /* The secret is shown once; only its hash is stored. */
    json_object_set_new(row, "token", json_string(tok));
    return srv_reply(req, 201, row);
}

enum rc api_token_list(struct srv_req *req)
{
    json_t *rows = NULL;
    const char *all = srv_query(req, "all");
    int64_t owner = req->who.user_id;
    enum rc rc;

    if (all != NULL && strcmp(all, "1") == 0) {
        if (req->who.role != SRV_ROLE_ADMIN)
            return srv_fail(req, RC_EPERM, "all", "only admins list every user's tokens");
        owner = 0;
    }
    rc = db_token_list(req->db, owner, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "tokens", rows));
}

enum rc api_token_revoke(struct srv_req *req)
{
    int64_t id;
    char target[AUDIT_TARGET_SIZE];
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "token")) != RC_OK ||
        (rc = audit_target_id(AUDIT_TARGET_TOKEN, id, target)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_token_revoke(req->db, id, req->who.role == SRV_ROLE_ADMIN ? 0 : req->who.user_id,
                         req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "token.revoke", target, "success", NULL);
    rc = api_end(req, rc);
    if (rc == RC_OK)
        auth_forget_all(req->app);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such token");
    if (rc == RC_ECONFLICT)
        return srv_fail(req, rc, "", "the token is already revoked");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:b}", "revoked", 1));
}

/*
 * api_admin.c - users, teams and memberships. Changes are admin-only and
 * each one is audited in its own transaction together with the change.
 */
#include <ctype.h>
#include <stdio.h>
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
#include "notify.h"
#include "unixname.h"

/* [a-z0-9][a-z0-9._-]* of at most 64 bytes: safe in URLs, logs and audit targets. */
static int valid_slug(const char *s, int allow_dot)
{
    size_t n = strlen(s);

    if (n == 0 || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(islower(c) || isdigit(c) || c == '-' || c == '_' || (allow_dot && c == '.')))
            return 0;
    }
    return 1;
}

static enum rc opt_role(struct srv_req *req, const char **role)
{
    enum rc rc = api_opt_string(req, "role", 1, 16, role);

    if (rc == RC_OK && *role != NULL && auth_role_parse(*role) == SRV_ROLE_NONE) {
        srv_fail(req, RC_EINVAL, "role", "role must be admin, auditor or member");
        err_detail(&req->err, "got \"%.32s\"", *role);
        return RC_EINVAL;
    }
    return rc;
}

/*
 * "unix_account" of a user or team update: the Unix account the ranks of
 * their jobs run as (common/unixname.h), or null / "" to clear it. Root is
 * refused here too; each node still checks the name against its own
 * --job-users. *present 0 when the body does not have it; *account NULL
 * clears.
 */
static enum rc opt_unix_account(struct srv_req *req, int *present, const char **account)
{
    json_t *v = json_object_get(req->body, "unix_account");
    const char *s;

    *present = v != NULL;
    *account = NULL;
    if (v == NULL || json_is_null(v))
        return RC_OK;
    s = json_string_value(v);
    if (s != NULL && s[0] == '\0')
        return RC_OK;
    if (s == NULL || !unixname_valid(s) || strcmp(s, "root") == 0 || strcmp(s, "self") == 0) {
        srv_fail(req, RC_EINVAL, "unix_account",
                 "unix_account must be a Unix account name other than root: [a-z_][a-z0-9_-]*, "
                 "at most 32 characters, or null to clear it");
        if (s != NULL)
            err_detail(&req->err, "got \"%.40s\"", s);
        return RC_EINVAL;
    }
    *account = s;
    return RC_OK;
}

/* Audit a change of the user or team in row, named by its name (the row's key member). */
static enum rc audit_named(struct srv_req *req, const char *action, enum audit_target_named kind,
                           const json_t *row, const char *key, json_t *details)
{
    char target[AUDIT_TARGET_SIZE];
    enum rc rc = audit_target_name(kind, json_string_value(json_object_get(row, key)), target);

    return rc == RC_OK ? audit_append_req(req, action, target, "success", details) : rc;
}

enum rc api_user_create(struct srv_req *req)
{
    static const char *const allowed[] = {"username", "display_name", "role", "password", NULL};
    const char *username, *display, *role, *password;
    char generated[48] = "", pwhash[CRYPTO_PWHASH_MAX];
    json_t *row = NULL, *d;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "username", 1, 64, &username)) != RC_OK ||
        (rc = api_opt_string(req, "display_name", 0, 128, &display)) != RC_OK ||
        (rc = opt_role(req, &role)) != RC_OK ||
        (rc = api_opt_string(req, "password", 12, 1024, &password)) != RC_OK)
        return rc;
    if (username == NULL || !valid_slug(username, 1))
        return srv_fail(req, RC_EINVAL, "username",
                        "username must be 1 to 64 of a-z, 0-9, '.', '_', '-'");
    if (role == NULL)
        return srv_fail(req, RC_EINVAL, "role", "role is required");
    if (password == NULL) {
        if (crypto_random_token("", 18, generated, sizeof(generated)) != RC_OK)
            return RC_EINTERNAL;
        password = generated;
    }
    if (crypto_password_hash(password, (unsigned)req->app->cfg->pbkdf2_iterations, pwhash) != RC_OK)
        return RC_EINTERNAL;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_user_create(req->db, username, display, role, pwhash, &row, req->req_id);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s}", "username", username, "role", role);
        rc = audit_named(req, "user.create", AUDIT_TARGET_USER, row, "username", d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc == RC_ECONFLICT) {
        json_decref(row);
        return srv_fail(req, rc, "username", "a user named \"%s\" exists already", username);
    }
    if (rc != RC_OK) {
        json_decref(row);
        return rc;
    }
    if (generated[0] != '\0')
        json_object_set_new(row, "password", json_string(generated));
    return srv_reply(req, 201, row);
}

enum rc api_user_list(struct srv_req *req)
{
    char cursor[24];
    int limit;
    json_t *rows = NULL, *last;
    enum rc rc;

    if ((rc = api_page(req, 50, 500, &limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    rc = db_user_list(req->db, cursor[0] ? cursor : NULL, limit, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "users", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_user_get(struct srv_req *req)
{
    int64_t id;
    json_t *row = NULL;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "user")) != RC_OK)
        return rc;
    rc = db_user_get(req->db, id, &row, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such user");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

enum rc api_user_update(struct srv_req *req)
{
    static const char *const allowed[] = {"display_name", "role",         "password",
                                          "disabled",     "unix_account", NULL};
    const char *display, *role, *password, *account;
    char pwhash[CRYPTO_PWHASH_MAX];
    json_t *jdis, *row = NULL, *d;
    int disabled = -1, has_account;
    int64_t id;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "user")) != RC_OK ||
        (rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "display_name", 0, 128, &display)) != RC_OK ||
        (rc = opt_role(req, &role)) != RC_OK ||
        (rc = api_opt_string(req, "password", 12, 1024, &password)) != RC_OK ||
        (rc = opt_unix_account(req, &has_account, &account)) != RC_OK)
        return rc;
    jdis = json_object_get(req->body, "disabled");
    if (jdis != NULL && !json_is_boolean(jdis))
        return srv_fail(req, RC_EINVAL, "disabled", "disabled must be true or false");
    if (jdis != NULL)
        disabled = json_is_true(jdis);
    if (id == req->who.user_id && (disabled == 1 || (role && strcmp(role, "admin") != 0)))
        return srv_fail(req, RC_ECONFLICT, "", "admins cannot disable or demote themselves");
    if (password != NULL &&
        crypto_password_hash(password, (unsigned)req->app->cfg->pbkdf2_iterations, pwhash) != RC_OK)
        return RC_EINTERNAL;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_user_update(req->db, id, display, role, password ? pwhash : NULL, disabled, &row,
                        req->req_id);
    if (rc == RC_OK && has_account) {
        json_decref(row);
        row = NULL;
        rc = db_user_set_unix_account(req->db, id, account, &row, req->req_id);
    }
    if (rc == RC_OK && (disabled == 1 || password != NULL || role != NULL))
        rc = db_user_drop_sessions(req->db, id, req->req_id);
    if (rc == RC_OK) {
        d = json_object();
        if (display)
            json_object_set_new(d, "display_name", json_string(display));
        if (role)
            json_object_set_new(d, "role", json_string(role));
        if (password)
            json_object_set_new(d, "password_changed", json_true());
        if (disabled >= 0)
            json_object_set_new(d, "disabled", json_boolean(disabled));
        if (has_account)
            json_object_set_new(d, "unix_account", account ? json_string(account) : json_null());
        rc = audit_named(req, "user.update", AUDIT_TARGET_USER, row, "username", d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc != RC_OK) {
        json_decref(row);
        return rc == RC_ENOTFOUND ? srv_fail(req, rc, "", "no such user") : rc;
    }
    auth_forget_all(req->app);
    return srv_reply(req, 200, row);
}

static enum rc team_fields(struct srv_req *req, int64_t *quota, double *weight)
{
    int present;
    json_t *w;
    enum rc rc = api_opt_int(req, "gpu_quota", 0, 1000000, quota, &present);

    if (rc != RC_OK)
        return rc;
    if (!present)
        *quota = -1;
    *weight = 0;
    w = json_object_get(req->body, "priority_weight");
    if (w != NULL) {
        if (!json_is_number(w) || json_number_value(w) <= 0 || json_number_value(w) > 1000)
            return srv_fail(req, RC_EINVAL, "priority_weight",
                            "priority_weight must be a number above 0 and at most 1000");
        *weight = json_number_value(w);
    }
    return RC_OK;
}

enum rc api_team_create(struct srv_req *req)
{
    static const char *const allowed[] = {"name", "gpu_quota", "priority_weight", NULL};
    const char *name;
    int64_t quota;
    double weight;
    json_t *row = NULL, *d;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 64, &name)) != RC_OK ||
        (rc = team_fields(req, &quota, &weight)) != RC_OK)
        return rc;
    if (name == NULL || !valid_slug(name, 0))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 64 of a-z, 0-9, '_', '-'");
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_team_create(req->db, name, quota < 0 ? 0 : quota, weight > 0 ? weight : 1.0, &row,
                        req->req_id);
    /* Quotas and weights steer the leader's order, which may be elsewhere;
     * sent before the audit event, which holds the chain's lock to COMMIT. */
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:O,s:O}", "name", name, "gpu_quota", json_object_get(row, "gpu_quota"),
                      "priority_weight", json_object_get(row, "priority_weight"));
        rc = audit_named(req, "team.create", AUDIT_TARGET_TEAM, row, "name", d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc != RC_OK) {
        json_decref(row);
        return rc == RC_ECONFLICT
                   ? srv_fail(req, rc, "name", "a team named \"%s\" exists already", name)
                   : rc;
    }
    app_wake_scheduler(req->app);
    return srv_reply(req, 201, row);
}

enum rc api_team_list(struct srv_req *req)
{
    json_t *rows = NULL;
    int64_t member_of = req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0;
    enum rc rc = db_team_list(req->db, member_of, &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "teams", rows));
}

/* Members may read only their own teams; others get a 404, not a 403, so
 * team ids do not leak. */
static enum rc team_visible(struct srv_req *req, int64_t id)
{
    int member = 1;
    enum rc rc = RC_OK;

    if (req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such team");
    return rc;
}

enum rc api_team_get(struct srv_req *req)
{
    int64_t id;
    json_t *row = NULL, *members = NULL;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "team")) != RC_OK || (rc = team_visible(req, id)) != RC_OK)
        return rc;
    rc = db_team_get(req->db, id, &row, req->req_id);
    if (rc == RC_OK)
        rc = db_team_members(req->db, id, &members, req->req_id);
    if (rc != RC_OK) {
        json_decref(row);
        return rc == RC_ENOTFOUND ? srv_fail(req, rc, "", "no such team") : rc;
    }
    json_object_set_new(row, "members", members);
    return srv_reply(req, 200, row);
}

enum rc api_team_update(struct srv_req *req)
{
    static const char *const allowed[] = {"gpu_quota", "priority_weight", "unix_account", NULL};
    int64_t id, quota;
    double weight;
    json_t *row = NULL;
    const char *account;
    int has_account;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "team")) != RC_OK ||
        (rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = team_fields(req, &quota, &weight)) != RC_OK ||
        (rc = opt_unix_account(req, &has_account, &account)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_team_update(req->db, id, quota, weight, &row, req->req_id);
    if (rc == RC_OK && has_account) {
        json_decref(row);
        row = NULL;
        rc = db_team_set_unix_account(req->db, id, account, &row, req->req_id);
    }
    if (rc == RC_OK)
        rc = notify_send(req->app, req->db, NULL, 0, 1, req->req_id);
    if (rc == RC_OK)
        rc = audit_named(req, "team.update", AUDIT_TARGET_TEAM, row, "name", req->body);
    rc = api_end(req, rc);
    if (rc != RC_OK) {
        json_decref(row);
        return rc == RC_ENOTFOUND ? srv_fail(req, rc, "", "no such team") : rc;
    }
    app_wake_scheduler(req->app);
    return srv_reply(req, 200, row);
}

enum rc api_team_members(struct srv_req *req)
{
    int64_t id;
    json_t *rows = NULL, *row = NULL;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "team")) != RC_OK)
        return rc;
    rc = db_team_get(req->db, id, &row, req->req_id);
    json_decref(row);
    if (rc == RC_OK)
        rc = db_team_members(req->db, id, &rows, req->req_id);
    if (rc != RC_OK)
        return rc == RC_ENOTFOUND ? srv_fail(req, rc, "", "no such team") : rc;
    return srv_reply(req, 200, json_pack("{s:o}", "members", rows));
}

static enum rc member_change(struct srv_req *req, int add)
{
    int64_t team, user;
    json_t *d, *row = NULL;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &team, "team")) != RC_OK ||
        (rc = api_param_id(req, 1, &user, "user")) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_membership_set(req->db, team, user, add, req->req_id);
    if (rc == RC_OK) /* the team exists: the membership names it */
        rc = db_team_get(req->db, team, &row, req->req_id);
    if (rc == RC_OK) {
        d = json_pack("{s:I}", "user_id", (json_int_t)user);
        rc = audit_named(req, add ? "team.member_add" : "team.member_remove", AUDIT_TARGET_TEAM,
                         row, "name", d);
        json_decref(d);
    }
    json_decref(row);
    rc = api_end(req, rc);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", add ? "no such team or user" : "no such membership");
    if (rc == RC_ECONFLICT)
        return srv_fail(req, rc, "", "the user is a member already");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, add ? 201 : 200, json_pack("{s:b}", "member", add));
}

enum rc api_team_member_add(struct srv_req *req)
{
    return member_change(req, 1);
}

enum rc api_team_member_remove(struct srv_req *req)
{
    return member_change(req, 0);
}

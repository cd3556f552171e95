/*
 * api_policy.c - the data-residency policy: sites (storage roots and
 * internal networks), the installation-wide compliance policy, registered
 * datasets, and the record of refusals (api_policy.h).
 *
 * Who may do what: admins change sites and the policy; admins and members of
 * the owner team register and delete datasets; auditors read everything here
 * and change nothing. Members list site names (to choose one for a job) and
 * see the datasets of their teams plus public ones; other datasets answer 404
 * so their names do not leak.
 *
 * Every value an admin gives is checked with common/pathpol.h before it is
 * stored: a root must normalize (absolute, no '%', '\\', look-alikes, "..")
 * and is stored normalized; a network must parse as a CIDR. Every change is
 * audited in the transaction that makes it.
 */
#include "api_policy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "audit_target.h"
#include "db.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_policy.h"
#include "db_users.h"
#include "db_webhooks.h"
#include "jx.h"
#include "log.h"
#include "pathpol.h"

#define MAX_ROOTS 32
#define MAX_NETS 64
#define MAX_RETENTION_DAYS 36500
#define MIN_RETENTION_DAYS 180 /* China's MLPS 2.0 asks that logs be kept 180 days */

/* [a-z0-9][a-z0-9_-]{0,63} (extra: also '.'): names in URLs, specs and audit targets. */
static int valid_name(const char *s, int allow_dot)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(islower(c) || isdigit(c) || c == '-' || c == '_' || (allow_dot && c == '.')))
            return 0;
    }
    return 1;
}

enum rc policy_refuse(struct srv_req *req, int64_t team_id, const char *target, const char *stage,
                      const char *field, const struct err *e, const json_t *ctx, const json_t *job)
{
    json_t *d = json_object();
    char msg[400];
    enum rc rc;

    if (d != NULL && ctx != NULL)
        json_object_update(d, (json_t *)ctx);
    if (d != NULL) {
        json_object_set_new(d, "stage", json_string(stage));
        json_object_set_new(d, "field", json_string(field));
        json_object_set_new(d, "reason", json_string(e->message));
        json_object_set_new(d, "detail", json_string(e->detail));
    }
    snprintf(msg, sizeof(msg), "%s: %s", field, e->message);
    rc = d != NULL ? api_begin(req) : RC_ENOMEM;
    if (rc == RC_OK)
        rc = audit_append_req(req, "policy.violation", target, "denied", d);
    if (rc == RC_OK && team_id > 0)
        rc = webhooks_enqueue_team(req->db, team_id, "policy.violation", msg, job, d, req->req_id);
    rc = api_end(req, rc);
    if (rc != RC_OK)
        LOG_ERROR("policy", "cannot record a policy violation", "req_id=%s rc=%s", req->req_id,
                  rc_str(rc));
    json_decref(d);
    req->err = *e;
    req->err.rc = RC_EPOLICY;
    snprintf(req->err.code, sizeof(req->err.code), "policy_violation");
    snprintf(req->err.field, sizeof(req->err.field), "%s", field);
    return RC_EPOLICY;
}

/* ---------- sites ---------- */

/*
 * Optional array member key of at most max strings, each checked by
 * check(i, s, norm) which may rewrite it into norm; *out_json receives the
 * array as JSON text (malloc'ed, NULL when absent). A bad value names the
 * element ("storage_roots[1]").
 */
static enum rc opt_list(struct srv_req *req, const char *key, size_t max,
                        enum rc (*check)(struct srv_req *, const char *, const char *, char *),
                        char **out_json)
{
    json_t *v = json_object_get(req->body, key), *arr = NULL, *e;
    char field[48], norm[PATHPOL_BUF_SIZE];
    size_t i;
    enum rc rc = RC_OK;

    *out_json = NULL;
    if (v == NULL)
        return RC_OK;
    if (!json_is_array(v) || json_array_size(v) > max)
        return srv_fail(req, RC_EINVAL, key, "%s must be an array of at most %zu strings", key,
                        max);
    if ((arr = json_array()) == NULL)
        return RC_ENOMEM;
    json_array_foreach(v, i, e)
    {
        snprintf(field, sizeof(field), "%s[%zu]", key, i);
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            strlen(json_string_value(e)) != json_string_length(e)) {
            rc = srv_fail(req, RC_EINVAL, field, "%s must be a non-empty string", field);
            break;
        }
        if ((rc = check(req, field, json_string_value(e), norm)) != RC_OK)
            break;
        if (json_array_append_new(arr, json_string(norm)) != 0) {
            rc = RC_ENOMEM;
            break;
        }
    }
    if (rc == RC_OK && (*out_json = jx_dumps(arr, JSON_COMPACT)) == NULL)
        rc = RC_ENOMEM;
    json_decref(arr);
    return rc;
}

static enum rc check_root(struct srv_req *req, const char *field, const char *s, char *norm)
{
    struct err e;

    err_init(&e);
    if (pathpol_normalize(s, strlen(s), norm, PATHPOL_BUF_SIZE, &e) != RC_OK) {
        srv_fail(req, RC_EINVAL, field, "%s must be a clean absolute path: %s", field, e.message);
        err_detail(&req->err, "%s", e.detail);
        return RC_EINVAL;
    }
    if (strcmp(norm, "/") == 0)
        return srv_fail(req, RC_EINVAL, field, "%s must not be \"/\": that allows every path",
                        field);
    return RC_OK;
}

static enum rc check_net(struct srv_req *req, const char *field, const char *s, char *norm)
{
    struct pathpol_cidr cidr;

    if (strlen(s) > 64 || pathpol_parse_cidr(s, &cidr, NULL) != RC_OK) {
        srv_fail(req, RC_EINVAL, field, "%s must be a CIDR such as 10.0.0.0/8 or fd00::/8", field);
        err_detail(&req->err, "got \"%.64s\"", s);
        return RC_EINVAL;
    }
    if (cidr.prefix == 0)
        return srv_fail(req, RC_EINVAL, field,
                        "%s must not be a /0 network: that allows every address", field);
    snprintf(norm, PATHPOL_BUF_SIZE, "%s", s);
    return RC_OK;
}

/* The site name of route capture 0, or a 404. */
static enum rc param_name(struct srv_req *req, const char *what, int allow_dot, const char **name)
{
    *name = req->nparams > 0 ? req->params[0] : "";
    if (!valid_name(*name, allow_dot))
        return srv_fail(req, RC_ENOTFOUND, "", "no such %s", what);
    return RC_OK;
}

static enum rc audit_site(struct srv_req *req, const char *action, const char *name,
                          json_t *details)
{
    char target[AUDIT_TARGET_SIZE];
    enum rc rc = audit_target_name(AUDIT_TARGET_SITE, name, target);

    return rc == RC_OK ? audit_append_req(req, action, target, "success", details) : rc;
}

enum rc api_site_list(struct srv_req *req)
{
    json_t *rows = NULL;
    enum rc rc = db_site_list(req->db, req->who.role == SRV_ROLE_MEMBER, &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "sites", rows));
}

enum rc api_site_get(struct srv_req *req)
{
    const char *name;
    json_t *row = NULL;
    enum rc rc;

    if ((rc = param_name(req, "site", 0, &name)) != RC_OK)
        return rc;
    rc = db_site_get(req->db, name, &row, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such site");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

/*
 * Create (create = 1) or update the site name from the body's storage_roots
 * and networks, audited in the same transaction, and answer the request.
 * The body's shape has been checked by the caller.
 */
static enum rc site_write(struct srv_req *req, const char *name, int create)
{
    char *roots = NULL, *nets = NULL;
    json_t *row = NULL, *d = NULL;
    enum rc rc;

    if ((rc = opt_list(req, "storage_roots", MAX_ROOTS, check_root, &roots)) != RC_OK ||
        (rc = opt_list(req, "networks", MAX_NETS, check_net, &nets)) != RC_OK)
        goto out;
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    rc = create ? db_site_create(req->db, name, roots ? roots : "[]", nets ? nets : "[]", &row,
                                 req->req_id)
                : db_site_update(req->db, name, roots, nets, &row, req->req_id);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:O,s:O}", "name", name, "storage_roots",
                      json_object_get(row, "storage_roots"), "networks",
                      json_object_get(row, "networks"));
        rc = d ? audit_site(req, create ? "site.create" : "site.update", name, d) : RC_ENOMEM;
    }
    rc = api_end(req, rc);
    if (create && rc == RC_ECONFLICT)
        rc = srv_fail(req, rc, "name", "a site named \"%s\" exists already", name);
    if (!create && rc == RC_ENOTFOUND)
        rc = srv_fail(req, rc, "", "no such site");
    if (rc == RC_OK) {
        rc = srv_reply(req, create ? 201 : 200, row);
        row = NULL;
    }
out:
    json_decref(row);
    json_decref(d);
    free(roots);
    free(nets);
    return rc;
}

enum rc api_site_create(struct srv_req *req)
{
    static const char *const allowed[] = {"name", "storage_roots", "networks", NULL};
    const char *name;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 64, &name)) != RC_OK)
        return rc;
    if (name == NULL || !valid_name(name, 0))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 64 of a-z, 0-9, '_', '-'");
    return site_write(req, name, 1);
}

enum rc api_site_update(struct srv_req *req)
{
    static const char *const allowed[] = {"storage_roots", "networks", NULL};
    const char *name;
    enum rc rc;

    if ((rc = param_name(req, "site", 0, &name)) != RC_OK ||
        (rc = api_body_object(req, allowed)) != RC_OK)
        return rc;
    return site_write(req, name, 0);
}

enum rc api_site_delete(struct srv_req *req)
{
    const char *name, *used_by = "";
    int64_t id = 0;
    json_t *d;
    enum rc rc;

    if ((rc = param_name(req, "site", 0, &name)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_site_delete(req->db, name, &id, &used_by, req->req_id);
    if (rc == RC_OK) {
        d = json_pack("{s:s}", "name", name);
        rc = audit_site(req, "site.delete", name, d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such site");
    if (rc == RC_ECONFLICT && strcmp(used_by, "default") == 0)
        return srv_fail(req, rc, "", "the default site cannot be deleted");
    if (rc == RC_ECONFLICT)
        return srv_fail(req, rc, "", "site \"%s\" is still used by %s", name, used_by);
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
}

/* ---------- the compliance policy ---------- */

enum rc api_policy_get(struct srv_req *req)
{
    json_t *row = NULL;
    enum rc rc = db_policy_get(req->db, &row, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

enum rc api_policy_update(struct srv_req *req)
{
    static const char *const allowed[] = {"audit_retention_days", "default_classification", NULL};
    json_t *days = NULL, *row = NULL;
    const char *cls;
    int64_t retention = -1;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "default_classification", 1, 16, &cls)) != RC_OK)
        return rc;
    days = json_object_get(req->body, "audit_retention_days");
    if (days != NULL) {
        if (!json_is_integer(days) || json_integer_value(days) > MAX_RETENTION_DAYS)
            return srv_fail(req, RC_EINVAL, "audit_retention_days",
                            "audit_retention_days must be an integer from %d to %d",
                            MIN_RETENTION_DAYS, MAX_RETENTION_DAYS);
        if (json_integer_value(days) < MIN_RETENTION_DAYS) {
            srv_fail(req, RC_EINVAL, "audit_retention_days",
                     "audit_retention_days must be at least %d: audit logs are kept at least 180 "
                     "days (MLPS 2.0)",
                     MIN_RETENTION_DAYS);
            err_detail(&req->err, "got %lld", (long long)json_integer_value(days));
            return RC_EINVAL;
        }
        retention = json_integer_value(days);
    }
    if (cls != NULL && db_class_level(cls) < 0) {
        srv_fail(req, RC_EINVAL, "default_classification",
                 "default_classification must be public, internal, confidential or secret");
        err_detail(&req->err, "got \"%.16s\"", cls);
        return RC_EINVAL;
    }
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_policy_update(req->db, retention, cls, &row, req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "policy.update", AUDIT_TARGET_POLICY, "success", req->body);
    rc = api_end(req, rc);
    if (rc != RC_OK) {
        json_decref(row);
        return rc;
    }
    return srv_reply(req, 200, row);
}

/* ---------- datasets ---------- */

/* Admins and auditors see every dataset; members their teams' and public ones. */
static enum rc dataset_visible(struct srv_req *req, const json_t *row, int64_t *team_id)
{
    const char *cls = json_string_value(json_object_get(row, "classification"));
    int member = 1;
    enum rc rc = db_parse_i64(json_string_value(json_object_get(row, "team_id")), team_id);

    if (rc == RC_OK && req->who.role == SRV_ROLE_MEMBER && strcmp(cls ? cls : "", "public") != 0)
        rc = auth_is_member(req->db, req->who.user_id, *team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such dataset");
    return rc;
}

/* Changes: admins, or members of the owner team; never auditors. */
static enum rc dataset_may_change(struct srv_req *req, int64_t team_id, const char *team)
{
    int member = 0;
    enum rc rc;

    if (req->who.role == SRV_ROLE_ADMIN)
        return RC_OK;
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read datasets but not change them");
    rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_EPERM, "team", "you are not a member of team \"%s\"", team);
    return rc;
}

enum rc api_dataset_list(struct srv_req *req)
{
    char cursor[24];
    int limit;
    json_t *rows = NULL, *last;
    enum rc rc;

    if ((rc = api_page(req, 50, 500, &limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    rc = db_dataset_list(req->db, req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0,
                         cursor[0] ? cursor : NULL, limit, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "datasets", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_dataset_get(struct srv_req *req)
{
    const char *name;
    int64_t team_id;
    json_t *row = NULL;
    enum rc rc;

    if ((rc = param_name(req, "dataset", 1, &name)) != RC_OK)
        return rc;
    rc = db_dataset_get(req->db, name, &row, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such dataset");
    if (rc == RC_OK)
        rc = dataset_visible(req, row, &team_id);
    if (rc != RC_OK) {
        json_decref(row);
        return rc;
    }
    return srv_reply(req, 200, row);
}

/* The dataset's URI against its site: RC_OK, or the recorded refusal (RC_EPOLICY). */
static enum rc dataset_uri_ok(struct srv_req *req, const char *name, const char *uri,
                              const char *site_name, int64_t team_id)
{
    struct db_site site = {0};
    struct err e;
    char target[AUDIT_TARGET_SIZE];
    json_t *ctx;
    enum rc rc = db_site_load(req->db, site_name, &site, req->req_id);

    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EINVAL, "site", "no site named \"%s\"", site_name);
    if (rc != RC_OK)
        return rc;
    err_init(&e);
    rc = pathpol_check_uri(uri, (const char *const *)site.roots, site.nroots,
                           (const char *const *)site.nets, site.nnets, &e);
    db_site_cleanup(&site);
    if (rc == RC_OK)
        return RC_OK;
    if ((rc = audit_target_name(AUDIT_TARGET_DATASET, name, target)) != RC_OK)
        return rc;
    ctx = json_pack("{s:s,s:s}", "dataset", name, "site", site_name);
    rc = policy_refuse(req, team_id, target, "dataset", "uri", &e, ctx, NULL);
    json_decref(ctx);
    return rc;
}

enum rc api_dataset_create(struct srv_req *req)
{
    static const char *const allowed[] = {"name", "uri",         "site", "classification",
                                          "team", "description", NULL};
    const char *name, *uri, *site, *cls, *team, *desc;
    char defclass[16], actor[96], target[AUDIT_TARGET_SIZE];
    int64_t team_id = 0, site_id = 0;
    json_t *row = NULL, *d;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 64, &name)) != RC_OK ||
        (rc = api_opt_string(req, "uri", 1, 4096, &uri)) != RC_OK ||
        (rc = api_opt_string(req, "site", 1, 64, &site)) != RC_OK ||
        (rc = api_opt_string(req, "classification", 1, 16, &cls)) != RC_OK ||
        (rc = api_opt_string(req, "team", 1, 64, &team)) != RC_OK ||
        (rc = api_opt_string(req, "description", 0, 1024, &desc)) != RC_OK)
        return rc;
    if (name == NULL || !valid_name(name, 1))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 64 of a-z, 0-9, '.', '_', '-'");
    if (uri == NULL)
        return srv_fail(req, RC_EINVAL, "uri", "uri is required");
    if (team == NULL)
        return srv_fail(req, RC_EINVAL, "team", "team is required");
    if (site == NULL)
        site = "default";
    if (cls != NULL && db_class_level(cls) < 0) {
        srv_fail(req, RC_EINVAL, "classification",
                 "classification must be public, internal, confidential or secret");
        err_detail(&req->err, "got \"%.16s\"", cls);
        return RC_EINVAL;
    }
    rc = db_team_id(req->db, team, &team_id, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EINVAL, "team", "no team named \"%.64s\"", team);
    if (rc != RC_OK || (rc = dataset_may_change(req, team_id, team)) != RC_OK)
        return rc;
    rc = db_site_id(req->db, site, &site_id, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, RC_EINVAL, "site", "no site named \"%.64s\"", site);
    if (rc != RC_OK || (rc = dataset_uri_ok(req, name, uri, site, team_id)) != RC_OK)
        return rc;
    if (cls == NULL) {
        if ((rc = db_policy_default_class(req->db, defclass, sizeof(defclass), req->req_id)) !=
            RC_OK)
            return rc;
        cls = defclass;
    }
    srv_actor(req, actor, sizeof(actor));
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_dataset_create(req->db, name, uri, site_id, cls, team_id, desc, actor, &row,
                           req->req_id);
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_DATASET, name, target);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", name, "uri", uri, "site", site,
                      "classification", cls, "team", team);
        rc = d ? audit_append_req(req, "dataset.create", target, "success", d) : RC_ENOMEM;
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc == RC_ECONFLICT) {
        json_decref(row);
        return srv_fail(req, rc, "name", "a dataset named \"%s\" exists already", name);
    }
    if (rc != RC_OK) {
        json_decref(row);
        return rc;
    }
    return srv_reply(req, 201, row);
}

enum rc api_dataset_delete(struct srv_req *req)
{
    const char *name;
    char target[AUDIT_TARGET_SIZE];
    int64_t team_id = 0;
    json_t *row = NULL, *d = NULL;
    enum rc rc;

    if ((rc = param_name(req, "dataset", 1, &name)) != RC_OK)
        return rc;
    rc = db_dataset_get(req->db, name, &row, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such dataset");
    if (rc == RC_OK)
        rc = dataset_visible(req, row, &team_id);
    if (rc == RC_OK) {
        const char *team = json_string_value(json_object_get(row, "team"));
        rc = dataset_may_change(req, team_id, team ? team : "");
    }
    if (rc != RC_OK || (rc = api_begin(req)) != RC_OK)
        goto out;
    rc = db_dataset_delete(req->db, name, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_DATASET, name, target);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:O,s:O}", "name", name, "uri", json_object_get(row, "uri"), "team",
                      json_object_get(row, "team"));
        rc = d ? audit_append_req(req, "dataset.delete", target, "success", d) : RC_ENOMEM;
    }
    rc = api_end(req, rc);
    if (rc == RC_ENOTFOUND) /* deleted meanwhile */
        rc = srv_fail(req, rc, "", "no such dataset");
    if (rc == RC_OK)
        rc = srv_reply(req, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
out:
    json_decref(row);
    json_decref(d);
    return rc;
}

/*
 * api_webhooks.c - webhooks of a team or of one job. Members manage those of
 * their teams; admins all. The secret is shown once at creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "audit_target.h"
#include "crypto.h"
#include "db.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_jobs.h"
#include "db_users.h"
#include "db_webhooks.h"

static int known_event(const char *e)
{
    for (int i = 0; webhook_events[i] != NULL; i++)
        if (strcmp(webhook_events[i], e) == 0)
            return 1;
    return 0;
}

static enum rc may_manage(struct srv_req *req, int64_t team_id)
{
    int member = 0;
    enum rc rc;

    if (req->who.role == SRV_ROLE_ADMIN)
        return RC_OK;
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors cannot change webhooks");
    rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such team or job");
    return rc;
}

/* events -> "{a,b}" literal after checking each name. */
static enum rc events_literal(struct srv_req *req, char *out, size_t n)
{
    json_t *ev = json_object_get(req->body, "events"), *e;
    size_t i, off = 0;

    if (ev == NULL) {
        snprintf(out, n, "{job.failed,job.recovered,job.succeeded,node.lost,policy.violation}");
        return RC_OK;
    }
    if (!json_is_array(ev) || json_array_size(ev) == 0 || json_array_size(ev) > 8)
        return srv_fail(req, RC_EINVAL, "events", "events must be a non-empty array");
    out[off++] = '{';
    json_array_foreach(ev, i, e)
    {
        const char *s = json_string_value(e);
        if (s == NULL || !known_event(s)) {
            srv_fail(req, RC_EINVAL, "events",
                     "events may be job.failed, job.recovered, job.succeeded, node.lost, "
                     "policy.violation, canary.rolled_back");
            err_detail(&req->err, "got %.40s", s ? s : "a non-string");
            return RC_EINVAL;
        }
        off += (size_t)snprintf(out + off, n - off, "%s%s", i ? "," : "", s);
    }
    snprintf(out + off, n - off, "}");
    return RC_OK;
}

enum rc api_webhook_create(struct srv_req *req)
{
    static const char *const allowed[] = {"team",   "job_id", "url", "format",
                                          "events", "secret", NULL};
    const char *team, *job, *url, *format, *secret;
    char events[256], gen[64], target[AUDIT_TARGET_SIZE], state[16];
    int64_t team_id = 0, job_id = 0;
    json_t *row = NULL;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "team", 1, 64, &team)) != RC_OK ||
        (rc = api_opt_string(req, "job_id", 1, 20, &job)) != RC_OK ||
        (rc = api_opt_string(req, "url", 8, 2048, &url)) != RC_OK ||
        (rc = api_opt_string(req, "format", 1, 16, &format)) != RC_OK ||
        (rc = api_opt_string(req, "secret", 16, 120, &secret)) != RC_OK ||
        (rc = events_literal(req, events, sizeof(events))) != RC_OK)
        return rc;
    if ((team == NULL) == (job == NULL))
        return srv_fail(req, RC_EINVAL, "team", "give exactly one of team and job_id");
    if (url == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        strpbrk(url, " \t\r\n\"<>") != NULL)
        return srv_fail(req, RC_EINVAL, "url", "url must be an http:// or https:// address");
    if (format == NULL)
        format = "generic";
    if (strcmp(format, "generic") != 0 && strcmp(format, "wecom") != 0 &&
        strcmp(format, "dingtalk") != 0 && strcmp(format, "feishu") != 0)
        return srv_fail(req, RC_EINVAL, "format",
                        "format must be generic, wecom, dingtalk or feishu");
    if (team != NULL) {
        rc = db_team_id(req->db, team, &team_id, req->req_id);
        if (rc == RC_ENOTFOUND)
            return srv_fail(req, RC_ENOTFOUND, "team", "no such team or job");
    } else {
        char *end = NULL;
        job_id = strtoll(job, &end, 10);
        if (end == job || *end != '\0' || job_id <= 0)
            return srv_fail(req, RC_EINVAL, "job_id", "job_id must be a job id");
        rc = db_job_brief(req->db, job_id, 0, &team_id, state, sizeof(state), req->req_id);
        if (rc == RC_ENOTFOUND)
            return srv_fail(req, RC_ENOTFOUND, "job_id", "no such team or job");
    }
    if (rc != RC_OK || (rc = may_manage(req, team_id)) != RC_OK)
        return rc;
    if (secret == NULL) {
        if (crypto_random_token("whsec_", 24, gen, sizeof(gen)) != RC_OK)
            return RC_EINTERNAL;
        secret = gen;
    }
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_webhook_create(req->db, job ? 0 : team_id, job_id, url, format, secret, events,
                           req->who.user_id, &row, req->req_id);
    if (rc == RC_OK) {
        json_t *d = json_pack("{s:s,s:s}", "format", format, "events", events);
        rc = audit_target_id_text(AUDIT_TARGET_WEBHOOK,
                                  json_string_value(json_object_get(row, "id")), target);
        if (rc == RC_OK)
            rc = audit_append_req(req, "webhook.create", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    json_object_set_new(row, "secret", json_string(secret));
    return srv_reply(req, 201, row);
}

enum rc api_webhook_list(struct srv_req *req)
{
    json_t *rows = NULL;
    enum rc rc = db_webhook_list(req->db, req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0,
                                 &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "webhooks", rows));
}

static enum rc load_webhook(struct srv_req *req, int64_t *id, int manage)
{
    int64_t team_id;
    int member = 1;
    enum rc rc = api_param_id(req, 0, id, "webhook");

    if (rc == RC_OK)
        rc = db_webhook_team(req->db, *id, &team_id, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such webhook");
    if (rc != RC_OK)
        return rc;
    if (manage)
        return may_manage(req, team_id);
    if (req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such webhook");
    return rc;
}

/*
 * The delete's transaction (api_tx body). Lock order (db.h): the webhook's
 * row, then the audit head. A job transition queueing a delivery for this
 * webhook takes them the other way round (db.h names the exception), so
 * PostgreSQL may break a deadlock here: api_tx() runs the body again.
 */
static enum rc delete_body(struct srv_req *req, void *arg)
{
    const int64_t *id = arg;
    char target[AUDIT_TARGET_SIZE];
    enum rc rc = db_webhook_delete(req->db, *id, req->req_id);

    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_WEBHOOK, *id, target);
    if (rc == RC_OK)
        rc = audit_append_req(req, "webhook.delete", target, "success", NULL);
    return rc;
}

enum rc api_webhook_delete(struct srv_req *req)
{
    int64_t id;
    enum rc rc;

    if ((rc = load_webhook(req, &id, 1)) != RC_OK)
        return rc;
    if ((rc = api_tx(req, delete_body, &id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:b}", "deleted", 1));
}

enum rc api_webhook_deliveries(struct srv_req *req)
{
    int64_t id;
    json_t *rows = NULL;
    enum rc rc;

    if ((rc = load_webhook(req, &id, 0)) != RC_OK)
        return rc;
    if ((rc = db_webhook_deliveries(req->db, id, &rows, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "deliveries", rows));
}

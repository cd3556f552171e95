/*
 * api_exports.c - job outputs and their approved export (docs/exports.md).
 *
 * A user who can see a job lists its output files and asks to download one,
 * with a reason. Jobs classified public or internal are approved at once by
 * the server; confidential and secret ones wait for an admin, who may not be
 * the requester (four eyes). An approval hands out a one-time link once:
 * /api/v1/exports/download/<token>. Only the token's SHA-256 is stored. The
 * token alone opens the link (like a presigned URL, so download tools need no
 * session), it works once, and only until export_link_ttl_s after approval.
 *
 * Every step appends its audit event in the transaction that makes it:
 * export.request, export.approve (by "system" for public/internal jobs),
 * export.deny, export.download, export.expire. Refusals that matter to an
 * auditor are recorded on their own: a path outside the output directory
 * (policy.violation), an admin approving their own request and a second use
 * of a link (outcome "denied").
 *
 * Files are read from the shared storage: the file is checked with realpath
 * at request time and again, then opened, at download time (outputs.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_target.h"
#include "config.h"
#include "crypto.h"
#include "db.h"
#include "db_audit.h"
#include "db_auth.h"
#include "db_exports.h"
#include "outputs.h"

#define EXPORT_TOKEN_PREFIX "tyx_"
#define EXPORT_TOKEN_BYTES 32
#define EXPORT_URL_PREFIX "/api/v1/exports/download/"
/* Most storage roots a site lists that are checked. */
#define EXPORT_MAX_ROOTS 64

static const char *const export_states[] = {"pending",    "approved", "denied",
                                            "downloaded", "expired",  NULL};

/* Whether the job's classification lets the server approve on its own. */
static int auto_approved(const char *classification)
{
    return strcmp(classification, "public") == 0 || strcmp(classification, "internal") == 0;
}

/* A job the caller may see: 404 otherwise, as in api_jobs.c. */
static enum rc load_job(struct srv_req *req, int64_t *id, struct db_export_job *job)
{
    int member = 1;
    enum rc rc = api_param_id(req, 0, id, "job");

    if (rc != RC_OK)
        return rc;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_export_job_get(req->db, *id, job, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such job");
    if (rc != RC_OK)
        return rc;
    if (req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, job->team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        rc = srv_fail(req, RC_ENOTFOUND, "", "no such job");
    if (rc != RC_OK)
        db_export_job_cleanup(job);
    return rc;
}

/*
 * The job's output directory after realpath, checked against the site's
 * storage roots (the server's storage_root while the site lists none).
 */
static enum rc job_real_dir(struct srv_req *req, int64_t job_id, const struct db_export_job *job,
                            char *real, size_t real_size)
{
    const char *roots[EXPORT_MAX_ROOTS];
    char dir[PATHPOL_BUF_SIZE], ids[24];
    size_t nroots = 0, i;
    json_t *v;

    json_array_foreach(job->roots, i, v)
    {
        if (json_is_string(v) && nroots < EXPORT_MAX_ROOTS)
            roots[nroots++] = json_string_value(v);
    }
    if (nroots == 0)
        roots[nroots++] = req->app->cfg->storage_root;
    if (outputs_job_dir(job->paths, job->spec_out, job->roots, req->app->cfg->storage_root,
                        api_i64(job_id, ids, sizeof(ids)), dir, sizeof(dir)) != RC_OK)
        return srv_fail(req, RC_EPOLICY, "", "the job's output directory is too long");
    return outputs_resolve_dir(dir, roots, nroots, real, real_size, &req->err);
}

/* Record a refusal by the path policy in its own transaction; returns RC_EPOLICY. */
static enum rc audit_violation(struct srv_req *req, int64_t job_id, const char *what,
                               const char *path)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *d = json_pack("{s:s,s:s,s:s}", "what", what, "path", path ? path : "", "reason",
                          req->err.message);
    enum rc rc = audit_target_id(AUDIT_TARGET_JOB, job_id, target);

    if (rc == RC_OK)
        rc = audit_append_alone(req, "policy.violation", target, "denied", d);
    json_decref(d);
    return rc == RC_OK ? RC_EPOLICY : rc;
}

/* The last path component, for the download's file name. */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

enum rc api_job_outputs(struct srv_req *req)
{
    struct db_export_job job;
    char real[PATHPOL_BUF_SIZE];
    const char *l = srv_query(req, "limit"), *cursor = srv_query(req, "cursor");
    json_t *files = NULL, *last;
    int64_t id;
    long limit = 500;
    int more = 0, truncated = 0;
    enum rc rc;

    if (l != NULL) {
        char *end = NULL;
        limit = strtol(l, &end, 10);
        if (end == l || *end != '\0' || limit < 1 || limit > 1000) {
            srv_fail(req, RC_EINVAL, "limit", "limit must be an integer from 1 to 1000");
            err_detail(&req->err, "got \"%.32s\"", l);
            return RC_EINVAL;
        }
    }
    if (cursor != NULL && (cursor[0] == '\0' || strlen(cursor) > PATHPOL_PATH_MAX))
        return srv_fail(req, RC_EINVAL, "cursor", "cursor is not one this server issued");
    if ((rc = load_job(req, &id, &job)) != RC_OK)
        return rc;
    rc = job_real_dir(req, id, &job, real, sizeof(real));
    db_export_job_cleanup(&job);
    if (rc == RC_ENOTFOUND) /* nothing written yet */
        return srv_reply(req, 200,
                         json_pack("{s:[],s:n,s:b}", "files", "next_cursor", "truncated", 0));
    if (rc == RC_EPOLICY)
        return audit_violation(req, id, "outputs", "");
    if (rc != RC_OK)
        return rc;
    if ((rc = outputs_list(real, cursor, (size_t)limit, &files, &more, &truncated)) != RC_OK)
        return rc;
    last = more ? json_array_get(files, json_array_size(files) - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O,s:b}", "files", files, "next_cursor",
                               last ? json_object_get(last, "path") : json_null(), "truncated",
                               truncated));
}

/* A fresh link token and its hash. */
static enum rc new_link(char *token, size_t token_size, char hash[CRYPTO_SHA256_HEX_LEN + 1])
{
    enum rc rc = crypto_random_token(EXPORT_TOKEN_PREFIX, EXPORT_TOKEN_BYTES, token, token_size);

    if (rc == RC_OK)
        crypto_sha256_hex(token, strlen(token), hash);
    return rc;
}

/* Reply with the request's row, plus the link when one was just issued. */
static enum rc reply_row(struct srv_req *req, int status, int64_t id, const char *token)
{
    json_t *row = NULL;
    char url[128];
    enum rc rc = db_export_get(req->db, id, &row, req->req_id);

    if (rc != RC_OK)
        return rc;
    if (token != NULL) {
        snprintf(url, sizeof(url), EXPORT_URL_PREFIX "%s", token);
        json_object_set_new(row, "download_url", json_string(url));
    }
    return srv_reply(req, status, row);
}

/* Approve id by the server itself, in the open transaction. */
static enum rc approve_by_system(struct srv_req *req, int64_t id, int64_t job_id,
                                 const char *classification, const char *hash)
{
    char expires[40], target[AUDIT_TARGET_SIZE];
    struct audit_event ev;
    json_t *d;
    enum rc rc =
        db_export_approve(req->db, id, 0, "approved automatically", hash,
                          req->app->cfg->export_link_ttl_s, expires, sizeof(expires), req->req_id);

    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_EXPORT, id, target);
    if (rc != RC_OK)
        return rc;
    d = json_pack("{s:I,s:s,s:s,s:s}", "job_id", (json_int_t)job_id, "classification",
                  classification, "rule", "public and internal jobs need no approval",
                  "link_expires_at", expires);
    ev = (struct audit_event){"system", "", "export.approve", target, "success", d};
    rc = audit_append(req->db, &ev, req->req_id);
    json_decref(d);
    return rc;
}

enum rc api_export_create(struct srv_req *req)
{
    static const char *const allowed[] = {"path", "reason", NULL};
    struct db_export_job job;
    char real[PATHPOL_BUF_SIZE], token[96], hash[CRYPTO_SHA256_HEX_LEN + 1],
        target[AUDIT_TARGET_SIZE];
    const char *path, *reason;
    const char *tok = NULL;
    json_t *d = NULL;
    int64_t job_id, id = 0;
    uint64_t size = 0;
    int fd = -1, autoapp;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "path", 1, PATHPOL_PATH_MAX, &path)) != RC_OK ||
        (rc = api_opt_string(req, "reason", 1, 2000, &reason)) != RC_OK)
        return rc;
    if (path == NULL)
        return srv_fail(req, RC_EINVAL, "path", "path is required");
    if (reason == NULL)
        return srv_fail(req, RC_EINVAL, "reason", "reason is required");
    if (req->who.role == SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "auditors can read exports but not request them");
    if ((rc = load_job(req, &job_id, &job)) != RC_OK)
        return rc;
    rc = job_real_dir(req, job_id, &job, real, sizeof(real));
    if (rc == RC_ENOTFOUND)
        rc = srv_fail(req, RC_ENOTFOUND, "path", "no such file in the job's outputs");
    if (rc == RC_OK)
        rc = outputs_open(real, path, &fd, &size, &req->err);
    if (fd >= 0)
        close(fd); /* opened again at download time */
    if (rc == RC_EPOLICY) {
        rc = audit_violation(req, job_id, "export", path);
        goto out;
    }
    if (rc != RC_OK)
        goto out;
    autoapp = auto_approved(job.classification);
    if (autoapp && (rc = new_link(token, sizeof(token), hash)) != RC_OK)
        goto out;
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    rc = db_export_insert(req->db, job_id, path, reason, job.classification, req->who.user_id, &id,
                          req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_EXPORT, id, target);
    if (rc == RC_OK) {
        d = json_pack("{s:I,s:s,s:s,s:s,s:I}", "job_id", (json_int_t)job_id, "path", path, "reason",
                      reason, "classification", job.classification, "size", (json_int_t)size);
        rc = audit_append_req(req, "export.request", target, "success", d);
    }
    if (rc == RC_OK && autoapp) {
        rc = approve_by_system(req, id, job_id, job.classification, hash);
        tok = token;
    }
    rc = api_end(req, rc);
    if (rc == RC_OK)
        rc = reply_row(req, 201, id, tok);
out:
    json_decref(d);
    db_export_job_cleanup(&job);
    return rc;
}

enum rc api_export_list(struct srv_req *req)
{
    struct db_export_filter f = {0};
    char cursor[24];
    const char *job = srv_query(req, "job");
    json_t *rows = NULL, *last;
    int ok = 0;
    enum rc rc;

    if ((rc = api_page(req, 50, 500, &f.limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    f.state = srv_query(req, "state");
    f.cursor = cursor[0] ? cursor : NULL;
    for (int i = 0; f.state != NULL && export_states[i] != NULL; i++)
        ok |= strcmp(f.state, export_states[i]) == 0;
    if (f.state != NULL && !ok) {
        srv_fail(req, RC_EINVAL, "state",
                 "state must be one of pending, approved, denied, downloaded, expired");
        err_detail(&req->err, "got \"%.32s\"", f.state);
        return RC_EINVAL;
    }
    if (job != NULL) {
        char *end = NULL;
        long long v = strtoll(job, &end, 10);
        if (end == job || *end != '\0' || v <= 0)
            return srv_fail(req, RC_EINVAL, "job", "job must be a job id");
        f.job_id = v;
    }
    /* Members see their own requests; admins and auditors see all. */
    if (req->who.role == SRV_ROLE_MEMBER)
        f.requested_by = req->who.user_id;
    if ((rc = db_export_list(req->db, &f, &rows, req->req_id)) != RC_OK)
        return rc;
    last =
        json_array_size(rows) == (size_t)f.limit ? json_array_get(rows, (size_t)f.limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "exports", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_export_get(struct srv_req *req)
{
    struct db_export_brief b;
    int64_t id;
    enum rc rc = api_param_id(req, 0, &id, "export request");

    if (rc != RC_OK)
        return rc;
    rc = db_export_brief(req->db, id, 0, &b, req->req_id);
    if (rc == RC_OK && req->who.role == SRV_ROLE_MEMBER && b.requested_by != req->who.user_id)
        rc = RC_ENOTFOUND;
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such export request");
    if (rc != RC_OK)
        return rc;
    return reply_row(req, 200, id, NULL);
}

/* Body {"note"} of approve and deny; *note borrowed, "" when absent. */
static enum rc decision_body(struct srv_req *req, const char **note)
{
    static const char *const allowed[] = {"note", NULL};
    enum rc rc = RC_OK;

    *note = NULL;
    if (req->body != NULL && ((rc = api_body_object(req, allowed)) != RC_OK ||
                              (rc = api_opt_string(req, "note", 0, 2000, note)) != RC_OK))
        return rc;
    if (*note == NULL)
        *note = "";
    return RC_OK;
}

/* Lock request id for a decision; fills b. RC_ECONFLICT unless pending. */
static enum rc lock_pending(struct srv_req *req, int64_t id, struct db_export_brief *b)
{
    enum rc rc = db_export_brief(req->db, id, 1, b, req->req_id);

    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such export request");
    if (rc == RC_OK && strcmp(b->state, "pending") != 0)
        return srv_fail(req, RC_ECONFLICT, "", "the export request is %s, not pending", b->state);
    return rc;
}

static json_t *decision_details(const struct db_export_brief *b, const char *note)
{
    return json_pack("{s:I,s:s,s:s,s:s,s:s}", "job_id", (json_int_t)b->job_id, "path", b->path,
                     "classification", b->classification, "requested_by", b->requester, "note",
                     note);
}

enum rc api_export_approve(struct srv_req *req)
{
    struct db_export_brief b;
    char token[96], hash[CRYPTO_SHA256_HEX_LEN + 1], target[AUDIT_TARGET_SIZE], expires[40];
    const char *note;
    json_t *d = NULL;
    int64_t id;
    enum rc rc;

    if ((rc = decision_body(req, &note)) != RC_OK ||
        (rc = api_param_id(req, 0, &id, "export request")) != RC_OK)
        return rc;
    if ((rc = new_link(token, sizeof(token), hash)) != RC_OK ||
        (rc = audit_target_id(AUDIT_TARGET_EXPORT, id, target)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = lock_pending(req, id, &b);
    if (rc == RC_OK && b.requested_by == req->who.user_id) {
        /* Four eyes: the refusal is recorded, outside the rolled-back transaction. */
        api_end(req, RC_EPERM);
        d = json_pack("{s:I,s:s,s:s}", "job_id", (json_int_t)b.job_id, "path", b.path, "reason",
                      "an admin cannot approve their own export request");
        rc = audit_append_alone(req, "export.approve", target, "denied", d);
        json_decref(d);
        if (rc != RC_OK)
            return rc;
        return srv_fail(req, RC_EPERM, "",
                        "you cannot approve your own export request; another admin must");
    }
    if (rc == RC_OK)
        rc = db_export_approve(req->db, id, req->who.user_id, note, hash,
                               req->app->cfg->export_link_ttl_s, expires, sizeof(expires),
                               req->req_id);
    if (rc == RC_OK) {
        d = decision_details(&b, note);
        json_object_set_new(d, "link_expires_at", json_string(expires));
        rc = audit_append_req(req, "export.approve", target, "success", d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc != RC_OK)
        return rc;
    return reply_row(req, 200, id, token);
}

enum rc api_export_deny(struct srv_req *req)
{
    struct db_export_brief b;
    char target[AUDIT_TARGET_SIZE];
    const char *note;
    json_t *d = NULL;
    int64_t id;
    enum rc rc;

    if ((rc = decision_body(req, &note)) != RC_OK ||
        (rc = api_param_id(req, 0, &id, "export request")) != RC_OK ||
        (rc = audit_target_id(AUDIT_TARGET_EXPORT, id, target)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    /* Denying one's own request is allowed: it only withdraws it. */
    rc = lock_pending(req, id, &b);
    if (rc == RC_OK)
        rc = db_export_deny(req->db, id, req->who.user_id, note, req->req_id);
    if (rc == RC_OK) {
        d = decision_details(&b, note);
        rc = audit_append_req(req, "export.deny", target, "success", d);
        json_decref(d);
    }
    rc = api_end(req, rc);
    if (rc != RC_OK)
        return rc;
    return reply_row(req, 200, id, NULL);
}

/* Whether s looks like a token this server issues (before hashing it). */
static int token_shaped(const char *s)
{
    size_t n = strlen(s), plen = strlen(EXPORT_TOKEN_PREFIX);

    if (n <= plen || n > 96 || strncmp(s, EXPORT_TOKEN_PREFIX, plen) != 0)
        return 0;
    for (size_t i = plen; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

/* A link that cannot be used (any more): record it, answer 410 or 404. */
static enum rc link_refused(struct srv_req *req, enum rc rc, const struct db_export_brief *b,
                            int newly_expired)
{
    char target[AUDIT_TARGET_SIZE];
    struct audit_event ev;
    json_t *d = NULL;
    int used = strcmp(b->state, "downloaded") == 0;

    if (rc != RC_EGONE) {
        api_end(req, rc);
        return rc == RC_ENOTFOUND ? srv_fail(req, rc, "", "no such download link") : rc;
    }
    if ((rc = audit_target_id(AUDIT_TARGET_EXPORT, b->id, target)) != RC_OK)
        return api_end(req, rc);
    if (newly_expired) {
        d = json_pack("{s:I,s:s}", "job_id", (json_int_t)b->job_id, "path", b->path);
        ev = (struct audit_event){"system", "", "export.expire", target, "success", d};
        rc = audit_append(req->db, &ev, req->req_id);
        json_decref(d);
        if (rc != RC_OK)
            return api_end(req, rc);
    }
    d = json_pack("{s:I,s:s,s:s}", "job_id", (json_int_t)b->job_id, "path", b->path, "reason",
                  used ? "the link was used already" : "the link has expired");
    rc = audit_append_req(req, "export.download", target, "denied", d);
    json_decref(d);
    if ((rc = api_end(req, rc)) != RC_OK)
        return rc;
    return srv_fail(req, RC_EGONE, "",
                    used ? "this download link was used already; request a new export"
                         : "this download link has expired; request a new export");
}

enum rc api_export_download(struct srv_req *req)
{
    struct db_export_brief b;
    struct db_export_job job = {0};
    char hash[CRYPTO_SHA256_HEX_LEN + 1], real[PATHPOL_BUF_SIZE], target[AUDIT_TARGET_SIZE];
    const char *token = req->nparams > 0 ? req->params[0] : "";
    json_t *d = NULL;
    uint64_t size = 0;
    int fd = -1, newly_expired = 0;
    enum rc rc;

    if (!token_shaped(token))
        return srv_fail(req, RC_ENOTFOUND, "", "no such download link");
    crypto_sha256_hex(token, strlen(token), hash);
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_export_take_link(req->db, hash, &b, &newly_expired, req->req_id);
    if (rc != RC_OK)
        return link_refused(req, rc, &b, newly_expired);
    /* The file is checked and opened again: the output directory may have
     * changed since the request. */
    rc = db_export_job_get(req->db, b.job_id, &job, req->req_id);
    if (rc == RC_OK)
        rc = job_real_dir(req, b.job_id, &job, real, sizeof(real));
    if (rc == RC_OK)
        rc = outputs_open(real, b.path, &fd, &size, &req->err);
    if (rc != RC_OK) {
        api_end(req, rc); /* the link stays usable */
        if (rc == RC_EPOLICY)
            rc = audit_violation(req, b.job_id, "export download", b.path);
        else if (rc == RC_ENOTFOUND)
            rc = srv_fail(req, rc, "", "the exported file no longer exists");
        goto out;
    }
    d = json_pack("{s:I,s:s,s:s,s:s,s:I}", "job_id", (json_int_t)b.job_id, "path", b.path,
                  "classification", b.classification, "requested_by", b.requester, "size",
                  (json_int_t)size);
    rc = audit_target_id(AUDIT_TARGET_EXPORT, b.id, target);
    if (rc == RC_OK)
        rc = audit_append_req(req, "export.download", target, "success", d);
    if ((rc = api_end(req, rc)) != RC_OK)
        goto out;
    rc = srv_reply_file(req, fd, size, base_name(b.path));
    fd = -1; /* the request owns it now */
out:
    if (fd >= 0)
        close(fd);
    json_decref(d);
    db_export_job_cleanup(&job);
    return rc;
}

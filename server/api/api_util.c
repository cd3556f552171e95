/*
 * api_util.c - see api_util.h.
 */
#include "api_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_audit.h"
#include "db_jobs.h"

enum rc api_body_object(struct srv_req *req, const char *const *allowed)
{
    const char *key;
    json_t *val;

    if (req->body == NULL || !json_is_object(req->body))
        return srv_fail(req, RC_EINVAL, "", "the body must be a JSON object");
    json_object_foreach(req->body, key, val)
    {
        int ok = 0;
        for (const char *const *a = allowed; *a != NULL && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok)
            return srv_fail(req, RC_EINVAL, key, "unknown field \"%.64s\"", key);
    }
    return RC_OK;
}

enum rc api_opt_string(struct srv_req *req, const char *key, size_t min_len, size_t max_len,
                       const char **out)
{
    json_t *v = json_object_get(req->body, key);
    size_t n;

    *out = NULL;
    if (v == NULL)
        return RC_OK;
    if (!json_is_string(v))
        return srv_fail(req, RC_EINVAL, key, "%s must be a string", key);
    n = json_string_length(v);
    if (n < min_len || n > max_len || strlen(json_string_value(v)) != n) {
        srv_fail(req, RC_EINVAL, key, "%s must be %zu to %zu characters", key, min_len, max_len);
        err_detail(&req->err, "got %zu", n);
        return RC_EINVAL;
    }
    *out = json_string_value(v);
    return RC_OK;
}

enum rc api_opt_int(struct srv_req *req, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    int *present)
{
    json_t *v = json_object_get(req->body, key);

    *present = 0;
    if (v == NULL)
        return RC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return srv_fail(req, RC_EINVAL, key, "%s must be an integer from %lld to %lld", key,
                        (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    *present = 1;
    return RC_OK;
}

static int parse_pos_id(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v;

    /* Up to 19 digits: every positive int64 (bigserial ids); strtoll's
     * ERANGE refuses the rest. */
    if (s == NULL || *s < '1' || *s > '9' || strlen(s) > 19)
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0)
        return 0;
    *out = v;
    return 1;
}

enum rc api_param_id(struct srv_req *req, int i, int64_t *out, const char *what)
{
    if (i >= req->nparams || !parse_pos_id(req->params[i], out))
        return srv_fail(req, RC_ENOTFOUND, "", "no such %s", what);
    return RC_OK;
}

enum rc api_limit(struct srv_req *req, int def, int max, int *limit)
{
    const char *l = srv_query(req, "limit");
    int64_t v;

    *limit = def;
    if (l != NULL) {
        if (!parse_pos_id(l, &v) || v > max) {
            srv_fail(req, RC_EINVAL, "limit", "limit must be an integer from 1 to %d", max);
            err_detail(&req->err, "got \"%.32s\"", l);
            return RC_EINVAL;
        }
        *limit = (int)v;
    }
    return RC_OK;
}

enum rc api_page(struct srv_req *req, int def, int max, int *limit, char *cursor_out,
                 size_t cursor_size)
{
    const char *c = srv_query(req, "cursor");
    int64_t v;
    enum rc rc = api_limit(req, def, max, limit);

    cursor_out[0] = '\0';
    if (rc != RC_OK)
        return rc;
    if (c != NULL && *c != '\0') {
        if (!parse_pos_id(c, &v))
            return srv_fail(req, RC_EINVAL, "cursor", "cursor is not one this server issued");
        snprintf(cursor_out, cursor_size, "%lld", (long long)v);
    }
    return RC_OK;
}

enum rc api_begin(struct srv_req *req)
{
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    return db_begin(req->db);
}

enum rc api_end(struct srv_req *req, enum rc rc)
{
    if (req->db == NULL)
        return rc;
    if (rc == RC_OK) {
        rc = db_commit(req->db);
        if (rc != RC_OK)
            db_rollback(req->db);
        else
            db_jobs_changed();
    } else {
        db_rollback(req->db);
    }
    return rc;
}

struct api_tx {
    struct srv_req *req;
    api_tx_body body;
    void *arg;
};

static enum rc api_tx_run(void *arg)
{
    struct api_tx *t = arg;

    /* A failed run's message must not outlive it. */
    err_init(&t->req->err);
    return t->body(t->req, t->arg);
}

enum rc api_tx(struct srv_req *req, api_tx_body body, void *arg)
{
    struct api_tx t = {req, body, arg};
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_tx(req->db, api_tx_run, &t, req->req_id);
    if (rc == RC_OK)
        db_jobs_changed();
    return rc;
}

int api_serving_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const char *api_i64(int64_t v, char *buf, size_t size)
{
    snprintf(buf, size, "%lld", (long long)v);
    return buf;
}

enum rc audit_append_req(struct srv_req *req, const char *action, const char *target,
                         const char *outcome, json_t *details)
{
    char actor[96];
    struct audit_event ev;

    srv_actor(req, actor, sizeof(actor));
    ev = (struct audit_event){actor, req->client_addr, action, target, outcome, details};
    return audit_append(req->db, &ev, req->req_id);
}

enum rc audit_append_alone(struct srv_req *req, const char *action, const char *target,
                           const char *outcome, json_t *details)
{
    enum rc rc;

    if (srv_db(req) == NULL)
        return RC_EUNAVAIL;
    if ((rc = db_begin(req->db)) != RC_OK)
        return rc;
    rc = audit_append_req(req, action, target, outcome, details);
    if (rc == RC_OK)
        rc = db_commit(req->db);
    else
        db_rollback(req->db);
    return rc;
}

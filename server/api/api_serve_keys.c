/*
 * api_serve_keys.c - a deployment's gateway keys and its usage
 * (docs/serving.md, "Deployments"): create (the secret shown once; only
 * its SHA-256 is stored), list with usage, revoke, and the usage per key
 * and day for admins as JSON or CSV. Members of the deployment's team
 * manage its keys (admins any); others are told the deployment does not
 * exist. Each change is audited in its transaction (serve.key.create,
 * serve.key.revoke). A revocation reaches the gateway within its key
 * cache's TTL (serve/gw_limits.h).
 */
#include "api.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_target.h"
#include "crypto.h"
#include "db.h"
#include "db_auth.h"
#include "db_gateway.h"
#include "jx.h"

#include "api_util.h"

/* The deployment of route capture 0 and whether the caller may manage it. */
static enum rc load_deployment(struct srv_req *req, int64_t *id)
{
    int64_t team_id = 0;
    int member = 0;
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_gw_deployment_team(req->db, req->params[0], id, &team_id, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such deployment");
    if (rc != RC_OK || req->who.role == SRV_ROLE_ADMIN)
        return rc;
    rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such deployment");
    return rc;
}

static int name_ok(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

enum rc api_serve_key_create(struct srv_req *req)
{
    static const char *const allowed[] = {"name", "public", "rate_per_min", "token_quota", NULL};
    const char *name = NULL;
    char secret[64], hash[CRYPTO_SHA256_HEX_LEN + 1], prefix[16], actor[96];
    char target[AUDIT_TARGET_SIZE];
    int64_t id = 0, rate = 600, quota = 0;
    int has = 0, is_public = 0;
    json_t *row = NULL, *pub;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 64, &name)) != RC_OK ||
        (rc = api_opt_int(req, "rate_per_min", 1, 1000000, &rate, &has)) != RC_OK ||
        (rc = api_opt_int(req, "token_quota", 0, INT64_C(1) << 50, &quota, &has)) != RC_OK)
        return rc;
    if (name == NULL || !name_ok(name))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 64 printable characters");
    pub = json_object_get(req->body, "public");
    if (pub != NULL && !json_is_boolean(pub))
        return srv_fail(req, RC_EINVAL, "public", "public must be true or false");
    is_public = json_is_true(pub);
    if ((rc = load_deployment(req, &id)) != RC_OK)
        return rc;
    if (crypto_random_token("tysk_", 24, secret, sizeof(secret)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(secret, strlen(secret), hash);
    snprintf(prefix, sizeof(prefix), "%.12s", secret);
    srv_actor(req, actor, sizeof(actor));
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_gw_key_create(req->db, id, name, hash, prefix, is_public, (int)rate, quota, actor, &row,
                          req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id_text(AUDIT_TARGET_SERVE_KEY,
                                  json_string_value(json_object_get(row, "id")), target);
    if (rc == RC_OK) {
        json_t *d = json_pack("{s:s,s:s,s:b,s:I,s:I}", "deployment", req->params[0], "name", name,
                              "public", is_public, "rate_per_min", (json_int_t)rate, "token_quota",
                              (json_int_t)quota);
        rc = audit_append_req(req, "serve.key.create", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    json_object_set_new(row, "secret", json_string(secret));
    memset(secret, 0, sizeof(secret));
    return srv_reply(req, 201, row);
}

enum rc api_serve_key_list(struct srv_req *req)
{
    json_t *rows = NULL;
    int64_t id;
    enum rc rc;

    if ((rc = load_deployment(req, &id)) != RC_OK)
        return rc;
    if ((rc = db_gw_key_list(req->db, id, &rows, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "keys", rows));
}

struct revoke_arg {
    int64_t deployment_id;
    int64_t key_id;
};

static enum rc revoke_body(struct srv_req *req, void *arg)
{
    const struct revoke_arg *a = arg;
    char target[AUDIT_TARGET_SIZE];
    enum rc rc = db_gw_key_revoke(req->db, a->deployment_id, a->key_id, req->req_id);

    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such key");
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_SERVE_KEY, a->key_id, target);
    if (rc == RC_OK) {
        json_t *d = json_pack("{s:s}", "deployment", req->params[0]);
        rc = audit_append_req(req, "serve.key.revoke", target, "success", d);
        json_decref(d);
    }
    return rc;
}

enum rc api_serve_key_revoke(struct srv_req *req)
{
    struct revoke_arg a;
    enum rc rc;

    if ((rc = api_param_id(req, 1, &a.key_id, "key")) != RC_OK)
        return rc;
    if ((rc = load_deployment(req, &a.deployment_id)) != RC_OK)
        return rc;
    if ((rc = api_tx(req, revoke_body, &a)) != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:b}", "revoked", 1));
}

/* One CSV field: quoted, with its quotes doubled. */
static int csv_field(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    return fputc('"', f) == EOF ? -1 : 0;
}

static enum rc usage_csv(struct srv_req *req, const json_t *rows)
{
    static const char *const cols[] = {
        "key_id", "key_name", "day", "requests", "errors", "prompt_tokens", "completion_tokens"};
    char *text = NULL;
    size_t len = 0, i;
    const json_t *r;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    fputs("key_id,key_name,day,requests,errors,prompt_tokens,completion_tokens\n", f);
    json_array_foreach(rows, i, r)
    {
        for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
            const json_t *v = json_object_get(r, cols[c]);
            if (c > 0)
                fputc(',', f);
            /* Only the name is free text; ids, the day and counts are plain. */
            if (json_is_integer(v))
                fprintf(f, "%lld", (long long)json_integer_value(v));
            else if (strcmp(cols[c], "key_name") == 0)
                csv_field(f, json_string_value(v) ? json_string_value(v) : "");
            else
                fputs(json_string_value(v) ? json_string_value(v) : "", f);
        }
        fputc('\n', f);
    }
    if (fclose(f) != 0 || text == NULL) {
        free(text);
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    }
    req->resp_raw = text;
    req->resp_raw_len = len;
    req->resp_ctype = "text/csv; charset=utf-8";
    req->status = 200;
    return RC_OK;
}

enum rc api_serve_usage(struct srv_req *req)
{
    const char *format = srv_query(req, "format");
    json_t *rows = NULL;
    int64_t id;
    enum rc rc;

    if (format != NULL && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)
        return srv_fail(req, RC_EINVAL, "format", "format must be csv or json");
    if ((rc = load_deployment(req, &id)) != RC_OK)
        return rc;
    if ((rc = db_gw_usage(req->db, id, &rows, req->req_id)) != RC_OK)
        return rc;
    if (format != NULL && strcmp(format, "csv") == 0) {
        rc = usage_csv(req, rows);
        json_decref(rows);
        return rc;
    }
    return srv_reply(req, 200, json_pack("{s:s,s:o}", "deployment", req->params[0], "usage", rows));
}
